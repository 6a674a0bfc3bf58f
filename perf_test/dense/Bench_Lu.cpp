// LU of one matrix: getrf (partial pivoting), Crout without pivoting (blocked, iterative,
// sequential) against LAPACK getrf (host) and cuSOLVER getrf (CUDA), in one process.
//
//   kolesky_perf_lu [--n=1000,2048,...] [--quick] [--nb=16,32,64] [--panel=128,-1] [--mm=DIR]
//                   [--mm-list=a,b,...] [--seq-max=2048] [benchmark flags]
//
// Dense sweep: random general matrices (getrf, baselines) and the same made diagonally
// dominant (Crout). --mm=DIR adds reference 004's experiment on Matrix Market files: for each
// matrix, sequential Crout (one host thread, n <= --seq-max), iterative Crout (block 8, 16,
// 32), blocked Crout, getrf and the vendor getrf, with counters n, sweeps and
// err = max |A - L U| (getrf: max |P A - L U|), computed after timing. Every benchmark
// checks its result (a solve, or the factor error) and fails instead of reporting a number
// when it is wrong.
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <Kolesky.hpp>
#include <Kolesky_CusolverLu.hpp>
#include <Kolesky_Lapack.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Kolesky_PerfCommon.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutLeft, Exec::memory_space>;
template <class T>
using Vector = Kokkos::View<T*, Exec::memory_space>;
using Pivots = Kokkos::View<int*, Exec::memory_space>;
constexpr bool kHost = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;

// Entries in [-1, 1]; `dominant` adds n + 1 to the diagonal (Crout needs no pivoting then).
template <class T>
Matrix<T> make_general(int n, bool dominant) {
  Matrix<T> a("A0", n, n);
  Kokkos::Random_XorShift64_Pool<Exec> pool(4242);
  Kokkos::fill_random(a, pool, T(-1), T(1));
  if (dominant)
    Kokkos::parallel_for(
        "dominant", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(int i) { a(i, i) += T(n + 1); });
  Kokkos::fence();
  return a;
}

// max |a0 - L U| with the packed factor f (getrf: rows of a0 interchanged by ipiv first).
template <class T>
double factor_error(const Matrix<T>& a0, const Matrix<T>& f, const Pivots& ipiv,
                    kolesky::LuForm form) {
  const int n = int(a0.extent(0));
  Matrix<T> c("C", n, n), l("L", n, n), u("U", n, n);
  Kokkos::deep_copy(c, a0);
  using S = kolesky::impl::Strided<T>;
  const S cs{c.data(), 1, std::ptrdiff_t(n)};
  if (ipiv.extent(0) > 0) kolesky::impl::laswp(Exec(), n, cs, ipiv.data(), 0, n, true);
  kolesky::unpack_lu(Exec(), f, l, u, form);
  // C -= L U, as C -= L (U^T)^T.
  kolesky::impl::gemm_nt(Exec(), kolesky::Blas::Auto, n, n, n,
                         kolesky::impl::Strided<const T>{l.data(), 1, std::ptrdiff_t(n)},
                         kolesky::impl::Strided<const T>{u.data(), std::ptrdiff_t(n), 1}, cs,
                         false);
  double err = 0;
  Kokkos::parallel_reduce(
      "max_abs", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {n, n}),
      KOKKOS_LAMBDA(int i, int j, double& e) {
        double d = double(c(i, j));
        d = d < 0 ? -d : d;
        if (!(d <= e)) e = d;  // NaN wins
      },
      Kokkos::Max<double>(err));
  return err;
}

