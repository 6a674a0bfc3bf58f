// Blocked, recursive and seed-scheme potrf; TRSM-based potrs; mixed-precision posv.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

template <class T>
class PotrfBlocked : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(PotrfBlocked, Scalars);

constexpr double kOther = 12345.0;

// The factor in `f` (untouched triangle kOther) against A.
template <class T>
void check_factor_of(const Dense& a, const Dense& f, Uplo uplo) {
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.n; ++i)
      if (uplo == Uplo::Lower ? i < j : i > j) {
        ASSERT_EQ(f(i, j), kOther) << i << "," << j;
      }
  EXPECT_LT(potrf_ratio<T>(a, factor_of(f, uplo)), 30.0);
}

template <class T, class View>
void check_view(const Dense& a, const View& d, Uplo uplo, const PotrfOptions& opt) {
  ASSERT_EQ(potrf(ExecSpace(), uplo, d, opt), 0);
  check_factor_of<T>(a, to_host(d), uplo);
}

// dst = src on the device (the Views may have different layouts).
template <class Dst, class Src>
void copy_matrix(const Dst& dst, const Src& src) {
  const int n = int(src.extent(0));
  Kokkos::parallel_for(
      "copy", Kokkos::RangePolicy<ExecSpace>(0, n * n),
      KOKKOS_LAMBDA(const int e) { dst(e % n, e / n) = src(e % n, e / n); });
  Kokkos::fence();
}

// dst = src on the device, any n x m shape and layouts (deep_copy cannot take non-contiguous
// Views of different layouts).
template <class Dst, class Src>
void copy_2d(const Dst& dst, const Src& src) {
  const int n = int(src.extent(0)), m = int(src.extent(1));
  Kokkos::parallel_for(
      "copy_2d", Kokkos::RangePolicy<ExecSpace>(0, n * m),
      KOKKOS_LAMBDA(const int e) { dst(e % n, e / n) = src(e % n, e / n); });
  Kokkos::fence();
}

// A strided View's contents through a contiguous copy.
template <class T, class View>
Dense strided_to_host(const View& v) {
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> c("c", v.extent(0), v.extent(1));
  copy_2d(c, v);
  return to_host(c);
}

std::string describe(const PotrfOptions& o, int n) {
  return std::string("algo=") + name(o.algo) + " n=" + std::to_string(n) +
         " nb=" + std::to_string(o.block_size) + " blas=" +
         (o.blas == Blas::Native ? "native" : "vendor") + (o.lookahead ? "" : " nolookahead");
}

}  // namespace

// potrs of B (n x nrhs, already rounded to T) by the factors in dl and dr: B in LayoutLeft
// against dl, LayoutRight against dr, and every other row and column of a larger buffer
// against dl. The three solutions, labelled.
template <class T, class DL, class DR>
std::vector<std::pair<const char*, Dense>> solve_three_layouts(Uplo uplo, const DL& dl,
                                                               const DR& dr, const Dense& b) {
  using Strided2 = Kokkos::View<T**, Kokkos::LayoutStride, MemSpace>;
  const int n = b.n, nrhs = b.m;
  auto bl = to_device<T, Kokkos::LayoutLeft>(b);
  auto br = to_device<T, Kokkos::LayoutRight>(b);
  potrs(ExecSpace(), uplo, dl, bl);
  potrs(ExecSpace(), uplo, dr, br);
  Kokkos::View<T*, MemSpace> buf("buf", std::size_t(4) * (n + 3) * nrhs + 1);
  Strided2 bs(buf.data(), Kokkos::LayoutStride(n, 2, nrhs, 2 * (n + 3)));
  copy_2d(bs, to_device<T, Kokkos::LayoutLeft>(b));
  potrs(ExecSpace(), uplo, dl, bs);
  return {{"B LayoutLeft", to_host(bl)}, {"B LayoutRight", to_host(br)},
          {"B strided", strided_to_host<T>(bs)}};
}

// A (entries already in T) factored lower in LayoutLeft, then nrhs random right-hand sides
// solved with it: the exact residual test.
template <class T>
void lower_solve_is_accurate(const Dense& a, const int nrhs, const unsigned seed) {
  SCOPED_TRACE("lower solve, n=" + std::to_string(a.n));
  auto dl = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, dl), 0);
  Dense b = random_matrix(a.n, nrhs, seed);
  for (auto& x : b.v) x = double(T(x));
  auto bl = to_device<T, Kokkos::LayoutLeft>(b);
  potrs(ExecSpace(), Uplo::Lower, dl, bl);
  EXPECT_LT(solve_ratio<T>(a, to_host(bl), b), 30.0);
}

// potrs of 40 right-hand sides against A's lower factor, column 2 with a NaN in `row`: that
// column comes out all NaN, the other 39 solve A.
template <class T>
void nan_stays_in_its_column(const Dense& a, const int row, const unsigned seed) {
  SCOPED_TRACE("NaN in column 2, n=" + std::to_string(a.n));
  const int n = a.n;
  auto da = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, da), 0);
  Dense b = random_matrix(n, 40, seed);
  for (auto& x : b.v) x = double(T(x));
  Dense bn = b;
  bn(row, 2) = std::nan("");
  auto db = to_device<T, Kokkos::LayoutLeft>(bn);
  potrs(ExecSpace(), Uplo::Lower, da, db);
  const Dense x = to_host(db);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(std::isnan(x(i, 2))) << i;
  Dense xg(n, 39), bg(n, 39);
  for (int c = 0, d = 0; c < 40; ++c)
    if (c != 2) {
      for (int i = 0; i < n; ++i) xg(i, d) = x(i, c), bg(i, d) = b(i, c);
      ++d;
    }
  EXPECT_LT(n <= 300 ? solve_ratio<T>(a, xg, bg) : solve_ratio_fast(a, xg, bg, eps<T>()), 30.0);
}

