// Mixed-precision solve (LAPACK's dsposv): factor A in float, solve, and refine the solution
// in double until it has double accuracy; fall back to a double factorization when the float
// one fails or the refinement does not converge.
//
//   auto r = kolesky::posv_mixed(exec, kolesky::Uplo::Lower, A, B, X);
//   // r.info: 0, or the failing minor of the double factorization (A not SPD)
//   // r.iterations >= 0: refinement steps used, A unchanged;
//   //              = -1: the double path taken at once (MixedFactor below), A holds the factor
//   //              <  -1: fell back, A holds the double factor (as LAPACK's ITER < 0)
//
// A: n x n double View; B, X: rank 1 or 2 double Views of the same shape (B is not changed).
// Convergence test (LAPACK's): for every column, ||r||_inf <= ||x||_inf ||A||_inf eps sqrt(n).
// Worth it where float factors faster than double: the CPU (2x). On GPUs whose FP64 tensor
// cores run DGEMM at the FP32 rate (compute capability 8.0 and 9.x: A100, H100, H200) a float
// factor cannot save time, and the refinement only adds to it, so there MixedFactor::Auto (the
// default) takes the double path at once: A factored in place, iterations = -1 (LAPACK's
// dsposv does the same "for machine-specific reasons"). MixedFactor::Float forces the
// refinement (A left unchanged when it converges). PosvMixedOptions::fast_factor (CUDA)
// multiplies on the TF32 tensor cores instead (10-bit mantissas), and then Auto refines:
// cuBLAS's GEMMs, the SYRKs as GEMMs over whole diagonal blocks (the float copy's upper
// triangle is scratch) and the dataflow kernel's tile updates. The refinement then converges
// for well-conditioned A (cond(A) well below 1e3); otherwise the call falls back to double as
// usual.
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Profiling.hpp"

#include <cfloat>
#include <cmath>
#include <memory>
#include <string>

#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Residual.hpp"
#include "host/Kolesky_Potrf.hpp"
#include "host/Kolesky_PotrfPlan.hpp"

