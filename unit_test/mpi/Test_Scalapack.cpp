// One matrix through ScaLAPACK: potrf / potrs / posv on the grids the rank count allows, checked
// on the gathered result with LAPACK's test ratios and against LAPACK itself; scatter and
// gather; argument checks.
#include <Kolesky_Lapack.hpp>
#include <Kolesky_TestUtils.hpp>
#include <algorithm>
#include <limits>
#include <mpi/Kolesky_Mpi.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mpi/Kolesky_MpiTestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

using Host = Kokkos::HostSpace;
template <class T>
using Piece = Kokkos::View<T**, Kokkos::LayoutLeft, Host>;

std::vector<std::pair<int, int>> grids() {
  std::vector<std::pair<int, int>> g;
  for (auto s :
       {std::make_pair(1, 1), std::make_pair(1, 2), std::make_pair(2, 1), std::make_pair(2, 2)})
    if (s.first * s.second <= world_size()) g.push_back(s);
  return g;
}
// Root 0, and the last rank (outside the grid when the grid is smaller than the world).
std::vector<int> roots() {
  std::vector<int> r{0};
  if (world_size() > 1) r.push_back(world_size() - 1);
  return r;
}

template <class T>
Piece<T> full_of(const Dense& a) {
  Piece<T> v("full", a.n, a.m);
  for (int j = 0; j < a.m; ++j)
    for (int i = 0; i < a.n; ++i) v(i, j) = T(a(i, j));
  return v;
}
template <class V>
Dense dense_of(const V& v) {
  Dense a(int(v.extent(0)), int(v.extent(1)));
  for (int j = 0; j < a.m; ++j)
    for (int i = 0; i < a.n; ++i) a(i, j) = double(v(i, j));
  return a;
}

class ScalapackPlain : public MpiTest {};

// ScaLAPACK's own LAPACK dependency resolves to the library's OpenBLAS (one thread pool).
TEST_F(ScalapackPlain, OneHostBlas) {
#ifdef KOLESKY_TEST_EXPECT_OPENMP_BLAS
  EXPECT_EQ(host_blas_threading(), BlasThreading::OpenMP);
#else
  GTEST_SKIP() << "not built against the OpenMP OpenBLAS";
#endif
}

template <class T>
class Scalapack : public MpiTest {};
TYPED_TEST_SUITE(Scalapack, Scalars);

TYPED_TEST(Scalapack, GridsAndDescriptors) {
  for (auto g : grids()) {
    mpi::Grid grid(MPI_COMM_WORLD, g.first, g.second);
    EXPECT_EQ(grid.nprow(), g.first);
    EXPECT_EQ(grid.npcol(), g.second);
    const bool in = this->rank() < g.first * g.second;
    EXPECT_EQ(grid.in_grid(), in);
    if (in) {
      // Row-major: rank = prow * npcol + pcol.
      EXPECT_EQ(grid.myrow(), this->rank() / g.second);
      EXPECT_EQ(grid.mycol(), this->rank() % g.second);
    } else {
      EXPECT_EQ(grid.context(), -1);
    }
    for (int r = 0; r < g.first; ++r)
      for (int c = 0; c < g.second; ++c) EXPECT_EQ(grid.rank_of(r, c), r * g.second + c);
    // 37 rows in blocks of 8 over the grid rows: every row somewhere, once.
    const mpi::Descriptor d(grid, 37, 21, 8, 5);
    int rows = 0, cols = 0;
    for (int r = 0; r < g.first; ++r) rows += d.local_rows_of(r);
    for (int c = 0; c < g.second; ++c) cols += d.local_cols_of(c);
    EXPECT_EQ(rows, 37);
    EXPECT_EQ(cols, 21);
    if (in) {
      EXPECT_EQ(d.local_rows(), d.local_rows_of(grid.myrow()));
      EXPECT_EQ(d.lld(), std::max(1, d.local_rows()));
      EXPECT_EQ(d.context(), grid.context());
    } else {
      EXPECT_EQ(d.local_rows(), 0);
      EXPECT_EQ(d.local_cols(), 0);
    }
  }
}