// Panel widths that divide n and that do not, several panels, both level-3 implementations,
// both layouts and triangles.
TYPED_TEST(PotrfBlocked, VariantsBlockSizesBlas) {
  using T = TypeParam;
  for (const Algo algo : {Algo::Blocked, Algo::BlockedLeft, Algo::Recursive})
    for (const Blas blas : {Blas::Native, Blas::Vendor})
      for (const int nb : {16, 64, 100})
        for (const bool la : {true, false})
          for (const int n : {1, 2, 31, 129, 300}) {
            if (algo == Algo::Recursive && (nb != 16 || !la)) continue;  // nb, lookahead unused
            PotrfOptions o;
            o.algo = algo;
            o.blas = blas;
            o.block_size = nb;
            o.lookahead = la;
            SCOPED_TRACE(describe(o, n));
            const Dense a = random_spd<T>(n, 300u + n);
            check_view<T>(a, to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther), Uplo::Lower, o);
            check_view<T>(a, to_device<T, Kokkos::LayoutRight>(a, Uplo::Upper, kOther), Uplo::Upper, o);
            check_view<T>(a, to_device<T, Kokkos::LayoutRight>(a, Uplo::Lower, kOther), Uplo::Lower, o);
          }
}

// Strides the vendor BLAS cannot take (neither is 1): the native kernels take over.
TYPED_TEST(PotrfBlocked, NonUnitStrides) {
  using T = TypeParam;
  const int n = 150;
  const Dense a = random_spd<T>(n, 17u);
  for (const Algo algo : {Algo::Default, Algo::Blocked, Algo::Recursive}) {
    PotrfOptions o;
    o.algo = algo;
    o.block_size = 48;
    SCOPED_TRACE(describe(o, n));
    Kokkos::View<T***, Kokkos::LayoutLeft, MemSpace> big("big", 2, n, n);
    auto sub = Kokkos::subview(big, 1, Kokkos::ALL, Kokkos::ALL);
    const auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    copy_matrix(sub, d);
    ASSERT_EQ(sub.stride(0), 2u);
    ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, sub, o), 0);
    Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> back("back", n, n);
    copy_matrix(back, sub);  // strided device Views do not copy to the host directly
    check_factor_of<T>(a, to_host(back), Uplo::Lower);
  }
}

// The seeds' column schemes, including 002's sequential-tail cutoffs around n.
TYPED_TEST(PotrfBlocked, SeedSchemes) {
  using T = TypeParam;
  for (const int n : {1, 2, 3, 17, 64, 130})
    for (const Algo algo : {Algo::ColumnKernels, Algo::RightLookingKernels, Algo::CroutCutoff})
      for (const int cutoff : {0, 5, 128, 512}) {
        if (algo != Algo::CroutCutoff && cutoff != 0) continue;
        PotrfOptions o;
        o.algo = algo;
        o.tail_cutoff = cutoff;
        SCOPED_TRACE(describe(o, n) + " cutoff=" + std::to_string(cutoff));
        const Dense a = random_spd<T>(n, 500u + n);
        check_view<T>(a, to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther), Uplo::Lower, o);
        check_view<T>(a, to_device<T, Kokkos::LayoutLeft>(a, Uplo::Upper, kOther), Uplo::Upper, o);
      }
}

// Failures inside later panels: info is the first failing minor for every blocked form.
TYPED_TEST(PotrfBlocked, FailureInLaterPanels) {
  using T = TypeParam;
  const int n = 200;
  for (const int k : {0, 63, 64, 130, 199})
    for (const Algo algo : {Algo::Default, Algo::Blocked, Algo::BlockedLeft, Algo::Recursive,
                            Algo::ColumnKernels, Algo::RightLookingKernels, Algo::CroutCutoff})
      for (const Blas blas : {Blas::Native, Blas::Vendor}) {
        Dense a = dominant_spd<T>(n, 7u);
        a(k, k) = -1;
        PotrfOptions o;
        o.algo = algo;
        o.blas = blas;
        o.block_size = 64;
        SCOPED_TRACE(describe(o, n) + " k=" + std::to_string(k));
        auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
        EXPECT_EQ(potrf(ExecSpace(), Uplo::Lower, d, o), k + 1);
      }
}

// The first failing minor at every position that matters to the host's diagonal blocks (four
// columns per group, 128 x 128 blocks, the recursion's halves) and to the GPU's tiles: exact
// info, and the leading k x k block holds the factor of A's leading minor of order k (as in
// LAPACK, rows below a failed diagonal block are not solved).
TYPED_TEST(PotrfBlocked, FailingMinorAroundDiagonalBlocks) {
  using T = TypeParam;
  for (const int n : {2, 3, 63, 64, 65, 66, 127, 128, 129, 130, 257})
    for (const int k : {0, 1, 2, 31, 32, 62, 63, 64, 65, 127, 128, 129, n - 2, n - 1}) {
      if (k < 0 || k >= n) continue;
      const Dense good = random_spd<T>(n, 40u + n);
      Dense bad = good;
      bad(k, k) = -1;
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " k=" + std::to_string(k) +
                     (uplo == Uplo::Lower ? " Lower" : " Upper"));
        auto g = to_device<T, Kokkos::LayoutLeft>(good, uplo, kOther);
        auto b = to_device<T, Kokkos::LayoutLeft>(bad, uplo, kOther);
        ASSERT_EQ(potrf(ExecSpace(), uplo, g), 0);
        ASSERT_EQ(potrf(ExecSpace(), uplo, b), k + 1);
        const Dense lg = factor_of(to_host(g), uplo), lb = factor_of(to_host(b), uplo);
        double worst = 0;
        for (int j = 0; j < k; ++j)
          for (int i = j; i < k; ++i)
            worst = std::max(worst, std::abs(lg(i, j) - lb(i, j)) / (1 + std::abs(lg(i, j))));
        EXPECT_LE(worst, 64 * eps<T>());
      }
    }
}

