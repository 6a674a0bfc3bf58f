// Host-level potrf / potrs / posv on the execution space under test.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <Kolesky_Lapack.hpp>
#include <limits>
#include <string>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

const int kSizes[] = {0, 1, 2, 3, 17, 64, 100, 257};
const Algo kAlgos[] = {Algo::Crout,        Algo::Banachiewicz,  Algo::RightLooking,
                       Algo::Blocked,      Algo::BlockedLeft,   Algo::Recursive,
                       Algo::ColumnKernels, Algo::RightLookingKernels, Algo::CroutCutoff,
                       Algo::Default};
constexpr double kOther = 12345.0;  // marks the triangle that must stay untouched

template <class Layout>
const char* layout_name() {
  return std::is_same<Layout, Kokkos::LayoutLeft>::value ? "LayoutLeft" : "LayoutRight";
}

template <class T>
class Potrf : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Potrf, Scalars);

// Factor `a` with the library; check info, the untouched triangle, and the residual.
template <class T, class Layout>
void check_factor(const Dense& a, Uplo uplo, const PotrfOptions& opt) {
  SCOPED_TRACE(std::string("n=") + std::to_string(a.n) + " uplo=" + name(uplo) +
               " algo=" + name(opt.algo) + " nb=" + std::to_string(opt.block_size) + " " +
               layout_name<Layout>());
  auto d = to_device<T, Layout>(a, uplo, kOther);
  const int info = potrf(ExecSpace(), uplo, d, opt);
  ASSERT_EQ(info, 0);
  const Dense f = to_host(d);
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.n; ++i)
      if (!in_triangle(uplo, i, j)) {
        ASSERT_EQ(f(i, j), kOther) << "wrote (" << i << "," << j << ")";
      }
  EXPECT_LT(potrf_ratio<T>(a, factor_of(f, uplo)), 30.0);
}

// The info the library reports for `a` (uplo's triangle), for every variant and layout.
template <class T, class Layout>
void expect_info(const Dense& a, Uplo uplo, int expected, const char* what) {
  for (const Algo algo : kAlgos) {
    SCOPED_TRACE(std::string(what) + " n=" + std::to_string(a.n) + " uplo=" + name(uplo) +
                 " algo=" + name(algo) + " " + layout_name<Layout>());
    auto d = to_device<T, Layout>(a, uplo, kOther);
    PotrfOptions opt;
    opt.algo = algo;
    opt.block_size = 16;  // so that failures land in later blocks too
    if (expected >= 0)
      EXPECT_EQ(potrf(ExecSpace(), uplo, d, opt), expected);
    else
      EXPECT_GT(potrf(ExecSpace(), uplo, d, opt), 0);
  }
}

#ifdef KOLESKY_HAVE_LAPACK
template <class T>
int lapack_info(const Dense& a, Uplo uplo) {
  std::vector<T> c(a.v.begin(), a.v.end());
  return baselines::lapack_potrf(uplo, a.n, c.data(), a.n > 0 ? a.n : 1);
}
#endif

template <class T>
Dense from_rows(std::initializer_list<std::initializer_list<double>> rows) {
  const int n = int(rows.size());
  Dense a(n, n);
  int i = 0;
  for (auto& r : rows) {
    int j = 0;
    for (double x : r) a(i, j++) = x;
    ++i;
  }
  return a;
}

// Hand-worked factor: every variant must reproduce it exactly (all steps are exact).
template <class T, class Layout>
void expect_exact(const Dense& a, const Dense& l) {
  for (const Uplo uplo : {Uplo::Lower, Uplo::Upper})
    for (const Algo algo : kAlgos) {
      SCOPED_TRACE(std::string("uplo=") + name(uplo) + " algo=" + name(algo));
      auto d = to_device<T, Layout>(a, uplo, kOther);
      ASSERT_EQ(potrf(ExecSpace(), uplo, d, algo), 0);
      const Dense f = factor_of(to_host(d), uplo);
      for (int j = 0; j < a.n; ++j)
        for (int i = j; i < a.n; ++i) EXPECT_EQ(f(i, j), l(i, j)) << i << "," << j;
    }
}

}  // namespace