// Backward error of a solve with the factor, b = A0 (1, 2, ..., 7, 1, ...):
// max |b - A0 x| / (||A0||_inf max |x|). Independent of the conditioning of A0.
template <class T>
double solve_error(const Matrix<T>& a0, const Matrix<T>& f, const Pivots& ipiv, bool crout) {
  const int n = int(a0.extent(0));
  if (n == 0) return 0;
  Vector<T> b("b", n), x("x", n);
  Kokkos::parallel_for(
      "rhs", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(int i) {
        T s = 0;
        for (int k = 0; k < n; ++k) s += a0(i, k) * T(1 + k % 7);
        b(i) = s;
      });
  Kokkos::deep_copy(x, b);
  if (crout)
    kolesky::getrs_nopiv(Exec(), f, x);
  else
    kolesky::getrs(Exec(), kolesky::Trans::No, f, ipiv, x);
  double rmax = 0, anorm = 0, xmax = 0;
  Kokkos::parallel_reduce(
      "residual", Kokkos::RangePolicy<Exec>(0, n),
      KOKKOS_LAMBDA(int i, double& r, double& an, double& xm) {
        double s = double(b(i)), rs = 0;
        for (int k = 0; k < n; ++k) {
          s -= double(a0(i, k)) * double(x(k));
          const double a = double(a0(i, k));
          rs += a < 0 ? -a : a;
        }
        s = s < 0 ? -s : s;
        const double xi = double(x(i)) < 0 ? -double(x(i)) : double(x(i));
        if (!(s <= r)) r = s;
        if (rs > an) an = rs;
        if (!(xi <= xm)) xm = xi;
      },
      Kokkos::Max<double>(rmax), Kokkos::Max<double>(anorm), Kokkos::Max<double>(xmax));
  return rmax / (anorm * xmax);
}

template <class T>
bool check_solve(benchmark::State& state, int info, const Matrix<T>& a0, const Matrix<T>& f,
                 const Pivots& ipiv, bool crout) {
  if (info != 0) {
    state.SkipWithError(("info = " + std::to_string(info)).c_str());
    return false;
  }
  const int n = int(a0.extent(0));
  if (n == 0) return true;  // the placeholder size of a method with nothing to run
  const double err = solve_error(a0, f, ipiv, crout);
  const double tol = 30.0 * n * std::numeric_limits<T>::epsilon();  // LAPACK's threshold
  state.counters["err"] = err;
  if (!(err < tol)) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "wrong result: backward error %.3e", err);
    state.SkipWithError(msg);
    return false;
  }
  return true;
}

