// The distributed batch: kolesky::mpi::batched against the single-rank library on the same
// matrices (bit for bit), uneven splits, failing matrices, every layout, scatter and gather.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mpi/Kolesky_Mpi.hpp>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "mpi/Kolesky_MpiTestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

using Host = Kokkos::HostSpace;

// Matrix p of a batch of order n: A = M M^T / n + I rounded to T (from p's own seed, so any
// rank can make any matrix). Matrices in `bad` fail: a negative diagonal entry at `fail_at`
// (info fail_at + 1), or for the NaN ones a NaN there.
struct Recipe {
  int n = 0;
  std::vector<int> non_spd, nan;
  int fail_at() const { return n > 3 ? 3 : n - 1; }
  int expected_info(int p) const {
    for (int q : non_spd)
      if (q == p) return fail_at() + 1;
    for (int q : nan)
      if (q == p) return fail_at() + 1;
    return 0;
  }
  int failing() const { return int(non_spd.size() + nan.size()); }
  template <class T>
  std::vector<double> matrix(int p) const {
    std::mt19937 gen(1000u + unsigned(p));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> m(std::size_t(n) * n), a(std::size_t(n) * n);
    for (auto& x : m) x = u(gen);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += m[i * n + k] * m[j * n + k];
        a[i * n + j] = a[j * n + i] = double(T(s / n + (i == j ? 1.0 : 0.0)));
      }
    const int f = fail_at();
    if (expected_info(p) != 0)
      a[f * n + f] = std::find(nan.begin(), nan.end(), p) != nan.end()
                         ? std::numeric_limits<double>::quiet_NaN()
                         : -1.0;
    return a;
  }
};

// The right-hand side of matrix p, column r, row i.
inline double rhs_value(int p, int i, int r) { return std::sin(0.7 * p + 1.3 * i + 0.11 * r); }

// Fill batch `b` (any batch, host memory) with matrices first .. first + b.size() - 1.
template <class T, class B>
void fill(const B& b_, const Recipe& rec, std::int64_t first) {
  const auto b = batched::as_batch(b_);
  for (int p = 0; p < b.size(); ++p) {
    const auto a = rec.matrix<T>(int(first + p));
    for (int i = 0; i < rec.n; ++i)
      for (int j = 0; j < rec.n; ++j) b(p, i, j) = T(a[i * rec.n + j]);
  }
}
template <class T, class B>
void fill_rhs(const B& b_, std::int64_t first) {
  const auto b = batched::as_rhs(b_);
  for (int p = 0; p < b.size(); ++p)
    for (int i = 0; i < b.rows(); ++i)
      for (int r = 0; r < b.cols(); ++r) b(p, i, r) = T(rhs_value(int(first + p), i, r));
}

// Matrices first .. of `a` equal `ref`'s matrices 0 .. bit for bit (count: a's size).
template <class A, class R>
int differing(const A& a_, const R& ref_, std::int64_t first) {
  const auto a = batched::as_rhs(a_);
  const auto ref = batched::as_rhs(ref_);
  int bad = 0;
  for (int p = 0; p < a.size(); ++p)
    for (int i = 0; i < a.rows(); ++i)
      for (int j = 0; j < a.cols(); ++j)
        if (!same_bits(a(p, i, j), ref(int(first + p), i, j))) ++bad;
  return bad;
}

// The layouts a rank's batch may take.
template <class T>
struct StridedRight {
  using type = batched::StridedBatch<T, Kokkos::LayoutRight, Host>;
  static type make(int count, int n, int m) { return type("A", count, n, m); }
  static const char* name() { return "StridedBatch<LayoutRight>"; }
};
template <class T>
struct StridedLeft {
  using type = batched::StridedBatch<T, Kokkos::LayoutLeft, Host>;
  static type make(int count, int n, int m) { return type("A", count, n, m); }
  static const char* name() { return "StridedBatch<LayoutLeft>"; }
};
template <class T>
struct Interleaved {
  using type = batched::InterleavedBatch<T, Host>;
  static type make(int count, int n, int m) { return type("A", count, n, m); }
  static const char* name() { return "InterleavedBatch"; }
};
template <class T>
struct Chunked {
  using type = batched::ChunkedBatch<T, Host>;
  static type make(int count, int n, int m) {
    return type("A", count, n, m,
                2 * batched::default_chunk<Kokkos::DefaultHostExecutionSpace, T>());
  }
  static const char* name() { return "ChunkedBatch"; }
};
template <class T>
struct PlainView {
  using type = Kokkos::View<T***, Kokkos::LayoutLeft, Host>;
  static type make(int count, int n, int m) { return type("A", count, n, m); }
  static const char* name() { return "View<T***, LayoutLeft>"; }
};

