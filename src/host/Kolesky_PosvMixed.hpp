// Mixed-precision solve (LAPACK's dsposv): factor A in float, solve, and refine the solution
// in double until it has double accuracy; fall back to a double factorization when the float
// one fails or the refinement does not converge.
//
//   auto r = kolesky::posv_mixed(exec, kolesky::Uplo::Lower, A, B, X);
//   // r.info: 0, or the failing minor of the double factorization (A not SPD)
//   // r.iterations >= 0: refinement steps used, A unchanged;
//   //              <  0: fell back, A holds the double factor (as LAPACK's ITER < 0)
//
// A: n x n double View; B, X: rank 1 or 2 double Views of the same shape (B is not changed).
// Convergence test (LAPACK's): for every column, ||r||_inf <= ||x||_inf ||A||_inf eps sqrt(n).
// Worth it where float factors faster than double: the CPU (2x). On the H100 SGEMM and
// tensor-core DGEMM run at the same rate, so a float factor saves memory there, not time;
// PosvMixedOptions::fast_factor (CUDA) multiplies on the TF32 tensor cores instead (10-bit
// mantissas): cuBLAS's GEMMs, the SYRKs as GEMMs over whole diagonal blocks (the float copy's
// upper triangle is scratch) and the dataflow kernel's tile updates. The refinement then
// converges for well-conditioned A (cond(A) well below 1e3); otherwise the call falls back to
// double as usual.
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Profiling.hpp"

#include <cfloat>
#include <cmath>
#include <string>

#include "common/Kolesky_Types.hpp"
#include "host/Kolesky_Potrf.hpp"