// Scatter then gather: exact, for any shape, block sizes and source process; each piece holds
// the entries the block-cyclic map gives it.
TYPED_TEST(Scalapack, ScatterGatherRoundTrip) {
  using T = TypeParam;
  const Dense a = random_matrix(37, 23, 7);
  for (auto g : grids())
    for (int root : roots()) {
      SCOPED_TRACE("grid " + std::to_string(g.first) + "x" + std::to_string(g.second) + " root " +
                   std::to_string(root));
      mpi::Grid grid(MPI_COMM_WORLD, g.first, g.second);
      const mpi::Descriptor d(grid, a.n, a.m, 8, 5, g.first - 1, g.second - 1);
      const Piece<T> full = this->rank() == root ? full_of<T>(a) : Piece<T>();
      Piece<T> piece("piece", d.local_rows(), d.local_cols());
      mpi::scatter(grid, root, full, d, piece);
      // Local (il, jl) is global (il / 8 * nprow + shift) * 8 + il % 8 and likewise in columns.
      for (int jl = 0; jl < d.local_cols(); ++jl)
        for (int il = 0; il < d.local_rows(); ++il) {
          const int rs = (grid.myrow() - (g.first - 1) + g.first) % g.first;
          const int cs = (grid.mycol() - (g.second - 1) + g.second) % g.second;
          const int i = (il / 8 * g.first + rs) * 8 + il % 8;
          const int j = (jl / 5 * g.second + cs) * 5 + jl % 5;
          EXPECT_TRUE(same_bits(piece(il, jl), T(a(i, j)))) << il << "," << jl;
        }
      Piece<T> back("back", this->rank() == root ? a.n : 0, this->rank() == root ? a.m : 0);
      mpi::gather(grid, root, d, piece, back);
      if (this->rank() != root) continue;
      for (int j = 0; j < a.m; ++j)
        for (int i = 0; i < a.n; ++i) EXPECT_TRUE(same_bits(back(i, j), T(a(i, j))));
    }
}

// Pieces larger than a slab (4 MiB) travel in several messages; remote pieces only (a rank's
// own piece is copied in place).
TYPED_TEST(Scalapack, ScatterGatherLargePiecesInSlabs) {
  using T = TypeParam;
  if (this->size() < 2) GTEST_SKIP() << "needs a remote piece";
  const int m = 2000, n = 1200;
  const Dense a = random_matrix(m, n, 9);
  for (auto g : {std::make_pair(1, 2), std::make_pair(2, 1)}) {
    mpi::Grid grid(MPI_COMM_WORLD, g.first, g.second);
    const mpi::Descriptor d(grid, m, n, 64, 32);
    const int root = this->size() - 1;
    const Piece<T> full = this->rank() == root ? full_of<T>(a) : Piece<T>();
    Piece<T> piece("piece", d.local_rows(), d.local_cols());
    mpi::scatter(grid, root, full, d, piece);
    for (int c = 0; c < d.local_cols(); c += 97) {
      const int j = (c / 32 * g.second + grid.mycol()) * 32 + c % 32;
      for (int r = 0; r < d.local_rows(); r += 13) {
        const int i = (r / 64 * g.first + grid.myrow()) * 64 + r % 64;
        EXPECT_TRUE(same_bits(piece(r, c), T(a(i, j)))) << r << "," << c;
      }
    }
    Piece<T> back("back", this->rank() == root ? m : 0, this->rank() == root ? n : 0);
    mpi::gather(grid, root, d, piece, back);
    if (this->rank() != root) continue;
    int bad = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) bad += !same_bits(back(i, j), T(a(i, j)));
    EXPECT_EQ(bad, 0);
  }
}

// potrf on the distributed matrix, gathered and checked: ||A - L L^T|| / (n ||A|| eps) < 30,
// as LAPACK's own factor of the same matrix is.
template <class T, class MakePiece>
void potrf_case(const int n, const int nb, const std::pair<int, int> g, const Uplo uplo,
                const int root, MakePiece&& make_piece) {
  SCOPED_TRACE("n " + std::to_string(n) + " nb " + std::to_string(nb) + " grid " +
               std::to_string(g.first) + "x" + std::to_string(g.second) + " " + name(uplo) +
               " root " + std::to_string(root));
  const int rank = world_rank();
  const Dense a = random_spd<T>(n, 11u + unsigned(n));
  mpi::Grid grid(MPI_COMM_WORLD, g.first, g.second);
  const mpi::Descriptor d(grid, n, n, nb, nb);
  const Piece<T> full = rank == root ? full_of<T>(a) : Piece<T>();
  auto piece = make_piece(d);
  mpi::scatter(grid, root, full, d, piece);
  const mpi::ScalapackResult r = mpi::potrf(grid, uplo, d, piece);
  EXPECT_EQ(r.info, 0);
  EXPECT_EQ(r.staging_seconds, 0.0);  // host memory: nothing staged
  Piece<T> back("back", rank == root ? n : 0, rank == root ? n : 0);
  mpi::gather(grid, root, d, piece, back);
  if (rank == root) {
    const double ratio = potrf_ratio<T>(a, factor_of(dense_of(back), uplo));
    EXPECT_LT(ratio, 30.0);
    Piece<T> lap = full_of<T>(a);
    EXPECT_EQ(baselines::lapack_potrf(uplo, n, lap.data(), std::max(1, n)), 0);
    EXPECT_LT(potrf_ratio<T>(a, factor_of(dense_of(lap), uplo)), 30.0);
  }
}

