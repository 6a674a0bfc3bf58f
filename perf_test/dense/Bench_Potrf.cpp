// Dense Cholesky of one matrix: Kolesky's variants against LAPACK (host), cuSOLVER (CUDA) and
// a Kokkos Kernels composition, all in one process on the same matrices.
//
//   kolesky_perf_dense [--n=250,500,...] [--quick] [--algos] [--nb=256,512] [--nrhs=1,100]
//                      [--solve-n=...] [benchmark flags]
//
// potrs (solve with a factor made once) and posv (factor and solve) run for each nrhs of
// --nrhs on the sizes of --solve-n (default: --n's); --nrhs=0 leaves them out.
// --algos adds every variant (blocked forms with native and vendor level-3 steps, each panel
// width of --nb, with and without lookahead; the seed schemes; the one-team kernels).
//
// Timing is manual: the matrix is restored, the device fenced, then only the factorization is
// timed. Every benchmark checks its result after timing (a solve against a known solution)
// and reports an error instead of a number when the result is wrong.
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <Kolesky.hpp>
#include "Kolesky_PerfCommon.hpp"
#include <Kolesky_Cusolver.hpp>
#include <Kolesky_KokkosKernelsPotrf.hpp>
#include <Kolesky_Lapack.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft, Exec::memory_space>;
template <class T>
using Vector = Kokkos::View<T*, Exec::memory_space>;

// Symmetric, entries in [-1, 1], diagonal n + 1: SPD (diagonally dominant), well conditioned.
template <class T>
Matrix<T> make_spd(int n) {
  Matrix<T> a("A0", n, n);
  Kokkos::Random_XorShift64_Pool<Exec> pool(12345);
  Kokkos::fill_random(a, pool, T(-1), T(1));
  Kokkos::parallel_for(
      "symmetrize", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {n, n}),
      KOKKOS_LAMBDA(int i, int j) {
        if (i < j) a(i, j) = a(j, i);
        if (i == j) a(i, i) = T(n + 1);
      });
  Kokkos::fence();
  return a;
}

// Solve with the factor in `l` (lower) for b = A0 x with x = 1, 2, ...; max relative error.
template <class T>
double solve_error(const Matrix<T>& a0, const Matrix<T>& l) {
  const int n = int(a0.extent(0));
  Vector<T> b("b", n);
  Kokkos::parallel_for(
      "rhs", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(int i) {
        T s = 0;
        for (int k = 0; k < n; ++k) s += a0(i, k) * T(1 + k % 7);
        b(i) = s;
      });
  kolesky::potrs(Exec(), kolesky::Uplo::Lower, l, b);
  double err = 0;
  Kokkos::parallel_reduce(
      "err", Kokkos::RangePolicy<Exec>(0, n),
      KOKKOS_LAMBDA(int i, double& e) {
        const double d = double(b(i)) - double(1 + i % 7);
        e = (d < 0 ? -d : d) > e ? (d < 0 ? -d : d) : e;
      },
      Kokkos::Max<double>(err));
  return err / 7.0;
}

template <class T>
bool check(benchmark::State& state, int info, const Matrix<T>& a0, const Matrix<T>& l) {
  if (info != 0) {
    state.SkipWithError(("info = " + std::to_string(info)).c_str());
    return false;
  }
  const double err = solve_error(a0, l);
  const double tol = std::is_same<T, float>::value ? 1e-3 : 1e-10;
  state.counters["err"] = err;
  if (!(err < tol)) {
    state.SkipWithError(("wrong result: relative error " + std::to_string(err)).c_str());
    return false;
  }
  return true;
}

void set_counters(benchmark::State& state, int n, std::size_t elem) {
  const double flops = double(n) * n * n / 3.0;
  const double bytes = double(n) * (n + 1) * elem;  // one triangle read and written once
  state.counters["n"] = n;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <class T>
void kolesky_potrf(benchmark::State& state, kolesky::PotrfOptions opt) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  // Untimed first call: handles, streams and lazily loaded kernels are made here.
  Kokkos::deep_copy(a, a0);
  int info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a, opt);
  for (auto _ : state) {
    Kokkos::deep_copy(a, a0);
    Exec().fence();
    Kokkos::Timer t;
    info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a, opt);  // synchronous
    state.SetIterationTime(t.seconds());
  }
  kolesky::perf::break_if_asked(a);
  if (check(state, info, a0, a)) set_counters(state, n, sizeof(T));
}

// The float factor posv_mixed's fast_factor makes: cuBLAS's updates on the TF32 tensor cores
// (10-bit mantissas: only info is checked, the refinement makes up the accuracy).
void kolesky_potrf_tf32(benchmark::State& state, const kolesky::PotrfOptions opt) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<float>(n);
  Matrix<float> a("A", n, n);
  const kolesky::impl::FastFloatScope fast(true);
  Kokkos::deep_copy(a, a0);
  int info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a, opt);
  for (auto _ : state) {
    Kokkos::deep_copy(a, a0);
    Exec().fence();
    Kokkos::Timer t;
    info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a, opt);
    state.SetIterationTime(t.seconds());
  }
  if (info != 0) state.SkipWithError(("info = " + std::to_string(info)).c_str());
  state.counters["err"] = solve_error(a0, a);  // ~1e-3 from TF32 products; refinement's job
  set_counters(state, n, sizeof(float));
}

// A PotrfPlan made once, the same matrix every iteration (on CUDA: graph replays).
template <class T>
void kolesky_plan_potrf(benchmark::State& state, kolesky::PotrfOptions opt) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  kolesky::PotrfPlan<Exec, T> plan(Exec(), n, kolesky::Uplo::Lower, opt);
  int info = 0;
  for (int w = 0; w < 2; ++w) {  // untimed: the direct first call, then the recording
    Kokkos::deep_copy(a, a0);
    info = plan.potrf(a);
  }
  for (auto _ : state) {
    Kokkos::deep_copy(a, a0);
    Exec().fence();
    Kokkos::Timer t;
    info = plan.potrf(a);
    state.SetIterationTime(t.seconds());
  }
  state.counters["graph"] = plan.uses_graph() ? 1 : 0;
  kolesky::perf::break_if_asked(a);
  if (check(state, info, a0, a)) set_counters(state, n, sizeof(T));
}