// Large: n = 2048 on the host, 8192 on a GPU (checked through a solve, O(n^2) on the host).
TYPED_TEST(PotrfBlocked, LargeSolve) {
  using T = TypeParam;
  const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  for (const int n : {1000, host ? 2048 : 8192}) {
    const Dense a = dominant_spd<T>(n, 11u);
    Dense b = random_matrix(n, 2, 12u);
    for (auto& x : b.v) x = double(T(x));
    for (const Algo algo : {Algo::Default, Algo::Blocked, Algo::BlockedLeft}) {
      PotrfOptions o;
      o.algo = algo;
      o.block_size = host ? 192 : 384;
      SCOPED_TRACE(describe(o, n));
      auto da = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, 0.0);
      auto db = to_device<T, Kokkos::LayoutLeft>(b);
      ASSERT_EQ(posv(ExecSpace(), Uplo::Lower, da, db, o), 0);
      EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
    }
  }
}

// Many right-hand sides through the blocked TRSMs, both implementations and B layouts.
TYPED_TEST(PotrfBlocked, PotrsManyRightHandSides) {
  using T = TypeParam;
  for (const int n : {1, 70, 300})
    for (const int nrhs : {1, 33, 200})
      for (const Blas blas : {Blas::Native, Blas::Vendor})
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
          SCOPED_TRACE("n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs));
          const Dense a = random_spd<T>(n, 40u + n);
          Dense b = random_matrix(n, nrhs, 41u);
          for (auto& x : b.v) x = double(T(x));
          auto da = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
          ASSERT_EQ(potrf(ExecSpace(), uplo, da), 0);
          auto bl = to_device<T, Kokkos::LayoutLeft>(b);
          auto br = to_device<T, Kokkos::LayoutRight>(b);
          potrs(ExecSpace(), uplo, da, bl, blas);
          potrs(ExecSpace(), uplo, da, br, blas);
          EXPECT_LT(solve_ratio<T>(a, to_host(bl), b), 30.0);
          EXPECT_LT(solve_ratio<T>(a, to_host(br), b), 30.0);
        }
}

// Few right-hand sides (CUDA: the one-launch solve, 64-row blocks, four right-hand sides a
// launch): orders around the blocks, 1-17 columns, both triangles, A and B in either layout,
// B with strided rows and columns, A with neither stride 1, an ill-conditioned A.
TYPED_TEST(PotrfBlocked, PotrsFewRightHandSides) {
  using T = TypeParam;
  const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  using Strided2 = Kokkos::View<T**, Kokkos::LayoutStride, MemSpace>;
  for (const int n : {0, 1, 2, 63, 64, 65, 127, 128, 129, 300, host ? 700 : 2049})
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      const Dense a = n <= 300 ? random_spd<T>(n, 50u + n) : dominant_spd<T>(n, 50u + n);
      auto dl = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
      auto dr = to_device<T, Kokkos::LayoutRight>(a, uplo, kOther);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dl), 0);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dr), 0);
      for (const int nrhs : {1, 2, 3, 4, 5, 16, 17}) {
        if (n > 300 && nrhs != 1 && nrhs != 5) continue;
        SCOPED_TRACE("n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs) +
                     (uplo == Uplo::Lower ? " lower" : " upper"));
        Dense b = random_matrix(n, nrhs, 51u + nrhs);
        for (auto& x : b.v) x = double(T(x));
        // solve_ratio up to n = 300, its O(n^2) form above.
        for (const auto& [what, x] : solve_three_layouts<T>(uplo, dl, dr, b))
          EXPECT_LT(n <= 300 ? solve_ratio<T>(a, x, b) : solve_ratio_fast(a, x, b, eps<T>()), 30.0)
              << what;
      }
    }
  // A with neither stride 1 (every other row and column of a 2n x 2n matrix).
  for (const int n : {65, 129}) {
    SCOPED_TRACE("strided A, n=" + std::to_string(n));
    const Dense a = random_spd<T>(n, 60u);
    Kokkos::View<T*, MemSpace> buf("abuf", std::size_t(4) * n * n);
    Strided2 as(buf.data(), Kokkos::LayoutStride(n, 2, n, 4 * n));
    copy_2d(as, to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther));
    ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, as), 0);
    Dense b = random_matrix(n, 3, 61u);
    for (auto& x : b.v) x = double(T(x));
    auto bl = to_device<T, Kokkos::LayoutLeft>(b);
    potrs(ExecSpace(), Uplo::Lower, as, bl);
    EXPECT_LT(solve_ratio<T>(a, to_host(bl), b), 30.0);
  }
  // Ill-conditioned (cond 1e6 double, 1e3 float): the diagonal blocks' inverses keep the
  // backward error of a substitution.
  {
    const int n = 200;
    const Dense a = spd_with_condition(n, std::is_same<T, double>::value ? 1e6 : 1e3, 62u);
    Dense ar = a;
    for (auto& x : ar.v) x = double(T(x));
    auto dl = to_device<T, Kokkos::LayoutLeft>(ar, Uplo::Lower, kOther);
    ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, dl), 0);
    Dense b = random_matrix(n, 1, 63u);
    for (auto& x : b.v) x = double(T(x));
    auto bl = to_device<T, Kokkos::LayoutLeft>(b);
    potrs(ExecSpace(), Uplo::Lower, dl, bl);
    EXPECT_LT(solve_ratio<T>(ar, to_host(bl), b), 30.0);
  }
}

