// Batched Cholesky of many small SPD matrices: Kolesky in each layout against cuSOLVER
// potrfBatched (CUDA), a loop of LAPACK potrf (host, one matrix per thread) and Kokkos
// Kernels' batched LU (KokkosBatched::SerialLU and TeamLU: Kokkos Kernels has no batched
// Cholesky).
//
//   kolesky_perf_batched [--n=4,8,16,32,64,128] [--batch=N[,N...]] [--quick] [--kernels]
//                        [--max-gib=G] [bm flags]
//
// Each benchmark takes (n, batch) arguments; batch 0 means the default count below. A list
// of batches sweeps the batch size (time per matrix should stay flat); (n, batch) points
// whose one copy of the batch exceeds --max-gib (host 1, GPU 8) are left out.
//
// GB/s counts each matrix read once and written once (2 n^2 s bytes), as anchors.md does.
// Every benchmark checks a sample of its factors after timing.
#include <benchmark/benchmark.h>

#include <KokkosBatched_LU_Decl.hpp>
#include <KokkosBatched_LU_Serial_Impl.hpp>
#include <KokkosBatched_LU_Team_Impl.hpp>
#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>
#include "Kolesky_PerfCommon.hpp"
#include "batched/Kolesky_BatchPerfCommon.hpp"
#include <Kolesky_Cusolver.hpp>
#include <Kolesky_Lapack.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>
#ifdef KOLESKY_HAVE_CUSOLVER
#include <cusolverDn.h>
#endif

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
constexpr bool kHost = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
// Batch count: the requested one, else 131072 on the GPU (at most 2 GiB of matrices) and
// 8192 on the host.
int batch_for(int n, std::size_t s, int requested) {
  if (requested > 0) return requested;
  std::size_t b = kHost ? 8192 : 131072;
  const std::size_t cap = std::size_t(2) << 30;
  while (b > 1024 && b * n * n * s > cap) b /= 2;
  return int(b);
}

template <class Batch>
void fill_spd(const Batch& a) {
  kolesky::perf::fill_spd<Exec>(a);
}

// Residual ratio of a few factored matrices against the originals (lower factor).
template <class Batch>
double check_sample(const Batch& orig, const Batch& fact) {
  auto ho = kolesky::batched::create_mirror_view(orig);
  auto hf = kolesky::batched::create_mirror_view(fact);
  kolesky::batched::deep_copy(ho, orig);
  kolesky::batched::deep_copy(hf, fact);
  const int n = orig.rows();
  double worst = 0;
  for (int p : {0, 1, orig.size() / 2, orig.size() - 1}) {
    double rn = 0, an = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j) {
        double s = 0;
        for (int k = 0; k <= j; ++k) s += double(hf(p, i, k)) * double(hf(p, j, k));
        rn = std::max(rn, std::abs(s - double(ho(p, i, j))));
        an = std::max(an, std::abs(double(ho(p, i, j))));
      }
    const double eps = sizeof(typename Batch::value_type) == 4 ? 1.2e-7 : 2.2e-16;
    worst = std::max(worst, rn / (n * an * eps));
  }
  return worst;
}