void set_counters(benchmark::State& state, int n, std::size_t elem) {
  const double flops = 2.0 * n * double(n) * n / 3.0;
  const double bytes = 2.0 * n * double(n) * elem;
  state.counters["n"] = n;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// What one timed call factors, and how.
enum class Method { Getrf, GetrfNative, Crout, CroutNative, Iterative8, Iterative16, Iterative32,
                    Sequential, Lapack, Cusolver };

const char* method_name(Method m) {
  switch (m) {
    case Method::Getrf: return "kolesky_getrf";
    case Method::GetrfNative: return "kolesky_getrf/native";
    case Method::Crout: return "kolesky_crout";
    case Method::CroutNative: return "kolesky_crout/native";
    case Method::Iterative8: return "kolesky_crout_iterative/8";
    case Method::Iterative16: return "kolesky_crout_iterative/16";
    case Method::Iterative32: return "kolesky_crout_iterative/32";
    case Method::Sequential: return "sequential_crout";
    case Method::Lapack: return "lapack_getrf";
    case Method::Cusolver: return "cusolver_getrf";
  }
  return "?";
}

bool is_crout(Method m) {
  return m == Method::Crout || m == Method::CroutNative || m == Method::Iterative8 ||
         m == Method::Iterative16 || m == Method::Iterative32 || m == Method::Sequential;
}

// Times `m` on a copy of a0, leaves the factor in f and the pivots in ipiv; returns info
// (iterative: -1 when it did not converge) and the sweeps through `sweeps`.
template <class T>
int run_method(benchmark::State& state, Method m, const Matrix<T>& a0, Matrix<T>& f,
               Pivots& ipiv, int& sweeps, bool& diverged, int nb = 0, int panel = 0) {
  const int n = int(a0.extent(0));
  int info = 0;
  kolesky::LuOptions vendor, native;
  vendor.block_size = native.block_size = nb;
  vendor.panel_size = native.panel_size = panel;
  native.blas = kolesky::Blas::Native;
  kolesky::IterativeCroutOptions it;
  it.block = m == Method::Iterative8 ? 8 : m == Method::Iterative16 ? 16 : 32;
  auto host_f = Kokkos::create_mirror_view(Kokkos::HostSpace(), f);
  auto host_0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a0);
  std::vector<int> hp(std::size_t(n > 0 ? n : 1));
#ifdef KOLESKY_HAVE_CUSOLVER
  std::unique_ptr<kolesky::baselines::CusolverGetrf<T>> cus;
  if (m == Method::Cusolver) cus.reset(new kolesky::baselines::CusolverGetrf<T>(Exec(), n, f.data(), n));
#endif
  const auto once = [&]() {
    switch (m) {
      case Method::Getrf: info = kolesky::getrf(Exec(), f, ipiv, vendor); break;
      case Method::GetrfNative: info = kolesky::getrf(Exec(), f, ipiv, native); break;
      case Method::Crout: info = kolesky::getrf_nopiv(Exec(), f, vendor); break;
      case Method::CroutNative: info = kolesky::getrf_nopiv(Exec(), f, native); break;
      case Method::Iterative8:
      case Method::Iterative16:
      case Method::Iterative32: {
        const auto r = kolesky::crout_iterative(Exec(), f, it);
        info = r.converged ? r.info : -1;
        sweeps = r.sweeps;
        diverged = !(r.max_delta < std::numeric_limits<double>::infinity());
        break;
      }
      case Method::Sequential:
        info = kolesky::impl::serial_crout(
            n, kolesky::impl::Strided<T>{host_f.data(), 1, std::ptrdiff_t(n)});
        break;
      case Method::Lapack:
#ifdef KOLESKY_HAVE_LAPACK
        info = kolesky::baselines::lapack_getrf(n, host_f.data(), n, hp.data());
#endif
        break;
      case Method::Cusolver:
#ifdef KOLESKY_HAVE_CUSOLVER
        cus->run(f.data());
        Exec().fence();
#endif
        break;
    }
  };
  const bool on_host = m == Method::Sequential || m == Method::Lapack;
  const auto reset = [&]() {
    if (on_host)
      std::memcpy(host_f.data(), host_0.data(), sizeof(T) * host_0.size());
    else
      Kokkos::deep_copy(f, a0);
    Exec().fence();
  };
  if (m != Method::Sequential) {  // untimed first call: handles, lazily loaded kernels
    reset();
    once();
  }
  for (auto _ : state) {
    reset();
    Kokkos::Timer t;
    once();
    state.SetIterationTime(t.seconds());
  }
  if (on_host) {
    Kokkos::deep_copy(f, host_f);
    if (m == Method::Lapack) {
      auto h = Kokkos::create_mirror_view(ipiv);
      for (int i = 0; i < n; ++i) h(i) = hp[i];
      Kokkos::deep_copy(ipiv, h);
    }
  }
#ifdef KOLESKY_HAVE_CUSOLVER
  if (m == Method::Cusolver) {
    info = cus->info();
    Kokkos::deep_copy(ipiv, Kokkos::subview(cus->ipiv(), Kokkos::make_pair(0, n)));
  }
#endif
  return info;
}

// Dense sweep: the same random matrix (dominant for Crout) for every method.
template <class T>
void dense(benchmark::State& state, Method m, int nb = 0, int panel = 0) {
  const int n = int(state.range(0));
  const auto a0 = make_general<T>(n, is_crout(m));
  Matrix<T> f("F", n, n);
  Pivots ipiv("ipiv", n);
  int sweeps = 0;
  bool diverged = false;
  const int info = run_method(state, m, a0, f, ipiv, sweeps, diverged, nb, panel);
  kolesky::perf::break_if_asked(f);
  if (is_crout(m) && m != Method::Crout && m != Method::CroutNative) state.counters["sweeps"] = sweeps;
  if (check_solve(state, info, a0, f, ipiv, is_crout(m))) set_counters(state, n, sizeof(T));
}

#ifdef KOLESKY_HAVE_LAPACK
// Kolesky's default getrf and LAPACK's, alternating on the same matrix (host builds): the
// ratio a noisy 2-core machine reproduces (kolesky::perf::paired).
template <class T>
void paired_getrf(benchmark::State& state, const bool ways) {
  const int n = int(state.range(0));
  const auto a0 = make_general<T>(n, false);
  Matrix<T> f("F", n, n);
  Pivots ipiv("ipiv", n);
  auto h0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a0);
  auto h = Kokkos::create_mirror(Kokkos::HostSpace(), a0);
  std::vector<int> hp(std::size_t(n > 0 ? n : 1));
  Kokkos::deep_copy(f, a0);
  int info = kolesky::getrf(Exec(), f, ipiv), linfo = 0;  // untimed first call
  const auto restore = kolesky::perf::restore_pair<Exec>(f, a0, h, h0);
  const auto mine = [&] { info = kolesky::getrf(Exec(), f, ipiv); };
  const auto theirs = [&] { linfo = kolesky::baselines::lapack_getrf(n, h.data(), n, hp.data()); };
  if (ways)
    kolesky::perf::paired_ways(state, restore, mine, theirs);
  else
    kolesky::perf::paired(state, restore, mine, theirs);
  kolesky::perf::break_if_asked(f);
  if (linfo != 0) state.SkipWithError(("LAPACK info = " + std::to_string(linfo)).c_str());
  if (check_solve(state, info, a0, f, ipiv, false)) set_counters(state, n, sizeof(T));
}
#endif