template <class C>
class MpiBatched : public MpiTest {};
TYPED_TEST_SUITE(MpiBatched, HostConfigs);

// One case: the whole batch factored on one rank vs each rank's share through mpi::batched.
template <class Exec, class T, template <class> class L>
void potrf_matches(const Recipe& rec, const Uplo uplo, const batched::Options& opt,
                   const int granule, const int total) {
  using B = typename L<T>::type;
  const int rank = world_rank();
  SCOPED_TRACE(std::string(L<T>::name()) + " n=" + std::to_string(rec.n) +
               " kernel=" + batched::name(opt.kernel) + " " + kolesky::name(uplo) +
               " granule=" + std::to_string(granule));
  const Exec exec;
  // The single-rank call on every matrix.
  B whole = L<T>::make(total, rec.n, rec.n);
  fill<T>(whole, rec, 0);
  Kokkos::View<int*, Host> whole_info("whole_info", total);
  batched::potrf(exec, uplo, whole, whole_info, opt);
  exec.fence();
  // This rank's share.
  const mpi::BatchSplit split(total, MPI_COMM_WORLD, granule);
  const std::int64_t first = split.offset(rank);
  B mine = L<T>::make(split.batch_size(rank), rec.n, rec.n);
  fill<T>(mine, rec, first);
  Kokkos::View<int*, Host> info("info", split.count(rank));
  const std::int64_t failed = mpi::batched::potrf(MPI_COMM_WORLD, exec, uplo, mine, info, opt);
  EXPECT_EQ(failed, rec.failing());
  EXPECT_EQ(differing(mine, whole, first), 0);
  for (int p = 0; p < int(info.extent(0)); ++p) {
    EXPECT_EQ(info(p), whole_info(first + p)) << "matrix " << first + p;
    EXPECT_EQ(info(p), rec.expected_info(int(first + p))) << "matrix " << first + p;
  }
}

template <class Exec, class T, template <class> class L>
void potrf_matches_all(const bool lanes) {
  constexpr int C = batched::default_chunk<Exec, T>();
  const int total = 37;  // 10, 9, 9, 9 over four ranks; with granule C 12, 12, 8, 5 (double)
  for (int n : {1, 6, 13}) {
    Recipe rec;
    rec.n = n;
    rec.non_spd = std::vector<int>{5};
    rec.nan = std::vector<int>{30};
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      batched::Options opt;
      potrf_matches<Exec, T, L>(rec, uplo, opt, C, total);  // Auto
      opt.kernel = batched::Kernel::ThreadDirect;
      potrf_matches<Exec, T, L>(rec, uplo, opt, 1, total);
      opt.algo = Algo::Crout;
      potrf_matches<Exec, T, L>(rec, uplo, opt, 1, total);
      opt = {};
      opt.kernel = batched::Kernel::TeamRows;
      potrf_matches<Exec, T, L>(rec, uplo, opt, 1, total);
      if (lanes) {
        opt.kernel = batched::Kernel::SimdLanes;
        potrf_matches<Exec, T, L>(rec, uplo, opt, C, total);
      }
    }
  }
}

TYPED_TEST(MpiBatched, PotrfMatchesSingleRankEveryLayout) {
  using Exec = typename TypeParam::Exec;
  using T = typename TypeParam::Scalar;
  potrf_matches_all<Exec, T, StridedRight>(false);
  potrf_matches_all<Exec, T, StridedLeft>(false);
  potrf_matches_all<Exec, T, Interleaved>(true);
  potrf_matches_all<Exec, T, Chunked>(true);
  potrf_matches_all<Exec, T, PlainView>(false);
}