namespace kolesky {

struct PosvMixedResult {
  int info = 0;
  int iterations = 0;
  bool fell_back() const { return iterations < 0; }
};

struct PosvMixedOptions {
  int max_iterations = 30;  // LAPACK's ITERMAX
  PotrfOptions potrf;       // for both factorizations
  bool fast_factor = false;  // CUDA: TF32 tensor cores in the float factor's GEMM/SYRK calls
};

namespace impl {

KOKKOS_INLINE_FUNCTION double dabs(const double v) { return v < 0 ? -v : v; }
// NaN-propagating max, so that a NaN residual never counts as converged.
KOKKOS_INLINE_FUNCTION double dmax(const double a, const double b) { return a > b || a != a ? a : b; }

// y(i, c) = f(x(i, c)) over an n x nrhs block.
template <class Exec, class TD, class TS, class F>
void map_block(const Exec& exec, const int n, const int nrhs, const Strided<TD> y,
               const Strided<TS> x, const F& f) {
  Kokkos::parallel_for(
      "kolesky::posv_mixed_map", Kokkos::RangePolicy<Exec>(exec, 0, std::size_t(n) * nrhs),
      KOKKOS_LAMBDA(const std::size_t t) {
        const int i = int(t % n), c = int(t / n);
        y(i, c) = f(y(i, c), x(i, c));
      });
}

// |v| with NaN as DBL_MAX: maxima that no NaN can slip through (Kokkos's Max join drops a
// NaN that arrives second); the test below rejects DBL_MAX and infinity alike.
KOKKOS_INLINE_FUNCTION double mag(const double v) { return v != v ? DBL_MAX : dabs(v); }

// Slices of the maxima below: slice p takes rows p, p + P, ... (coalesced), so a column is
// P threads wide whatever n is, and the per-column pass reads P values.
constexpr int kSlices = 256;
inline int slices_of(const int n) { return n < kSlices ? (n > 0 ? n : 1) : kSlices; }

// The convergence test's device scratch: per (column, slice) maxima, a flag per column.
template <class Mem>
struct CheckWork {
  Kokkos::View<double***, Mem> part;  // (0: max |r|, 1: max |x|; slice; column)
  Kokkos::View<int*, Mem> bad;
  CheckWork(const int n, const int nrhs)
      : part(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_part"), 2,
             slices_of(n), nrhs),
        bad(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_bad"), nrhs) {}
};

// Columns whose residual is not yet small enough (LAPACK's test, ||r||_inf <= ||x||_inf cte):
// a thread per (column, slice) takes the slice's max |r| and max |x|, a thread per column
// tests, the host counts. No Kokkos reduction: its join drops NaN, and a NaN residual must
// never pass (nor an infinite one). (One team per column, as before, took 0.1-0.2 ms a step on
// the H100 at n = 8192-16384.)
template <class Exec>
int unconverged(const Exec& exec, const int n, const int nrhs, const Strided<const double> r,
                const Strided<const double> x, const double cte,
                const CheckWork<typename Exec::memory_space>& work) {
  const auto part = work.part;
  const auto bad = work.bad;
  const int slices = int(part.extent(1));
  Kokkos::parallel_for(
      "kolesky::posv_mixed_check", Kokkos::RangePolicy<Exec>(exec, 0, slices * nrhs),
      KOKKOS_LAMBDA(const int t) {
        const int c = t / slices, p = t % slices;
        double rmax = 0, xmax = 0;
        for (int i = p; i < n; i += slices) {
          rmax = dmax(rmax, mag(r(i, c)));
          xmax = dmax(xmax, mag(x(i, c)));
        }
        part(0, p, c) = rmax;
        part(1, p, c) = xmax;
      });
  Kokkos::parallel_for(
      "kolesky::posv_mixed_test", Kokkos::RangePolicy<Exec>(exec, 0, nrhs), KOKKOS_LAMBDA(const int c) {
        double rmax = 0, xmax = 0;
        for (int p = 0; p < slices; ++p) {
          rmax = dmax(rmax, part(0, p, c));
          xmax = dmax(xmax, part(1, p, c));
        }
        bad(c) = !(rmax <= xmax * cte && rmax < DBL_MAX && xmax < DBL_MAX);
      });
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), bad);
  int count = 0;
  for (int c = 0; c < nrhs; ++c) count += h(c);
  return count;
}

template <class Exec>
int unconverged(const Exec& exec, const int n, const int nrhs, const Strided<const double> r,
                const Strided<const double> x, const double cte) {
  return unconverged(exec, n, nrhs, r, x, cte, CheckWork<typename Exec::memory_space>(n, nrhs));
}

// Columns per partial row sum of demote_lower's norm pass.
constexpr int kNormChunk = 256;

struct Demoted {
  double norm = 0;   // ||A||_inf of the symmetric A whose lower triangle was read
  int overflow = 0;  // entries beyond float's range, or NaN
};

// lf = float(l) on the lower triangle, and ||A||_inf from that triangle, every pass spread over
// the whole device and deterministic: a team per column (coalesced for a column-major l)
// demotes the column and sums it from the diagonal down; a thread per (row, 256-column chunk)
// sums the row left of the diagonal within the chunk, from the float copy (half the bytes;
// the norm only sets the convergence threshold); a thread per row adds its parts; a thread per
// slice of rows takes their max and overflow count, which the host combines. (The row sums
// were one thread per row before: 1-2 ms on the H100 at n = 8192-16384.)
template <class Exec>
Demoted demote_lower(const Exec& exec, const int n, const Strided<const double> l,
                     const Strided<float> lf) {
  using Mem = typename Exec::memory_space;
  using Policy = Kokkos::TeamPolicy<Exec>;
  Demoted d;
  if (n == 0) return d;
  const int chunks = (n + kNormChunk - 1) / kNormChunk, slices = slices_of(n);
  Kokkos::View<double*, Mem> sums(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                     "kolesky::posv_mixed_sums"), n);
  Kokkos::View<int*, Mem> over(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                  "kolesky::posv_mixed_over"), n);
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> rows(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_rowsums"), n, chunks);
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> out(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_norm"), slices, 2);
  Kokkos::parallel_for(
      "kolesky::posv_mixed_demote", Policy(exec, n, Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& mb) {
        const int j = mb.league_rank();
        double colsum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(mb, j, n),
            [&](const int i, double& acc) {
              const double v = l(i, j);
              lf(i, j) = float(v);
              acc += dabs(v);
            },
            colsum);
        Kokkos::single(Kokkos::PerTeam(mb), [&]() {
          sums(j) = colsum;
          // An entry beyond float's range (or NaN) makes the sum so too; then look closer
          // (rare: many large entries can sum past FLT_MAX without one exceeding it).
          int o = 0;
          if (!(colsum <= double(FLT_MAX)))
            for (int i = j; i < n; ++i) o += !(dabs(l(i, j)) <= double(FLT_MAX));
          over(j) = o;
        });
      });
  const Strided<const float> lc{lf.p, lf.rs, lf.cs};
  Kokkos::parallel_for(
      "kolesky::posv_mixed_rowsums", Kokkos::RangePolicy<Exec>(exec, 0, std::size_t(n) * chunks),
      KOKKOS_LAMBDA(const std::size_t t) {
        const int i = int(t % n), q = int(t / n);
        const int j0 = q * kNormChunk, j1 = j0 + kNormChunk < i ? j0 + kNormChunk : i;
        double s = 0;
        for (int j = j0; j < j1; ++j) s += dabs(double(lc(i, j)));
        rows(i, q) = s;
      });
  Kokkos::parallel_for(
      "kolesky::posv_mixed_rowsum", Kokkos::RangePolicy<Exec>(exec, 0, n), KOKKOS_LAMBDA(const int i) {
        double s = sums(i);
        for (int q = 0; q <= i / kNormChunk; ++q) s += rows(i, q);
        sums(i) = s;
      });
  Kokkos::parallel_for(
      "kolesky::posv_mixed_slices", Kokkos::RangePolicy<Exec>(exec, 0, slices), KOKKOS_LAMBDA(const int p) {
        double m = 0, o = 0;
        for (int i = p; i < n; i += slices) {
          m = dmax(m, sums(i));
          o += over(i);
        }
        out(p, 0) = m;
        out(p, 1) = o;
      });
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  double o = 0;
  for (int p = 0; p < slices; ++p) {
    d.norm = dmax(d.norm, h(p, 0));
    o += h(p, 1);
  }
  d.overflow = int(o);
  return d;
}

}  // namespace impl