TYPED_TEST(Potrf, RandomSpdEveryVariantLayoutUplo) {
  using T = TypeParam;
  for (const Uplo uplo : {Uplo::Lower, Uplo::Upper})
    for (const Algo algo : kAlgos)
      for (const int n : kSizes) {
        PotrfOptions opt;
        opt.algo = algo;
        const Dense a = random_spd<T>(n, 1000u + n);
        check_factor<T, Kokkos::LayoutLeft>(a, uplo, opt);
        check_factor<T, Kokkos::LayoutRight>(a, uplo, opt);
      }
}

TYPED_TEST(Potrf, BlockedBlockSizes) {
  using T = TypeParam;
  for (const int nb : {1, 7, 16, 32, 100})
    for (const int n : {31, 65, 130}) {
      PotrfOptions opt;
      opt.algo = nb % 2 ? Algo::BlockedLeft : Algo::Blocked;
      opt.block_size = nb;
      const Dense a = random_spd<T>(n, 77u + n);
      check_factor<T, Kokkos::LayoutLeft>(a, Uplo::Lower, opt);
      check_factor<T, Kokkos::LayoutRight>(a, Uplo::Upper, opt);
    }
}

TYPED_TEST(Potrf, TeamSizes) {
  using T = TypeParam;
  for (const Algo algo : {Algo::Crout, Algo::Banachiewicz, Algo::RightLooking})
    for (const int ts : {1, 2, 3, 32, 33}) {
      PotrfOptions opt;
      opt.algo = algo;
      opt.team_size = ts;
      check_factor<T, Kokkos::LayoutLeft>(random_spd<T>(45, 5u), Uplo::Lower, opt);
    }
}

TYPED_TEST(Potrf, HandWorked2x2And3x3) {
  using T = TypeParam;
  // [[4, 2], [2, 10]] = L L^T with L = [[2, 0], [1, 3]].
  expect_exact<T, Kokkos::LayoutLeft>(from_rows<T>({{4, 2}, {2, 10}}),
                                      from_rows<T>({{2, 0}, {1, 3}}));
  expect_exact<T, Kokkos::LayoutRight>(from_rows<T>({{4, 2}, {2, 10}}),
                                       from_rows<T>({{2, 0}, {1, 3}}));
  // [[4, 12, -16], [12, 37, -43], [-16, -43, 98]]: L = [[2, 0, 0], [6, 1, 0], [-8, 5, 3]].
  const Dense a = from_rows<T>({{4, 12, -16}, {12, 37, -43}, {-16, -43, 98}});
  const Dense l = from_rows<T>({{2, 0, 0}, {6, 1, 0}, {-8, 5, 3}});
  expect_exact<T, Kokkos::LayoutLeft>(a, l);
  expect_exact<T, Kokkos::LayoutRight>(a, l);
}

TYPED_TEST(Potrf, OrderZeroAndOne) {
  using T = TypeParam;
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> empty("empty", 0, 0);
  EXPECT_EQ(potrf(ExecSpace(), Uplo::Lower, empty), 0);
  expect_exact<T, Kokkos::LayoutLeft>(from_rows<T>({{9}}), from_rows<T>({{3}}));
  expect_info<T, Kokkos::LayoutLeft>(from_rows<T>({{-4}}), Uplo::Lower, 1, "negative 1x1");
  expect_info<T, Kokkos::LayoutLeft>(from_rows<T>({{0}}), Uplo::Upper, 1, "zero 1x1");
}

TYPED_TEST(Potrf, NotPositiveDefiniteMatchesLapack) {
  using T = TypeParam;
  for (const int n : {1, 2, 3, 17, 64, 100}) {
    for (const int k : {0, n / 2, n - 1}) {
      // A non-positive diagonal entry at k: the k-th pivot is the first to fail.
      for (const double diag : {-1.0, 0.0}) {
        Dense a = random_spd<T>(n, 9u + n);
        a(k, k) = diag;
#ifdef KOLESKY_HAVE_LAPACK
        ASSERT_EQ(lapack_info<T>(a, Uplo::Lower), k + 1);
#endif
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
          expect_info<T, Kokkos::LayoutLeft>(a, uplo, k + 1, "diag");
          expect_info<T, Kokkos::LayoutRight>(a, uplo, k + 1, "diag");
        }
      }
      // Positive diagonal, indefinite 2x2 minor at (k-1, k).
      if (k > 0) {
        Dense a = random_spd<T>(n, 19u + n);
        a(k, k - 1) = a(k - 1, k) = double(T(10 * std::sqrt(a(k, k) * a(k - 1, k - 1))));
        int expected = k + 1;
#ifdef KOLESKY_HAVE_LAPACK
        expected = lapack_info<T>(a, Uplo::Lower);
        EXPECT_EQ(expected, k + 1);
#endif
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper})
          expect_info<T, Kokkos::LayoutLeft>(a, uplo, expected, "minor");
      }
    }
  }
}

