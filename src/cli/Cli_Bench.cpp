// `kolesky bench`: time potrf (one matrix) or batched::potrf (a batch) on random SPD
// matrices and check every factor.
#include <Kolesky.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "Cli_Common.hpp"

namespace kolesky_cli {
namespace {

// Symmetric, entries in [-1, 1), diagonal n: strictly diagonally dominant, hence SPD.
template <class T, class Fill>
void random_spd(int n, std::mt19937_64& gen, Fill&& set) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int j = 0; j < n; ++j) {
    set(j, j, T(n));
    for (int i = j + 1; i < n; ++i) {
      const T v = T(u(gen));
      set(i, j, v);
      set(j, i, v);
    }
  }
}

// ||A x - L (L^T x)||_inf / (||A||_inf ||x||_inf) for a random x: a wrong factor leaves
// A - L L^T nonzero, which a random vector almost surely does not annihilate. O(n^2),
// so checking large matrices costs little next to factoring them. get_a(i, j), get_l(i, j).
template <class GetA, class GetL>
double probe_residual(int n, std::mt19937_64& gen, GetA&& get_a, GetL&& get_l) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(std::size_t(n), 0.0), y(std::size_t(n), 0.0), z(std::size_t(n), 0.0);
  double xnorm = 0, anorm = 0;
  for (auto& v : x) {
    v = u(gen);
    xnorm = std::max(xnorm, std::fabs(v));
  }
  for (int i = 0; i < n; ++i) {  // z = A x
    double s = 0, row = 0;
    for (int j = 0; j < n; ++j) {
      s += double(get_a(i, j)) * x[std::size_t(j)];
      row += std::fabs(double(get_a(i, j)));
    }
    z[std::size_t(i)] = s;
    anorm = std::max(anorm, row);
  }
  for (int k = 0; k < n; ++k) {  // y = L^T x
    double s = 0;
    for (int i = k; i < n; ++i) s += double(get_l(i, k)) * x[std::size_t(i)];
    y[std::size_t(k)] = s;
  }
  double rnorm = 0;
  for (int i = 0; i < n; ++i) {  // z - L y
    double s = 0;
    for (int k = 0; k <= i; ++k) s += double(get_l(i, k)) * y[std::size_t(k)];
    const double r = std::fabs(z[std::size_t(i)] - s);
    rnorm = std::isnan(r) || std::isnan(rnorm) ? NAN : std::max(rnorm, r);
  }
  const double den = anorm * xnorm;
  return den > 0 ? rnorm / den : rnorm;
}

struct Row {
  double best = 0, mean = 0, worst_check = 0;
  double first = 0;  // the first run: it pays one-time set-up (handles, module loading)
  int failed = 0;  // matrices with info != 0 or a residual above the threshold
  int first_failed = -1, first_info = 0;
};

// Run r of `repeat`: the first is kept apart when there are others (best and mean are warm).
inline void record(Row& row, const int r, const int repeat, const double t) {
  if (r == 0) row.first = t;
  const int warm = repeat > 1 ? repeat - 1 : 1;
  if (repeat > 1 && r == 0) return;
  const bool first_warm = repeat > 1 ? r == 1 : r == 0;
  row.best = first_warm ? t : std::min(row.best, t);
  row.mean += t / warm;
}

template <class Exec, class T>
Row bench_one(const BenchArgs& args, const Exec& exec, int n, std::mt19937_64& gen) {
  using Mem = typename Exec::memory_space;
  Row row;
  Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace> a("kolesky_cli::A", n, n);
  random_spd<T>(n, gen, [&](int i, int j, T v) { a(i, j) = v; });
  Kokkos::View<T**, Kokkos::LayoutLeft, Mem> d0("kolesky_cli::A0", n, n), d("kolesky_cli::A", n, n);
  Kokkos::deep_copy(d0, a);
  int info = 0;
  for (int r = 0; r < args.repeat; ++r) {
    Kokkos::deep_copy(exec, d, d0);
    exec.fence();
    Stopwatch clock;
    info = kolesky::potrf(exec, kolesky::Uplo::Lower, d);
    exec.fence();
    record(row, r, args.repeat, clock.seconds());
  }
  const auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  row.worst_check = info == 0 ? scaled<T>(probe_residual(
                                              n, gen, [&](int i, int j) { return a(i, j); },
                                              [&](int i, int j) { return f(i, j); }),
                                          n)
                              : NAN;
  if (info != 0 || !(row.worst_check <= args.common.threshold)) {
    row.failed = 1;
    row.first_failed = 0;
    row.first_info = info;
  }
  return row;
}