// Fewer matrices than ranks (ranks with none) and none at all.
TYPED_TEST(MpiBatched, FewerMatricesThanRanks) {
  using Exec = typename TypeParam::Exec;
  using T = typename TypeParam::Scalar;
  for (int total : {0, 1, 3}) {
    Recipe rec;
    rec.n = 5;
    if (total > 1) rec.non_spd = std::vector<int>{1};
    batched::Options opt;
    opt.kernel = batched::Kernel::ThreadDirect;
    potrf_matches<Exec, T, Interleaved>(rec, Uplo::Lower, opt, 1, total);
    potrf_matches<Exec, T, StridedRight>(rec, Uplo::Upper, opt, 1, total);
  }
}

// Root deals the batch out, every rank solves its share, root collects solutions and infos:
// the same bits as posv on the whole batch, failed matrices keep their right-hand sides.
template <class Exec, class T, template <class> class L>
void posv_pipeline(const int nrhs, const bool rank2_rhs) {
  using B = typename L<T>::type;
  using Whole = batched::StridedBatch<T, Kokkos::LayoutRight, Host>;
  const int rank = world_rank(), size = world_size(), root = size - 1, total = 41, n = 9;
  SCOPED_TRACE(std::string(L<T>::name()) + " nrhs=" + std::to_string(nrhs));
  Recipe rec;
  rec.n = n;
  rec.non_spd = std::vector<int>{0, 17};
  rec.nan = std::vector<int>{40};
  batched::Options opt;
  opt.kernel = batched::Kernel::ThreadDirect;
  const Exec exec;
  // Reference: the whole batch on one rank.
  Whole ra("ra", total, n, n), rb("rb", total, n, nrhs), b0("b0", total, n, nrhs);
  fill<T>(ra, rec, 0);
  fill_rhs<T>(rb, 0);
  fill_rhs<T>(b0, 0);
  Kokkos::View<int*, Host> rinfo("rinfo", total);
  batched::posv(exec, Uplo::Lower, ra, rb, rinfo, opt);
  exec.fence();
  // Distributed: whole batch on root only.
  Whole wa, wb;
  if (rank == root) {
    wa = Whole("wa", total, n, n);
    wb = Whole("wb", total, n, nrhs);
    fill<T>(wa, rec, 0);
    fill_rhs<T>(wb, 0);
  }
  const mpi::BatchSplit split(total, MPI_COMM_WORLD);
  const int count = split.batch_size(rank);
  B a = L<T>::make(count, n, n);
  Kokkos::View<int*, Host> info("info", count);
  Kokkos::View<int*, Host> all_info("all_info", rank == root ? total : 0);
  mpi::batched::scatter(MPI_COMM_WORLD, root, wa, a);
  std::int64_t failed = 0;
  if (rank2_rhs) {
    Kokkos::View<T**, Host> b("b", count, n);
    Kokkos::View<T**, Kokkos::LayoutStride, Host> wb2;
    if (rank == root) wb2 = Kokkos::subview(wb.data, Kokkos::ALL(), Kokkos::ALL(), 0);
    mpi::batched::scatter(MPI_COMM_WORLD, root, wb2, b);
    failed = mpi::batched::posv(MPI_COMM_WORLD, exec, Uplo::Lower, a, b, info, opt);
    mpi::batched::gather(MPI_COMM_WORLD, root, b, wb2);
  } else {
    B b = L<T>::make(count, n, nrhs);
    mpi::batched::scatter(MPI_COMM_WORLD, root, wb, b);
    failed = mpi::batched::posv(MPI_COMM_WORLD, exec, Uplo::Lower, a, b, info, opt);
    mpi::batched::gather(MPI_COMM_WORLD, root, b, wb);
  }
  mpi::batched::gather(MPI_COMM_WORLD, root, a, wa);
  mpi::batched::gather(MPI_COMM_WORLD, root, info, all_info);
  EXPECT_EQ(failed, 3);
  if (rank == root) {
    EXPECT_EQ(differing(wa, ra, 0), 0);
    EXPECT_EQ(differing(wb, rb, 0), 0);
    for (int p = 0; p < total; ++p) {
      EXPECT_EQ(all_info(p), rinfo(p)) << "matrix " << p;
      EXPECT_EQ(all_info(p), rec.expected_info(p)) << "matrix " << p;
      if (all_info(p) != 0) {
        for (int i = 0; i < n; ++i)
          for (int r = 0; r < nrhs; ++r)
            EXPECT_TRUE(same_bits(wb(p, i, r), b0(p, i, r))) << "failed matrix " << p << " lost B";
      }
    }
  }
}