TYPED_TEST(Potrf, NanAndInfGiveInfo) {
  using T = TypeParam;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const int n : {1, 3, 17, 64}) {
    for (const double bad : {nan, inf, -inf}) {
      // On the diagonal: that pivot fails.
      for (const int k : {0, n - 1}) {
        Dense a = random_spd<T>(n, 3u + n);
        a(k, k) = bad;
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
          expect_info<T, Kokkos::LayoutLeft>(a, uplo, k + 1, "bad diagonal");
          expect_info<T, Kokkos::LayoutRight>(a, uplo, k + 1, "bad diagonal");
        }
      }
      // Off the diagonal, in the referenced triangle: some pivot at or after the row fails.
      if (n > 1) {
        Dense a = random_spd<T>(n, 4u + n);
        a(n - 1, 0) = a(0, n - 1) = bad;
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper})
          expect_info<T, Kokkos::LayoutLeft>(a, uplo, n, "bad off-diagonal");
      }
    }
  }
}

// The default options by size: on the host one thread up to 128, the pool in one parallel
// region up to 640 (column-major lower triangles, groups of 8 columns), BLAS panels above
// (256 columns in double, 384 in float); on
// CUDA the staged kernels (a warp to 16; the split kernel's 64 / 128 / 256-row blocks from 17
// to 180 and 193-208 in double, to 240 in float), the dataflow kernel between and above; every
// edge, both triangles and layouts, and failing pivots (negative, NaN) around the panels with
// the exact info.
TYPED_TEST(Potrf, DefaultEverySizePath) {
  using T = TypeParam;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const int n : {1, 2, 16, 17, 24, 31, 33, 48, 49, 63, 64, 65, 66, 72, 73, 97, 100, 113, 128,
                      129, 150, 180, 181, 193, 208, 209, 240, 241, 256, 257, 300, 639, 640, 641,
                      1000}) {
    const Dense a = random_spd<T>(n, 77u + n);
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      check_factor<T, Kokkos::LayoutLeft>(a, uplo, PotrfOptions{});
      check_factor<T, Kokkos::LayoutRight>(a, uplo, PotrfOptions{});
    }
    for (const int k : {0, 7, 8, 9, n / 2, n - 1, 255, 256, 383, 384})  // host panels: 256, 384
      for (const double bad : {-1.0, nan}) {
        if (k >= n) continue;
        Dense b = a;
        b(k, k) = bad;
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
          SCOPED_TRACE("n=" + std::to_string(n) + " k=" + std::to_string(k) + " " + name(uplo));
          auto d = to_device<T, Kokkos::LayoutLeft>(b, uplo, kOther);
          EXPECT_EQ(potrf(ExecSpace(), uplo, d), k + 1);
        }
      }
  }
}

// The host pool's one-region orders (129-640): every order to 232 and a few to its end, where
// the group update's row chunks (two vectors, one, a half, a quarter, single rows; packed or
// not) meet every remainder; the pool and the calling thread agree bit for bit, a failing
// pivot mid-way gives its exact info both ways. Other backends run the default path.
TYPED_TEST(Potrf, PoolOrdersBothWays) {
  using T = TypeParam;
  constexpr bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  const HostTeamForce knob;
  std::vector<int> orders;
  for (int n = 129; n <= 232; ++n) orders.push_back(n);
  for (const int n : {257, 333, 511, 639, 640}) orders.push_back(n);
  for (const int n : orders) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const Dense a = random_spd<T>(n, 300u + n);
    Dense f[2];
    for (const int force : {0, 1}) {
      if (host) knob.set(force);
      auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
      ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d), 0) << "force " << force;
      f[force] = to_host(d);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < j; ++i) ASSERT_EQ(f[force](i, j), kOther) << "wrote (" << i << "," << j << ")";
      if (force == 0 || !host) {
        EXPECT_LT(potrf_ratio<T>(a, factor_of(f[force], Uplo::Lower)), 30.0);
      }
      Dense b = a;
      b(n / 2, n / 2) = -1;
      auto e = to_device<T, Kokkos::LayoutLeft>(b, Uplo::Lower, kOther);
      EXPECT_EQ(potrf(ExecSpace(), Uplo::Lower, e), n / 2 + 1) << "force " << force;
    }
    if (host) {
      EXPECT_EQ(f[0].v, f[1].v);
    }
  }
}