template <class ExecSpace, class AView, class BView, class XView>
PosvMixedResult posv_mixed(const ExecSpace& exec, const Uplo uplo, const AView& a, const BView& b,
                           const XView& x, const PosvMixedOptions& opt = {}) {
  const impl::Region region("kolesky::posv_mixed");
  static_assert(std::is_same<typename AView::non_const_value_type, double>::value,
                "kolesky::posv_mixed: A must hold double");
  static_assert(std::is_same<typename XView::non_const_value_type, double>::value,
                "kolesky::posv_mixed: X must hold double");
  impl::check_matrix<ExecSpace>("posv_mixed", a);
  impl::check_rhs<ExecSpace>("posv_mixed", a, b);
  impl::check_rhs<ExecSpace>("posv_mixed", a, x);
  if (impl::nrhs_of(b) != impl::nrhs_of(x))
    impl::throw_invalid("posv_mixed", "B has ", impl::nrhs_of(b), " columns but X has ",
                        impl::nrhs_of(x));
  PosvMixedResult res;
  const int n = int(a.extent(0)), nrhs = impl::nrhs_of(b);
  if (n == 0 || nrhs == 0) return res;
  using Mem = typename ExecSpace::memory_space;
  const auto l = uplo == Uplo::Lower ? impl::lower_of<Uplo::Lower>(a) : impl::lower_of<Uplo::Upper>(a);
  const impl::Strided<const double> lc{l.p, l.rs, l.cs};
  const auto bs = impl::rhs_of(b);
  const impl::Strided<const double> bc{bs.p, bs.rs, bs.cs};
  const auto xs = impl::rhs_of(x);
  const impl::Strided<const double> xc{xs.p, xs.rs, xs.cs};

  // The float copy of the triangle and ||A||_inf (with a count of entries beyond float).
  Kokkos::View<float**, Kokkos::LayoutLeft, Mem> af(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_A"), n, n);
  const impl::Strided<float> lf{af.data(), 1, std::ptrdiff_t(af.stride(1))};
  const impl::Demoted dem = impl::demote_lower(exec, n, lc, lf);
  const double anrm = dem.norm;
  const int overflow = dem.overflow;

  const double cte = anrm * DBL_EPSILON * std::sqrt(double(n));
  bool ok = overflow == 0;
  if (ok) {
    const impl::FastFloatScope fast(opt.fast_factor);
    ok = impl::potrf_strided(exec, n, lf, opt.potrf) == 0;
  }
  if (ok) {
    Kokkos::View<float**, Kokkos::LayoutLeft, Mem> wf(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_W"), n, nrhs);
    Kokkos::View<double**, Kokkos::LayoutLeft, Mem> rd(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_R"), n, nrhs);
    const impl::Strided<float> w{wf.data(), 1, std::ptrdiff_t(wf.stride(1))};
    const impl::Strided<double> r{rd.data(), 1, std::ptrdiff_t(rd.stride(1))};
    const impl::Strided<const float> lfc{lf.p, lf.rs, lf.cs};
    const impl::CheckWork<Mem> check(n, nrhs);
    const auto residual = [&]() {  // r = b - A x
      impl::map_block(exec, n, nrhs, r, bc, KOKKOS_LAMBDA(double, double v) { return v; });
      impl::symm_l(exec, opt.potrf.blas, n, nrhs, lc, xc, r);
      return impl::unconverged(exec, n, nrhs, impl::Strided<const double>{r.p, r.rs, r.cs}, xc,
                               cte, check) == 0;
    };
    impl::map_block(exec, n, nrhs, w, bc, KOKKOS_LAMBDA(float, double v) { return float(v); });
    impl::potrs_strided(exec, n, nrhs, lfc, w, opt.potrf.blas);
    impl::map_block(exec, n, nrhs, xs, impl::Strided<const float>{w.p, w.rs, w.cs},
                    KOKKOS_LAMBDA(double, float v) { return double(v); });
    bool converged = residual();
    int it = 0;
    while (!converged && it < opt.max_iterations) {
      ++it;
      impl::map_block(exec, n, nrhs, w, impl::Strided<const double>{r.p, r.rs, r.cs},
                      KOKKOS_LAMBDA(float, double v) { return float(v); });
      impl::potrs_strided(exec, n, nrhs, lfc, w, opt.potrf.blas);
      impl::map_block(exec, n, nrhs, xs, impl::Strided<const float>{w.p, w.rs, w.cs},
                      KOKKOS_LAMBDA(double xv, float d) { return xv + double(d); });
      converged = residual();
    }
    if (converged) {
      exec.fence();
      res.iterations = it;
      return res;
    }
  }
  // Fall back: the double factorization in place, X from it.
  res.iterations = -(opt.max_iterations + 1);
  res.info = impl::potrf_strided(exec, n, l, opt.potrf);
  if (res.info == 0) {
    impl::map_block(exec, n, nrhs, xs, bc, KOKKOS_LAMBDA(double, double v) { return v; });
    impl::potrs_strided(exec, n, nrhs, lc, xs, opt.potrf.blas);
  }
  exec.fence();
  return res;
}

template <class AView, class BView, class XView>
PosvMixedResult posv_mixed(const Uplo uplo, const AView& a, const BView& b, const XView& x,
                           const PosvMixedOptions& opt = {}) {
  return posv_mixed(typename AView::execution_space(), uplo, a, b, x, opt);
}

}  // namespace kolesky
