// Scaling of Kolesky::mpi, plain timing (MPI_Barrier + MPI_Wtime, the median of --reps runs):
//
//   kolesky_bench_mpi batch [--n 32] [--per-rank K | --total K] [--layout strided|interleaved]
//                           [--kernel auto|thread] [--reps 5]
//       kolesky::mpi::batched::potrf on each rank's share (the factorization alone: every rank's
//       matrices restored before each run, untimed), and apart from it the scatter of the whole
//       batch from rank 0 and the gather back.
//   kolesky_bench_mpi scalapack [--n 4096] [--nb 128] [--grid PxQ] [--reps 3]
//       kolesky::mpi::potrf (ScaLAPACK) on an n x n matrix held by rank 0: scatter, factor,
//       gather, each timed; the conversion (scatter + gather) as a share of the factorization.
//   kolesky_bench_mpi dense [--n 4096] [--reps 3]
//       kolesky::potrf on one rank's default execution space, for comparison.
//
// One JSON object per line on rank 0's stdout. Exit 1 if a factorization failed or its check
// did not pass.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mpi/Kolesky_Mpi.hpp>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using HostExec = Kokkos::DefaultHostExecutionSpace;

struct Args {
  std::string mode = "batch", layout = "strided", kernel = "auto", grid;
  int n = 32, nb = 128, reps = 5;
  std::int64_t per_rank = 0, total = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "kolesky_bench_mpi: %s\n", why);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc > 1) a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + k).c_str());
    const std::string v = argv[++i];
    if (k == "--n")
      a.n = std::stoi(v);
    else if (k == "--nb")
      a.nb = std::stoi(v);
    else if (k == "--reps")
      a.reps = std::stoi(v);
    else if (k == "--per-rank")
      a.per_rank = std::stoll(v);
    else if (k == "--total")
      a.total = std::stoll(v);
    else if (k == "--layout")
      a.layout = v;
    else if (k == "--kernel")
      a.kernel = v;
    else if (k == "--grid")
      a.grid = v;
    else
      usage(("unknown option " + k).c_str());
  }
  if (a.reps < 1) usage("--reps must be >= 1");
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds of f() across all ranks: barrier, f, barrier.
template <class F>
double timed(F&& f) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  f();
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime() - t0;
}