// One block on the calling thread (host): every order to 128, where three kernels take turns
// (four-column groups, 32-byte and 64-byte column chunks in passes of several chunks; the
// crossovers differ by scalar and by n's remainder), through the default
// and, for even orders above 64, a single 128-column panel of the blocked driver; both layouts
// and triangles, failing pivots first, mid and last with the exact info. Any backend runs it.
TYPED_TEST(Potrf, OneBlockEveryOrder) {
  using T = TypeParam;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int n = 1; n <= 128; ++n) {
    PotrfOptions o;
    if (n > 64 && n % 2 == 0) o.algo = Algo::Blocked, o.block_size = 128;
    const Dense a = random_spd<T>(n, 500u + n);
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      check_factor<T, Kokkos::LayoutLeft>(a, uplo, o);
      check_factor<T, Kokkos::LayoutRight>(a, uplo, o);
    }
    for (const int k : {0, n / 2, n - 1}) {
      Dense b = a;
      b(k, k) = k == n / 2 ? nan : -1.0;
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " k=" + std::to_string(k) + " " + name(uplo));
        auto d = to_device<T, Kokkos::LayoutRight>(b, uplo, kOther);
        EXPECT_EQ(potrf(ExecSpace(), uplo, d, o), k + 1);
      }
    }
  }
}

// CUDA: every staged kernel at every order it can take, whatever the dispatch's crossovers:
// the split kernel forced from order 1 to 256 (its 64 / 128 / 256-row blocks; its dot products
// on the FP64 tensor cores, float widened, and by FFMA), then the warp and block kernels (split
// off). Failing pivots at a panel's first and last column, mid-matrix and last, with the exact
// info.
TYPED_TEST(Potrf, StagedKernelsForced) {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    using T = TypeParam;
    const KnobsRestore<impl::StagedKnobs> restore;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const int split : {2, 1, 0}) {  // 2: the split kernel's DMMA path, 1: FFMA
      impl::StagedKnobs::get().split_min = split ? 1 : 1 << 30;
      impl::StagedKnobs::get().split_max = 256;
      impl::StagedKnobs::get().split_mma = split == 2;
      for (const int n : {1, 2, 7, 8, 9, 17, 31, 33, 40, 64, 65, 97, 112, 128, 129, 177, 200,
                          239, 241, 256}) {
        if (!split && n > impl::cuda_staged_block_max<T>()) continue;
        SCOPED_TRACE("n=" + std::to_string(n) + " split=" + std::to_string(split));
        const Dense a = random_spd<T>(n, 99u + n);
        check_factor<T, Kokkos::LayoutLeft>(a, Uplo::Lower, PotrfOptions{});
        check_factor<T, Kokkos::LayoutRight>(a, Uplo::Upper, PotrfOptions{});
        for (const int k : {0, 7, 8, n / 2, n - 1})
          for (const double bad : {-1.0, nan}) {
            if (k >= n) continue;
            Dense b = a;
            b(k, k) = bad;
            auto d = to_device<T, Kokkos::LayoutLeft>(b, Uplo::Lower, kOther);
            EXPECT_EQ(potrf(ExecSpace(), Uplo::Lower, d), k + 1) << "k=" << k;
          }
      }
    }
    return;
  }
#endif
  GTEST_SKIP() << "the staged kernels are CUDA only";
}

