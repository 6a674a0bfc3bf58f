// Dense Cholesky of one matrix: Kolesky's variants against LAPACK (host), cuSOLVER (CUDA) and
// a Kokkos Kernels composition, all in one process on the same matrices.
//
//   kolesky_perf_dense [--n=250,500,...] [--quick] [--algos] [--nb=256,512] [benchmark flags]
//
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
#include <cstring>
#include <sstream>
#include <string>
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
  if (all_algos) {
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
  if (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible)
    reg("lapack_potrf", [](benchmark::State& s) { lapack_potrf<T>(s); });
#endif
#ifdef KOLESKY_HAVE_CUSOLVER
  reg("cusolver_potrf", [](benchmark::State& s) { cusolver_potrf<T>(s); });
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  const bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  std::string sizes = host ? "250,500,1000,2048" : "250,500,1000,2048,4096,8192";
  bool all_algos = false;
  std::string nbs = host ? "128,256" : "256,512,1024";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--n=", 4) == 0)
      sizes = argv[i] + 4;
    else if (std::strcmp(argv[i], "--quick") == 0)
      sizes = "64,200";
    else if (std::strncmp(argv[i], "--nb=", 5) == 0)
      nbs = argv[i] + 5;
    else if (std::strcmp(argv[i], "--algos") == 0)
      all_algos = true;
    else
      rest.push_back(argv[i]);
  }
  int rargc = int(rest.size());
  benchmark::Initialize(&rargc, rest.data());
  kolesky::perf::add_context<Exec>(KOLESKY_GIT_HASH);
  const auto nbv = kolesky::perf::parse_ints(nbs);
  register_all<double>("double", kolesky::perf::parse_ints(sizes), all_algos, nbv);
  register_all<float>("float", kolesky::perf::parse_ints(sizes), all_algos, nbv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