// Entry (i, j) of a symmetric, strictly diagonally dominant (so SPD) matrix: off-diagonal
// entries in [-1, 1) from a hash, diagonal n.
KOKKOS_INLINE_FUNCTION double entry(std::uint64_t seed, int i, int j, int n) {
  if (i == j) return n;
  const std::uint64_t lo = std::uint64_t(i < j ? i : j), hi = std::uint64_t(i < j ? j : i);
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + lo * 0x100000001b3ull + hi + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

int threads() { return HostExec().concurrency(); }

template <class Batch>
int run_batch_layout(const Args& a, const int rank, const int size) {
  using Packed = kolesky::batched::StridedBatch<double, Kokkos::LayoutRight, Kokkos::HostSpace>;
  const std::int64_t total = a.total > 0 ? a.total : a.per_rank * size;
  if (total <= 0) usage("batch: give --per-rank or --total");
  const int n = a.n;
  const kolesky::mpi::BatchSplit split(total, MPI_COMM_WORLD,
                                       kolesky::batched::default_chunk<Exec, double>());
  const int count = split.batch_size(rank);
  Packed whole;
  if (rank == 0) {
    whole = Packed("whole", int(total), n, n);
    const Packed w = whole;
    Kokkos::parallel_for("bench::fill", Kokkos::RangePolicy<HostExec>(0, int(total)),
                         [=](const int p) {
                           for (int i = 0; i < n; ++i)
                             for (int j = 0; j < n; ++j)
                               w(p, i, j) = entry(std::uint64_t(p), i, j, n);
                         });
    HostExec().fence();
  }
  Batch mine = [&] {
    if constexpr (std::is_same<Batch,
                               kolesky::batched::ChunkedBatch<double, Exec::memory_space>>::value)
      return Batch("mine", count, n, n, kolesky::batched::default_chunk<Exec, double>());
    else
      return Batch("mine", count, n, n);
  }();
  Batch saved = [&] {
    if constexpr (std::is_same<Batch,
                               kolesky::batched::ChunkedBatch<double, Exec::memory_space>>::value)
      return Batch("saved", count, n, n, kolesky::batched::default_chunk<Exec, double>());
    else
      return Batch("saved", count, n, n);
  }();
  Kokkos::View<int*, Exec::memory_space> info("info", count);
  kolesky::batched::Options opt;
  if (a.kernel == "thread") opt.kernel = kolesky::batched::Kernel::ThreadDirect;
  const Exec exec;
  std::vector<double> ts, tf, tg;
  for (int r = 0; r < a.reps; ++r)
    ts.push_back(timed([&] { kolesky::mpi::batched::scatter(MPI_COMM_WORLD, 0, whole, mine); }));
  kolesky::batched::deep_copy(saved, mine);
  std::int64_t failed = 0;
  for (int r = 0; r < a.reps; ++r) {
    kolesky::batched::deep_copy(mine, saved);
    tf.push_back(timed([&] {
      failed +=
          kolesky::mpi::batched::potrf(MPI_COMM_WORLD, exec, kolesky::Uplo::Lower, mine, info, opt);
    }));
  }
  for (int r = 0; r < a.reps; ++r)
    tg.push_back(timed([&] { kolesky::mpi::batched::gather(MPI_COMM_WORLD, 0, mine, whole); }));
  // Check: the gathered factor of a few matrices against their matrices.
  int bad = failed != 0;
  if (rank == 0) {
    for (std::int64_t p = 0; p < total; p += std::max<std::int64_t>(1, total / 7)) {
      double worst = 0;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int k = 0; k <= j; ++k) s += whole(int(p), i, k) * whole(int(p), j, k);
          worst = std::max(worst, std::abs(s - entry(std::uint64_t(p), i, j, n)) / n);
        }
      if (!(worst < 1e-12 * n)) bad = 1;
    }
    const double t = median(tf), flops = double(total) * double(n) * n * n / 3.0;
    std::printf(
        "{\"mode\": \"batch\", \"scaling\": \"%s\", \"ranks\": %d, \"threads_per_rank\": %d, "
        "\"layout\": \"%s\", "
        "\"kernel\": \"%s\", \"n\": %d, \"total\": %lld, \"per_rank_max\": %lld, \"reps\": %d, "
        "\"potrf_s\": %.6f, \"matrices_per_s\": %.4e, \"gflops\": %.3f, \"scatter_s\": %.6f, "
        "\"gather_s\": %.6f, \"check\": \"%s\"}\n",
        a.total > 0 ? "strong" : "weak", size, threads(), a.layout.c_str(), a.kernel.c_str(), n,
        (long long)total, (long long)split.count(0), a.reps, t, double(total) / t, flops / t * 1e-9,
        median(ts), median(tg), bad ? "FAILED" : "ok");
    std::fflush(stdout);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return bad;
}

int run_batch(const Args& a, const int rank, const int size) {
  using M = Exec::memory_space;
  if (a.layout == "strided")
    return run_batch_layout<kolesky::batched::StridedBatch<double, Kokkos::LayoutRight, M>>(a, rank,
                                                                                            size);
  if (a.layout == "interleaved")
    return run_batch_layout<kolesky::batched::InterleavedBatch<double, M>>(a, rank, size);
  if (a.layout == "chunked")
    return run_batch_layout<kolesky::batched::ChunkedBatch<double, M>>(a, rank, size);
  usage("--layout: strided, interleaved or chunked");
}

using Full = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

Full make_full(const int n) {
  Full f(Kokkos::view_alloc(Kokkos::WithoutInitializing, "full"), n, n);
  Kokkos::parallel_for("bench::fill", Kokkos::RangePolicy<HostExec>(0, n), [=](const int j) {
    for (int i = 0; i < n; ++i) f(i, j) = entry(7, i, j, n);
  });
  HostExec().fence();
  return f;
}

// (L L^T)(i, j) against A(i, j) at a few places of the lower triangle.
int check_factor(const Full& l, const int n) {
  double worst = 0;
  for (int t = 0; t < 64; ++t) {
    const int i = int((std::uint64_t(t) * 2654435761u) % std::uint64_t(n));
    const int j = int((std::uint64_t(t) * 40503u + 17) % std::uint64_t(i + 1));
    double s = 0;
    for (int k = 0; k <= j; ++k) s += l(i, k) * l(j, k);
    worst = std::max(worst, std::abs(s - entry(7, i, j, n)) / n);
  }
  return worst < 1e-12 * n ? 0 : 1;
}