// The first call of a fresh process is not measurable here (this process is warm); the
// first call of a new plan is: it includes the plan's set-up (workspace, stream).
template <class T>
void kolesky_plan_first(benchmark::State& state) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  int info = 0;
  for (auto _ : state) {
    Kokkos::deep_copy(a, a0);
    Exec().fence();
    Kokkos::Timer t;
    kolesky::PotrfPlan<Exec, T> plan(Exec(), n, kolesky::Uplo::Lower);
    info = plan.potrf(a);
    state.SetIterationTime(t.seconds());
  }
  if (check(state, info, a0, a)) set_counters(state, n, sizeof(T));
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOLESKY_HAVE_CUBLAS)
// cuBLAS GEMM C -= A A^T (n x n), the ceiling the large-n factorization is compared with.
template <class T>
void cublas_gemm(benchmark::State& state) {
  const int n = int(state.range(0));
  Matrix<T> a("A", n, n), c("C", n, n);
  Kokkos::Random_XorShift64_Pool<Exec> pool(7);
  Kokkos::fill_random(a, pool, T(-1), T(1));
  Kokkos::fence();
  kolesky::impl::vendor_gemm(Exec(), false, true, n, n, n, a.data(), n, a.data(), n, c.data(), n);
  for (auto _ : state) {
    Exec().fence();
    Kokkos::Timer t;
    kolesky::impl::vendor_gemm(Exec(), false, true, n, n, n, a.data(), n, a.data(), n, c.data(), n);
    Exec().fence();
    state.SetIterationTime(t.seconds());
  }
  state.counters["n"] = n;
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * double(n) * n * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
#endif

#ifdef KOKKOS_ENABLE_CUDA
// --trace: every step of one factorization with its duration, against the wall time (the
// critical-path tool of docs/performance_log.md).
// Median seconds of `reps` untraced calls after one warm-up (a restored from a0 before each);
// info of the last call.
template <class T>
double untraced_median(const Matrix<T>& a, const Matrix<T>& a0, const kolesky::PotrfOptions& opt,
                       const int reps, int& info) {
  std::vector<double> s;
  for (int rep = 0; rep <= reps; ++rep) {
    Kokkos::deep_copy(a, a0);
    Exec().fence();
    Kokkos::Timer t;
    info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a, opt);
    if (rep > 0) s.push_back(t.seconds());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

template <class T>
void trace_one(const std::string& label, int n, kolesky::PotrfOptions opt) {
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  int info = 0;
  // Before the warm-up: its record buffer's zero fill (~100 MB) would flush L2, where the
  // warm-up leaves the kernels' code (round 191: +17 us at n = 1000 for a call after it).
  kolesky::impl::StepTrace tr(Exec().cuda_stream());
  const double median_ms = untraced_median(a, a0, opt, 5, info) * 1e3;
  Kokkos::deep_copy(a, a0);
  Exec().fence();
  kolesky::impl::StepTrace::current() = &tr;
  Kokkos::Timer t;
  info |= kolesky::potrf(Exec(), kolesky::Uplo::Lower, a, opt);
  const double wall = t.seconds() * 1e3;
  kolesky::impl::StepTrace::current() = nullptr;
  std::ostringstream title;
  title << label << " n=" << n << " " << (sizeof(T) == 8 ? "double" : "float")
        << " untraced median " << median_ms << " ms, info " << info;
  tr.report(stdout, title.str(), wall);
  std::fflush(stdout);
}

// What trace_pair puts between its two calls: nothing, the first matrix's restore (queued),
// 2 ms of the host waiting on an idle GPU, or 2 x 96 MB copied (more than L2 holds).
enum class Between { Nothing, Restore, Idle, Flush };
constexpr Between kBetweens[] = {Between::Nothing, Between::Restore, Between::Idle, Between::Flush};
const char* between_name(const Between w) {
  switch (w) {
    case Between::Nothing: return "back to back";
    case Between::Restore: return "with a restore between";
    case Between::Idle: return "with 2 ms idle between";
    default: return "with 2 x 96 MB copied between";
  }
}

// Two traced calls on two matrices with `between` between them: the second's first columns
// against the steady ones say what a cold start costs and what takes the first call's code
// out of the caches.
template <class T>
void trace_pair(const std::string& label, int n, kolesky::PotrfOptions opt, const Between between) {
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n), b("B", n, n);
  const std::size_t flush = between == Between::Flush ? std::size_t(12) << 20 : 0;
  Kokkos::View<double*, Kokkos::CudaSpace> f0("F0", flush), f1("F1", flush);
  int info = 0;
  kolesky::impl::StepTrace t1(Exec().cuda_stream()), t2(Exec().cuda_stream());  // as above
  untraced_median(a, a0, opt, 3, info);
  Kokkos::deep_copy(a, a0);
  Kokkos::deep_copy(b, a0);
  Exec().fence();
  Kokkos::Timer t;
  kolesky::impl::StepTrace::current() = &t1;
  info |= kolesky::potrf(Exec(), kolesky::Uplo::Lower, b, opt);
  kolesky::impl::StepTrace::current() = nullptr;
  if (between == Between::Restore) Kokkos::deep_copy(Exec(), b, a0);
  if (between == Between::Flush) Kokkos::deep_copy(Exec(), f1, f0);
  if (between == Between::Idle) {
    Exec().fence();
    const auto w0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(2)) {
    }
  }
  kolesky::impl::StepTrace::current() = &t2;
  info |= kolesky::potrf(Exec(), kolesky::Uplo::Lower, a, opt);
  kolesky::impl::StepTrace::current() = nullptr;
  Exec().fence();
  const double wall = t.seconds() * 1e3;
  for (int k = 0; k < 2; ++k) {
    std::ostringstream title;
    title << label << " n=" << n << " " << (sizeof(T) == 8 ? "double" : "float") << ", "
          << (k == 0 ? "first" : "second") << " of two calls " << between_name(between)
          << " (both: wall " << wall << " ms), info " << info;
    (k == 0 ? t1 : t2).report(stdout, title.str(), wall);
  }
  std::fflush(stdout);
}