// CUDA's warp-per-column solve (n <= 256) forced wherever it applies: orders around the
// 32-row blocks and the bound (257 and 300 take the other paths), 1-100 columns, both
// triangles, A and B in either layout, B strided, an ill-conditioned A, a NaN in one column.
// Other backends run their own path on the same cases.
TYPED_TEST(PotrfBlocked, PotrsWarpPerColumn) {
  using T = TypeParam;
  const KnobsRestore<kolesky::impl::PotrsWarpKnobs> restore;
  kolesky::impl::PotrsWarpKnobs::get().warp = 2;
  for (const int n : {1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300})
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      const Dense a = random_spd<T>(n, 80u + n);
      auto dl = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
      auto dr = to_device<T, Kokkos::LayoutRight>(a, uplo, kOther);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dl), 0);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dr), 0);
      for (const int nrhs : {1, 3, 13, 100}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs) +
                     (uplo == Uplo::Lower ? " lower" : " upper"));
        Dense b = random_matrix(n, nrhs, 81u + nrhs);
        for (auto& x : b.v) x = double(T(x));
        for (const auto& [what, x] : solve_three_layouts<T>(uplo, dl, dr, b))
          EXPECT_LT(solve_ratio<T>(a, x, b), 30.0) << what;
      }
    }
  {  // ill-conditioned (cond 1e6 double, 1e3 float)
    Dense a = spd_with_condition(200, std::is_same<T, double>::value ? 1e6 : 1e3, 82u);
    for (auto& x : a.v) x = double(T(x));
    lower_solve_is_accurate<T>(a, 20, 83u);
  }
  nan_stays_in_its_column<T>(random_spd<T>(97, 84u), 60, 85u);
}

// The team per right-hand side (CUDA; elsewhere these are plain potrs calls), forced: orders
// around its 32-row blocks, a warp's blocks (8 warps: 256 rows a round) and its bound (2048;
// above it the TRSM), both triangles, both layouts of A and B, B strided; a NaN in one column.
TYPED_TEST(PotrfBlocked, PotrsTeamPerColumn) {
  using T = TypeParam;
  const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  const KnobsRestore<kolesky::impl::PotrsWarpKnobs> restore;
  kolesky::impl::PotrsWarpKnobs::get().team = 2;
  std::vector<int> sizes = {257, 300, 511, 512, 513, 545};
  if (!host) sizes.insert(sizes.end(), {1000, 1024, 1025, 1537, 2047, 2048, 2049});
  for (const int n : sizes)
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      const Dense a = dominant_spd<T>(n, 90u + n);
      auto dl = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
      auto dr = to_device<T, Kokkos::LayoutRight>(a, uplo, kOther);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dl), 0);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dr), 0);
      for (const int nrhs : {1, 17, 100}) {
        if (host && nrhs == 100) continue;
        SCOPED_TRACE("n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs) +
                     (uplo == Uplo::Lower ? " lower" : " upper"));
        Dense b = random_matrix(n, nrhs, 91u + nrhs);
        for (auto& x : b.v) x = double(T(x));
        for (const auto& [what, x] : solve_three_layouts<T>(uplo, dl, dr, b))
          EXPECT_LT(solve_ratio_fast(a, x, b, eps<T>()), 30.0) << what;
      }
    }
  // random (not dominant) A, where the factor's entries are not small: the exact form
  lower_solve_is_accurate<T>(random_spd<T>(300, 92u), 20, 93u);
  nan_stays_in_its_column<T>(dominant_spd<T>(700, 94u), 600, 95u);
}

namespace {
// PotrsInverse's knobs for one test: the other solves off, this one forced; restored after.
struct PotrsInverseForced {
  KnobsRestore<kolesky::impl::PotrsInvKnobs> inv;
  KnobsRestore<kolesky::impl::PotrsWarpKnobs> warp;
  KnobsRestore<kolesky::impl::PotrsKnobs> flow;
  PotrsInverseForced() {
    kolesky::impl::PotrsWarpKnobs::get().warp = 0;
    kolesky::impl::PotrsWarpKnobs::get().team = 0;
    kolesky::impl::PotrsKnobs::get().flow = 0;
    kolesky::impl::PotrsInvKnobs::get().inv = 2;
  }
};

// nb (0: by size), the inverse kernel's columns a thread (8, 4, 2), L staged or not.
struct PotrsInverseConfig {
  int nb, cpt, staged;
};

// Orders x both triangles x 1-100 right-hand sides x three layouts of B, in one configuration;
// with 17 right-hand sides and the lower triangle, in groups of 3 columns.
template <class T>
void potrs_inverse_cases(const PotrsInverseConfig cfg, const std::vector<int>& sizes) {
  auto& knob = kolesky::impl::PotrsInvKnobs::get();
  knob.nb = cfg.nb, knob.cpt = cfg.cpt, knob.staged = cfg.staged;
  for (const int n : sizes)
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      const Dense a = n <= 300 ? random_spd<T>(n, 100u + n) : dominant_spd<T>(n, 100u + n);
      auto dl = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
      auto dr = to_device<T, Kokkos::LayoutRight>(a, uplo, kOther);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dl), 0);
      ASSERT_EQ(potrf(ExecSpace(), uplo, dr), 0);
      for (const int nrhs : {1, 17, 100}) {
        if (n > 300 && nrhs == 1) continue;
        if (n > 4096 && nrhs != 17) continue;
        knob.max_w = nrhs == 17 && uplo == Uplo::Lower ? 3 * n : 0;
        SCOPED_TRACE("nb=" + std::to_string(cfg.nb) + " cpt=" + std::to_string(cfg.cpt) +
                     " staged=" + std::to_string(cfg.staged) + " n=" + std::to_string(n) +
                     " nrhs=" + std::to_string(nrhs) + (uplo == Uplo::Lower ? " lower" : " upper") +
                     (knob.max_w ? " grouped" : ""));
        Dense b = random_matrix(n, nrhs, 101u + nrhs);
        for (auto& x : b.v) x = double(T(x));
        for (const auto& [what, x] : solve_three_layouts<T>(uplo, dl, dr, b))
          EXPECT_LT(n <= 300 ? solve_ratio<T>(a, x, b) : solve_ratio_fast(a, x, b, eps<T>()), 30.0)
              << what;
      }
      knob.max_w = 0;
    }
}
}  // namespace