void counters(benchmark::State& st, int n, int batch, std::size_t s) {
  st.counters["n"] = n;
  st.counters["batch"] = batch;
  st.counters["GB/s"] = benchmark::Counter(2.0 * batch * n * n * s * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOP/s"] = benchmark::Counter(double(batch) * n * n * n / 3.0 * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

bool verify(benchmark::State& st, double ratio, int bad) {
  st.counters["resid"] = ratio;
  if (bad != 0) {
    st.SkipWithError(("info != 0 for " + std::to_string(bad) + " matrices").c_str());
    return false;
  }
  if (!(ratio < 30)) {
    st.SkipWithError(("wrong factor: residual ratio " + std::to_string(ratio)).c_str());
    return false;
  }
  return true;
}

template <class Info>
int count_bad(const Info& info) {
  return kolesky::perf::count_failed<Exec>(info);
}

template <class Batch>
Batch make(const std::string& label, int batch, int n) {
  return kolesky::perf::make_batch<Exec, Batch>(label, batch, n);
}

template <class Batch>
void kolesky_batched(benchmark::State& st, kolesky::batched::Kernel kernel) {
  using T = typename Batch::value_type;
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  auto a0 = make<Batch>("A0", batch, n), a = make<Batch>("A", batch, n);
  fill_spd(a0);
  Kokkos::View<int*, Mem> info("info", batch);
  kolesky::batched::Options opt;
  opt.kernel = kernel;
  for (auto _ : st) {
    Kokkos::deep_copy(a.data, a0.data);
    Exec().fence();
    Kokkos::Timer t;
    kolesky::batched::potrf(Exec(), kolesky::Uplo::Lower, a, info, opt);
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  kolesky::perf::break_first_if_asked(a.data);
  if (verify(st, check_sample(a0, a), count_bad(info))) counters(st, n, batch, sizeof(T));
}

// Orders uniform in 1..nmax from a fixed generator (scripts/torch_batched.py draws the same).
std::vector<int> mixed_orders(const int nmax, const int batch) {
  std::vector<int> orders(batch);
  unsigned x = 12345u;
  for (auto& n : orders) {
    x = x * 1664525u + 1013904223u;
    n = 1 + int((x >> 8) % unsigned(nmax));
  }
  return orders;
}

// A batch of mixed orders (VarBatch), uniform at random in 1..n, against a uniform strided
// batch (Auto) with the same number of matrices and the same bytes: order
// n_eq = sqrt(mean of n_p^2), timed in the same run. "mixed/uniform" is the measure
// (target <= 1.5). GB/s counts the mixed batch's own bytes (2 n_p^2 s per matrix).
template <class T>
void kolesky_batched_mixed(benchmark::State& st) {
  using kolesky::batched::VarBatch;
  const int nmax = int(st.range(0));
  const int batch = st.range(1) > 0 ? int(st.range(1)) : (kHost ? 2048 : 65536);
  const std::vector<int> orders = mixed_orders(nmax, batch);
  double sum2 = 0, flops = 0;
  for (const int n : orders) {
    sum2 += double(n) * n;
    flops += double(n) * n * n / 3.0;
  }
  VarBatch<T, Mem> a0("A0", orders), a("A", orders);
  fill_spd(a0);
  Kokkos::View<int*, Mem> info("info", batch);
  for (auto _ : st) {
    Kokkos::deep_copy(a.values(), a0.values());
    Exec().fence();
    Kokkos::Timer t;
    kolesky::batched::potrf(Exec(), kolesky::Uplo::Lower, a, info);
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  // Residuals of the first 64 matrices, each copied back through its own slice.
  double worst = 0;
  {
    auto off = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.offsets());
    for (int p = 0; p < batch && p < 64; ++p) {
      const int n = orders[p];
      const auto r = Kokkos::make_pair(off(p), off(p) + std::int64_t(n) * n);
      auto o = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Kokkos::subview(a0.values(), r));
      auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Kokkos::subview(a.values(), r));
      double rn = 0, an = 0;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int k = 0; k <= j; ++k) s += double(f(i + k * n)) * double(f(j + k * n));
          rn = std::max(rn, std::abs(s - double(o(i + j * n))));
          an = std::max(an, std::abs(double(o(i + j * n))));
        }
      const double eps = sizeof(T) == 4 ? 1.2e-7 : 2.2e-16;
      worst = std::max(worst, rn / (n * an * eps));
    }
  }
  if (!verify(st, worst, count_bad(info))) return;
  // The uniform batch of the same bytes, timed the same way.
  const int neq = int(std::lround(std::sqrt(sum2 / batch)));
  using S = kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem>;
  S u0("U0", batch, neq, neq), u("U", batch, neq, neq);
  fill_spd(u0);
  std::vector<double> ts;
  for (int rep = 0; rep < 7; ++rep) {
    Kokkos::deep_copy(u.data, u0.data);
    Exec().fence();
    Kokkos::Timer t;
    kolesky::batched::potrf(Exec(), kolesky::Uplo::Lower, u, info);
    Exec().fence();
    ts.push_back(t.seconds());
  }
  std::sort(ts.begin(), ts.end());
  st.counters["n"] = nmax;
  st.counters["batch"] = batch;
  st.counters["n_eq"] = neq;
  st.counters["uniform_ms"] = ts[ts.size() / 2] * 1e3;
  st.counters["GB/s"] = benchmark::Counter(2.0 * sum2 * sizeof(T) * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // Reported as the uniform time; the table divides (mixed ms / uniform_ms).
}