TYPED_TEST(Scalapack, PotrfMatchesLapackResiduals) {
  using T = TypeParam;
  const auto plain = [](const mpi::Descriptor& d) {
    return Piece<T>("piece", d.local_rows(), d.local_cols());
  };
  for (auto g : grids())
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      potrf_case<T>(37, 8, g, uplo, 0, plain);
      potrf_case<T>(100, 16, g, uplo, world_size() - 1, plain);
      potrf_case<T>(1, 4, g, uplo, 0, plain);
    }
}

// A piece whose columns are further apart than its rows (a LayoutStride View into a larger
// allocation): the leading dimension comes from the View.
TYPED_TEST(Scalapack, PaddedPieces) {
  using T = TypeParam;
  std::vector<Kokkos::View<T**, Kokkos::LayoutLeft, Host>> keep;
  const auto padded = [&](const mpi::Descriptor& d) {
    const int lr = d.local_rows(), lc = d.local_cols();
    keep.emplace_back("big", lr + 5, lc);
    return Kokkos::View<T**, Kokkos::LayoutStride, Host>(
        keep.back().data(), Kokkos::LayoutStride(lr, 1, lc, lc > 0 ? lr + 5 : 0));
  };
  for (auto g : grids()) potrf_case<T>(45, 8, g, Uplo::Lower, 0, padded);
}

// posv, and potrs after potrf: backward error of every column below 30.
TYPED_TEST(Scalapack, SolvesMatchLapackResiduals) {
  using T = TypeParam;
  const int rank = this->rank(), n = 53, nb = 8, nrhs = 3;
  const Dense a = random_spd<T>(n, 5);
  Dense b = random_matrix(n, nrhs, 6);
  for (auto& x : b.v) x = double(T(x));
  for (auto g : grids())
    for (Uplo uplo : {Uplo::Lower, Uplo::Upper})
      for (bool factored_first : {false, true}) {
        SCOPED_TRACE(std::string(name(uplo)) + (factored_first ? " potrf+potrs" : " posv"));
        mpi::Grid grid(MPI_COMM_WORLD, g.first, g.second);
        const mpi::Descriptor da(grid, n, n, nb, nb), db(grid, n, nrhs, nb, 2);
        const int root = world_size() - 1;
        const Piece<T> fa = rank == root ? full_of<T>(a) : Piece<T>();
        const Piece<T> fb = rank == root ? full_of<T>(b) : Piece<T>();
        Piece<T> pa("pa", da.local_rows(), da.local_cols()),
            pb("pb", db.local_rows(), db.local_cols());
        mpi::scatter(grid, root, fa, da, pa);
        mpi::scatter(grid, root, fb, db, pb);
        if (factored_first) {
          EXPECT_EQ(mpi::potrf(grid, uplo, da, pa).info, 0);
          const Piece<const T> factor = pa;
          EXPECT_EQ(mpi::potrs(grid, uplo, da, factor, db, pb).info, 0);
        } else {
          EXPECT_EQ(mpi::posv(grid, uplo, da, pa, db, pb).info, 0);
        }
        Piece<T> x("x", rank == root ? n : 0, rank == root ? nrhs : 0);
        mpi::gather(grid, root, db, pb, x);
        if (rank == root) {
          EXPECT_LT(solve_ratio<T>(a, dense_of(x), b), 30.0);
          // LAPACK on the same system.
          Piece<T> la = full_of<T>(a), lb = full_of<T>(b);
          ASSERT_EQ(baselines::lapack_potrf(uplo, n, la.data(), n), 0);
          ASSERT_EQ(baselines::lapack_potrs(uplo, n, nrhs, la.data(), n, lb.data(), n), 0);
          EXPECT_LT(solve_ratio<T>(a, dense_of(lb), b), 30.0);
        }
      }
}

// A matrix that is not positive definite: ScaLAPACK's info is LAPACK's, on every rank.
TYPED_TEST(Scalapack, NotPositiveDefiniteInfoAsLapack) {
  using T = TypeParam;
  const int rank = this->rank(), n = 37;
  for (int k : {0, 12, 20, 36}) {
    Dense a = random_spd<T>(n, 3);
    a(k, k) = -1.0;
    Piece<T> lap = full_of<T>(a);
    const int expected = baselines::lapack_potrf(Uplo::Lower, n, lap.data(), n);
    EXPECT_EQ(expected, k + 1);
    for (auto g : grids())
      for (Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        mpi::Grid grid(MPI_COMM_WORLD, g.first, g.second);
        const mpi::Descriptor d(grid, n, n, 8, 8);
        const Piece<T> full = rank == 0 ? full_of<T>(a) : Piece<T>();
        Piece<T> piece("piece", d.local_rows(), d.local_cols());
        mpi::scatter(grid, 0, full, d, piece);
        EXPECT_EQ(mpi::potrf(grid, uplo, d, piece).info, expected)
            << "k " << k << " grid " << g.first << "x" << g.second << " " << name(uplo);
      }
  }
}