// The inverted-diagonal-block GEMM sweeps (CUDA with cuBLAS; elsewhere these are plain potrs
// calls), forced with the other solves off, at small orders (the sanitizers' share): diagonal
// blocks of 32 and 64, the inverse kernel's variants, orders around the blocks (a last block
// of one row, of 31, whole ones), 1-100 columns, both triangles, both layouts of A and B, B
// strided (the native TRSM), the right-hand sides in groups of columns, an ill-conditioned A,
// a NaN in one column.
TYPED_TEST(PotrfBlocked, PotrsInverseSweeps) {
  using T = TypeParam;
  const PotrsInverseForced forced;
  const std::vector<int> sizes = {1, 31, 32, 33, 64, 65, 97, 129};
  potrs_inverse_cases<T>({32, 2, 1}, sizes);
  potrs_inverse_cases<T>({64, 8, 1}, {65, 129});
  potrs_inverse_cases<T>({64, 4, 1}, {65, 129});
  potrs_inverse_cases<T>({64, 2, 0}, sizes);
  kolesky::impl::PotrsInvKnobs::get().nb = 32;
  {  // ill-conditioned (cond 1e6 double, 1e3 float): the inverses' backward error
    Dense a = spd_with_condition(300, std::is_same<T, double>::value ? 1e6 : 1e3, 102u);
    for (auto& x : a.v) x = double(T(x));
    lower_solve_is_accurate<T>(a, 20, 103u);
  }
  kolesky::impl::PotrsInvKnobs::get().nb = 64;
  nan_stays_in_its_column<T>(dominant_spd<T>(700, 104u), 600, 105u);
}

// The same at the orders it is made for, with its default blocks (256 below n = 8192, 512
// from it: in double past the staged kernel's shared memory).
TYPED_TEST(PotrfBlocked, PotrsInverseLargeOrders) {
  using T = TypeParam;
  const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  const PotrsInverseForced forced;
  potrs_inverse_cases<T>({0, 2, 1}, host ? std::vector<int>{300} : std::vector<int>{1000, 2049, 8200});
}

// A NaN in one right-hand side spoils that column only, and the call returns.
TYPED_TEST(PotrfBlocked, PotrsNanStaysInItsColumn) {
  using T = TypeParam;
  const int n = 130;
  const Dense a = random_spd<T>(n, 70u);
  auto da = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, da), 0);
  Dense b = random_matrix(n, 2, 71u);
  for (auto& x : b.v) x = double(T(x));
  Dense bn = b;
  bn(5, 0) = std::nan("");
  auto db = to_device<T, Kokkos::LayoutLeft>(bn);
  potrs(ExecSpace(), Uplo::Lower, da, db);
  const Dense x = to_host(db);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(std::isnan(x(i, 0))) << i;
  Dense x1(n, 1), b1(n, 1);
  for (int i = 0; i < n; ++i) x1(i, 0) = x(i, 1), b1(i, 0) = b(i, 1);
  EXPECT_LT(solve_ratio<T>(a, x1, b1), 30.0);
}

// posv_mixed leaves A's triangle as it was (unless it falls back to double).
void expect_triangle_kept(const Dense& a, const Dense& after, const Uplo uplo) {
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.n; ++i)
      if (uplo == Uplo::Lower ? i >= j : i <= j) {
        ASSERT_EQ(after(i, j), a(i, j)) << i << "," << j;
      }
}

const char* factor_name(const MixedFactor f) {
  return f == MixedFactor::Float ? "Float" : f == MixedFactor::Double ? "Double" : "Auto";
}

// After posv_mixed took the double path (iterations < 0): X solves A X = B and A's triangle
// holds the double factor.
void expect_double_path(const Dense& a, const Dense& after, const Dense& x, const Dense& b,
                        const Uplo uplo) {
  EXPECT_LT(potrf_ratio<double>(a, factor_of(after, uplo)), 30.0);
  EXPECT_LT(solve_ratio<double>(a, x, b), 30.0);
}