// The split kernel's phases (n <= 256; the kernel forced at every such order): per panel, lane
// 0 of each warp stamps clock64() at its start, after the panel's sums are reduced, after the
// diagonal block is factored (its warp), after the look-ahead, past the first barrier and after
// the row solves. Summed over the panels: where one matrix's ~3-4 us per panel go.
template <class T>
void split_trace_one(const int n) {
  namespace bi = kolesky::batched::impl;
  auto& knobs = kolesky::impl::StagedKnobs::get();
  const auto saved = knobs;
  knobs.split_min = 1;
  knobs.split_max = kolesky::impl::kCudaSplitMaxN;
  const char* const tn = sizeof(T) == 8 ? "double" : "float";
  const char* const dots = knobs.mma() ? "DMMA" : "FFMA";
  if (!kolesky::impl::cuda_split<T>(Exec(), n)) {
    std::printf("split kernel n=%d %s: not on this device\n", n, tn);
    knobs = saved;
    return;
  }
  constexpr int P = bi::kSplitTracePoints;
  const int panels = (n + bi::kStagedPanel - 1) / bi::kStagedPanel;
  Kokkos::View<long long*, Kokkos::CudaSpace> tr("split trace", std::size_t(panels) * 32 * P);
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  int info = 0;
  const double median_us = untraced_median(a, a0, {}, 7, info) * 1e6;
  Kokkos::deep_copy(a, a0);
  Exec().fence();
  knobs.split_trace = tr.data();
  info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a);
  Exec().fence();
  knobs = saved;
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tr);
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, Exec().cuda_device());
  const auto at = [&](int p, int w, int i) { return h(std::size_t((p * 32 + w) * P + i)); };
  // Only clock reads taken before a barrier are used: ptxas may hoist a read past the barrier
  // that follows it in the same asm statement (such reads came out earlier than other warps'
  // arrivals), so a barrier is taken to release when its last warp arrives. Per panel, from
  // the previous panel's last solve (or the kernel's first stamp): the busy warps' sums (A);
  // the factor warp's sums with their reduction; its factor (F) and look-ahead after it (LF);
  // the other warps' look-ahead with their reduction (LO); from the last arrival at the first
  // barrier to the last solve (S: the barrier's release, the factor's loads, the row solves).
  double span = 0, sa = 0, sfa = 0, sf = 0, slf = 0, slo = 0, ss = 0;
  int factor_last = 0;
  long long prev = 0, first = 0;
  for (int p = 0; p < panels; ++p) {
    long long start = 0, arrive = 0, solved = 0, a_end = 0, lo = 0;
    int fw = -1, last_w = -1;
    for (int w = 0; w < 32; ++w) {
      if (at(p, w, 3) == 0) continue;  // warps not in the block
      if (p == 0 && at(p, w, 0) != 0)
        start = start == 0 ? at(p, w, 0) : std::min(start, at(p, w, 0));
      if (at(p, w, 3) > arrive) arrive = at(p, w, 3), last_w = w;
      solved = std::max(solved, at(p, w, 5));
      if (at(p, w, 2) != 0) fw = w;
      if (at(p, w, 1) != 0) a_end = std::max(a_end, at(p, w, 1));
    }
    if (p == 0) first = prev = start;
    for (int w = 0; w < 32; ++w)
      if (at(p, w, 1) != 0 && w != fw) lo = std::max(lo, at(p, w, 3) - at(p, w, 1));
    span += double(solved - prev);
    sa += double(a_end - prev);
    if (fw >= 0) {
      sfa += double(at(p, fw, 1) - prev);
      sf += double(at(p, fw, 2) - at(p, fw, 1));
      slf += double(at(p, fw, 3) - at(p, fw, 2));
      factor_last += last_w == fw;
    }
    slo += double(lo);
    ss += double(solved - arrive);
    prev = solved;
  }
  const double cyc_us = khz > 0 ? 1e3 / khz : 0;  // us per cycle at the device's clock
  std::printf("split kernel n=%d %s (%s): %d panels, info %d, untraced potrf median %.1f us; panels "
              "%.0f cycles (%.1f us at %d MHz), per panel: span %.0f | sums (busy warps) %.0f | "
              "factor warp's sums %.0f | factor "
              "%.0f | factor warp's look-ahead %.0f | others' look-ahead %.0f | barrier 1 + solve "
              "%.0f; the factor warp arrived last at barrier 1 in %d of %d panels\n",
              n, tn, dots, panels, info, median_us, double(prev - first),
              double(prev - first) * cyc_us, khz / 1000, span / panels, sa / panels,
              sfa / panels, sf / panels,
              slf / panels, slo / panels, ss / panels, factor_last, panels);
  std::fflush(stdout);
}

// The one-launch solve from inside (potrs, one right-hand side): per block row, when its
// inverse was done, when its last tile's solution block arrived and when it published its own;
// the chain's step (publish to publish), its local part (arrival to publish) and how late the
// inverses were.
template <class T>
void potrs_trace_one(const int n) {
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n), b("B", n, 1);
  Kokkos::deep_copy(a, a0);
  kolesky::potrf(Exec(), kolesky::Uplo::Lower, a);
  Kokkos::deep_copy(b, T(1));
  const kolesky::impl::Strided<const T> l{a.data(), 1, std::ptrdiff_t(a.stride(1))};
  const kolesky::impl::Strided<T> bs{b.data(), 1, std::ptrdiff_t(b.stride(1))};
  const int nt = (n + kolesky::impl::kPotrsFlowTile - 1) / kolesky::impl::kPotrsFlowTile;
  Kokkos::View<unsigned long long*, Kokkos::CudaSpace> tr("trace", 8 * std::size_t(nt));
  kolesky::impl::potrs_flow<T>(Exec(), n, 1, l, bs);  // untimed: workspace, module load
  Kokkos::fence();
  kolesky::impl::potrs_flow<T>(Exec(), n, 1, l, bs, tr.data());
  Kokkos::fence();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tr);
  unsigned long long t0 = ~0ull, t1 = 0;
  for (int k = 0; k < 2 * nt; ++k) t0 = std::min(t0, h(4 * k)), t1 = std::max(t1, h(4 * k + 3));
  std::printf("potrs trace %s n=%d: %d block rows a sweep, kernel span %.1f us\n",
              std::is_same<T, double>::value ? "double" : "float", n, nt, (t1 - t0) * 1e-3);
  for (int sweep = 0; sweep < 2; ++sweep) {
    std::vector<double> step, local, late_inv;
    double first = 0, last = 0;
    for (int r = 0; r < nt; ++r) {  // r-th block row of the sweep, in chain order
      const int k = sweep == 0 ? r : nt + r;
      const auto* q = &h(4 * k);
      if (r == 0) first = (q[3] - t0) * 1e-3;
      if (r == nt - 1) last = (q[3] - t0) * 1e-3;
      if (r > 0) {
        const auto* p = &h(4 * (k - 1));
        step.push_back((double(q[3]) - double(p[3])) * 1e-3);
        local.push_back((double(q[3]) - double(q[2])) * 1e-3);
        late_inv.push_back(std::max(0.0, (double(q[1]) - double(p[3])) * 1e-3));
      }
    }
    auto med = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    double late = 0;
    for (double x : late_inv) late += x;
    std::printf("  %s: first block published at %.1f us, last at %.1f us; step median %.2f us "
                "(arrival to publish %.2f us); inverses late by %.1f us in all\n",
                sweep == 0 ? "forward " : "backward", first, last, med(step), med(local), late);
  }
  std::fflush(stdout);
}

