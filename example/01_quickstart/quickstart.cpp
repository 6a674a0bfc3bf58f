// Quickstart: factor an SPD system of a few thousand unknowns and solve it.
//
//   01_quickstart [n]      (default n = 3000)
//
// Builds A = M M^T / n + I on the device, solves A x = b with kolesky::potrf / potrs, and
// prints the relative residual, the time of the factorization and its rate. The first call in
// a process pays one-time set-up (on CUDA: cuBLAS handle, module loading, workspaces): it is
// reported on its own line; the headline time is the median of warm calls.
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <Kolesky.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  const int n = argc > 1 ? std::atoi(argv[1]) : 3000;
  using Exec = Kokkos::DefaultExecutionSpace;
  using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, Exec::memory_space>;
  using Vector = Kokkos::View<double*, Exec::memory_space>;

  // A = M M^T / n + I, symmetric positive definite; b random.
  Matrix m("M", n, n), a("A", n, n), a0("A0", n, n);
  Vector b("b", n), x("x", n), r("r", n);
  Kokkos::Random_XorShift64_Pool<Exec> pool(2024);
  Kokkos::fill_random(m, pool, -1.0, 1.0);
  Kokkos::fill_random(b, pool, -1.0, 1.0);
  Kokkos::parallel_for(
      "form_A", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {n, n}),
      KOKKOS_LAMBDA(const int i, const int j) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += m(i, k) * m(j, k);
        a(i, j) = s / n + (i == j ? 1.0 : 0.0);
      });
  Kokkos::deep_copy(a0, a);
  Kokkos::deep_copy(x, b);

  Kokkos::fence();
  Kokkos::Timer timer;
  int info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a);  // the first call of the process
  const double t_first = timer.seconds();
  std::vector<double> warm;
  for (int rep = 0; rep < 5 && info == 0; ++rep) {  // warm calls on the same matrix
    Kokkos::deep_copy(a, a0);
    Kokkos::fence();
    timer.reset();
    info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, a);
    warm.push_back(timer.seconds());
  }
  if (info != 0) {
    std::printf("potrf failed: info = %d\n", info);
    return 1;
  }
  std::sort(warm.begin(), warm.end());
  const double t_factor = warm[warm.size() / 2];
  timer.reset();
  kolesky::potrs(Exec(), kolesky::Uplo::Lower, a, x);
  const double t_solve = timer.seconds();

  // Relative residual ||b - A0 x||_inf / (||A0||_inf ||x||_inf).
  double rmax = 0, amax = 0, xmax = 0;
  Kokkos::parallel_reduce(
      "residual", Kokkos::RangePolicy<Exec>(0, n),
      KOKKOS_LAMBDA(const int i, double& rm, double& am) {
        double s = b(i), row = 0;
        for (int k = 0; k < n; ++k) {
          s -= a0(i, k) * x(k);
          row += a0(i, k) < 0 ? -a0(i, k) : a0(i, k);
        }
        const double as = s < 0 ? -s : s;
        if (as > rm) rm = as;
        if (row > am) am = row;
      },
      Kokkos::Max<double>(rmax), Kokkos::Max<double>(amax));
  Kokkos::parallel_reduce(
      "xnorm", Kokkos::RangePolicy<Exec>(0, n),
      KOKKOS_LAMBDA(const int i, double& v) {
        const double ax = x(i) < 0 ? -x(i) : x(i);
        if (ax > v) v = ax;
      },
      Kokkos::Max<double>(xmax));
  const double rel = rmax / (amax * xmax);

  std::printf("Kolesky %s on %s, n = %d\n", KOLESKY_VERSION, Exec::name(), n);
  std::printf("  potrf: %8.3f ms  %7.2f GFLOP/s  (median of 5 warm calls)\n", 1e3 * t_factor,
              n * double(n) * n / 3.0 / t_factor * 1e-9);
  std::printf("  first potrf call: %8.3f ms (one-time set-up included: %.3f ms)\n",
              1e3 * t_first, 1e3 * (t_first - t_factor));
  std::printf("  potrs: %8.3f ms\n", 1e3 * t_solve);
  std::printf("  relative residual ||b - A x|| / (||A|| ||x||) = %.2e  %s\n", rel,
              rel < 1e-12 ? "OK" : "TOO LARGE");
  return rel < 1e-12 ? 0 : 1;
}