// Mixed precision: double accuracy from a float factor when A is well conditioned; a fall
// back to double when it is not (refinement diverges or the float factorization fails).
// MixedFactor::Double (and Auto on a GPU where float cannot factor faster) takes the double
// path at once: iterations = -1, A holds its factor.
TEST(PosvMixed, WellConditionedReachesDoubleAccuracy) {
  for (const MixedFactor f : {MixedFactor::Float, MixedFactor::Auto, MixedFactor::Double})
    for (const int n : {1, 5, 64, 300})
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        SCOPED_TRACE(std::string(factor_name(f)) + " n=" + std::to_string(n));
        const Dense a = spd_with_condition(n, 100.0, 3u + n);
        const Dense b = random_matrix(n, 3, 4u);
        auto da = to_device<double, Kokkos::LayoutLeft>(a, uplo, kOther);
        auto db = to_device<double, Kokkos::LayoutLeft>(b);
        Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> dx("x", n, 3);
        PosvMixedOptions o;
        o.factor = f;
        const auto r = posv_mixed(ExecSpace(), uplo, da, db, dx, o);
        EXPECT_EQ(r.info, 0);
        const bool refines = f == MixedFactor::Float ||
                             (f == MixedFactor::Auto && impl::float_factor_pays(ExecSpace()));
        if (refines) {
          EXPECT_GE(r.iterations, 0);
          EXPECT_LE(r.iterations, 5);
          EXPECT_LT(solve_ratio<double>(a, to_host(dx), b), 30.0);
          expect_triangle_kept(a, to_host(da), uplo);  // A is left as it was
        } else {
          EXPECT_EQ(r.iterations, -1);
          EXPECT_TRUE(r.fell_back());
          expect_double_path(a, to_host(da), to_host(dx), b, uplo);
        }
      }
}

// The device's compute capability (10 major + minor), or -1 off CUDA.
template <class E>
int compute_capability(const E&) {
  return -1;
}
#ifdef KOKKOS_ENABLE_CUDA
inline int compute_capability(const Kokkos::Cuda& e) {
  return 10 * e.cuda_device_prop().major + e.cuda_device_prop().minor;
}
#endif

// Which devices refine by default: every host space, and on CUDA all but compute capability
// 8.0 / 9.x; TF32 (fast_factor) refines wherever Auto is left; Float / Double are obeyed.
TEST(PosvMixed, AutoChoosesByDevice) {
  PosvMixedOptions o;
  const int cc = compute_capability(ExecSpace());
  EXPECT_EQ(impl::float_factor_pays(ExecSpace()), !(cc == 80 || (cc >= 90 && cc < 100))) << cc;
  EXPECT_EQ(impl::mixed_refines(ExecSpace(), o), impl::float_factor_pays(ExecSpace()));
  o.fast_factor = true;
  EXPECT_TRUE(impl::mixed_refines(ExecSpace(), o));
  o.factor = MixedFactor::Double;
  EXPECT_FALSE(impl::mixed_refines(ExecSpace(), o));
  o.fast_factor = false;
  o.factor = MixedFactor::Float;
  EXPECT_TRUE(impl::mixed_refines(ExecSpace(), o));
  PosvMixedPlan<ExecSpace> plan(ExecSpace(), 8, 1, Uplo::Lower, o);
  EXPECT_TRUE(plan.refines());
  o.factor = MixedFactor::Double;
  PosvMixedPlan<ExecSpace> dplan(ExecSpace(), 8, 1, Uplo::Lower, o);
  EXPECT_FALSE(dplan.refines());
}

// The TF32 float factor (CUDA; elsewhere the flag changes nothing): more refinement steps,
// the same accuracy, large enough that cuBLAS takes the trailing updates (n > 3072 on CUDA).
TEST(PosvMixed, FastFactorReachesDoubleAccuracy) {
  const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  for (const int n : {200, host ? 600 : 4000}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const Dense a = host || n < 1000 ? spd_with_condition(n, 10.0, 11u) : dominant_spd<double>(n, 11u);
    const Dense b = random_matrix(n, 1, 12u);
    auto da = to_device<double, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    auto db = to_device<double, Kokkos::LayoutLeft>(b);
    Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> dx("x", n, 1);
    PosvMixedOptions o;
    o.fast_factor = true;
    const auto r = posv_mixed(ExecSpace(), Uplo::Lower, da, db, dx, o);
    EXPECT_EQ(r.info, 0);
    EXPECT_GE(r.iterations, 0);
    EXPECT_LT(solve_ratio_fast(a, to_host(dx), b, eps<double>()), 30.0);
  }
}

// posv_mixed's first pass: the float copy of the lower triangle, ||A||_inf of the symmetric
// matrix it stands for, and the count of entries beyond float. Integer entries make every sum
// exact, so the norm must match to the last bit; orders cross the 256-column chunks of the
// row sums; both layouts (the triangle read along rows or along columns).
template <class Layout>
void demote_case(const int n, const bool spoil) {
  SCOPED_TRACE("n=" + std::to_string(n) + (spoil ? " spoiled" : ""));
  std::mt19937 gen(100u + n);
  std::uniform_int_distribution<int> u(-50, 50);
  Dense a(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) a(i, j) = a(j, i) = u(gen);
  if (spoil) a(n - 1, 0) = 1e39, a(n / 2, n / 2) = std::nan("");
  double norm = 0;
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < n; ++j) s += std::abs(i >= j ? a(i, j) : a(j, i));
    norm = std::max(norm, s);
  }
  auto da = to_device<double, Layout>(a, Uplo::Lower, kOther);
  Kokkos::View<float**, Kokkos::LayoutLeft, MemSpace> f("f", n, n);
  const impl::Strided<const double> l{da.data(), std::ptrdiff_t(da.stride(0)), std::ptrdiff_t(da.stride(1))};
  const impl::Demoted d = impl::demote_lower(ExecSpace(), n, l, impl::Strided<float>{f.data(), 1, std::ptrdiff_t(f.stride(1))});
  if (spoil) {  // (the norm is not used then: posv_mixed goes straight to double)
    EXPECT_EQ(d.overflow, n > 1 ? 2 : 1);
    return;
  }
  EXPECT_EQ(d.overflow, 0);
  EXPECT_EQ(d.norm, norm);
  const Dense h = to_host(f);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) ASSERT_EQ(h(i, j), float(a(i, j))) << i << "," << j;
}