TYPED_TEST(MpiBatched, ScatterPosvGatherMatchesSingleRank) {
  using Exec = typename TypeParam::Exec;
  using T = typename TypeParam::Scalar;
  posv_pipeline<Exec, T, StridedRight>(1, true);
  posv_pipeline<Exec, T, StridedRight>(3, false);
  posv_pipeline<Exec, T, StridedLeft>(2, false);
  posv_pipeline<Exec, T, Interleaved>(3, false);
  posv_pipeline<Exec, T, Chunked>(1, false);
  posv_pipeline<Exec, T, PlainView>(2, false);
}

// potrs after potrf: failed matrices are skipped (their B kept), the others solved as by the
// single-rank potrs; the count of skipped matrices is global.
TYPED_TEST(MpiBatched, PotrsKeepsFailedRightHandSides) {
  using Exec = typename TypeParam::Exec;
  using T = typename TypeParam::Scalar;
  using B = batched::ChunkedBatch<T, Host>;
  const int rank = world_rank(), total = 23, n = 7, nrhs = 2;
  Recipe rec;
  rec.n = n;
  rec.non_spd = std::vector<int>{22};
  rec.nan = std::vector<int>{3, 11};
  const Exec exec;
  batched::Options opt;  // Auto: SimdLanes, so split by the SIMD width
  constexpr int C = batched::default_chunk<Exec, T>();
  B ra("ra", total, n, n, C), rb("rb", total, n, nrhs, C);
  fill<T>(ra, rec, 0);
  fill_rhs<T>(rb, 0);
  Kokkos::View<int*, Host> rinfo("rinfo", total);
  batched::potrf(exec, Uplo::Upper, ra, rinfo, opt);
  batched::potrs(exec, Uplo::Upper, ra, rb, rinfo);
  exec.fence();
  const mpi::BatchSplit split(total, MPI_COMM_WORLD, C);
  const std::int64_t first = split.offset(rank);
  B a("a", split.batch_size(rank), n, n, C), b("b", split.batch_size(rank), n, nrhs, C),
      b0("b0", split.batch_size(rank), n, nrhs, C);
  fill<T>(a, rec, first);
  fill_rhs<T>(b, first);
  fill_rhs<T>(b0, first);
  Kokkos::View<int*, Host> info("info", a.size());
  EXPECT_EQ(mpi::batched::potrf(MPI_COMM_WORLD, exec, Uplo::Upper, a, info, opt), 3);
  EXPECT_EQ(mpi::batched::potrs(MPI_COMM_WORLD, exec, Uplo::Upper, a, b, info), 3);
  EXPECT_EQ(differing(b, rb, first), 0);
  for (int p = 0; p < a.size(); ++p) {
    if (info(p) == 0) continue;
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < nrhs; ++r)
        EXPECT_TRUE(same_bits(b(p, i, r), b0(p, i, r))) << "matrix " << first + p;
  }
}

// Scatter then gather in every pair of layouts returns the batch unchanged; each rank's share
// is its range of the whole.
template <class T, template <class> class W, template <class> class L>
void round_trip() {
  const int rank = world_rank(), size = world_size(), root = size > 1 ? 1 : 0;
  const int total = 2 * size + 3, n = 4, m = 3;
  SCOPED_TRACE(std::string(W<T>::name()) + " -> " + L<T>::name());
  auto whole = W<T>::make(rank == root ? total : 0, n, m);
  auto ref = batched::StridedBatch<T, Kokkos::LayoutRight, Host>("ref", total, n, m);
  for (int p = 0; p < total; ++p)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) ref(p, i, j) = T(rhs_value(p, i, 10 * j));
  if (rank == root) {
    const Kokkos::DefaultHostExecutionSpace host;
    batched::copy(host, ref, batched::as_batch(whole));
    host.fence();
  }
  const mpi::BatchSplit split(total, MPI_COMM_WORLD);
  auto mine = L<T>::make(split.batch_size(rank), n, m);
  mpi::batched::scatter(MPI_COMM_WORLD, root, whole, mine);
  EXPECT_EQ(differing(mine, ref, split.offset(rank)), 0);
  auto back = W<T>::make(rank == root ? total : 0, n, m);
  mpi::batched::gather(MPI_COMM_WORLD, root, mine, back);
  if (rank == root) {
    EXPECT_EQ(differing(back, ref, 0), 0);
  }
}

