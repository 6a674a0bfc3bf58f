// LU with partial pivoting of a matrix read from a Matrix Market file.
//
//   05_lu_from_matrix_market [FILE.mtx[.gz]]
//
// Reads a square real matrix with kolesky::read_matrix_market into a dense host View, copies
// it to the default execution space, factors P A = L U with kolesky::getrf, solves A x = b for
// b = A * ones with kolesky::getrs and prints n, the non-zeros, the times and rate of both
// steps, info, the backward error |b - A x| / (|A| |x| n eps) (infinity norms) and the error
// against the ones vector. Without FILE it generates a nonsymmetric matrix that needs
// pivoting, writes it with kolesky::write_matrix_market to a temporary file and reads it back,
// so it runs on its own. From the repository root, real matrices: e.g.
//   build/example/05_lu_from_matrix_market/05_lu_from_matrix_market ../shared/matrices/arc130.mtx
// Exit status: 0 when the backward error is below 30 (LAPACK's test threshold; for the
// generated matrix the error against ones must also be small), 1 when a check fails,
// 2 when the file cannot be read or the matrix is not square, 3 when the matrix is singular
// (info = k > 0: U(k, k) is zero).
#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <random>
#include <string>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using HostMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
using Vector = Kokkos::View<double*, Mem>;

// R + 4 sqrt(n) P with R uniform in [-1, 1) and P the cyclic shift (i, i + 1): the shift
// dominates, so every column must pivot, and since |R| <= 2 sqrt(n) or so while P's singular
// values are all 4 sqrt(n), A stays well conditioned and x = ones is recovered to ~1e-14.
HostMatrix generate(const int n) {
  HostMatrix a("generated", n, n);
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) a(i, j) = u(rng);
  for (int i = 0; i < n; ++i) a(i, (i + 1) % n) += 4 * std::sqrt(double(n));
  return a;
}