TEST(PosvMixed, DemoteAndNorm) {
  for (const int n : {1, 2, 3, 255, 256, 257, 513, 600})
    for (const bool spoil : {false, true}) {
      demote_case<Kokkos::LayoutLeft>(n, spoil);
      demote_case<Kokkos::LayoutRight>(n, spoil);
    }
}

// The refinement's stopping test, column by column: ||r||_inf <= ||x||_inf cte, with a
// column's maxima found in any of its row slices (orders around the 256 slices), and NaN or
// infinity never converged (on CUDA a Kokkos Max reduction used to drop the NaN).
TEST(PosvMixed, ConvergenceTestPerColumn) {
  for (const int n : {1, 2, 255, 256, 257, 1025, 2500}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    Dense r(n, 4, 1.0), x(n, 4, 0.5);
    x(n - 1, 0) = 2;  // converged only through the last chunk's max |x|
    x(0, 1) = 2, r(n - 1, 1) = 3;  // the last chunk's |r| exceeds it
    x(0, 2) = 2, r(n / 2, 2) = std::nan("");
    x(n / 2, 3) = 2;  // converged
    const auto dr = to_device<double, Kokkos::LayoutLeft>(r);
    const auto dx = to_device<double, Kokkos::LayoutLeft>(x);
    const auto sv = [](const auto& v) {
      return impl::Strided<const double>{v.data(), 1, std::ptrdiff_t(v.stride(1))};
    };
    EXPECT_EQ(impl::unconverged(ExecSpace(), n, 4, sv(dr), sv(dx), 1.0), 2);
    EXPECT_EQ(impl::unconverged(ExecSpace(), n, 1, sv(dr), sv(dx), 1.0), 0);
    EXPECT_EQ(impl::unconverged(ExecSpace(), n, 4, sv(dr), sv(dx), 1e300), 1);  // the NaN
    x(n - 1, 3) = std::numeric_limits<double>::infinity();  // an infinite solution never passes
    const auto dx2 = to_device<double, Kokkos::LayoutLeft>(x);
    EXPECT_EQ(impl::unconverged(ExecSpace(), n, 4, sv(dr), sv(dx2), 1e300), 2);
  }
}

// posv_mixed's residual r = b - A x from A's lower triangle (NaN above it, which must never be
// read), against a plain loop: orders around the CUDA kernel's 128-column blocks and 256-row
// units, right-hand sides around its four per launch; the same bits on a second call (no
// atomics). A LayoutRight A takes the vendor path.
template <class Layout>
void residual_case(const int n, const int nrhs) {
  SCOPED_TRACE("n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs));
  std::mt19937 gen(200u + n + nrhs);
  std::uniform_real_distribution<double> u(-1, 1);
  Dense a(n, n), x(n, nrhs), b(n, nrhs);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) a(i, j) = i >= j ? u(gen) : std::nan("");
  for (auto& v : x.v) v = u(gen);
  for (auto& v : b.v) v = u(gen);
  const auto da = to_device<double, Layout>(a);
  const auto dx = to_device<double, Kokkos::LayoutLeft>(x);
  const auto db = to_device<double, Kokkos::LayoutLeft>(b);
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> dr("r", n, nrhs), dr2("r2", n, nrhs);
  const auto sv = [](const auto& v) {
    return impl::Strided<const double>{v.data(), std::ptrdiff_t(v.stride(0)), std::ptrdiff_t(v.stride(1))};
  };
  const auto out = [](const auto& v) {
    return impl::Strided<double>{v.data(), std::ptrdiff_t(v.stride(0)), std::ptrdiff_t(v.stride(1))};
  };
  impl::residual(ExecSpace(), Blas::Auto, n, nrhs, sv(da), sv(dx), sv(db), out(dr));
  impl::residual(ExecSpace(), Blas::Auto, n, nrhs, sv(da), sv(dx), sv(db), out(dr2));
  const Dense r = to_host(dr), r2 = to_host(dr2);
  for (int c = 0; c < nrhs; ++c)
    for (int i = 0; i < n; ++i) {
      double s = 0, m = std::abs(b(i, c));
      for (int j = 0; j < n; ++j) {
        const double v = i >= j ? a(i, j) : a(j, i);
        s += v * x(j, c);
        m += std::abs(v * x(j, c));
      }
      ASSERT_NEAR(r(i, c), b(i, c) - s, 1e-14 * m) << i << "," << c;
      ASSERT_EQ(r(i, c), r2(i, c)) << i << "," << c;
    }
}

TEST(PosvMixed, ResidualFromLowerTriangle) {
  for (const int n : {1, 2, 127, 128, 129, 255, 256, 257, 300, 513, 1000})
    for (const int nrhs : {1, 2, 3, 4, 5, 9}) residual_case<Kokkos::LayoutLeft>(n, nrhs);
  residual_case<Kokkos::LayoutLeft>(2049, 1);
  residual_case<Kokkos::LayoutRight>(300, 2);
}

