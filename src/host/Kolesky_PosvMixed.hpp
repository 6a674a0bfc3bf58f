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
// PosvMixedOptions::fast_factor lets cuBLAS use TF32 tensor cores for the float factor's
// trailing updates (about 6x SGEMM's rate, 10-bit mantissas): the refinement then needs a few
// more steps and converges for well-conditioned A (cond(A) well below 1e3); otherwise the
// call falls back to double as usual.
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

// Columns whose residual is not yet small enough.
template <class Exec>
int unconverged(const Exec& exec, const int n, const int nrhs, const Strided<double> r,
                const Strided<double> x, const double cte) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  int bad = 0;
  Kokkos::parallel_reduce(
      "kolesky::posv_mixed_check", Policy(exec, nrhs, Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& mb, int& count) {
        const int c = mb.league_rank();
        double rmax = 0, xmax = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(mb, n),
            [&](const int i, double& m) { m = dmax(m, dabs(r(i, c))); },
            Kokkos::Max<double>(rmax));
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(mb, n),
            [&](const int i, double& m) { m = dmax(m, dabs(x(i, c))); },
            Kokkos::Max<double>(xmax));
        Kokkos::single(Kokkos::PerTeam(mb), [&]() { count += !(rmax <= xmax * cte); });
      },
      bad);
  return bad;
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

  // ||A||_inf from the one triangle, and the float copy (with an overflow count). The lower
  // triangle is walked along columns (for a column-major A, coalesced): each column's sum
  // below the diagonal, then each row's sum left of the diagonal, one thread per row.
  Kokkos::View<float**, Kokkos::LayoutLeft, Mem> af(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_A"), n, n);
  const impl::Strided<float> lf{af.data(), 1, std::ptrdiff_t(af.stride(1))};
  Kokkos::View<double*, Mem> rows(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                     "kolesky::posv_mixed_rowsums"), n);
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  int overflow = 0;
  Kokkos::parallel_reduce(
      "kolesky::posv_mixed_demote", Policy(exec, n, Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& mb, int& o) {
        const int j = mb.league_rank();
        double colsum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(mb, j, n),
            [&](const int i, double& acc) {
              const double v = l(i, j);
              lf(i, j) = float(v);
              acc += impl::dabs(v);
            },
            colsum);
        Kokkos::single(Kokkos::PerTeam(mb), [&]() {
          rows(j) = colsum;
          // An entry beyond float's range (or NaN) makes the sum so too; then look closer
          // (rare: many large entries can sum past FLT_MAX without one exceeding it).
          if (!(colsum <= double(FLT_MAX)))
            for (int i = j; i < n; ++i) o += !(impl::dabs(l(i, j)) <= double(FLT_MAX));
        });
      },
      overflow);
  double anrm = 0;
  Kokkos::parallel_reduce(
      "kolesky::posv_mixed_norm", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(const int i, double& m) {
        double s2 = rows(i);
        for (int j = 0; j < i; ++j) s2 += impl::dabs(l(i, j));
        m = impl::dmax(m, s2);
      },
      Kokkos::Max<double>(anrm));

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
    const auto residual = [&]() {  // r = b - A x
      impl::map_block(exec, n, nrhs, r, bc, KOKKOS_LAMBDA(double, double v) { return v; });
      impl::symm_l(exec, opt.potrf.blas, n, nrhs, lc, xc, r);
      return impl::unconverged(exec, n, nrhs, r, xs, cte) == 0;
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