// Words a solve with one right-hand side must move for a matrix of order n: the factor's
// triangle read once, B read and written.
double solve_words(const int n) { return 0.5 * double(n) * (n + 1) + 2.0 * n; }

// One right-hand side per matrix of a uniform batch, (batch, n), the same for every solve
// benchmark.
template <class T>
Kokkos::View<T**, Kokkos::LayoutRight, Mem> make_rhs(const int batch, const int n) {
  Kokkos::View<T**, Kokkos::LayoutRight, Mem> b0("B0", batch, n);
  Kokkos::parallel_for(
      "kolesky::perf::fill_rhs", Kokkos::RangePolicy<Exec>(0, batch), KOKKOS_LAMBDA(const int p) {
        for (int i = 0; i < n; ++i) b0(p, i) = T(1) + T(0.125) * T((p + i) % 7);
      });
  return b0;
}

// Median of 7 timed solves with the GPU's warp solve switched off (the team solve it
// replaced at orders 17-256), each after reset(): the before of the same process.
template <class Reset, class Solve>
double team_solve_ms(const Reset& reset, const Solve& solve) {
  auto& knob = kolesky::impl::PotrsWarpKnobs::get();
  const int saved = knob.batched;
  knob.batched = 0;
  std::vector<double> ts;
  for (int rep = 0; rep < 7; ++rep) {
    reset();
    Exec().fence();
    Kokkos::Timer t;
    solve();
    Exec().fence();
    ts.push_back(t.seconds());
  }
  knob.batched = saved;
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2] * 1e3;
}