// A temporary file, removed when this goes out of scope.
struct TempFile {
  std::string path;
  TempFile() {
    std::random_device rd;
    path = (std::filesystem::temp_directory_path() /
            ("kolesky_05_" + std::to_string(rd()) + std::to_string(rd()) + ".mtx"))
               .string();
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

template <class F>
double timed(const Exec& exec, F&& f) {
  exec.fence();
  Kokkos::Timer timer;
  f();
  exec.fence();
  return timer.seconds();
}

int run(int argc, char* argv[]) {
  const Exec exec;
  const bool generated = argc < 2;
  std::string name;
  kolesky::MatrixMarketHeader header;
  HostMatrix ah;
  if (generated) {
    const HostMatrix g = generate(300);
    TempFile tmp;
    kolesky::write_matrix_market(tmp.path, g);
    ah = kolesky::read_matrix_market<double>(tmp.path, &header);
    // The writer keeps every bit: reading back must give the same matrix.
    bool same = ah.extent(0) == g.extent(0) && ah.extent(1) == g.extent(1);
    for (std::size_t j = 0; same && j < g.extent(1); ++j)
      for (std::size_t i = 0; same && i < g.extent(0); ++i) same = ah(i, j) == g(i, j);
    if (!same) {
      std::printf("FAILED: the matrix read back from %s differs from the one written\n",
                  tmp.path.c_str());
      return 1;
    }
    name = "generated, written and read back";
  } else {
    name = argv[1];
    ah = kolesky::read_matrix_market<double>(name, &header);
  }
  const int n = int(ah.extent(0));
  if (ah.extent(0) != ah.extent(1)) {
    std::printf("%s: the matrix is %d x %d, LU needs a square one\n", name.c_str(), n,
                int(ah.extent(1)));
    return 2;
  }
  long long nnz = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) nnz += ah(i, j) != 0;

  // A0 keeps the matrix for the residual; A is factored in place.
  Matrix a0("A0", n, n), a("A", n, n);
  Vector b("b", n), x("x", n);
  Kokkos::View<int*, Mem> ipiv("ipiv", n);
  Kokkos::deep_copy(a0, ah);
  Kokkos::parallel_for(
      "b = A ones", Kokkos::RangePolicy<Exec>(exec, 0, n), KOKKOS_LAMBDA(const int i) {
        double s = 0;
        for (int j = 0; j < n; ++j) s += a0(i, j);
        b(i) = s;
      });

  // Twice, reporting the faster: the first run also pays for warming up (threads, BLAS).
  double t_getrf = 0;
  int info = 0;
  for (int rep = 0; rep < 2; ++rep) {
    Kokkos::deep_copy(exec, a, a0);
    const double t = timed(exec, [&] { info = kolesky::getrf(exec, a, ipiv); });
    t_getrf = rep == 0 || t < t_getrf ? t : t_getrf;
  }
  const double flops = 2.0 / 3.0 * double(n) * n * n;

  std::printf("Kolesky %s on %s\n", KOLESKY_VERSION, Exec::name());
  std::printf("  %-16s %s (%s %s %s)\n", "matrix", name.c_str(), header.format.c_str(),
              header.field.c_str(), header.symmetry.c_str());
  std::printf("  %-16s %d\n", "n", n);
  std::printf("  %-16s %lld (%.2f%% of the dense matrix)\n", "nnz", nnz,
              100.0 * double(nnz) / (double(n) * n));
  std::printf("  %-16s %10.3f ms  %8.2f GFLOP/s (2n^3/3)\n", "getrf", 1e3 * t_getrf,
              flops / t_getrf * 1e-9);
  std::printf("  %-16s %d\n", "info", info);
  if (info != 0) {
    std::printf("singular: info = %d, U(%d, %d) is zero; no solve\n", info, info, info);
    return 3;
  }

  double t_getrs = 0;
  for (int rep = 0; rep < 2; ++rep) {  // the first solve also sets up the vendor BLAS
    Kokkos::deep_copy(exec, x, b);
    const double t = timed(exec, [&] { kolesky::getrs(exec, kolesky::Trans::No, a, ipiv, x); });
    t_getrs = rep == 0 || t < t_getrs ? t : t_getrs;
  }
  double rmax = 0, amax = 0, xmax = 0, emax = 0;
  Kokkos::parallel_reduce(
      "errors", Kokkos::RangePolicy<Exec>(exec, 0, n),
      KOKKOS_LAMBDA(const int i, double& rm, double& am, double& xm, double& em) {
        double s = b(i), row = 0;
        for (int j = 0; j < n; ++j) {
          s -= a0(i, j) * x(j);
          row += a0(i, j) < 0 ? -a0(i, j) : a0(i, j);
        }
        const double as = s < 0 ? -s : s, ax = x(i) < 0 ? -x(i) : x(i);
        const double e = x(i) - 1 < 0 ? 1 - x(i) : x(i) - 1;
        // NaN compares false: count it as huge so that it fails the checks.
        rm = as <= rm ? rm : (as == as ? as : 1e300);
        am = row > am ? row : am;
        xm = ax <= xm ? xm : (ax == ax ? ax : 1e300);
        em = e <= em ? em : (e == e ? e : 1e300);
      },
      Kokkos::Max<double>(rmax), Kokkos::Max<double>(amax), Kokkos::Max<double>(xmax),
      Kokkos::Max<double>(emax));
  const double eps = std::numeric_limits<double>::epsilon();
  const double backward = rmax / (amax * xmax * n * eps);
  const bool backward_ok = backward < 30;
  const bool forward_ok = !generated || emax < 1e-10;
  std::printf("  %-16s %10.3f ms  %8.2f GFLOP/s (2n^2)\n", "getrs", 1e3 * t_getrs,
              2.0 * n * n / t_getrs * 1e-9);
  std::printf("  %-16s %10.3g  |b - A x| / (|A| |x| n eps), must be < 30: %s\n",
              "backward error", backward, backward_ok ? "OK" : "FAILED");
  std::printf("  %-16s %10.3g  max |x_i - 1|, %s\n", "forward error", emax,
              generated ? (forward_ok ? "must be < 1e-10: OK" : "must be < 1e-10: FAILED")
                        : "grows with the condition number (not checked)");
  return backward_ok && forward_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [FILE.mtx]\n", argv[0]);
    return 2;
  }
  try {
    return run(argc, argv);
  } catch (const kolesky::matrix_market_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