#ifdef KOLESKY_HAVE_CUBLAS
// The inverted-diagonal-block solve (PotrsInverse) in parts, warm, median of 20 calls: the
// host's time to enqueue a call, the call's time, the inverse kernel alone, the sweeps alone.
template <class T>
void inv_profile_one(const int n, const int nrhs) {
  namespace ki = kolesky::impl;
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n), b("B", n, nrhs);
  Kokkos::deep_copy(a, a0);
  kolesky::potrf(Exec(), kolesky::Uplo::Lower, a);
  Kokkos::deep_copy(b, T(1));
  const ki::Strided<const T> l{a.data(), 1, std::ptrdiff_t(a.stride(1))};
  const ki::Strided<T> bs{b.data(), 1, std::ptrdiff_t(b.stride(1))};
  const int nb = ki::potrs_inv_nb(n);
  ki::potrs_inv<T>(Exec(), n, nrhs, l, bs);  // workspace, module load
  Kokkos::fence();
  auto& work = ki::per_stream<ki::PotrsInvWork<T>>(Exec());
  std::vector<double> enq, call, inv, sw;
  using clk = std::chrono::steady_clock;
  const auto us = [](clk::time_point t0, clk::time_point t1) {
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
  };
  for (int it = 0; it < 20; ++it) {
    Kokkos::deep_copy(b, T(1));
    Kokkos::fence();
    auto t0 = clk::now();
    ki::potrs_inv<T>(Exec(), n, nrhs, l, bs);
    auto t1 = clk::now();
    Kokkos::fence();
    auto t2 = clk::now();
    ki::potrs_inv_invert<T>(Exec(), n, nb, l, work);
    Kokkos::fence();
    auto t3 = clk::now();
    ki::potrs_inv_sweeps<T>(Exec(), n, nrhs, nb, l, bs, work);
    Kokkos::fence();
    auto t4 = clk::now();
    enq.push_back(us(t0, t1)), call.push_back(us(t0, t2)), inv.push_back(us(t2, t3));
    sw.push_back(us(t3, t4));
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // The host's cost of one cuBLAS GEMM of the sweeps' shape: through vendor_gemm, raw (the
  // handle's stream already set), and cublasSetStream alone.
  double t_vendor = 0, t_raw = 0, t_set = 0;
  if (n > nb) {
    const int m = n - nb, lda = int(a.stride(1)), ldb = int(b.stride(1));
    auto h = ki::cublas_handle(Exec());
    const T one = 1;
    constexpr int reps = 100;
    Kokkos::fence();
    auto t0 = clk::now();
    for (int it = 0; it < reps; ++it)
      ki::vendor_gemm(Exec(), false, false, m, nrhs, nb, a.data() + nb, lda, b.data(), ldb,
                      b.data() + nb, ldb);
    t_vendor = us(t0, clk::now()) / reps;
    Kokkos::fence();
    t0 = clk::now();
    for (int it = 0; it < reps; ++it) {
      if constexpr (std::is_same<T, double>::value)
        cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, nrhs, nb, &one, a.data() + nb, lda, b.data(),
                    ldb, &one, b.data() + nb, ldb);
      else
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, nrhs, nb, &one, a.data() + nb, lda, b.data(),
                    ldb, &one, b.data() + nb, ldb);
    }
    t_raw = us(t0, clk::now()) / reps;
    Kokkos::fence();
    t0 = clk::now();
    for (int it = 0; it < reps; ++it) cublasSetStream(h, Exec().cuda_stream());
    t_set = us(t0, clk::now()) / reps;
    Kokkos::fence();
  }
  const int nk = (n + nb - 1) / nb;
  std::printf("inv host per GEMM %s n=%d nrhs=%d: vendor_gemm %.2f us, raw %.2f us, "
              "cublasSetStream %.2f us\n",
              std::is_same<T, double>::value ? "double" : "float", n, nrhs, t_vendor, t_raw, t_set);
  std::printf("inv profile %s n=%d nrhs=%d nb=%d: %d GEMMs; enqueue %.1f us, call %.1f us, "
              "inverse %.1f us, sweeps %.1f us (%.1f us a GEMM)\n",
              std::is_same<T, double>::value ? "double" : "float", n, nrhs, nb, 4 * nk - 2,
              med(enq), med(call), med(inv), med(sw), med(sw) / (4 * nk - 2));
  std::fflush(stdout);
}
#endif

// What a call costs besides its kernel's work (host timer, median of 50, the GPU idle before
// each), around an empty kernel of the dataflow launch's shape (a team of 256 per SM, its
// scratch): the kernel and a fence; a 4-byte read to the host by deep_copy; the two in a row;
// a call's frame (memset of the device info word, the kernel, the word copied to pinned
// memory, a fence); the kernel writing a pinned word itself and a fence.
struct EmptyTeams {
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<256, 1>>;
  int* word = nullptr;  // written 0 by team 0 when set (a pinned host word)
  KOKKOS_INLINE_FUNCTION void operator()(const Policy::member_type& m) const {
    if (word != nullptr && m.league_rank() == 0 && m.team_rank() == 0) *(volatile int*)word = 0;
  }
};
void launch_floor() {
  const int teams = Exec().cuda_device_prop().multiProcessorCount;
  Kokkos::View<int*, Exec::memory_space> d("kolesky::floor_info", 1);
  auto h = Kokkos::create_mirror_view(d);
  Kokkos::View<int*, Kokkos::CudaHostPinnedSpace> pinned("kolesky::floor_pinned", 1);
  const auto launch = [&](int* word = nullptr) {
    EmptyTeams::Policy policy(Exec(), teams, 256);
    policy.set_scratch_size(
        0, Kokkos::PerTeam(kolesky::impl::FlowPotrf<double>::kScratchElems * sizeof(double) + 64));
    Kokkos::parallel_for("kolesky::empty_teams", policy, EmptyTeams{word});
  };
  const cudaStream_t st = Exec().cuda_stream();
  std::vector<double> as_call, mapped;
  for (int rep = 0; rep < 51; ++rep) {
    Exec().fence();
    Kokkos::Timer t;
    cudaMemsetAsync(d.data(), 0, sizeof(int), st);
    launch();
    cudaMemcpyAsync(pinned.data(), d.data(), sizeof(int), cudaMemcpyDeviceToHost, st);
    Exec().fence();
    const double tc = t.seconds();
    Exec().fence();
    t.reset();
    launch(pinned.data());
    Exec().fence();
    const double tm = t.seconds();
    if (rep > 0) as_call.push_back(tc), mapped.push_back(tm);
  }
  std::vector<double> k, r, b;
  for (int rep = 0; rep < 51; ++rep) {
    Exec().fence();
    Kokkos::Timer t;
    launch();
    Exec().fence();
    const double tk = t.seconds();
    t.reset();
    Kokkos::deep_copy(h, d);
    const double tr = t.seconds();
    Exec().fence();
    t.reset();
    launch();
    Kokkos::deep_copy(h, d);
    const double tb = t.seconds();
    if (rep > 0) k.push_back(tk), r.push_back(tr), b.push_back(tb);
  }
  const auto med = [](const std::vector<double>& v) { return kolesky::perf::median_of(v) * 1e6; };
  std::printf("# launch floor (host timer, median of 50, GPU idle before each): an empty %d-team "
              "kernel + fence %.1f us, a 4-byte read to the host %.1f us, the two %.1f us\n",
              teams, med(k), med(r), med(b));
  std::printf("# launch floor: memset + empty kernel + copy to pinned + fence (a call's frame) "
              "%.1f us; the kernel writing the pinned word itself + fence %.1f us\n",
              med(as_call), med(mapped));
  std::fflush(stdout);
}

void trace_all(const std::vector<int>& sizes) {
  using kolesky::Algo;
  launch_floor();
  for (int n : sizes) {
    if (n <= kolesky::impl::kCudaSplitMaxN) {
      split_trace_one<double>(n);
      split_trace_one<float>(n);
      continue;
    }
    kolesky::PotrfOptions before;  // the default before issue 15
    before.algo = Algo::Blocked;
    before.block_size = n <= 4096 ? 256 : 512;
    before.panel = kolesky::Panel::Recursive;
    trace_one<double>("before (Blocked, recursive panels)", n, before);
    trace_one<double>("Default", n, {});
    for (const Between w : kBetweens) trace_pair<double>("Default", n, {}, w);
    kolesky::PotrfOptions bl;
    bl.algo = Algo::Blocked;
    bl.block_size = 512;
    trace_one<double>("Blocked nb512 dataflow panels", n, bl);
    if (n > kolesky::impl::kFlowWholeMax) {
      kolesky::PotrfOptions fl;
      fl.algo = Algo::Dataflow;
      trace_one<double>("Dataflow (one launch)", n, fl);
    }
    trace_one<float>("Default", n, {});
    for (const Between w : kBetweens) trace_pair<float>("Default", n, {}, w);
  }
}
#endif

#ifdef KOLESKY_HAVE_KOKKOSKERNELS
template <class T>
void kk_potrf(benchmark::State& state) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  int info = 0;
  for (auto _ : state) {
    Kokkos::deep_copy(a, a0);
    Exec().fence();
    Kokkos::Timer t;
    info = kolesky::baselines::kk_blocked_potrf(Exec(), a);
    state.SetIterationTime(t.seconds());
  }
  if (check(state, info, a0, a)) set_counters(state, n, sizeof(T));
}
#endif