// potrs of a uniform batch, one right-hand side each, with the factors of one potrf.
// Upper = false: the LayoutRight batch's Lower factor (row-major as L); true: its Upper
// factor (column-major as L, what cuSOLVER reads). GB/s as mixed_potrs.
template <class T>
void kolesky_batched_potrs(benchmark::State& st, const bool upper) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  const auto uplo = upper ? kolesky::Uplo::Upper : kolesky::Uplo::Lower;
  using S = kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem>;
  S a0("A0", batch, n, n), a("A", batch, n, n);
  fill_spd(a0);
  Kokkos::deep_copy(a.data, a0.data);
  const auto b0 = make_rhs<T>(batch, n);
  Kokkos::View<T**, Kokkos::LayoutRight, Mem> b("B", batch, n);
  Kokkos::View<int*, Mem> info("info", batch);
  kolesky::batched::potrf(Exec(), uplo, a, info);
  Exec().fence();
  for (auto _ : st) {
    Kokkos::deep_copy(b, b0);
    Exec().fence();
    Kokkos::Timer t;
    kolesky::batched::potrs(Exec(), uplo, a, b, info);
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  // Residuals of a few matrices (A0 holds both triangles).
  double worst = 0;
  {
    auto av = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a0.data);
    auto xv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
    auto rv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b0);
    const double eps = sizeof(T) == 4 ? 1.2e-7 : 2.2e-16;
    for (int p : {0, 1, batch / 2, batch - 1}) {
      double rn = 0, an = 0, xn = 0;
      for (int i = 0; i < n; ++i) {
        double s = 0;
        for (int j = 0; j < n; ++j) {
          s += double(av(p, i, j)) * double(xv(p, j));
          an = std::max(an, std::abs(double(av(p, i, j))));
        }
        rn = std::max(rn, std::abs(s - double(rv(p, i))));
        xn = std::max(xn, std::abs(double(xv(p, i))));
      }
      worst = std::max(worst, rn / (n * an * xn * eps));
    }
  }
  if (!verify(st, worst, count_bad(info))) return;
  st.counters["n"] = n;
  st.counters["batch"] = batch;
  if (!kHost) st.counters["team_ms"] = team_solve_ms([&] { Kokkos::deep_copy(b, b0); },
                                                     [&] { kolesky::batched::potrs(Exec(), uplo, a, b, info); });
  const double words = batch * solve_words(n);
  st.counters["GB/s"] = benchmark::Counter(words * sizeof(T) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * batch * double(n) * n * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// potrs of a mixed-order batch (one right-hand side each, orders as kolesky_batched/mixed)
// with the factors of one potrf. GB/s counts the least a solve must move: the factor's
// triangle read once and B read and written, (n_p (n_p + 1) / 2 + 2 n_p) s per matrix.
template <class T>
void kolesky_batched_mixed_potrs(benchmark::State& st) {
  using kolesky::batched::VarBatch;
  const int nmax = int(st.range(0));
  const int batch = st.range(1) > 0 ? int(st.range(1)) : (kHost ? 2048 : 65536);
  const std::vector<int> orders = mixed_orders(nmax, batch);
  double words = 0, flops = 0;
  for (const int n : orders) {
    words += solve_words(n);
    flops += 2.0 * double(n) * n;
  }
  VarBatch<T, Mem> a0("A0", orders), a("A", orders);
  VarBatch<T, Mem> b0("B0", a, 1), b("B", a, 1);
  fill_spd(a0);
  Kokkos::deep_copy(a.values(), a0.values());
  const auto bv = b0.values();
  Kokkos::parallel_for(
      "kolesky::perf::fill_rhs", Kokkos::RangePolicy<Exec>(0, bv.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { bv(i) = T(1) + T(0.125) * T(i % 7); });
  Kokkos::View<int*, Mem> info("info", batch);
  kolesky::batched::potrf(Exec(), kolesky::Uplo::Lower, a, info);
  Exec().fence();
  for (auto _ : st) {
    Kokkos::deep_copy(b.values(), b0.values());
    Exec().fence();
    Kokkos::Timer t;
    kolesky::batched::potrs(Exec(), kolesky::Uplo::Lower, a, b, info);
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  // Residuals |A x - b| / (n |A| |x| eps) of the first 64 matrices.
  double worst = 0;
  {
    auto offa = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a0.offsets());
    auto offb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b0.offsets());
    auto av = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a0.values());
    auto xv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.values());
    auto rv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b0.values());
    const double eps = sizeof(T) == 4 ? 1.2e-7 : 2.2e-16;
    for (int p = 0; p < batch && p < 64; ++p) {
      const int n = orders[p];
      double rn = 0, an = 0, xn = 0;
      for (int i = 0; i < n; ++i) {
        double s = 0;
        for (int j = 0; j < n; ++j) {  // A0's lower triangle holds the matrix
          const double aij = i >= j ? av(offa(p) + i + std::int64_t(j) * n) : av(offa(p) + j + std::int64_t(i) * n);
          s += aij * double(xv(offb(p) + j));
          an = std::max(an, std::abs(aij));
        }
        rn = std::max(rn, std::abs(s - double(rv(offb(p) + i))));
        xn = std::max(xn, std::abs(double(xv(offb(p) + i))));
      }
      worst = std::max(worst, rn / (n * an * xn * eps));
    }
  }
  if (!verify(st, worst, count_bad(info))) return;
  st.counters["n"] = nmax;
  st.counters["batch"] = batch;
  if (!kHost) st.counters["team_ms"] = team_solve_ms([&] { Kokkos::deep_copy(b.values(), b0.values()); },
                                                     [&] { kolesky::batched::potrs(Exec(), kolesky::Uplo::Lower, a, b, info); });
  st.counters["GB/s"] = benchmark::Counter(words * sizeof(T) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The cost of bringing a user's strided batch into the interleaved layout (one pass).
template <class T>
void convert_strided_to_interleaved(benchmark::State& st) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem> s("S", batch, n, n);
  kolesky::batched::InterleavedBatch<T, Mem> il("I", batch, n, n);
  fill_spd(s);
  for (auto _ : st) {
    Exec().fence();
    Kokkos::Timer t;
    kolesky::batched::copy(Exec(), s, il);
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  counters(st, n, batch, sizeof(T));
}

// And back: results in the interleaved layout unpacked into the user's strided batch.
template <class T>
void convert_interleaved_to_strided(benchmark::State& st) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem> s("S", batch, n, n);
  kolesky::batched::InterleavedBatch<T, Mem> il("I", batch, n, n);
  fill_spd(s);
  kolesky::batched::copy(Exec(), s, il);
  for (auto _ : st) {
    Exec().fence();
    Kokkos::Timer t;
    kolesky::batched::copy(Exec(), il, s);
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  counters(st, n, batch, sizeof(T));
}

// The copy roofline measured in the same run: one read and one write of the same bytes.
template <class T>
void copy_roofline(benchmark::State& st) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem> s("S", batch, n, n), d("D", batch, n, n);
  fill_spd(s);
  for (auto _ : st) {
    Exec().fence();
    Kokkos::Timer t;
    Kokkos::deep_copy(Exec(), d.data, s.data);
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  counters(st, n, batch, sizeof(T));
  st.counters["GFLOP/s"] = 0;
}

// KokkosBatched::SerialLU (a thread per matrix) or TeamLU (a team per matrix): Kokkos
// Kernels' way to factor a batch of small matrices.
template <class T, bool Team>
void kk_lu(benchmark::State& st) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  using B = kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem>;
  B a0("A0", batch, n, n), a("A", batch, n, n);
  fill_spd(a0);
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  const int team = kHost ? 1 : (n <= 32 ? 32 : 64);
  for (auto _ : st) {
    Kokkos::deep_copy(a.data, a0.data);
    Exec().fence();
    Kokkos::Timer t;
    auto v = a.data;
    if constexpr (Team) {
      Kokkos::parallel_for(
          "kk_team_lu", Policy(batch, team), KOKKOS_LAMBDA(const Member& member) {
            auto m = Kokkos::subview(v, member.league_rank(), Kokkos::ALL(), Kokkos::ALL());
            KokkosBatched::TeamLU<Member, KokkosBatched::Algo::LU::Unblocked>::invoke(member, m);
          });
    } else {
      Kokkos::parallel_for(
          "kk_serial_lu", Kokkos::RangePolicy<Exec>(0, batch), KOKKOS_LAMBDA(const int p) {
            auto m = Kokkos::subview(v, p, Kokkos::ALL(), Kokkos::ALL());
            KokkosBatched::SerialLU<KokkosBatched::Algo::LU::Unblocked>::invoke(m);
          });
    }
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  // LU, not Cholesky: no factor check against L L^T; report the time only.
  counters(st, n, batch, sizeof(T));
  st.counters["GFLOP/s"] = 0;  // LU does 2n^3/3 flops; the n^3/3 rate would mislead
}

#ifdef KOLESKY_HAVE_LAPACK
template <class T>
void lapack_loop(benchmark::State& st) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  // LAPACK wants column-major matrices: a (batch, n, n) LayoutRight buffer holds each matrix
  // row-major, which LAPACK reads as the transpose (the same symmetric matrix).
  kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem> d0("A0", batch, n, n);
  fill_spd(d0);
  // Separate host buffers: on a host build a mirror view would alias d0.
  using HB = kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Kokkos::HostSpace>;
  HB h0("h0", batch, n, n), h("h", batch, n, n);
  Kokkos::deep_copy(h0.data, d0.data);
  Kokkos::View<int*, Kokkos::HostSpace> info("info", batch);
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  for (auto _ : st) {
    std::memcpy(h.data.data(), h0.data.data(), sizeof(T) * h.data.size());
    Kokkos::Timer t;
    auto hv = h.data;
    Kokkos::parallel_for(
        "lapack_loop", Kokkos::RangePolicy<HostExec>(0, batch), [=](const int p) {
          // Row-major lower triangle = column-major upper triangle of the same matrix.
          info(p) = kolesky::baselines::lapack_potrf(kolesky::Uplo::Upper, n, &hv(p, 0, 0), n);
        });
    HostExec().fence();
    st.SetIterationTime(t.seconds());
  }
  int bad = 0;
  for (int p = 0; p < batch; ++p) bad += info(p) != 0;
  kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem> d("A", batch, n, n);
  kolesky::batched::deep_copy(d, h);
  if (verify(st, check_sample(d0, d), bad)) counters(st, n, batch, sizeof(T));
}
#endif

