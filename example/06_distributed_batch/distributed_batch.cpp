// A batch of small SPD systems spread over MPI ranks (and their GPUs), and optionally one large
// system through ScaLAPACK.
//
//   mpiexec -n R 06_distributed_batch [batch] [n] [--scalapack N]     (default 100000 16)
//
// Rank 0 builds `batch` systems A x = b of order n in one host batch (matrix 7 deliberately
// indefinite). kolesky::mpi::BatchSplit says which matrices each rank gets; scatter deals them
// out into each rank's batch on its default execution space (a GPU's memory when there is one:
// each rank takes GPU local_rank % GPUs per node, kolesky::mpi::initialize_kokkos);
// kolesky::mpi::batched::posv factors and solves every rank's share and returns the failure
// count over all ranks; gather brings the solutions and infos back to rank 0, which prints
// the count, the failed matrices, the time of each step and the worst residual.
// --scalapack N: also an N x N system held by rank 0, solved block-cyclically over all ranks
// by kolesky::mpi::posv (ScaLAPACK p?posv).
// Checks: exactly one failed matrix (number 7, info 4), residuals below 100 n eps; the
// ScaLAPACK solution's residual below 100 N eps. Exit 0 only if all pass.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mpi/Kolesky_Mpi.hpp>
#include <string>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using HostBatch = kolesky::batched::StridedBatch<double, Kokkos::LayoutRight, Kokkos::HostSpace>;
using Batch = kolesky::batched::StridedBatch<double, Kokkos::LayoutRight, Mem>;
constexpr int kBad = 7;