int run_scalapack(const Args& a, const int rank, const int size) {
  int p = 1, q = size;
  if (!a.grid.empty()) {
    if (std::sscanf(a.grid.c_str(), "%dx%d", &p, &q) != 2) usage("--grid PxQ");
  } else if (size == 4) {
    p = 2, q = 2;
  }
  const int n = a.n;
  kolesky::mpi::Grid grid(MPI_COMM_WORLD, p, q);
  const kolesky::mpi::Descriptor d(grid, n, n, a.nb, a.nb);
  Full full = rank == 0 ? make_full(n) : Full();
  using Piece = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Piece piece(Kokkos::view_alloc(Kokkos::WithoutInitializing, "piece"), d.local_rows(),
              d.local_cols());
  Piece saved(Kokkos::view_alloc(Kokkos::WithoutInitializing, "saved"), d.local_rows(),
              d.local_cols());
  std::vector<double> ts, tf, tg;
  for (int r = 0; r < a.reps; ++r)
    ts.push_back(timed([&] { kolesky::mpi::scatter(grid, 0, full, d, piece); }));
  Kokkos::deep_copy(saved, piece);
  int info = 0;
  for (int r = 0; r < a.reps; ++r) {
    Kokkos::deep_copy(piece, saved);
    tf.push_back(
        timed([&] { info |= kolesky::mpi::potrf(grid, kolesky::Uplo::Lower, d, piece).info; }));
  }
  for (int r = 0; r < a.reps; ++r)
    tg.push_back(timed([&] { kolesky::mpi::gather(grid, 0, d, piece, full); }));
  int bad = info != 0;
  if (rank == 0) {
    bad |= check_factor(full, n);
    const double t = median(tf), s = median(ts), g = median(tg);
    std::printf(
        "{\"mode\": \"scalapack\", \"ranks\": %d, \"threads_per_rank\": %d, \"grid\": \"%dx%d\", "
        "\"n\": %d, \"nb\": %d, \"reps\": %d, \"potrf_s\": %.4f, \"gflops\": %.2f, "
        "\"scatter_s\": %.4f, \"gather_s\": %.4f, \"conversion_pct\": %.1f, \"info\": %d, "
        "\"host_blas\": \"%s\", \"check\": \"%s\"}\n",
        size, threads(), p, q, n, a.nb, a.reps, t, double(n) * n * n / 3.0 / t * 1e-9, s, g,
        100.0 * (s + g) / t, info, kolesky::name(kolesky::host_blas_threading()),
        bad ? "FAILED" : "ok");
    std::fflush(stdout);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return bad;
}

int run_dense(const Args& a, const int rank) {
  int bad = 0;
  if (rank == 0) {
    const int n = a.n;
    const Full orig = make_full(n);
    Kokkos::View<double**, Kokkos::LayoutLeft, Exec::memory_space> m("m", n, n);
    std::vector<double> tf;
    int info = 0;
    for (int r = 0; r < a.reps; ++r) {
      Kokkos::deep_copy(m, orig);
      Exec().fence();
      const double t0 = MPI_Wtime();
      info |= kolesky::potrf(Exec(), kolesky::Uplo::Lower, m);
      tf.push_back(MPI_Wtime() - t0);
    }
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m);
    bad = info != 0 || check_factor(h, n);
    const double t = median(tf);
    std::printf(
        "{\"mode\": \"dense\", \"ranks\": 1, \"threads\": %d, \"exec\": \"%s\", \"n\": %d, "
        "\"reps\": %d, \"potrf_s\": %.4f, \"gflops\": %.2f, \"info\": %d, "
        "\"host_blas\": \"%s\", \"check\": \"%s\"}\n",
        threads(), Exec::name(), n, a.reps, t, double(n) * n * n / 3.0 / t * 1e-9, info,
        kolesky::name(kolesky::host_blas_threading()), bad ? "FAILED" : "ok");
    std::fflush(stdout);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  kolesky::mpi::initialize_kokkos(MPI_COMM_WORLD);  // local rank -> GPU, over every GPU seen
  int rc = 0;
  {
    const Args a = parse(argc, argv);
    if (a.mode == "batch")
      rc = run_batch(a, rank, size);
    else if (a.mode == "scalapack")
      rc = run_scalapack(a, rank, size);
    else if (a.mode == "dense")
      rc = run_dense(a, rank);
    else
      usage("mode: batch, scalapack or dense");
  }
  Kokkos::finalize();
  MPI_Finalize();
  return rc;
}