TYPED_TEST(Potrf, SolveRandomRightHandSides) {
  using T = TypeParam;
  for (const int n : {0, 1, 2, 3, 17, 64, 100, 257})
    for (const int nrhs : {1, 3, 300})
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs) + " uplo=" +
                     name(uplo));
        const Dense a = random_spd<T>(n, 31u + n);
        const Dense b = random_matrix(n, nrhs, 41u + n);
        auto da = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
        auto db = to_device<T, Kokkos::LayoutRight>(b);
        ASSERT_EQ(posv(ExecSpace(), uplo, da, db), 0);
        Dense bt(n, nrhs);  // b rounded to T, the right-hand side the library saw
        for (std::size_t i = 0; i < b.v.size(); ++i) bt.v[i] = double(T(b.v[i]));
        EXPECT_LT(solve_ratio<T>(a, to_host(db), bt), 30.0);
      }
}

TYPED_TEST(Potrf, SolveRankOneRightHandSide) {
  using T = TypeParam;
  for (const int n : {1, 5, 100}) {
    const Dense a = random_spd<T>(n, 51u + n);
    Dense b = random_matrix(n, 1, 52u + n);
    for (auto& x : b.v) x = double(T(x));
    auto da = to_device<T, Kokkos::LayoutRight>(a, Uplo::Upper, kOther);
    Kokkos::View<T*, MemSpace> db("b", n);
    auto hb = Kokkos::create_mirror_view(db);
    for (int i = 0; i < n; ++i) hb(i) = T(b(i, 0));
    Kokkos::deep_copy(db, hb);
    ASSERT_EQ(potrf(ExecSpace(), Uplo::Upper, da), 0);
    potrs(ExecSpace(), Uplo::Upper, da, db);
    EXPECT_LT(solve_ratio<T>(a, to_host(db), b), 30.0);
  }
}

TYPED_TEST(Potrf, PosvLeavesRightHandSideOnFailure) {
  using T = TypeParam;
  Dense a = random_spd<T>(10, 61u);
  a(4, 4) = -1;
  const Dense b = random_matrix(10, 2, 62u);
  auto da = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  auto db = to_device<T, Kokkos::LayoutLeft>(b);
  EXPECT_EQ(posv(ExecSpace(), Uplo::Lower, da, db), 5);
  const Dense after = to_host(db);
  for (std::size_t i = 0; i < b.v.size(); ++i) EXPECT_EQ(after.v[i], double(T(b.v[i])));
}

template <class F>
std::string thrown_message(F&& f) {
  try {
    f();
  } catch (const kolesky::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TYPED_TEST(Potrf, BadArgumentsThrow) {
  using T = TypeParam;
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> rect("rect", 4, 5), sq("sq", 4, 4);
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> b3("b3", 3, 2);
  Kokkos::View<T*, MemSpace> v5("v5", 5);
  const std::string m1 = thrown_message([&] { potrf(ExecSpace(), Uplo::Lower, rect); });
  EXPECT_NE(m1.find("square"), std::string::npos) << m1;
  EXPECT_NE(m1.find("4 x 5"), std::string::npos) << m1;
  const std::string m2 = thrown_message([&] { potrs(ExecSpace(), Uplo::Lower, sq, b3); });
  EXPECT_NE(m2.find("3 rows"), std::string::npos) << m2;
  const std::string m3 = thrown_message([&] { posv(ExecSpace(), Uplo::Upper, sq, v5); });
  EXPECT_NE(m3.find("5 rows"), std::string::npos) << m3;
  EXPECT_THROW(posv(ExecSpace(), Uplo::Upper, rect, v5), std::invalid_argument);
}

#ifdef KOKKOS_ENABLE_CUDA
TYPED_TEST(Potrf, InaccessibleMemoryThrows) {
  using T = TypeParam;
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    Kokkos::View<T**, Kokkos::HostSpace> h("host_A", 3, 3);
    const std::string m = thrown_message([&] { potrf(ExecSpace(), Uplo::Lower, h); });
    EXPECT_NE(m.find("cannot access"), std::string::npos) << m;
  } else {
    Kokkos::View<T**, Kokkos::CudaSpace> d("device_A", 3, 3);
    const std::string m = thrown_message([&] { potrf(ExecSpace(), Uplo::Lower, d); });
    EXPECT_NE(m.find("cannot access"), std::string::npos) << m;
  }
}
#endif

}  // namespace test
}  // namespace kolesky