// Reference 004's experiment on one Matrix Market file.
template <class T>
void from_file(benchmark::State& state, Method m, const std::string& path) {
  Matrix<T> a0;
  {
    const auto h = kolesky::read_matrix_market<T, Kokkos::LayoutLeft>(path);
    a0 = Matrix<T>("A0", h.extent(0), h.extent(1));
    Kokkos::deep_copy(a0, h);
  }
  const int n = int(a0.extent(0));
  Matrix<T> f("F", n, n);
  Pivots ipiv("ipiv", n);
  int sweeps = 0;
  bool sweeps_diverged = false;
  const int info = run_method(state, m, a0, f, ipiv, sweeps, sweeps_diverged);
  state.counters["n"] = n;
  state.counters["info"] = info;
  if (sweeps > 0) state.counters["sweeps"] = sweeps;
  if (info != 0) {
    state.SkipWithError(info >= 0 ? ("info = " + std::to_string(info)).c_str()
                        : sweeps_diverged ? "did not converge (diverged: inf/NaN)"
                                          : "did not converge (sweep cap)");
    return;
  }
  const bool pivoted = !is_crout(m);
  const double err = factor_error(a0, f, pivoted ? ipiv : Pivots(),
                                  pivoted ? kolesky::LuForm::Lapack : kolesky::LuForm::Crout);
  state.counters["err"] = err;
  // Error relative to the matrix's size: garbage (NaN, or errors of the order of |A|)
  // fails; the documented large errors of unpivoted Crout in float are reported, not failed.
  if (!(err == err)) state.SkipWithError("factor error is NaN");
  set_counters(state, n, sizeof(T));
}

std::vector<Method> dense_methods(int n) {
  std::vector<Method> v = {Method::Getrf, Method::GetrfNative, Method::Crout, Method::CroutNative};
  if (n <= 512) v.insert(v.end(), {Method::Iterative16});
  if (kHost) v.push_back(Method::Lapack);
#ifdef KOLESKY_HAVE_CUSOLVER
  if (!kHost) v.push_back(Method::Cusolver);
#endif
  return v;
}