// Uniform in [-1, 1) from a 64-bit key (splitmix64).
double uniform(std::uint64_t key) {
  std::uint64_t z = key + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// Symmetric, off-diagonal entries in [-1, 1), diagonal n: SPD by diagonal dominance.
double entry(std::uint64_t p, int i, int j, int n) {
  if (i == j) return n;
  const std::uint64_t lo = std::uint64_t(i < j ? i : j), hi = std::uint64_t(i < j ? j : i);
  return uniform(p * 0x100000001b3ull + lo * std::uint64_t(n) + hi);
}

double seconds_since(double t0) { return MPI_Wtime() - t0; }

int batch_part(int rank, int size, int total, int n) {
  // The whole batch, on rank 0 only.
  HostBatch a, b, x;
  Kokkos::View<int*, Kokkos::HostSpace> all_info;
  if (rank == 0) {
    a = HostBatch("A", total, n, n);
    b = HostBatch("b", total, n, 1);
    x = HostBatch("x", total, n, 1);
    all_info = Kokkos::View<int*, Kokkos::HostSpace>("info", total);
    for (int p = 0; p < total; ++p)
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) a(p, i, j) = entry(std::uint64_t(p), i, j, n);
        b(p, i, 0) = uniform(~std::uint64_t(p * n + i));
      }
    if (total > kBad && n > 3) a(kBad, 3, 3) = -1.0;  // leading minor 4 not positive definite
  }
  // Each rank's share, in its default execution space's memory.
  const kolesky::mpi::BatchSplit split(total, MPI_COMM_WORLD);
  const int mine = split.batch_size(rank);
  Batch la("A", mine, n, n), lb("b", mine, n, 1);
  Kokkos::View<int*, Mem> info("info", mine);

  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  kolesky::mpi::batched::scatter(MPI_COMM_WORLD, 0, a, la);
  kolesky::mpi::batched::scatter(MPI_COMM_WORLD, 0, b, lb);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_scatter = seconds_since(t0);
  t0 = MPI_Wtime();
  const std::int64_t failed =
      kolesky::mpi::batched::posv(MPI_COMM_WORLD, Exec(), kolesky::Uplo::Lower, la, lb, info);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_posv = seconds_since(t0);
  t0 = MPI_Wtime();
  kolesky::mpi::batched::gather(MPI_COMM_WORLD, 0, lb, x);
  kolesky::mpi::batched::gather(MPI_COMM_WORLD, 0, info, all_info);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_gather = seconds_since(t0);

  int ok = 1;
  if (rank == 0) {
    std::printf("batch: %d systems of order %d over %d rank(s) (%lld to %lld each), %s\n", total, n,
                size, (long long)split.count(size - 1), (long long)split.count(0), Exec::name());
    std::printf("  scatter %.4f s   posv %.4f s   gather %.4f s\n", t_scatter, t_posv, t_gather);
    std::printf("  failed matrices (all ranks): %lld", (long long)failed);
    for (int p = 0; p < total; ++p)
      if (all_info(p) != 0) std::printf("   matrix %d: info %d", p, all_info(p));
    std::printf("\n");
    const bool expect_bad = total > kBad && n > 3;
    ok = failed == (expect_bad ? 1 : 0) && (!expect_bad || all_info(kBad) == 4);
    // Residual |b - A x|_inf / (|A|_inf |x|_inf) of every solved system (A read back from the
    // original entries: rank 0's copy was never factored).
    double worst = 0;
    for (int p = 0; p < total; ++p) {
      if (all_info(p) != 0) continue;
      double an = 0, xn = 0, rn = 0;
      for (int i = 0; i < n; ++i) {
        double s = b(p, i, 0), row = 0;
        for (int j = 0; j < n; ++j) {
          s -= a(p, i, j) * x(p, j, 0);
          row += std::abs(a(p, i, j));
        }
        an = std::max(an, row);
        xn = std::max(xn, std::abs(x(p, i, 0)));
        rn = std::max(rn, std::abs(s));
      }
      const double r = rn / (an * xn);
      worst = r == r ? std::max(worst, r) : 1e300;
    }
    const double eps = std::numeric_limits<double>::epsilon();
    std::printf("  worst residual %.2e (%.1f n eps)\n", worst, worst / (n * eps));
    ok = ok && worst < 100 * n * eps;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

int scalapack_part(int rank, int size, int n) {
  // A grid as square as the rank count allows.
  int p = 1;
  while ((p + 1) * (p + 1) <= size) ++p;
  while (size % p) --p;
  kolesky::mpi::Grid grid(MPI_COMM_WORLD, p, size / p);
  const kolesky::mpi::Descriptor da(grid, n, n, 64, 64), db(grid, n, 1, 64, 1);
  using Full = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Full a, b, x;
  if (rank == 0) {
    a = Full("A", n, n);
    b = Full("b", n, 1);
    x = Full("x", n, 1);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) a(i, j) = entry(12345, i, j, n);
      b(j, 0) = uniform(std::uint64_t(j));
    }
  }
  Full pa("pa", da.local_rows(), da.local_cols()), pb("pb", db.local_rows(), db.local_cols());
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  kolesky::mpi::scatter(grid, 0, a, da, pa);
  kolesky::mpi::scatter(grid, 0, b, db, pb);
  const double t_scatter = seconds_since(t0);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  const kolesky::mpi::ScalapackResult r =
      kolesky::mpi::posv(grid, kolesky::Uplo::Lower, da, pa, db, pb);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t_posv = seconds_since(t0);
  kolesky::mpi::gather(grid, 0, db, pb, x);
  int ok = r.info == 0;
  if (rank == 0) {
    double an = 0, xn = 0, rn = 0;
    for (int i = 0; i < n; ++i) {
      double s = b(i, 0), row = 0;
      for (int j = 0; j < n; ++j) {
        s -= a(i, j) * x(j, 0);
        row += std::abs(a(i, j));
      }
      an = std::max(an, row);
      xn = std::max(xn, std::abs(x(i, 0)));
      rn = std::max(rn, std::abs(s));
    }
    const double res = rn / (an * xn), eps = std::numeric_limits<double>::epsilon();
    std::printf("scalapack: one system of order %d on a %d x %d grid, blocks of 64\n", n, p,
                size / p);
    std::printf("  scatter %.4f s   posv %.4f s (%.1f GFLOP/s)   info %d   residual %.2g n eps\n",
                t_scatter, t_posv, double(n) * n * n / 3.0 / t_posv * 1e-9, r.info,
                res / (n * eps));
    ok = ok && res < 100 * n * eps;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

}  // namespace

int main(int argc, char* argv[]) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  kolesky::mpi::initialize_kokkos(MPI_COMM_WORLD);
  int total = 100000, n = 16, large = 0;
  for (int i = 1, k = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--scalapack") == 0 && i + 1 < argc)
      large = std::atoi(argv[++i]);
    else if (k++ == 0)
      total = std::atoi(argv[i]);
    else
      n = std::atoi(argv[i]);
  }
  int ok = 1;
  {
    ok = batch_part(rank, size, total, n);
    if (large > 0) ok = scalapack_part(rank, size, large) && ok;
  }
  Kokkos::finalize();
  MPI_Finalize();
  if (rank == 0) std::printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