#ifdef KOLESKY_HAVE_LAPACK
template <class T>
void lapack_potrf(benchmark::State& state) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<T>(n);
  auto h0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a0);
  auto h = Kokkos::create_mirror(Kokkos::HostSpace(), a0);
  int info = 0;
  for (auto _ : state) {
    std::memcpy(h.data(), h0.data(), sizeof(T) * h.size());
    Kokkos::Timer t;
    info = kolesky::baselines::lapack_potrf(kolesky::Uplo::Lower, n, h.data(), n);
    state.SetIterationTime(t.seconds());
  }
  Matrix<T> l("L", n, n);
  Kokkos::deep_copy(l, h);
  if (check(state, info, a0, l)) set_counters(state, n, sizeof(T));
}

// Kolesky's default potrf and LAPACK's, alternating on the same matrix (host builds): the
// ratio a noisy 2-core machine reproduces (kolesky::perf::paired).
template <class T>
void paired_potrf(benchmark::State& state, const bool ways) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  auto h0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a0);
  auto h = Kokkos::create_mirror(Kokkos::HostSpace(), a0);
  int info = 0, linfo = 0;
  Kokkos::deep_copy(a, a0);
  info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a);  // untimed first call
  const auto restore = kolesky::perf::restore_pair<Exec>(a, a0, h, h0);
  const auto mine = [&] { info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a); };
  const auto theirs = [&] {
    linfo = kolesky::baselines::lapack_potrf(kolesky::Uplo::Lower, n, h.data(), n);
  };
  if (ways)
    kolesky::perf::paired_ways(state, restore, mine, theirs);
  else
    kolesky::perf::paired(state, restore, mine, theirs);
  kolesky::perf::break_if_asked(a);
  if (linfo != 0) state.SkipWithError(("LAPACK info = " + std::to_string(linfo)).c_str());
  if (check(state, info, a0, a)) set_counters(state, n, sizeof(T));
}
#endif

#ifdef KOLESKY_HAVE_CUSOLVER
template <class T>
void cusolver_potrf(benchmark::State& state) {
  const int n = int(state.range(0));
  const auto a0 = make_spd<T>(n);
  Matrix<T> a("A", n, n);
  kolesky::baselines::CusolverPotrf<T> solver(Exec(), kolesky::Uplo::Lower, n, a.data(), n);
  Kokkos::deep_copy(a, a0);
  solver.run(a.data());  // untimed first call, as for Kolesky
  for (auto _ : state) {
    Kokkos::deep_copy(a, a0);
    Exec().fence();
    Kokkos::Timer t;
    solver.run(a.data());
    Exec().fence();
    state.SetIterationTime(t.seconds());
  }
  if (check(state, solver.info(), a0, a)) set_counters(state, n, sizeof(T));
}
#endif

// Solves with nrhs right-hand sides: potrs alone (the factor made once, untimed) or posv
// (factor and solve timed together), by Kolesky and by each baseline on the same A and B.
enum class Solver {
  Kolesky,
  KoleskyTrsm,
  KoleskyFlow,
  KoleskyWarp,
  KoleskyTeam,
  KoleskyInv,
  KoleskyPlan,
  KokkosKernels,
  Lapack,
  Cusolver
};

// X(i, j) = 1 + (i + j) % 7 and B0 = A0 X. (Free functions: nvcc takes no device lambdas in
// constructors.)
template <class T>
void make_rhs(const Matrix<T>& a0, const Matrix<T>& x, const Matrix<T>& b0) {
  const int n = int(a0.extent(0)), nrhs = int(x.extent(1));
  Kokkos::parallel_for(
      "rhs", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {n, nrhs}),
      KOKKOS_LAMBDA(int i, int j) {
        x(i, j) = T(1 + (i + j) % 7);
        T s = 0;
        for (int k = 0; k < n; ++k) s += a0(i, k) * T(1 + (k + j) % 7);
        b0(i, j) = s;
      });
  Kokkos::fence();
}

// max |B - X| / max |X|.
template <class T>
double solution_error(const Matrix<T>& b, const Matrix<T>& x) {
  const int n = int(b.extent(0)), m = int(b.extent(1));
  double e = 0;
  Kokkos::parallel_reduce(
      "err", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {n, m}),
      KOKKOS_LAMBDA(int i, int j, double& r) {
        const double d = double(b(i, j)) - double(x(i, j));
        const double ad = d < 0 ? -d : d;
        r = ad > r ? ad : r;
      },
      Kokkos::Max<double>(e));
  return e / 7.0;
}

template <class T>
struct SolveProblem {
  Matrix<T> a0, a, x, b0, b;
  SolveProblem(int n, int nrhs)
      : a0(make_spd<T>(n)), a("A", n, n), x("X", n, nrhs), b0("B0", n, nrhs), b("B", n, nrhs) {
    make_rhs(a0, x, b0);
  }
  double error() const { return solution_error(b, x); }
};

template <class T>
void solve_bench(benchmark::State& state, Solver who, bool with_factor) {
  const int n = int(state.range(0)), nrhs = int(state.range(1));
  SolveProblem<T> p(n, nrhs);
  int info = 0;
  std::function<void()> factor, solve;
  auto ha = Kokkos::create_mirror_view(Kokkos::HostSpace(), p.a);
  auto hb = Kokkos::create_mirror_view(Kokkos::HostSpace(), p.b);
  auto h0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.a0);
  auto hb0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.b0);
#ifdef KOLESKY_HAVE_CUSOLVER
  std::unique_ptr<kolesky::baselines::CusolverPotrf<T>> cs;
#endif
  std::unique_ptr<kolesky::PotrfPlan<Exec, T>> plan;
  switch (who) {
    case Solver::Kolesky:
      factor = [&] { info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, p.a); };
      solve = [&] { kolesky::potrs(Exec(), kolesky::Uplo::Lower, p.a, p.b); };
      break;
    case Solver::KoleskyTrsm:  // CUDA: the blocked TRSM the one-launch solves replaced
    case Solver::KoleskyFlow:  // CUDA: the one-launch solve by block rows wherever it applies
    case Solver::KoleskyWarp:  // CUDA: the warp-per-column solve wherever it applies
    case Solver::KoleskyTeam:  // CUDA: the team-per-column solve wherever it applies
    case Solver::KoleskyInv:   // CUDA: the inverted-diagonal-block GEMM sweeps (n > 16)
      factor = [&] { info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, p.a); };
      solve = [&, who] {
        auto& knob = kolesky::impl::PotrsKnobs::get();
        auto& wk = kolesky::impl::PotrsWarpKnobs::get();
        auto& ik = kolesky::impl::PotrsInvKnobs::get();
        knob.flow = who == Solver::KoleskyFlow ? 2 : 0;
        wk.warp = who == Solver::KoleskyWarp ? 2 : 0;
        wk.team = who == Solver::KoleskyTeam ? 2 : 0;
        const int inv = ik.inv;
        ik.inv = who == Solver::KoleskyInv ? 2 : 0;
        kolesky::potrs(Exec(), kolesky::Uplo::Lower, p.a, p.b);
        wk = {};
        knob.flow = 1;
        ik.inv = inv;
      };
      break;
    case Solver::KoleskyPlan:  // a PotrfPlan made once (CUDA: its solves replay a graph)
      plan = std::make_unique<kolesky::PotrfPlan<Exec, T>>(Exec(), n, kolesky::Uplo::Lower);
      factor = [&] { info = plan->potrf(p.a); };
      solve = [&] { plan->potrs(p.a, p.b); };
      break;
    case Solver::KokkosKernels:
#ifdef KOLESKY_HAVE_KOKKOSKERNELS
      factor = [&] { info = kolesky::baselines::kk_blocked_potrf(Exec(), p.a); };
      solve = [&] {
        KokkosBlas::trsm("L", "L", "N", "N", T(1), p.a, p.b);
        KokkosBlas::trsm("L", "L", "T", "N", T(1), p.a, p.b);
        Exec().fence();
      };
#endif
      break;
    case Solver::Lapack:
#ifdef KOLESKY_HAVE_LAPACK
      // Host memory throughout (this baseline only runs where the host can reach the Views).
      factor = [&] { info = kolesky::baselines::lapack_potrf(kolesky::Uplo::Lower, n, ha.data(), n); };
      solve = [&] {
        kolesky::baselines::lapack_potrs(kolesky::Uplo::Lower, n, nrhs, ha.data(), n, hb.data(), n);
      };
#endif
      break;
    case Solver::Cusolver:
#ifdef KOLESKY_HAVE_CUSOLVER
      cs = std::make_unique<kolesky::baselines::CusolverPotrf<T>>(Exec(), kolesky::Uplo::Lower, n,
                                                                  p.a.data(), n);
      factor = [&] {
        cs->run(p.a.data());
        Exec().fence();
      };
      solve = [&] {
        cs->solve(p.a.data(), p.b.data(), nrhs, n);
        Exec().fence();
      };
#endif
      break;
  }
  const bool host_copy = who == Solver::Lapack;
  auto reset_a = [&] {
    if (host_copy) std::memcpy(ha.data(), h0.data(), sizeof(T) * ha.size());
    else Kokkos::deep_copy(p.a, p.a0);
  };
  auto reset_b = [&] {
    if (host_copy) std::memcpy(hb.data(), hb0.data(), sizeof(T) * hb.size());
    else Kokkos::deep_copy(p.b, p.b0);
  };
  reset_a();
  reset_b();
  factor();  // untimed first calls: handles, workspaces, lazily loaded kernels
  solve();
  if (plan) {  // a plan records on its second call with the same matrices
    reset_a();
    reset_b();
    factor();
    solve();
  }
  if (!with_factor) {
    reset_a();
    factor();
  }
  for (auto _ : state) {
    if (with_factor) reset_a();
    reset_b();
    Exec().fence();
    Kokkos::Timer t;
    if (with_factor) factor();
    solve();
    state.SetIterationTime(t.seconds());
  }
  if (host_copy) Kokkos::deep_copy(p.b, hb);
  kolesky::perf::break_if_asked(p.b);
  if (info != 0) {
    state.SkipWithError(("info = " + std::to_string(info)).c_str());
    return;
  }
  const double err = p.error();
  state.counters["err"] = err;
  if (!(err < (std::is_same<T, float>::value ? 1e-3 : 1e-10))) {
    state.SkipWithError(("wrong result: relative error " + std::to_string(err)).c_str());
    return;
  }
  const double nn = double(n);
  const double flops = 2 * nn * nn * nrhs + (with_factor ? nn * nn * nn / 3 : 0);
  // The triangle read twice (once per triangular solve) and B read and written twice, plus
  // one triangle read and written by the factorization.
  const double bytes = (nn * (nn + 1) + 4 * nn * nrhs + (with_factor ? nn * (nn + 1) : 0)) * sizeof(T);
  state.counters["n"] = n;
  state.counters["nrhs"] = nrhs;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// posv_mixed (float factor, double refinement) on the same problems as the double posv.