template <class T>
void register_all(const std::string& tname, const std::vector<int>& sizes,
                  const std::string& mm_dir, const std::vector<std::string>& mm_list,
                  int seq_max, const std::vector<int>& nbs, const std::vector<int>& panels) {
  for (int p : panels) {  // getrf's outer panel width (-1: recursion over the whole matrix)
    auto* b = benchmark::RegisterBenchmark(
        ("kolesky_getrf/panel" + std::to_string(p) + "<" + tname + ">").c_str(),
        [p](benchmark::State& s) { dense<T>(s, Method::Getrf, 0, p); });
    for (int n : sizes) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  // Block sizes (the column width one kernel factors at the bottom of the recursion).
  for (Method m : {Method::Getrf, Method::Crout})
    for (int nb : nbs) {
      auto* b = benchmark::RegisterBenchmark(
          (std::string(method_name(m)) + "/nb" + std::to_string(nb) + "<" + tname + ">").c_str(),
          [m, nb](benchmark::State& s) { dense<T>(s, m, nb); });
      for (int n : sizes) b->Arg(n);
      b->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  for (Method m : dense_methods(0)) {
    auto* b = benchmark::RegisterBenchmark((std::string(method_name(m)) + "<" + tname + ">").c_str(),
                                           [m](benchmark::State& s) { dense<T>(s, m); });
    int args = 0;
    for (int n : sizes)
      if (m != Method::Iterative16 || n <= 512) b->Arg(n), ++args;
    if (args == 0) b->Arg(0);  // nothing to run at these sizes: an empty matrix, checked
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
#ifdef KOLESKY_HAVE_LAPACK
  if (kHost) {
    for (const bool ways : {false, true}) {
      const std::string name = ways ? "paired_ways_vs_lapack_getrf<" : "paired_vs_lapack_getrf<";
      auto* b = benchmark::RegisterBenchmark(
          (name + tname + ">").c_str(),
          [ways](benchmark::State& s) { paired_getrf<T>(s, ways); });
      int args = 0;
      for (int n : sizes)  // the ways differ only where the pool's one region runs
        if (!ways || n <= kolesky::impl::kHostLuThreads) b->Arg(n), ++args;
      if (args == 0) b->Arg(0);
      b->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
#endif
  if (mm_dir.empty()) return;
  for (const auto& name : mm_list) {
    std::string path = mm_dir + "/" + name + ".mtx";
    if (!std::ifstream(path)) path += ".gz";
    int n = 0;
    try {
      kolesky::MatrixMarketHeader h;
      kolesky::read_matrix_market<T>(path, &h);
      n = h.rows;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "skipping %s: %s\n", name.c_str(), e.what());
      continue;
    }
    std::vector<Method> ms = {Method::Getrf, Method::Crout, Method::Iterative8,
                              Method::Iterative16, Method::Iterative32};
    if (n <= seq_max) ms.push_back(Method::Sequential);
    if (kHost) ms.push_back(Method::Lapack);
#ifdef KOLESKY_HAVE_CUSOLVER
    if (!kHost) ms.push_back(Method::Cusolver);
#endif
    for (Method m : ms) {
      auto* b = benchmark::RegisterBenchmark(
          ("mm/" + std::string(method_name(m)) + "/" + name + "<" + tname + ">").c_str(),
          [m, path](benchmark::State& s) { from_file<T>(s, m, path); });
      b->UseManualTime()->Unit(benchmark::kMillisecond);
      b->Iterations(m == Method::Sequential || n > 2000 ? 1 : 3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  std::string sizes = kHost ? "250,500,1000,2048" : "1000,2048,4096,8192";
  std::string mm_dir, mm_list = "bcsstk03,494_bus,rail_5177,s1rmq4m1,west0067,pores_1,hor_131,"
                                "olm1000,orsirr_1,pde900,sherman5";
  int seq_max = 2048;
  std::string nbs, panels;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--n=", 4) == 0)
      sizes = argv[i] + 4;
    else if (std::strncmp(argv[i], "--host-team=", 12) == 0)  // measurement knob
      kolesky::impl::HostTeamKnobs::get().force = std::atoi(argv[i] + 12);
    else if (std::strcmp(argv[i], "--quick") == 0)
      sizes = "64,200";
    else if (std::strncmp(argv[i], "--mm=", 5) == 0)
      mm_dir = argv[i] + 5;
    else if (std::strncmp(argv[i], "--mm-list=", 10) == 0)
      mm_list = argv[i] + 10;
    else if (std::strncmp(argv[i], "--panel=", 8) == 0)
      panels = argv[i] + 8;
    else if (std::strncmp(argv[i], "--nb=", 5) == 0)
      nbs = argv[i] + 5;
    else if (std::strncmp(argv[i], "--seq-max=", 10) == 0)
      seq_max = std::atoi(argv[i] + 10);
    else
      rest.push_back(argv[i]);
  }
  std::vector<std::string> names;
  {
    std::stringstream ss(mm_list);
    for (std::string t; std::getline(ss, t, ',');)
      if (!t.empty()) names.push_back(t);
  }
  int rargc = int(rest.size());
  benchmark::Initialize(&rargc, rest.data());
  kolesky::perf::add_context<Exec>(KOLESKY_GIT_HASH);
  const auto nv = kolesky::perf::parse_ints(sizes);
  const auto nbv = nbs.empty() ? std::vector<int>() : kolesky::perf::parse_ints(nbs);
  const auto pv = panels.empty() ? std::vector<int>() : kolesky::perf::parse_ints(panels);
  register_all<double>("double", nv, mm_dir, names, seq_max, nbv, pv);
  register_all<float>("float", nv, mm_dir, names, seq_max, nbv, pv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