// A PosvMixedPlan reused: several matrices of its order, fewer right-hand sides than it was
// made for, a matrix that is not positive definite between two good ones (exact info, then
// the next call unaffected), both triangles; each call as accurate as posv_mixed without a
// plan and with as many refinement steps.
TEST(PosvMixed, PlanReusedAcrossMatrices) {
  for (const MixedFactor f : {MixedFactor::Float, MixedFactor::Double})
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper})
      for (const int n : {1, 65, 200}) {
        SCOPED_TRACE(std::string(factor_name(f)) + " n=" + std::to_string(n) +
                     (uplo == Uplo::Lower ? " lower" : " upper"));
        PosvMixedOptions o;
        o.factor = f;
        PosvMixedPlan<ExecSpace> plan(ExecSpace(), n, 3, uplo, o);
        EXPECT_EQ(plan.order(), n);
        EXPECT_EQ(plan.max_rhs(), 3);
        EXPECT_EQ(plan.refines(), f == MixedFactor::Float);
        for (int call = 0; call < 3; ++call) {
          SCOPED_TRACE("call " + std::to_string(call));
          const int nrhs = call == 0 ? 3 : 2;
          Dense a = spd_with_condition(n, 100.0, 30u + n + call);
          const bool bad = call == 1;
          if (bad) a(n / 2, n / 2) = -1;
          const Dense b = random_matrix(n, nrhs, 40u + call);
          auto da = to_device<double, Kokkos::LayoutLeft>(a, uplo, kOther);
          auto db = to_device<double, Kokkos::LayoutLeft>(b);
          Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> dx("x", n, nrhs), dx2("x2", n, nrhs);
          const auto r = plan.posv(da, db, dx);
          if (bad) {
            EXPECT_EQ(r.info, n / 2 + 1);
            EXPECT_TRUE(r.fell_back());
            continue;
          }
          EXPECT_EQ(r.info, 0);
          if (f == MixedFactor::Double) {
            EXPECT_EQ(r.iterations, -1);
            expect_double_path(a, to_host(da), to_host(dx), b, uplo);
            continue;
          }
          auto da2 = to_device<double, Kokkos::LayoutLeft>(a, uplo, kOther);
          const auto r2 = posv_mixed(ExecSpace(), uplo, da2, db, dx2, o);
          EXPECT_GE(r.iterations, 0);
          EXPECT_EQ(r.iterations, r2.iterations);
          EXPECT_LT(solve_ratio<double>(a, to_host(dx), b), 30.0);
          expect_triangle_kept(a, to_host(da), uplo);  // A is left as it was
        }
      }
}

// The TF32 factor through the plan (on CUDA its PotrfPlan records and replays a graph from the
// second call: the TF32 choice must be in the recording), a LayoutRight A, one right-hand side.
TEST(PosvMixed, PlanFastFactorReplays) {
  const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  const int n = host ? 600 : 4000;
  const Dense a = host ? spd_with_condition(n, 10.0, 21u) : dominant_spd<double>(n, 21u);
  const Dense b = random_matrix(n, 1, 22u);
  PosvMixedOptions o;
  o.fast_factor = true;
  PosvMixedPlan<ExecSpace> plan(ExecSpace(), n, 1, Uplo::Lower, o);
  auto da = to_device<double, Kokkos::LayoutRight>(a, Uplo::Lower, kOther);
  auto db = to_device<double, Kokkos::LayoutLeft>(b);
  Kokkos::View<double*, MemSpace> dx("x", n);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    Kokkos::deep_copy(dx, 0.0);
    const auto r = plan.posv(da, Kokkos::subview(db, Kokkos::ALL, 0), dx);
    EXPECT_EQ(r.info, 0);
    EXPECT_GE(r.iterations, 0);
    Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> x2(dx.data(), n, 1);
    EXPECT_LT(solve_ratio_fast(a, to_host(x2), b, eps<double>()), 30.0);
  }
}

TEST(PosvMixed, IllConditionedFallsBack) {
  const int n = 120;
  const Dense a = spd_with_condition(n, 1e12, 9u);
  const Dense b = random_matrix(n, 2, 10u);
  auto da = to_device<double, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  auto db = to_device<double, Kokkos::LayoutLeft>(b);
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> dx("x", n, 2);
  PosvMixedOptions o;
  o.factor = MixedFactor::Float;  // the refinement, on every device
  const auto r = posv_mixed(ExecSpace(), Uplo::Lower, da, db, dx, o);
  EXPECT_EQ(r.info, 0);
  EXPECT_EQ(r.iterations, -(o.max_iterations + 1));
  EXPECT_LT(solve_ratio<double>(a, to_host(dx), b), 30.0);
}

TEST(PosvMixed, NotPositiveDefiniteGivesInfo) {
  Dense a = random_spd<double>(40, 5u);
  a(17, 17) = -3;
  const Dense b = random_matrix(40, 1, 6u);
  auto db = to_device<double, Kokkos::LayoutLeft>(b);
  Kokkos::View<double*, MemSpace> dx("x", 40);
  for (const MixedFactor f : {MixedFactor::Float, MixedFactor::Auto, MixedFactor::Double}) {
    SCOPED_TRACE(factor_name(f));
    auto da = to_device<double, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    PosvMixedOptions o;
    o.factor = f;
    const auto r = posv_mixed(ExecSpace(), Uplo::Lower, da, Kokkos::subview(db, Kokkos::ALL, 0), dx, o);
    EXPECT_EQ(r.info, 18);
    EXPECT_TRUE(r.fell_back());
  }
}

}  // namespace test
}  // namespace kolesky