TYPED_TEST(MpiBatched, ScatterGatherRoundTripEveryLayout) {
  using T = typename TypeParam::Scalar;
  if (!std::is_same<typename TypeParam::Exec, Kokkos::DefaultHostExecutionSpace>::value)
    return;  // host copies only: once per scalar
  round_trip<T, StridedRight, StridedRight>();
  round_trip<T, StridedRight, StridedLeft>();
  round_trip<T, StridedRight, Interleaved>();
  round_trip<T, StridedRight, Chunked>();
  round_trip<T, StridedRight, PlainView>();
  round_trip<T, Interleaved, StridedRight>();
  round_trip<T, Chunked, Interleaved>();
  round_trip<T, PlainView, Chunked>();
  round_trip<T, StridedLeft, StridedLeft>();
}

// Wrong arguments on one rank make every rank throw (none is left waiting).
TYPED_TEST(MpiBatched, BadArgumentsThrowOnEveryRank) {
  using Exec = typename TypeParam::Exec;
  using T = typename TypeParam::Scalar;
  const int rank = world_rank(), size = world_size(), last = size - 1;
  const Exec exec;
  const int n = 4;
  Recipe rec;
  rec.n = n;
  batched::InterleavedBatch<T, Host> a("a", 5, n, n);
  fill<T>(a, rec, 0);
  // info too short on the last rank.
  Kokkos::View<int*, Host> info("info", rank == last ? 4 : 5);
  EXPECT_THROW(mpi::batched::potrf(MPI_COMM_WORLD, exec, Uplo::Lower, a, info),
               kolesky::invalid_argument);
  batched::InterleavedBatch<T, Host> b("b", 5, rank == last ? n + 1 : n, 1);
  Kokkos::View<int*, Host> good("good", 5);
  EXPECT_THROW(mpi::batched::posv(MPI_COMM_WORLD, exec, Uplo::Lower, a, b, good),
               kolesky::invalid_argument);
  // Scatter: one rank's matrices of another shape; the whole batch one short; a bad root.
  batched::StridedBatch<T, Kokkos::LayoutRight, Host> whole("w", 5 * size, n, n);
  batched::StridedBatch<T, Kokkos::LayoutRight, Host> mine("m", 5, rank == last ? n - 1 : n, n);
  EXPECT_THROW(mpi::batched::scatter(MPI_COMM_WORLD, 0, whole, mine), kolesky::invalid_argument);
  batched::StridedBatch<T, Kokkos::LayoutRight, Host> ok("ok", 5, n, n);
  batched::StridedBatch<T, Kokkos::LayoutRight, Host> short_whole("s", 5 * size - 1, n, n);
  EXPECT_THROW(mpi::batched::scatter(MPI_COMM_WORLD, 0, short_whole, ok),
               kolesky::invalid_argument);
  EXPECT_THROW(mpi::batched::gather(MPI_COMM_WORLD, 0, ok, short_whole), kolesky::invalid_argument);
  EXPECT_THROW(mpi::batched::scatter(MPI_COMM_WORLD, size, whole, ok), kolesky::invalid_argument);
  Kokkos::View<int*, Host> few("few", 5 * size - 1);
  EXPECT_THROW(mpi::batched::gather(MPI_COMM_WORLD, 0, good, few), kolesky::invalid_argument);
  // And the communicator still works.
  EXPECT_EQ(mpi::batched::potrf(MPI_COMM_WORLD, exec, Uplo::Lower, a, good), 0);
}

class MpiBatchedPlain : public MpiTest {};