#ifdef KOLESKY_HAVE_CUSOLVER
template <class T>
void cusolver_batched(benchmark::State& st) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  // cuSOLVER wants column-major matrices behind an array of pointers.
  kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem> a0("A0", batch, n, n), a("A", batch, n, n);
  fill_spd(a0);
  Kokkos::View<int*, Mem> info("info", batch);
  Kokkos::View<std::uintptr_t*, Mem> ptrs("ptrs", batch);
  T* basep = a.data.data();
  Kokkos::parallel_for(
      "ptrs", Kokkos::RangePolicy<Exec>(0, batch),
      KOKKOS_LAMBDA(int p) { ptrs(p) = reinterpret_cast<std::uintptr_t>(basep + std::size_t(p) * n * n); });
  cusolverDnHandle_t h;
  kolesky::baselines::cusolver_check(cusolverDnCreate(&h), "create");
  kolesky::baselines::cusolver_check(cusolverDnSetStream(h, Exec().cuda_stream()), "stream");
  for (auto _ : st) {
    Kokkos::deep_copy(a.data, a0.data);
    Exec().fence();
    Kokkos::Timer t;
    // Row-major lower = column-major upper of the same symmetric matrix.
    if constexpr (std::is_same<T, double>::value)
      kolesky::baselines::cusolver_check(
          cusolverDnDpotrfBatched(h, CUBLAS_FILL_MODE_UPPER, n, reinterpret_cast<double**>(ptrs.data()), n,
                                  info.data(), batch),
          "potrfBatched");
    else
      kolesky::baselines::cusolver_check(
          cusolverDnSpotrfBatched(h, CUBLAS_FILL_MODE_UPPER, n, reinterpret_cast<float**>(ptrs.data()), n,
                                  info.data(), batch),
          "potrfBatched");
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  cusolverDnDestroy(h);
  if (verify(st, check_sample(a0, a), count_bad(info))) counters(st, n, batch, sizeof(T));
}
#endif