TYPED_TEST(Scalapack, BadArgumentsThrowOnEveryRank) {
  using T = TypeParam;
  const int rank = this->rank(), size = this->size(), last = size - 1;
  EXPECT_THROW(mpi::Grid(MPI_COMM_WORLD, 0, 1), kolesky::invalid_argument);
  EXPECT_THROW(mpi::Grid(MPI_COMM_WORLD, size + 1, 1), kolesky::invalid_argument);
  EXPECT_THROW(mpi::Grid(MPI_COMM_WORLD, rank == last ? 2 : 1, 1), kolesky::invalid_argument);
  mpi::Grid grid(MPI_COMM_WORLD, 1, size);
  EXPECT_THROW(mpi::Descriptor(grid, 10, 10, 0, 4), kolesky::invalid_argument);
  EXPECT_THROW(mpi::Descriptor(grid, -1, 10, 4, 4), kolesky::invalid_argument);
  EXPECT_THROW(mpi::Descriptor(grid, 10, 10, 4, 4, 1, 0), kolesky::invalid_argument);
  EXPECT_THROW(mpi::Descriptor(grid, 10, 10, 4, 4, 0, size), kolesky::invalid_argument);
  const mpi::Descriptor d(grid, 10, 10, 4, 4);
  // One rank's piece a row short.
  Piece<T> wrong("wrong", rank == last ? d.local_rows() - 1 : d.local_rows(), d.local_cols());
  try {
    mpi::potrf(grid, Uplo::Lower, d, wrong);
    ADD_FAILURE() << "no exception";
  } catch (const kolesky::invalid_argument& e) {
    if (rank == last) {
      EXPECT_NE(std::string(e.what()).find("local piece is"), std::string::npos) << e.what();
    }
  }
  Piece<T> piece("piece", d.local_rows(), d.local_cols());
  // Rectangular blocks, a rectangular matrix, B of the wrong height or row blocks.
  const mpi::Descriptor rect_blocks(grid, 10, 10, 4, 2);
  Piece<T> rp("rp", rect_blocks.local_rows(), rect_blocks.local_cols());
  EXPECT_THROW(mpi::potrf(grid, Uplo::Lower, rect_blocks, rp), kolesky::invalid_argument);
  const mpi::Descriptor rect(grid, 10, 12, 4, 4);
  Piece<T> rq("rq", rect.local_rows(), rect.local_cols());
  EXPECT_THROW(mpi::potrf(grid, Uplo::Lower, rect, rq), kolesky::invalid_argument);
  const mpi::Descriptor tall(grid, 11, 2, 4, 4), other_blocks(grid, 10, 2, 2, 4);
  Piece<T> tb("tb", tall.local_rows(), tall.local_cols());
  Piece<T> ob("ob", other_blocks.local_rows(), other_blocks.local_cols());
  EXPECT_THROW(mpi::posv(grid, Uplo::Lower, d, piece, tall, tb), kolesky::invalid_argument);
  EXPECT_THROW(mpi::posv(grid, Uplo::Lower, d, piece, other_blocks, ob), kolesky::invalid_argument);
  // Scatter: the full matrix of the wrong size on root, a root outside the communicator.
  const Piece<T> full("full", rank == 0 ? 10 : 0, rank == 0 ? 9 : 0);
  EXPECT_THROW(mpi::scatter(grid, 0, full, d, piece), kolesky::invalid_argument);
  EXPECT_THROW(mpi::gather(grid, 0, d, piece, full), kolesky::invalid_argument);
  EXPECT_THROW(mpi::scatter(grid, size, full, d, piece), kolesky::invalid_argument);
  // A descriptor of another grid.
  if (size > 1) {
    mpi::Grid other(MPI_COMM_WORLD, size, 1);
    const mpi::Descriptor od(other, 10, 10, 4, 4);
    Piece<T> op("op", od.local_rows(), od.local_cols());
    EXPECT_THROW(mpi::potrf(grid, Uplo::Lower, od, op), kolesky::invalid_argument);
  }
  // The grid still works.
  Dense a = random_spd<T>(10, 1);
  const Piece<T> good = rank == 0 ? full_of<T>(a) : Piece<T>();
  mpi::scatter(grid, 0, good, d, piece);
  EXPECT_EQ(mpi::potrf(grid, Uplo::Lower, d, piece).info, 0);
}

}  // namespace
}  // namespace test
}  // namespace kolesky