namespace kolesky {

struct PosvMixedResult {
  int info = 0;
  int iterations = 0;
  bool fell_back() const { return iterations < 0; }
};

// Where posv_mixed starts. Auto: Float, except on a GPU where the float factor cannot be the
// faster (compute capability 8.0 and 9.x, unless fast_factor asks for TF32): Double there.
enum class MixedFactor { Auto, Float, Double };

struct PosvMixedOptions {
  int max_iterations = 30;  // LAPACK's ITERMAX
  PotrfOptions potrf;       // for both factorizations
  bool fast_factor = false;  // CUDA: TF32 tensor cores in the float factor's GEMM/SYRK calls
  MixedFactor factor = MixedFactor::Auto;
};

namespace impl {

// Whether a float factor can be faster than a double one on exec's device. Not on compute
// capability 8.0 / 9.x: DGEMM on the FP64 tensor cores runs at the FP32 rate, and Kolesky's
// float factor runs its tile products on those tensor cores too (H200: float potrf 1.43 ms
// at n = 4096 against double's 1.61; posv_mixed 2.51 against posv's 1.80).
template <class Exec>
bool float_factor_pays(const Exec&) {
  return true;
}
#ifdef KOKKOS_ENABLE_CUDA
inline bool float_factor_pays(const Kokkos::Cuda& exec) {
  const int major = exec.cuda_device_prop().major, minor = exec.cuda_device_prop().minor;
  return !((major == 8 && minor == 0) || major == 9);
}
#endif

// Whether posv_mixed refines from a float factor (else: the double path at once).
template <class Exec>
bool mixed_refines(const Exec& exec, const PosvMixedOptions& opt) {
  if (opt.factor != MixedFactor::Auto) return opt.factor == MixedFactor::Float;
  return opt.fast_factor || float_factor_pays(exec);
}

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

// r = b - A x, A symmetric with its lower triangle in l. On CUDA (column-major triangle, a few
// right-hand sides) one read of A for up to four of them (Kolesky_Residual.hpp); elsewhere
// the copy and the vendor's SYMV / SYMM.
template <class Exec>
void residual(const Exec& exec, const Blas blas, const int n, const int nrhs,
              const Strided<const double> l, const Strided<const double> x,
              const Strided<const double> b, const Strided<double> r) {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    if (l.rs == 1 && nrhs <= kResidualMaxRhs && ResidualKnobs::get().fused != 0) {
      residual_cuda(exec, n, nrhs, l, x, b, r);
      return;
    }
  }
#endif
  map_block(exec, n, nrhs, r, b, KOKKOS_LAMBDA(double, double v) { return v; });
  symm_l(exec, blas, n, nrhs, l, x, r);
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
  Kokkos::View<int*, Kokkos::HostSpace> bad_host;
  CheckWork(const int n, const int nrhs)
      : part(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_part"), 2,
             slices_of(n), nrhs),
        bad(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_bad"), nrhs),
        bad_host(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_bad_host"),
                 nrhs) {}
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
  const auto h = work.bad_host;
  Kokkos::deep_copy(exec, Kokkos::subview(h, std::make_pair(0, nrhs)),
                    Kokkos::subview(bad, std::make_pair(0, nrhs)));
  exec.fence();
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

// demote_lower's scratch: per-column sums and overflow counts, per-(row, chunk) row sums,
// per-slice results and their host copy.
template <class Mem>
struct DemoteWork {
  Kokkos::View<double*, Mem> sums;
  Kokkos::View<int*, Mem> over;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> rows;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> out;
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> out_host;
  explicit DemoteWork(const int n)
      : sums(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_sums"), n),
        over(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_over"), n),
        rows(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_rowsums"), n,
             (n + kNormChunk - 1) / kNormChunk),
        out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_norm"),
            slices_of(n), 2),
        out_host(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_norm_host"),
                 slices_of(n), 2) {}
};

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
                     const Strided<float> lf,
                     const DemoteWork<typename Exec::memory_space>& work) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  Demoted d;
  if (n == 0) return d;
  const int chunks = (n + kNormChunk - 1) / kNormChunk, slices = slices_of(n);
  const auto sums = work.sums;
  const auto over = work.over;
  const auto rows = work.rows;
  const auto out = work.out;
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
  const auto h = work.out_host;
  Kokkos::deep_copy(exec, h, out);
  exec.fence();
  double o = 0;
  for (int p = 0; p < slices; ++p) {
    d.norm = dmax(d.norm, h(p, 0));
    o += h(p, 1);
  }
  d.overflow = int(o);
  return d;
}

template <class Exec>
Demoted demote_lower(const Exec& exec, const int n, const Strided<const double> l,
                     const Strided<float> lf) {
  return demote_lower(exec, n, l, lf, DemoteWork<typename Exec::memory_space>(n));
}


// What one call needs beside A, B and X: the float copy of the triangle, the float and double
// right-hand-side blocks (nrhs columns at most) and the two passes' scratch. A PosvMixedPlan
// keeps one between calls; a call without a plan makes its own (on the H100 a call without a
// plan takes 0.3-1.5 ms longer at n = 4096-16384: docs/performance_log.md).
template <class Mem>
struct MixedWork {
  Kokkos::View<float**, Kokkos::LayoutLeft, Mem> af, wf;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> rd;
  DemoteWork<Mem> demote;
  CheckWork<Mem> check;
  MixedWork(const int n, const int nrhs)
      : af(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_A"), n, n),
        wf(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_W"), n, nrhs),
        rd(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::posv_mixed_R"), n, nrhs),
        demote(n),
        check(n, nrhs) {}
};

template <class ExecSpace, class AView, class BView, class XView>
void check_mixed(const char* what, const AView& a, const BView& b, const XView& x) {
  static_assert(std::is_same<typename AView::non_const_value_type, double>::value,
                "kolesky::posv_mixed: A must hold double");
  static_assert(std::is_same<typename XView::non_const_value_type, double>::value,
                "kolesky::posv_mixed: X must hold double");
  check_matrix<ExecSpace>(what, a);
  check_rhs<ExecSpace>(what, a, b);
  check_rhs<ExecSpace>(what, a, x);
  if (nrhs_of(b) != nrhs_of(x))
    throw_invalid(what, "B has ", nrhs_of(b), " columns but X has ", nrhs_of(x));
}

// The double path: A factored in place (through `dplan` when given), X = A^{-1} B.
template <class ExecSpace, class AView, class BView, class XView>
PosvMixedResult posv_double(const ExecSpace& exec, const Uplo uplo, const AView& a,
                            const BView& b, const XView& x, const PosvMixedOptions& opt,
                            const int iterations,
                            PotrfPlan<ExecSpace, double>* const dplan = nullptr) {
  PosvMixedResult res;
  res.iterations = iterations;
  res.info = dplan != nullptr ? dplan->potrf(a) : kolesky::potrf(exec, uplo, a, opt.potrf);
  if (res.info == 0) {
    const auto bs = rhs_of(b);
    const Strided<const double> bc{bs.p, bs.rs, bs.cs};
    map_block(exec, int(a.extent(0)), nrhs_of(b), rhs_of(x), bc,
              KOKKOS_LAMBDA(double, double v) { return v; });
    if (dplan != nullptr)
      dplan->potrs(a, x);
    else
      kolesky::potrs(exec, uplo, a, x, opt.potrf.blas);  // as kolesky::posv
  }
  exec.fence();
  return res;
}

// The refinement on its workspace; the float factor through `plan` when given (a
// PosvMixedPlan's).
template <class ExecSpace, class AView, class BView, class XView>
PosvMixedResult posv_mixed_run(const ExecSpace& exec, const Uplo uplo, const AView& a,
                               const BView& b, const XView& x, const PosvMixedOptions& opt,
                               const MixedWork<typename ExecSpace::memory_space>& work,
                               PotrfPlan<ExecSpace, float>* const plan) {
  PosvMixedResult res;
  const int n = int(a.extent(0)), nrhs = nrhs_of(b);
  const auto l = uplo == Uplo::Lower ? lower_of<Uplo::Lower>(a) : lower_of<Uplo::Upper>(a);
  const Strided<const double> lc{l.p, l.rs, l.cs};
  const auto bs = rhs_of(b);
  const Strided<const double> bc{bs.p, bs.rs, bs.cs};
  const auto xs = rhs_of(x);
  const Strided<const double> xc{xs.p, xs.rs, xs.cs};

  // The float copy of the triangle and ||A||_inf (with a count of entries beyond float).
  const Strided<float> lf{work.af.data(), 1, std::ptrdiff_t(work.af.stride(1))};
  const Demoted dem = demote_lower(exec, n, lc, lf, work.demote);
  const double cte = dem.norm * DBL_EPSILON * std::sqrt(double(n));
  bool ok = dem.overflow == 0;
  if (ok) {
    const FastFloatScope fast(opt.fast_factor);
    ok = (plan != nullptr ? plan->potrf(work.af) : potrf_strided(exec, n, lf, opt.potrf)) == 0;
  }
  if (ok) {
    const Strided<float> w{work.wf.data(), 1, std::ptrdiff_t(work.wf.stride(1))};
    const Strided<double> r{work.rd.data(), 1, std::ptrdiff_t(work.rd.stride(1))};
    const Strided<const double> rc{r.p, r.rs, r.cs};
    const Strided<const float> wc{w.p, w.rs, w.cs};
    const Strided<const float> lfc{lf.p, lf.rs, lf.cs};
    const auto small_residual = [&]() {  // r = b - A x, and whether it passes
      residual(exec, opt.potrf.blas, n, nrhs, lc, xc, bc, r);
      return unconverged(exec, n, nrhs, rc, xc, cte, work.check) == 0;
    };
    map_block(exec, n, nrhs, w, bc, KOKKOS_LAMBDA(float, double v) { return float(v); });
    potrs_strided(exec, n, nrhs, lfc, w, opt.potrf.blas);
    map_block(exec, n, nrhs, xs, wc, KOKKOS_LAMBDA(double, float v) { return double(v); });
    bool converged = small_residual();
    int it = 0;
    while (!converged && it < opt.max_iterations) {
      ++it;
      map_block(exec, n, nrhs, w, rc, KOKKOS_LAMBDA(float, double v) { return float(v); });
      potrs_strided(exec, n, nrhs, lfc, w, opt.potrf.blas);
      map_block(exec, n, nrhs, xs, wc, KOKKOS_LAMBDA(double xv, float d) { return xv + double(d); });
      converged = small_residual();
    }
    if (converged) {
      exec.fence();
      res.iterations = it;
      return res;
    }
  }
  // Fall back: the double factorization in place, X from it.
  return posv_double(exec, uplo, a, b, x, opt, -(opt.max_iterations + 1));
}

}  // namespace impl

template <class ExecSpace, class AView, class BView, class XView>
PosvMixedResult posv_mixed(const ExecSpace& exec, const Uplo uplo, const AView& a, const BView& b,
                           const XView& x, const PosvMixedOptions& opt = {}) {
  const impl::Region region("kolesky::posv_mixed");
  impl::check_mixed<ExecSpace>("posv_mixed", a, b, x);
  const int n = int(a.extent(0)), nrhs = impl::nrhs_of(b);
  if (n == 0 || nrhs == 0) return {};
  if (!impl::mixed_refines(exec, opt)) return impl::posv_double(exec, uplo, a, b, x, opt, -1);
  const impl::MixedWork<typename ExecSpace::memory_space> work(n, nrhs);
  return impl::posv_mixed_run<ExecSpace>(exec, uplo, a, b, x, opt, work, nullptr);
}

template <class AView, class BView, class XView>
PosvMixedResult posv_mixed(const Uplo uplo, const AView& a, const BView& b, const XView& x,
                           const PosvMixedOptions& opt = {}) {
  return posv_mixed(typename AView::execution_space(), uplo, a, b, x, opt);
}

// posv_mixed for solvers that solve with a matrix of the same order again and again: the plan
// owns the float copy, the refinement's blocks and scratch (nothing is allocated or freed per
// call), and factors the float copy through a PotrfPlan (on CUDA a recorded graph from the
// second call on).
//
//   kolesky::PosvMixedPlan<Kokkos::Cuda> plan(exec, n, nrhs, kolesky::Uplo::Lower, opt);
//   for (...) auto r = plan.posv(A, B, X);  // as posv_mixed(exec, uplo, A, B, X, opt)
//
// B and X may have fewer columns than the plan was made for. Memory: n x n floats plus
// n x nrhs floats and doubles, held until the plan is destroyed; where the double path is
// taken up front (refines() false) none of that, and the factor is a PotrfPlan<Exec, double>'s.
template <class ExecSpace>
class PosvMixedPlan {
 public:
  PosvMixedPlan(const ExecSpace& exec, const int n, const int nrhs, const Uplo uplo,
                const PosvMixedOptions& opt = {})
      : exec_(exec), n_(n), nrhs_(nrhs), uplo_(uplo), opt_(opt),
        refines_(impl::mixed_refines(exec, opt)),
        work_(n > 0 && refines_ ? n : 0, nrhs > 0 && refines_ ? nrhs : 0) {
    if (n < 0) impl::throw_invalid("PosvMixedPlan", "the order must be >= 0, got ", n);
    if (nrhs < 0)
      impl::throw_invalid("PosvMixedPlan", "the right-hand sides must be >= 0, got ", nrhs);
    if (refines_) {
      const impl::FastFloatScope fast(opt.fast_factor);
      factor_.reset(new PotrfPlan<ExecSpace, float>(exec, n, Uplo::Lower, opt.potrf));
    } else {
      dfactor_.reset(new PotrfPlan<ExecSpace, double>(exec, n, uplo, opt.potrf));
    }
  }

  int order() const { return n_; }
  int max_rhs() const { return nrhs_; }
  Uplo uplo() const { return uplo_; }
  const ExecSpace& space() const { return exec_; }
  // Whether posv refines from a float factor here (else every call takes the double path at
  // once and returns iterations = -1; PosvMixedOptions::factor).
  bool refines() const { return refines_; }

  template <class AView, class BView, class XView>
  PosvMixedResult posv(const AView& a, const BView& b, const XView& x) {
    const impl::Region region("kolesky::PosvMixedPlan::posv");
    if (int(a.extent(0)) != n_ || int(a.extent(1)) != n_)
      impl::throw_invalid("PosvMixedPlan::posv", "the plan is for order ", n_, " but A is ",
                          a.extent(0), " x ", a.extent(1));
    impl::check_mixed<ExecSpace>("PosvMixedPlan::posv", a, b, x);
    const int nrhs = impl::nrhs_of(b);
    if (nrhs > nrhs_)
      impl::throw_invalid("PosvMixedPlan::posv", "the plan is for ", nrhs_,
                          " right-hand sides at most but B has ", nrhs);
    if (n_ == 0 || nrhs == 0) return {};
    if (!refines_) return impl::posv_double(exec_, uplo_, a, b, x, opt_, -1, dfactor_.get());
    return impl::posv_mixed_run(exec_, uplo_, a, b, x, opt_, work_, factor_.get());
  }

 private:
  ExecSpace exec_;
  int n_, nrhs_;
  Uplo uplo_;
  PosvMixedOptions opt_;
  bool refines_;
  impl::MixedWork<typename ExecSpace::memory_space> work_;
  std::unique_ptr<PotrfPlan<ExecSpace, float>> factor_;
  std::unique_ptr<PotrfPlan<ExecSpace, double>> dfactor_;
};

}  // namespace kolesky