// With `plan`, a PosvMixedPlan made once (untimed, with two untimed calls: the direct one and,
// on CUDA, the float factor's recording).
// `factor`: PosvMixedOptions::factor (Auto is what a user gets; Float forces the refinement
// where Auto would take the double path).
void posv_mixed_bench(benchmark::State& state, const bool fast, const kolesky::PotrfOptions opt,
                      const bool plan, const kolesky::MixedFactor factor = kolesky::MixedFactor::Auto) {
  const int n = int(state.range(0)), nrhs = int(state.range(1));
  SolveProblem<double> p(n, nrhs);
  Matrix<double> x("X", n, nrhs);
  kolesky::PosvMixedResult r;
  kolesky::PosvMixedOptions o;
  o.fast_factor = fast;
  o.potrf = opt;
  o.factor = factor;
  std::unique_ptr<kolesky::PosvMixedPlan<Exec>> pl;
  if (plan) pl.reset(new kolesky::PosvMixedPlan<Exec>(Exec(), n, nrhs, kolesky::Uplo::Lower, o));
  const auto call = [&] {
    return plan ? pl->posv(p.a, p.b0, x) : kolesky::posv_mixed(Exec(), kolesky::Uplo::Lower, p.a, p.b0, x, o);
  };
  for (int w = 0; w < (plan ? 2 : 1); ++w) {  // untimed first calls
    Kokkos::deep_copy(p.a, p.a0);
    r = call();
  }
  for (auto _ : state) {
    Kokkos::deep_copy(p.a, p.a0);
    Exec().fence();
    Kokkos::Timer t;
    r = call();
    state.SetIterationTime(t.seconds());
  }
  Kokkos::deep_copy(p.b, x);
  kolesky::perf::break_if_asked(p.b);
  state.counters["iterations"] = r.iterations;
  const double err = p.error();
  state.counters["err"] = err;
  if (r.info != 0 || !(err < 1e-10)) {
    state.SkipWithError(("info " + std::to_string(r.info) + ", error " + std::to_string(err)).c_str());
    return;
  }
  const double nn = double(n);
  state.counters["n"] = n;
  state.counters["nrhs"] = nrhs;
  state.counters["GFLOP/s"] = benchmark::Counter((nn * nn * nn / 3 + 2 * nn * nn * nrhs) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<int>& mixed_nbs() {
  static std::vector<int> v{0};
  return v;
}

template <class T>
void register_solves(const std::string& tname, const std::vector<int>& sizes,
                     const std::vector<int>& nrhs) {
  const bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  std::vector<std::pair<std::string, Solver>> who = {{"kolesky", Solver::Kolesky}};
#ifdef KOKKOS_ENABLE_CUDA
  who.push_back({"kolesky_trsm", Solver::KoleskyTrsm});
  who.push_back({"kolesky_flow", Solver::KoleskyFlow});
  who.push_back({"kolesky_warp", Solver::KoleskyWarp});
  who.push_back({"kolesky_team", Solver::KoleskyTeam});
  who.push_back({"kolesky_inv", Solver::KoleskyInv});
  who.push_back({"kolesky_plan", Solver::KoleskyPlan});
#endif
#ifdef KOLESKY_HAVE_KOKKOSKERNELS
  who.push_back({"kokkoskernels", Solver::KokkosKernels});
#endif
#ifdef KOLESKY_HAVE_LAPACK
  if (host) who.push_back({"lapack", Solver::Lapack});
#endif
#ifdef KOLESKY_HAVE_CUSOLVER
  who.push_back({"cusolver", Solver::Cusolver});
#endif
  (void)host;
  if (std::is_same<T, double>::value) {
    // --mixed-nb: the float factor's panel width (0: its default; -1: Algo::Recursive; below
    // -1: width -nb with recursive panels, i.e. cuBLAS TRSM below the diagonal block).
    for (const int nb : mixed_nbs()) {
      kolesky::PotrfOptions opt;
      if (nb > 0) opt.algo = kolesky::Algo::Blocked, opt.block_size = nb;
      if (nb == -1) opt.algo = kolesky::Algo::Recursive;
      if (nb < -1)
        opt.algo = kolesky::Algo::Blocked, opt.block_size = -nb, opt.panel = kolesky::Panel::Recursive;
      const std::string tag = nb == 0    ? ""
                              : nb == -1 ? "/recursive"
                              : nb < 0   ? "/nb" + std::to_string(-nb) + "/recpanel"
                                         : "/nb" + std::to_string(nb);
      for (const bool plan : {false, true})
        for (const bool fast : {false, true}) {
          if (!fast && nb != 0) continue;
          const std::string name = std::string(plan ? "kolesky_plan" : "kolesky") +
                                   (fast ? "_posv_mixed_tf32" : "_posv_mixed") + tag + "<double>";
          auto* b = benchmark::RegisterBenchmark(name.c_str(), [fast, opt, plan](benchmark::State& st) {
            posv_mixed_bench(st, fast, opt, plan);
          });
          for (int n : sizes)
            for (int r : nrhs) b->Args({n, r});
          b->UseManualTime()->Unit(benchmark::kMillisecond);
        }
      if (nb == 0) {  // the float factor's refinement even where Auto takes the double path
        auto* b = benchmark::RegisterBenchmark("kolesky_posv_mixed_float<double>", [opt](benchmark::State& st) {
          posv_mixed_bench(st, false, opt, false, kolesky::MixedFactor::Float);
        });
        for (int n : sizes)
          for (int r : nrhs) b->Args({n, r});
        b->UseManualTime()->Unit(benchmark::kMillisecond);
      }
      auto* b = benchmark::RegisterBenchmark(("kolesky_potrf_tf32" + tag + "<float>").c_str(),
                                             [opt](benchmark::State& st) { kolesky_potrf_tf32(st, opt); });
      for (int n : sizes) b->Arg(n);
      b->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
  for (bool with_factor : {false, true})
    for (const auto& w : who) {
      const Solver s = w.second;
      const std::string name = w.first + (with_factor ? "_posv<" : "_potrs<") + tname + ">";
      auto* b = benchmark::RegisterBenchmark(
          name.c_str(), [s, with_factor](benchmark::State& st) { solve_bench<T>(st, s, with_factor); });
      for (int n : sizes)
        for (int r : nrhs) b->Args({n, r});
      b->UseManualTime()->Unit(benchmark::kMillisecond);
    }
}

template <class T>
void register_all(const std::string& tname, const std::vector<int>& sizes, bool all_algos,
                  const std::vector<int>& nbs) {
  using kolesky::Algo;
  using kolesky::Blas;
  // max_n: variants whose time grows with launches per column stop there.
  auto reg_opt = [&](const std::string& label, kolesky::PotrfOptions opt, int max_n) {
    auto* b = benchmark::RegisterBenchmark(("kolesky_potrf/" + label + "<" + tname + ">").c_str(),
                                           [opt](benchmark::State& s) { kolesky_potrf<T>(s, opt); });
    for (int n : sizes)
      if (n <= max_n) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  };
  auto reg = [&](const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark((name + "<" + tname + ">").c_str(), fn);
    for (int n : sizes) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  };
  const int big = 1 << 30;
  reg_opt("Default", {}, big);
  {
    auto* b = benchmark::RegisterBenchmark(("kolesky_plan_potrf<" + tname + ">").c_str(),
                                           [](benchmark::State& s) { kolesky_plan_potrf<T>(s, {}); });
    for (int n : sizes) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  if (all_algos) {
    {
      auto* b = benchmark::RegisterBenchmark(("kolesky_plan_first<" + tname + ">").c_str(),
                                             [](benchmark::State& s) { kolesky_plan_first<T>(s); });
      for (int n : sizes) b->Arg(n);
      b->UseManualTime()->Unit(benchmark::kMillisecond);
    }
    kolesky::PotrfOptions fo;
    fo.algo = Algo::Dataflow;
    reg_opt("Dataflow", fo, 16384);
    for (int nb : nbs) {
      kolesky::PotrfOptions po;
      po.algo = Algo::Blocked;
      po.block_size = nb;
      po.panel = kolesky::Panel::Dataflow;
      reg_opt("Blocked/vendor/nb" + std::to_string(nb) + "/flowpanel", po, big);
      po.panel = kolesky::Panel::Recursive;
      reg_opt("Blocked/vendor/nb" + std::to_string(nb) + "/recpanel", po, big);
    }
    for (Blas blas : {Blas::Vendor, Blas::Native}) {
      const std::string bl = blas == Blas::Vendor ? "vendor" : "native";
      kolesky::PotrfOptions o;
      o.blas = blas;
      o.algo = Algo::Recursive;
      reg_opt(std::string("Recursive/") + bl, o, big);
      for (int nb : nbs) {
        o.block_size = nb;
        o.algo = Algo::Blocked;
        o.lookahead = true;
        reg_opt("Blocked/" + bl + "/nb" + std::to_string(nb), o, big);
        if (!Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
          o.lookahead = false;
          reg_opt("Blocked/" + bl + "/nb" + std::to_string(nb) + "/nolookahead", o, big);
          o.lookahead = true;
        }
        o.algo = Algo::BlockedLeft;
        reg_opt("BlockedLeft/" + bl + "/nb" + std::to_string(nb), o, big);
      }
    }
    // The seeds' column schemes: launches per column, so small sizes only.
    kolesky::PotrfOptions o;
    o.algo = Algo::ColumnKernels;
    reg_opt("ColumnKernels", o, 2048);
    o.algo = Algo::RightLookingKernels;
    reg_opt("RightLookingKernels", o, 2048);
    for (int cut : {0, 128, 512}) {
      o.algo = Algo::CroutCutoff;
      o.tail_cutoff = cut;
      reg_opt("CroutCutoff/" + std::to_string(cut), o, 2048);
    }
    // The one-team kernels are quadratic in barriers.
    for (auto algo : {Algo::Crout, Algo::Banachiewicz, Algo::RightLooking, Algo::TiledLeft}) {
      kolesky::PotrfOptions t;
      t.algo = algo;
      t.block_size = algo == Algo::TiledLeft ? 32 : 0;
      reg_opt(kolesky::name(algo), t, 1000);
    }
  }
#ifdef KOLESKY_HAVE_KOKKOSKERNELS
  reg("kokkoskernels_blocked_potrf", [](benchmark::State& s) { kk_potrf<T>(s); });
#endif
#ifdef KOLESKY_HAVE_LAPACK
  if (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
    reg("lapack_potrf", [](benchmark::State& s) { lapack_potrf<T>(s); });
    reg("paired_vs_lapack_potrf", [](benchmark::State& s) { paired_potrf<T>(s, false); });
    // The ways differ only where the pool's one region runs.
    std::vector<int> mid;
    for (int n : sizes)
      if (n <= kolesky::impl::kHostCholThreads) mid.push_back(n);
    if (!mid.empty()) {
      auto* b = benchmark::RegisterBenchmark(("paired_ways_vs_lapack_potrf<" + tname + ">").c_str(),
                                             [](benchmark::State& s) { paired_potrf<T>(s, true); });
      for (int n : mid) b->Arg(n);
      b->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
#endif
#ifdef KOLESKY_HAVE_CUSOLVER
  reg("cusolver_potrf", [](benchmark::State& s) { cusolver_potrf<T>(s); });
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOLESKY_HAVE_CUBLAS)
  {
    auto* b = benchmark::RegisterBenchmark(("cublas_gemm<" + tname + ">").c_str(),
                                           [](benchmark::State& s) { cublas_gemm<T>(s); });
    for (int n : sizes)
      if (n >= 8192) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
#endif
}

void set_split(const int lo, const int hi) {
#ifdef KOKKOS_ENABLE_CUDA
  if (lo >= 0) kolesky::impl::StagedKnobs::get().split_min = lo;
  if (hi >= 0) kolesky::impl::StagedKnobs::get().split_max = hi;
#else
  (void)lo, (void)hi;
#endif
}

void set_split_mma(const int on) {
#ifdef KOKKOS_ENABLE_CUDA
  kolesky::impl::StagedKnobs::get().split_mma = on;
#else
  (void)on;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  // Measurement knobs that set one int each: --name=N.
  namespace ki = kolesky::impl;
  auto& flow = ki::FlowKnobs::get();
  const std::pair<const char*, int*> int_knobs[] = {
      {"--panel-teams=", &flow.panel_teams},   {"--side-priority=", &flow.side_priority},
      {"--la-side=", &flow.la_side},           {"--split-first=", &flow.split_first},
      {"--below-cols=", &flow.below_cols},     {"--split-rows=", &flow.split_rows},
      {"--flow-mma=", &flow.mma},              {"--flow-teams=", &flow.teams},
      {"--split-chain=", &flow.split_chain},    {"--float-mma=", &flow.float_mma},
      {"--tile-inv=", &flow.tile_inv},          {"--factor-mma=", &flow.factor_mma},
      {"--syrk16=", &flow.syrk16},             {"--flow-raw=", &flow.raw_launch},
      {"--flow-mapped=", &flow.mapped_info},
      {"--host-team=", &ki::HostTeamKnobs::get().force},
      {"--residual=", &ki::ResidualKnobs::get().fused}, {"--syrk-block=", &ki::syrk_block()},
      {"--inv-nb=", &ki::PotrsInvKnobs::get().nb}, {"--potrs-inv=", &ki::PotrsInvKnobs::get().inv},
      {"--inv-cpt=", &ki::PotrsInvKnobs::get().cpt}, {"--inv-staged=", &ki::PotrsInvKnobs::get().staged}};
  const auto set_int_knob = [&](const char* arg) {
    for (const auto& k : int_knobs)
      if (std::strncmp(arg, k.first, std::strlen(k.first)) == 0) {
        *k.second = std::atoi(arg + std::strlen(k.first));
        return true;
      }
    return false;
  };
  const bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  std::string sizes = host ? "250,500,1000,2048" : "250,500,1000,2048,4096,8192";
  bool all_algos = false, trace = false;
  std::string potrs_trace, inv_profile, inv_profile_type = "both";
  std::string nbs = host ? "128,256" : "256,512,1024";
  std::string nrhs = "1,100", solve_sizes;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--n=", 4) == 0)
      sizes = argv[i] + 4;
    else if (std::strcmp(argv[i], "--quick") == 0)
      sizes = "64,200", nrhs = "1,8";
    else if (std::strncmp(argv[i], "--nrhs=", 7) == 0)
      nrhs = argv[i] + 7;
    else if (std::strncmp(argv[i], "--solve-n=", 10) == 0)
      solve_sizes = argv[i] + 10;
    else if (std::strncmp(argv[i], "--nb=", 5) == 0)
      nbs = argv[i] + 5;
    else if (std::strcmp(argv[i], "--algos") == 0)
      all_algos = true;
    else if (std::strcmp(argv[i], "--trace") == 0)
      trace = true;
    else if (std::strncmp(argv[i], "--potrs-trace=", 14) == 0)
      potrs_trace = argv[i] + 14;
    else if (std::strncmp(argv[i], "--inv-profile=", 14) == 0)
      inv_profile = argv[i] + 14;
    else if (std::strncmp(argv[i], "--inv-profile-type=", 19) == 0)
      inv_profile_type = argv[i] + 19;
    else if (set_int_knob(argv[i]))
      continue;
    else if (std::strncmp(argv[i], "--split-mma=", 12) == 0)  // measurement knob
      set_split_mma(std::atoi(argv[i] + 12));
    else if (std::strncmp(argv[i], "--staged-split-min=", 19) == 0)  // measurement knob
      set_split(std::atoi(argv[i] + 19), -1);
    else if (std::strncmp(argv[i], "--staged-split-max=", 19) == 0)  // measurement knob
      set_split(-1, std::atoi(argv[i] + 19));
    else if (std::strncmp(argv[i], "--mixed-nb=", 11) == 0)  // measurement knob
      mixed_nbs() = kolesky::perf::parse_ints(argv[i] + 11);
    else
      rest.push_back(argv[i]);
  }
  if (!inv_profile.empty()) {
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOLESKY_HAVE_CUBLAS)
    for (const int n : kolesky::perf::parse_ints(inv_profile))
      for (const int r : kolesky::perf::parse_ints(nrhs)) {
        if (inv_profile_type != "float") inv_profile_one<double>(n, r);
        if (inv_profile_type != "double") inv_profile_one<float>(n, r);
      }
#else
    std::fprintf(stderr, "--inv-profile: CUDA builds with cuBLAS only\n");
#endif
    return 0;
  }
  if (!potrs_trace.empty()) {
#ifdef KOKKOS_ENABLE_CUDA
    for (const int n : kolesky::perf::parse_ints(potrs_trace)) {
      potrs_trace_one<double>(n);
      potrs_trace_one<float>(n);
    }
#else
    std::fprintf(stderr, "--potrs-trace: CUDA builds only\n");
#endif
    return 0;
  }
  if (trace) {
#ifdef KOKKOS_ENABLE_CUDA
    trace_all(kolesky::perf::parse_ints(sizes));
#else
    std::fprintf(stderr, "--trace: CUDA builds only\n");
#endif
    return 0;
  }
  int rargc = int(rest.size());
  benchmark::Initialize(&rargc, rest.data());
  kolesky::perf::add_context<Exec>(KOLESKY_GIT_HASH);
  const auto nbv = kolesky::perf::parse_ints(nbs);
  register_all<double>("double", kolesky::perf::parse_ints(sizes), all_algos, nbv);
  register_all<float>("float", kolesky::perf::parse_ints(sizes), all_algos, nbv);
  // Solves on the same sizes unless --solve-n names others; --nrhs=0 leaves them out.
  const auto sn = kolesky::perf::parse_ints(solve_sizes.empty() ? sizes : solve_sizes);
  const auto rv = kolesky::perf::parse_ints(nrhs);
  if (!rv.empty() && rv[0] > 0) {
    register_solves<double>("double", sn, rv);
    register_solves<float>("float", sn, rv);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