template <class Exec, class T>
Row bench_batch(const BenchArgs& args, const Exec& exec, int n, std::mt19937_64& gen) {
  using Mem = typename Exec::memory_space;
  const int batch = args.batch;
  Row row;
  // (batch, n, n), each matrix contiguous: the batched API's StridedBatch.
  Kokkos::View<T***, Kokkos::LayoutRight, Kokkos::HostSpace> a("kolesky_cli::A", batch, n, n);
  for (int b = 0; b < batch; ++b)
    random_spd<T>(n, gen, [&](int i, int j, T v) { a(b, i, j) = v; });
  Kokkos::View<T***, Kokkos::LayoutRight, Mem> d0("kolesky_cli::A0", batch, n, n),
      d("kolesky_cli::A", batch, n, n);
  Kokkos::View<int*, Mem> info("kolesky_cli::info", batch);
  Kokkos::deep_copy(d0, a);
  for (int r = 0; r < args.repeat; ++r) {
    Kokkos::deep_copy(exec, d, d0);
    Kokkos::deep_copy(exec, info, -1);  // a matrix the kernel skips must not pass
    exec.fence();
    Stopwatch clock;
    kolesky::batched::potrf(exec, kolesky::Uplo::Lower, d, info);
    exec.fence();
    record(row, r, args.repeat, clock.seconds());
  }
  const auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  const auto hinfo = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  for (int b = 0; b < batch; ++b) {
    double c = NAN;
    if (hinfo(b) == 0)
      c = scaled<T>(probe_residual(
                        n, gen, [&](int i, int j) { return a(b, i, j); },
                        [&](int i, int j) { return f(b, i, j); }),
                    n);
    row.worst_check = std::isnan(c) || std::isnan(row.worst_check) ? NAN
                                                                    : std::max(row.worst_check, c);
    if (hinfo(b) != 0 || !(c <= args.common.threshold)) {
      if (row.failed++ == 0) {
        row.first_failed = b;
        row.first_info = hinfo(b);
      }
    }
  }
  return row;
}

template <class Exec, class T>
int bench(const BenchArgs& args, const Exec& exec) {
  const Common& opt = args.common;
  const std::string backend = opt.backend.empty() ? default_backend() : opt.backend;
  Progress progress(opt.quiet);
  std::mt19937_64 gen(args.seed);
  const bool batched = args.batch > 1;

  std::printf("%s on %s, %s, best and mean of %d run%s%s, check: ||A x - L L^T x|| in n*eps "
              "(threshold %g)\n",
              batched ? "batched::potrf (lower)" : "potrf (lower)", backend.c_str(),
              precision_name<T>(), args.repeat, args.repeat == 1 ? "" : "s",
              args.repeat > 1 ? " (warm runs; the first, with one-time set-up, apart)" : "",
              opt.threshold);
  std::printf("%8s %8s %12s %12s %10s  %-20s %s\n", "n", "batch", "best (s)", "mean (s)",
              "GFLOP/s", "check", "first (s)");
  std::fflush(stdout);
  std::vector<std::string> failures;
  const std::size_t count = args.sizes.size();
  for (std::size_t s = 0; s < count; ++s) {
    const int n = args.sizes[s];
    progress.say("bench ", s + 1, " of ", count, " (", int(100.0 * double(s) / double(count)),
                 "% done): n = ", n, ", batch ", args.batch, " ...");
    const Row row = batched ? bench_batch<Exec, T>(args, exec, n, gen)
                            : bench_one<Exec, T>(args, exec, n, gen);
    const double flops = kolesky::flops::potrf(n) * double(args.batch);
    std::string check = row.failed == 0 ? "ok (" + fmt("%.3g", row.worst_check) + ")"
                                        : "FAILED (" + std::to_string(row.failed) + " of " +
                                              std::to_string(args.batch) + ")";
    std::printf("%8d %8d %12.4e %12.4e %10s  %-20s %.4e\n", n, args.batch, row.best, row.mean,
                gflops(flops, row.best).c_str(), check.c_str(), row.first);
    std::fflush(stdout);
    if (row.failed) {
      std::string m = "n = " + std::to_string(n) + ": " + std::to_string(row.failed) +
                      " wrong result" + (row.failed == 1 ? "" : "s") + " (first: matrix " +
                      std::to_string(row.first_failed) + ", ";
      m += row.first_info != 0 ? "info " + std::to_string(row.first_info)
                               : "residual above the threshold";
      failures.push_back(m + ")");
    }
  }
  progress.say("done");
  if (!failures.empty()) throw Error(kCheck, "check failed: " + join(failures, "; "));
  return kSuccess;
}

}  // namespace

int run_bench(const BenchArgs& args) {
  const std::string backend = args.common.backend.empty() ? default_backend() : args.common.backend;
  return with_backend(backend, [&](const auto& exec) {
    using Exec = std::decay_t<decltype(exec)>;
    return with_precision(args.common.precision, [&](auto t) {
      return bench<Exec, decltype(t)>(args, exec);
    });
  });
}

}  // namespace kolesky_cli