#ifdef KOLESKY_HAVE_CUSOLVER
// cusolverDn<t>potrsBatched (one right-hand side, column-major lower factors behind arrays
// of pointers: the LayoutRight batch's Upper triangle, as kolesky_batched/potrs_upper),
// after one potrfBatched.
template <class T>
void cusolver_potrs_batched(benchmark::State& st) {
  const int n = int(st.range(0)), batch = batch_for(n, sizeof(T), int(st.range(1)));
  kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Mem> a("A", batch, n, n);
  fill_spd(a);
  const auto b0 = make_rhs<T>(batch, n);
  Kokkos::View<T**, Kokkos::LayoutRight, Mem> b("B", batch, n);
  Kokkos::View<int*, Mem> info("info", batch), pinfo("pinfo", 1);
  Kokkos::View<std::uintptr_t*, Mem> ap("ap", batch), bp("bp", batch);
  T* abase = a.data.data();
  T* bbase = b.data();
  Kokkos::parallel_for(
      "ptrs", Kokkos::RangePolicy<Exec>(0, batch), KOKKOS_LAMBDA(int p) {
        ap(p) = reinterpret_cast<std::uintptr_t>(abase + std::size_t(p) * n * n);
        bp(p) = reinterpret_cast<std::uintptr_t>(bbase + std::size_t(p) * n);
      });
  cusolverDnHandle_t h;
  kolesky::baselines::cusolver_check(cusolverDnCreate(&h), "create");
  kolesky::baselines::cusolver_check(cusolverDnSetStream(h, Exec().cuda_stream()), "stream");
  T** const A = reinterpret_cast<T**>(ap.data());
  T** const B = reinterpret_cast<T**>(bp.data());
  if constexpr (std::is_same<T, double>::value)
    kolesky::baselines::cusolver_check(
        cusolverDnDpotrfBatched(h, CUBLAS_FILL_MODE_UPPER, n, A, n, info.data(), batch), "potrfBatched");
  else
    kolesky::baselines::cusolver_check(
        cusolverDnSpotrfBatched(h, CUBLAS_FILL_MODE_UPPER, n, A, n, info.data(), batch), "potrfBatched");
  for (auto _ : st) {
    Kokkos::deep_copy(b, b0);
    Exec().fence();
    Kokkos::Timer t;
    if constexpr (std::is_same<T, double>::value)
      kolesky::baselines::cusolver_check(
          cusolverDnDpotrsBatched(h, CUBLAS_FILL_MODE_UPPER, n, 1, A, n, B, n, pinfo.data(), batch),
          "potrsBatched");
    else
      kolesky::baselines::cusolver_check(
          cusolverDnSpotrsBatched(h, CUBLAS_FILL_MODE_UPPER, n, 1, A, n, B, n, pinfo.data(), batch),
          "potrsBatched");
    Exec().fence();
    st.SetIterationTime(t.seconds());
  }
  cusolverDnDestroy(h);
  if (count_bad(info) != 0) {
    st.SkipWithError("potrfBatched failed");
    return;
  }
  st.counters["n"] = n;
  st.counters["batch"] = batch;
  const double words = batch * solve_words(n);
  st.counters["GB/s"] = benchmark::Counter(words * sizeof(T) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
#endif

template <class T>
void register_all(const std::string& tn, const std::vector<int>& sizes,
                  const std::vector<int>& batches, bool kernels, double max_bytes) {
  using namespace kolesky::batched;
  auto reg = [&](const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark((name + "<" + tn + ">").c_str(), fn);
    for (int n : sizes)
      for (int bt : batches)  // points whose batch would not fit (a few copies are made) are left out
        if (double(bt) * n * n * sizeof(T) <= max_bytes) b->Args({n, bt});
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  };
  using S = StridedBatch<T, Kokkos::LayoutRight, Mem>;
  using I = InterleavedBatch<T, Mem>;
  using C = ChunkedBatch<T, Mem>;
  reg("kolesky_batched/strided", [](benchmark::State& s) { kolesky_batched<S>(s, Kernel::Auto); });
  reg("kolesky_batched/interleaved", [](benchmark::State& s) { kolesky_batched<I>(s, Kernel::Auto); });
  reg("kolesky_batched/chunked", [](benchmark::State& s) { kolesky_batched<C>(s, Kernel::Auto); });
  if (kernels) {
    for (Kernel k : {Kernel::ThreadDirect, Kernel::TeamScratch, Kernel::TeamRows, Kernel::RowRegisters,
                     Kernel::WarpStaged, Kernel::Registers}) {
      const std::string kn = name(k);
      reg("kolesky_batched/strided/" + kn, [k](benchmark::State& s) { kolesky_batched<S>(s, k); });
      reg("kolesky_batched/interleaved/" + kn, [k](benchmark::State& s) { kolesky_batched<I>(s, k); });
    }
  }
  {
    auto* b = benchmark::RegisterBenchmark(("kolesky_batched/mixed<" + tn + ">").c_str(),
                                           [](benchmark::State& s) { kolesky_batched_mixed<T>(s); });
    for (int n : sizes)
      if (n >= 8) b->Args({n, batches.size() == 1 ? batches[0] : 0});
    b->UseManualTime()->Unit(benchmark::kMillisecond);
    auto* bs = benchmark::RegisterBenchmark(("kolesky_batched/mixed_potrs<" + tn + ">").c_str(),
                                            [](benchmark::State& s) { kolesky_batched_mixed_potrs<T>(s); });
    for (int n : sizes)
      if (n >= 8) bs->Args({n, batches.size() == 1 ? batches[0] : 0});
    bs->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  reg("kolesky_batched/potrs", [](benchmark::State& s) { kolesky_batched_potrs<T>(s, false); });
  reg("kolesky_batched/potrs_upper", [](benchmark::State& s) { kolesky_batched_potrs<T>(s, true); });
  reg("copy_roofline", [](benchmark::State& s) { copy_roofline<T>(s); });
  reg("convert_strided_to_interleaved", [](benchmark::State& s) { convert_strided_to_interleaved<T>(s); });
  reg("convert_interleaved_to_strided", [](benchmark::State& s) { convert_interleaved_to_strided<T>(s); });
  reg("kokkoskernels_serial_lu", [](benchmark::State& s) { kk_lu<T, false>(s); });
  reg("kokkoskernels_team_lu", [](benchmark::State& s) { kk_lu<T, true>(s); });
#ifdef KOLESKY_HAVE_LAPACK
  if (kHost) reg("lapack_potrf_loop", [](benchmark::State& s) { lapack_loop<T>(s); });
#endif
#ifdef KOLESKY_HAVE_CUSOLVER
  reg("cusolver_potrfBatched", [](benchmark::State& s) { cusolver_batched<T>(s); });
  reg("cusolver_potrsBatched", [](benchmark::State& s) { cusolver_potrs_batched<T>(s); });
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  std::string sizes = "4,8,16,32,64,128";
  std::string batches = "0";
  bool kernels = false;
  // One batch buffer's largest size: the benchmarks hold two to four copies of it.
  double max_bytes = kHost ? double(1 << 30) : 8.0 * (1 << 30);
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--n=", 4) == 0)
      sizes = argv[i] + 4;
    else if (std::strncmp(argv[i], "--batch=", 8) == 0)
      batches = argv[i] + 8;
    else if (std::strcmp(argv[i], "--quick") == 0) {
      sizes = "4,17";
      batches = "300";
    } else if (std::strncmp(argv[i], "--max-gib=", 10) == 0)
      max_bytes = std::atof(argv[i] + 10) * (1 << 30);
    else if (std::strcmp(argv[i], "--kernels") == 0)
      kernels = true;
    else
      rest.push_back(argv[i]);
  }
  int rargc = int(rest.size());
  benchmark::Initialize(&rargc, rest.data());
  kolesky::perf::add_context<Exec>(KOLESKY_GIT_HASH);
  const auto ns = kolesky::perf::parse_ints(sizes), bs = kolesky::perf::parse_ints(batches);
  register_all<float>("float", ns, bs, kernels, max_bytes);
  register_all<double>("double", ns, bs, kernels, max_bytes);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