TEST_F(MpiBatchedPlain, BatchSplitCountsAndOffsets) {
  const mpi::BatchSplit s(37, 4);
  const std::int64_t counts[4] = {10, 9, 9, 9}, offsets[4] = {0, 10, 19, 28};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.count(r), counts[r]);
    EXPECT_EQ(s.offset(r), offsets[r]);
  }
  const mpi::BatchSplit few(3, 4);
  EXPECT_EQ(few.count(3), 0);
  EXPECT_EQ(few.offset(3), 3);
  // In units of 4: 10 units as 3, 3, 2, 2, the last one partial.
  const mpi::BatchSplit g(37, 4, 4);
  const std::int64_t gc[4] = {12, 12, 8, 5}, go[4] = {0, 12, 24, 32};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(g.count(r), gc[r]);
    EXPECT_EQ(g.offset(r), go[r]);
  }
  const mpi::BatchSplit g2(5, 4, 4);
  EXPECT_EQ(g2.count(0), 4);
  EXPECT_EQ(g2.count(1), 1);
  EXPECT_EQ(g2.count(2), 0);
  EXPECT_EQ(g2.offset(3), 5);
  // 64-bit: 2^33 + 3 matrices over 3 ranks.
  const std::int64_t big = (std::int64_t(1) << 33) + 3;
  const mpi::BatchSplit b(big, 3);
  EXPECT_EQ(b.count(0) + b.count(1) + b.count(2), big);
  EXPECT_EQ(b.offset(2), b.count(0) + b.count(1));
  EXPECT_GT(b.offset(2), std::int64_t(INT_MAX));
  EXPECT_THROW(b.batch_size(0), kolesky::invalid_argument);
  EXPECT_THROW(mpi::BatchSplit(-1, 2), kolesky::invalid_argument);
  EXPECT_THROW(mpi::BatchSplit(5, 0), kolesky::invalid_argument);
  EXPECT_THROW(mpi::BatchSplit(5, 2, 0), kolesky::invalid_argument);
  EXPECT_THROW(s.count(4), kolesky::invalid_argument);
  const mpi::BatchSplit w(100, MPI_COMM_WORLD);
  EXPECT_EQ(w.parts, size());
  std::int64_t sum = 0;
  for (int r = 0; r < size(); ++r) sum += w.count(r);
  EXPECT_EQ(sum, 100);
}

TEST_F(MpiBatchedPlain, InfoGatherInRankOrder) {
  const int rank = this->rank(), size = this->size(), root = size - 1;
  Kokkos::View<int*, Host> mine("mine", rank + 1);
  for (int i = 0; i <= rank; ++i) mine(i) = 100 * rank + i;
  const int total = size * (size + 1) / 2;
  Kokkos::View<int*, Host> all("all", rank == root ? total : 0);
  mpi::batched::gather(MPI_COMM_WORLD, root, mine, all);
  if (rank != root) return;
  for (int r = 0, k = 0; r < size; ++r)
    for (int i = 0; i <= r; ++i, ++k) EXPECT_EQ(all(k), 100 * r + i);
}

TEST_F(MpiBatchedPlain, RankToDevice) {
  const int local = mpi::local_rank(MPI_COMM_WORLD);
  EXPECT_GE(local, 0);
  EXPECT_LT(local, size());
  // One node here: the node rank is the world rank.
  EXPECT_EQ(local, rank());
  EXPECT_EQ(mpi::device_for(MPI_COMM_WORLD, 1), 0);
  EXPECT_EQ(mpi::device_for(MPI_COMM_WORLD, 2), local % 2);
  EXPECT_EQ(mpi::device_for(MPI_COMM_WORLD, 8), local % 8);
  EXPECT_THROW(mpi::device_for(MPI_COMM_WORLD, 0), kolesky::invalid_argument);
  // The test main initialised Kokkos with initialize_kokkos(comm): every GPU seen is used.
#if defined(KOKKOS_ENABLE_CUDA)
  EXPECT_EQ(Kokkos::Cuda().cuda_device(),
            mpi::device_for(MPI_COMM_WORLD, mpi::devices_per_node()));
#else
  EXPECT_EQ(mpi::devices_per_node(), 1);
#endif
}

}  // namespace
}  // namespace test
}  // namespace kolesky
