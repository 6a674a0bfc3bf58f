// Hostile values and arguments (issue 8, parts 4 and 5): NaN / +-Inf in the input give
// info > 0 (never info = 0 with garbage), bad matrices in a batch leave the others exactly as
// a clean run does and keep their right-hand sides, bad arguments throw
// kolesky::invalid_argument naming the extents, zero sizes are trivial, and 64-bit offsets
// (strides past 2^31 elements over a MAP_NORESERVE mapping) give correct results.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <Kolesky.hpp>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

constexpr bool kHost = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
constexpr double kOther = 777.0;
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const double kBad[] = {kNan, kInf, -kInf};

template <class T>
class Hostile : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Hostile, Scalars);

std::string value_name(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }

bool all_finite(const Dense& d) {
  for (double x : d.v)
    if (!std::isfinite(x)) return false;
  return true;
}

// Positions (row >= col, in the lower triangle) where a bad value goes: first, last, middle,
// and the far corner.
std::vector<std::pair<int, int>> positions(int n) {
  std::vector<std::pair<int, int>> p = {{0, 0}, {n - 1, n - 1}, {n / 2, n / 3}};
  if (n > 1) p.push_back({n - 1, 0});
  return p;
}

std::vector<PotrfOptions> every_potrf_variant() {
  std::vector<PotrfOptions> v;
  for (const Algo a : {Algo::Default, Algo::Blocked, Algo::BlockedLeft, Algo::Recursive,
                       Algo::Crout, Algo::Banachiewicz, Algo::RightLooking, Algo::TiledRight,
                       Algo::TiledLeft, Algo::TiledTop, Algo::ColumnKernels,
                       Algo::RightLookingKernels, Algo::CroutCutoff})
    for (const Blas b : {Blas::Vendor, Blas::Native}) {
      PotrfOptions o;
      o.algo = a;
      o.blas = b;
      if (a == Algo::Blocked || a == Algo::BlockedLeft) o.block_size = 16;  // several panels
      if (a == Algo::CroutCutoff) o.tail_cutoff = 8;
      v.push_back(o);
      const bool blas_matters = a == Algo::Default || a == Algo::Blocked ||
                                a == Algo::BlockedLeft || a == Algo::Recursive;
      if (!blas_matters) break;
    }
  return v;
}

std::string variant_name(const PotrfOptions& o) {
  return std::string(name(o.algo)) + (o.blas == Blas::Vendor ? "/Vendor" : o.blas == Blas::Native ? "/Native" : "");
}

// After a solve with a NaN or Inf in column `bad` of B: that column's solution must not look
// valid, and every other column must solve A x = b.
template <class T>
void expect_bad_column_others_solve(const Dense& a, const Dense& x, const Dense& b, const int bad) {
  const int n = a.n;
  bool col_bad = false;
  for (int i = 0; i < n; ++i) col_bad |= !std::isfinite(x(i, bad));
  EXPECT_TRUE(col_bad) << "the bad column's solution must not look valid";
  for (int c = 0; c < b.m; ++c) {
    if (c == bad) continue;
    Dense xc(n, 1), bc(n, 1);
    for (int i = 0; i < n; ++i) xc(i, 0) = x(i, c), bc(i, 0) = b(i, c);
    ASSERT_TRUE(all_finite(xc)) << "column " << c;
    EXPECT_LT(solve_ratio<T>(a, xc, bc), 30.0) << "column " << c;
  }
}

//--- hostile values: potrf ----------------------------------------------------------------

// A bad value at (r, c) of the referenced triangle: pivot max(r, c) + 1 is the first whose
// computation reads it, so that is the info every variant must return.
TYPED_TEST(Hostile, PotrfNanInfInReadTriangleGivesExactInfoEveryVariant) {
  using T = TypeParam;
  for (const int n : {1, 5, 40, 150})
    for (const auto& pos : positions(n))
      for (const double bad : kBad)
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper})
          for (const auto& opt : every_potrf_variant()) {
            const bool main = opt.algo == Algo::Default || opt.algo == Algo::Blocked ||
                              opt.algo == Algo::Recursive;
            if (n > 40 && !main) continue;  // n = 150: several panels of the main variants
            SCOPED_TRACE(value_name(bad) + " at (" + std::to_string(pos.first) + "," +
                         std::to_string(pos.second) + ") n=" + std::to_string(n) + " " +
                         name(uplo) + " " + variant_name(opt));
            Dense a = random_spd<T>(n, 5u + n);
            a(pos.first, pos.second) = a(pos.second, pos.first) = bad;
            auto d = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
            EXPECT_EQ(potrf(ExecSpace(), uplo, d, opt), pos.first + 1);
          }
}

// The triangle potrf does not read may hold anything.
TYPED_TEST(Hostile, PotrfNanInUnreadTriangleIsIgnored) {
  using T = TypeParam;
  const int n = 40;
  const Dense a = random_spd<T>(n, 3u);
  for (const Uplo uplo : {Uplo::Lower, Uplo::Upper})
    for (const auto& opt : every_potrf_variant()) {
      SCOPED_TRACE(std::string(name(uplo)) + " " + variant_name(opt));
      auto d = to_device<T, Kokkos::LayoutRight>(a, uplo, kNan);
      ASSERT_EQ(potrf(ExecSpace(), uplo, d, opt), 0);
      const Dense l = factor_of(to_host(d), uplo);
      ASSERT_TRUE(all_finite(l));
      EXPECT_LT(potrf_ratio<T>(a, l), 30.0);
    }
}

// posv: info > 0 and B untouched; a NaN in B: info 0, that column non-finite, the others right.
TYPED_TEST(Hostile, PosvNanInfInAOrB) {
  using T = TypeParam;
  const int n = 30, nrhs = 3;
  const Dense b = [&] {
    Dense r = random_matrix(n, nrhs, 9u);
    for (auto& x : r.v) x = double(T(x));
    return r;
  }();
  for (const auto& pos : positions(n))
    for (const double bad : kBad)
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        SCOPED_TRACE(value_name(bad) + " at (" + std::to_string(pos.first) + "," +
                     std::to_string(pos.second) + ") " + name(uplo));
        Dense a = random_spd<T>(n, 8u);
        a(pos.first, pos.second) = a(pos.second, pos.first) = bad;
        auto da = to_device<T, Kokkos::LayoutLeft>(a, uplo, kOther);
        auto db = to_device<T, Kokkos::LayoutLeft>(b);
        EXPECT_GT(posv(ExecSpace(), uplo, da, db), 0);
        const Dense after = to_host(db);
        for (std::size_t k = 0; k < b.v.size(); ++k) {
          ASSERT_EQ(after.v[k], b.v[k]);
        }
      }
  for (const double bad : kBad) {
    SCOPED_TRACE(value_name(bad) + " in B");
    const Dense a = random_spd<T>(n, 8u);
    Dense bb = b;
    bb(n / 2, 1) = bad;
    auto da = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    auto db = to_device<T, Kokkos::LayoutRight>(bb);
    ASSERT_EQ(posv(ExecSpace(), Uplo::Lower, da, db), 0);
    expect_bad_column_others_solve<T>(a, to_host(db), bb, 1);
  }
}

TEST(HostileMixed, PosvMixedNanInfInAOrB) {
  const int n = 30;
  const Dense b = random_matrix(n, 2, 4u);
  for (const auto& pos : positions(n))
    for (const double bad : kBad) {
      SCOPED_TRACE(value_name(bad) + " at (" + std::to_string(pos.first) + "," +
                   std::to_string(pos.second) + ")");
      Dense a = random_spd<double>(n, 6u);
      a(pos.first, pos.second) = a(pos.second, pos.first) = bad;
      auto da = to_device<double, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
      auto db = to_device<double, Kokkos::LayoutLeft>(b);
      Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> x("x", n, 2);
      EXPECT_GT(posv_mixed(ExecSpace(), Uplo::Lower, da, db, x).info, 0);
    }
  // A NaN in B: no convergence for that column, so the double fallback (or the double path
  // at once); the other column right.
  const Dense a = random_spd<double>(n, 6u);
  Dense bb = b;
  bb(0, 0) = kNan;
  for (const MixedFactor f : {MixedFactor::Float, MixedFactor::Double}) {
    SCOPED_TRACE(f == MixedFactor::Float ? "Float" : "Double");
    auto da = to_device<double, Kokkos::LayoutLeft>(a, Uplo::Upper, kOther);
    auto db = to_device<double, Kokkos::LayoutLeft>(bb);
    Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> x("x", n, 2);
    PosvMixedOptions o;
    o.factor = f;
    const auto r = posv_mixed(ExecSpace(), Uplo::Upper, da, db, x, o);
    ASSERT_EQ(r.info, 0);
    EXPECT_TRUE(r.fell_back());
    expect_bad_column_others_solve<double>(a, to_host(x), bb, 0);
  }
}

//--- hostile values: LU -------------------------------------------------------------------

template <class T>
Dense general(int n, unsigned seed) {
  Dense a = random_matrix(n, n, seed);
  for (auto& x : a.v) x = double(T(x));
  for (int i = 0; i < n; ++i) a(i, i) = double(T(a(i, i) + n));  // Crout needs this
  return a;
}

// Anywhere in A (getrf reads all of it): first, last, middle, the two corners.
std::vector<std::pair<int, int>> lu_positions(int n) {
  auto p = positions(n);
  if (n > 1) p.push_back({0, n - 1});
  return p;
}

TYPED_TEST(Hostile, GetrfNopivGesvNanInfGiveInfo) {
  using T = TypeParam;
  for (const int n : {1, 5, 40, 150})
    for (const auto& pos : lu_positions(n))
      for (const double bad : kBad) {
        const std::string where = value_name(bad) + " at (" + std::to_string(pos.first) + "," +
                                  std::to_string(pos.second) + ") n=" + std::to_string(n);
        SCOPED_TRACE(where);
        Dense a = general<T>(n, 7u + n);
        a(pos.first, pos.second) = bad;
        for (const Blas blas : {Blas::Vendor, Blas::Native})
          for (const int base : {0, 4}) {
            if (n > 40 && base != 0) continue;
            LuOptions o;
            o.blas = blas;
            o.block_size = base;
            o.panel_size = base ? 16 : 0;
            SCOPED_TRACE(std::string(blas == Blas::Vendor ? "Vendor" : "Native") + " base " +
                         std::to_string(base));
            auto d = to_device<T, Kokkos::LayoutLeft>(a);
            Kokkos::View<int*, MemSpace> ipiv("ipiv", n);
            EXPECT_GT(getrf(ExecSpace(), d, ipiv, o), 0) << "getrf";
            auto r = to_device<T, Kokkos::LayoutRight>(a);
            EXPECT_GT(getrf(ExecSpace(), r, ipiv, o), 0) << "getrf LayoutRight";
            auto c = to_device<T, Kokkos::LayoutLeft>(a);
            EXPECT_GT(getrf_nopiv(ExecSpace(), c, o), 0) << "getrf_nopiv";
          }
        // gesv: info > 0, B untouched.
        const Dense b = general<T>(n, 99u);
        auto d = to_device<T, Kokkos::LayoutRight>(a);
        auto x = to_device<T, Kokkos::LayoutLeft>(b);
        Kokkos::View<int*, MemSpace> ipiv("ipiv", n);
        EXPECT_GT(gesv(ExecSpace(), d, ipiv, x), 0) << "gesv";
        const Dense after = to_host(x);
        for (std::size_t k = 0; k < b.v.size(); ++k) {
          ASSERT_EQ(after.v[k], b.v[k]);
        }
      }
}

TYPED_TEST(Hostile, GesvNanInBLeavesOtherColumnsRight) {
  using T = TypeParam;
  const int n = 25;
  const Dense a = general<T>(n, 1u);
  Dense b = random_matrix(n, 2, 2u);
  for (auto& x : b.v) x = double(T(x));
  b(n - 1, 0) = kInf;
  auto d = to_device<T, Kokkos::LayoutLeft>(a);
  auto x = to_device<T, Kokkos::LayoutLeft>(b);
  Kokkos::View<int*, MemSpace> ipiv("ipiv", n);
  ASSERT_EQ(gesv(ExecSpace(), d, ipiv, x), 0);
  expect_bad_column_others_solve<T>(a, to_host(x), b, 0);
}

//--- hostile values: batches --------------------------------------------------------------

using batched::Kernel;

template <class Batch>
Batch make_batch(int count, int n, int m) {
  using T = typename Batch::value_type;
  if constexpr (std::is_same<Batch, batched::ChunkedBatch<T, MemSpace>>::value)
    return Batch("A", count, n, m, batched::default_chunk<ExecSpace, T>());
  else
    return Batch("A", count, n, m);
}

template <class Batch>
constexpr bool is_strided() {
  using T = typename Batch::value_type;
  return std::is_same<Batch, batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>>::value ||
         std::is_same<Batch, batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>>::value;
}

// Bad matrices: index -> (row, col, value).
struct Bad {
  int p, r, c;
  double v;
};
std::vector<Bad> bad_matrices(int n, int count) {
  return {{1, 0, 0, kNan}, {count / 2, n - 1, n / 3, kInf}, {count - 2, n / 2, n / 2, -kInf},
          {count - 1, n - 1, n - 1, kNan}};
}

// Runs batched posv (or gesv) twice, clean and with bad matrices, and compares.
template <class Batch>
void batch_with_bad_matrices(const int n, const bool lu, const batched::Options& opt) {
  using T = typename Batch::value_type;
  const int count = 37, nrhs = 2;
  const Uplo uplo = n % 2 ? Uplo::Upper : Uplo::Lower;
  SCOPED_TRACE(std::string(lu ? "gesv" : "posv") + " n=" + std::to_string(n) + " kernel " +
               batched::name(opt.kernel) + " " + name(uplo) +
               (is_strided<Batch>() ? " strided" : " batch-fastest"));
  std::vector<Dense> as, bs;
  for (int p = 0; p < count; ++p) {
    as.push_back(lu ? general<T>(n, 50u + p) : random_spd<T>(n, 50u + p));
    Dense b = random_matrix(n, nrhs, 90u + p);
    for (auto& x : b.v) x = double(T(x));
    bs.push_back(b);
  }
  const auto bads = bad_matrices(n, count);
  // run(k): k = 0 clean, 1 with the bad matrices; returns A, B, info on the host.
  const auto run = [&](const bool with_bad, std::vector<Dense>& fa, std::vector<Dense>& fb,
                       std::vector<int>& fi) {
    auto a = make_batch<Batch>(count, n, n);
    auto b = make_batch<Batch>(count, n, nrhs);
    auto ha = batched::create_mirror_view(a);
    auto hb = batched::create_mirror_view(b);
    for (int p = 0; p < count; ++p) {
      Dense m = as[p];
      if (with_bad)
        for (const auto& bd : bads)
          if (bd.p == p) m(bd.r, bd.c) = m(bd.c, bd.r) = bd.v;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) ha(p, i, j) = T(lu || in_triangle(uplo, i, j) ? m(i, j) : kOther);
      for (int j = 0; j < nrhs; ++j)
        for (int i = 0; i < n; ++i) hb(p, i, j) = T(bs[p](i, j));
    }
    batched::deep_copy(a, ha);
    batched::deep_copy(b, hb);
    Kokkos::View<int*, MemSpace> info("info", count);
    Kokkos::deep_copy(info, -7);
    if (lu) {
      Kokkos::View<int**, MemSpace> ipiv("ipiv", count, n);
      batched::gesv(ExecSpace(), a, ipiv, b, info);
    } else {
      batched::posv(ExecSpace(), uplo, a, b, info, opt);
    }
    ExecSpace().fence();
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    batched::deep_copy(ha, a);
    batched::deep_copy(hb, b);
    for (int p = 0; p < count; ++p) {
      Dense x(n, n), y(n, nrhs);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) x(i, j) = ha(p, i, j);
      for (int j = 0; j < nrhs; ++j)
        for (int i = 0; i < n; ++i) y(i, j) = hb(p, i, j);
      fa.push_back(x);
      fb.push_back(y);
      fi.push_back(hi(p));
    }
  };
  std::vector<Dense> ca, cb, ba, bb;
  std::vector<int> ci, bi;
  run(false, ca, cb, ci);
  run(true, ba, bb, bi);
  for (int p = 0; p < count; ++p) {
    bool is_bad = false;
    int row = 0;
    for (const auto& bd : bads)
      if (bd.p == p) is_bad = true, row = std::max(bd.r, bd.c);
    ASSERT_EQ(ci[p], 0) << "clean matrix " << p;
    if (is_bad) {
      if (lu)
        EXPECT_GT(bi[p], 0) << "matrix " << p;
      else
        EXPECT_EQ(bi[p], row + 1) << "matrix " << p;
      for (std::size_t k = 0; k < bs[p].v.size(); ++k)
        ASSERT_EQ(bb[p].v[k], bs[p].v[k]) << "B of bad matrix " << p << " changed";
    } else {
      ASSERT_EQ(bi[p], 0) << "matrix " << p;
      // Bit for bit what the clean run gave: the bad neighbours changed nothing.
      for (std::size_t k = 0; k < ca[p].v.size(); ++k)
        ASSERT_EQ(ba[p].v[k], ca[p].v[k]) << "A of matrix " << p << " differs from the clean run";
      for (std::size_t k = 0; k < cb[p].v.size(); ++k)
        ASSERT_EQ(bb[p].v[k], cb[p].v[k]) << "B of matrix " << p << " differs from the clean run";
    }
  }
}

template <class Batch>
void bad_batch_sweep() {
  for (const int n : {1, 4, 13, 40, 100}) {
    if (kHost && n > 40) continue;  // 100: WarpStaged's block per matrix (CUDA)
    std::vector<batched::Options> opts;
    const auto add = [&](Kernel k, Algo a) {
      batched::Options o;
      o.kernel = k;
      o.algo = a;
      opts.push_back(o);
    };
    add(Kernel::Auto, Algo::Default);
    if (n <= batched::impl::kMaxRegisterN) add(Kernel::Registers, Algo::Default);
    add(Kernel::ThreadDirect, Algo::Crout);
    add(Kernel::ThreadDirect, Algo::TiledTop);
    add(Kernel::TeamScratch, Algo::TiledLeft);
    add(Kernel::TeamScratch, Algo::Banachiewicz);
    add(Kernel::TeamRows, Algo::Default);
    if (!kHost) add(Kernel::RowRegisters, Algo::Default);
    if (!kHost) add(Kernel::WarpStaged, Algo::Default);
    if (kHost && !is_strided<Batch>()) add(Kernel::SimdLanes, Algo::Default);
    for (const auto& o : opts) batch_with_bad_matrices<Batch>(n, false, o);
    batch_with_bad_matrices<Batch>(n, true, batched::Options());
  }
}

TYPED_TEST(Hostile, BatchWithNanInfMatricesLeavesOthersExact) {
  using T = TypeParam;
  bad_batch_sweep<batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>>();
  bad_batch_sweep<batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>>();
  bad_batch_sweep<batched::InterleavedBatch<T, MemSpace>>();
  bad_batch_sweep<batched::ChunkedBatch<T, MemSpace>>();
}

//--- hostile arguments --------------------------------------------------------------------

template <class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const kolesky::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG EXCEPTION TYPE: ") + e.what();
  }
  return "NOTHING THROWN";
}

#define EXPECT_THROWS_WITH(call, text)                                                  \
  do {                                                                                  \
    const std::string msg_ = thrown([&] { call; });                                     \
    EXPECT_NE(msg_.find(text), std::string::npos) << #call << " threw: " << msg_;       \
  } while (0)

TYPED_TEST(Hostile, NonSquareAndWrongRowsThrowWithExtents) {
  using T = TypeParam;
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> rect("rect", 4, 5), sq("sq", 4, 4);
  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> b3("b3", 3, 2), b4("b4", 4, 2);
  Kokkos::View<T*, MemSpace> v5("v5", 5);
  Kokkos::View<int*, MemSpace> ipiv("ipiv", 4), short_piv("short", 3);
  EXPECT_THROWS_WITH(potrf(ExecSpace(), Uplo::Lower, rect), "4 x 5");
  EXPECT_THROWS_WITH(potrs(ExecSpace(), Uplo::Lower, rect, b4), "4 x 5");
  EXPECT_THROWS_WITH(posv(ExecSpace(), Uplo::Upper, rect, b4), "4 x 5");
  EXPECT_THROWS_WITH(getrf(ExecSpace(), rect, ipiv), "4 x 5");
  EXPECT_THROWS_WITH(getrs(ExecSpace(), Trans::No, rect, ipiv, b4), "4 x 5");
  EXPECT_THROWS_WITH(gesv(ExecSpace(), rect, ipiv, b4), "4 x 5");
  EXPECT_THROWS_WITH(getrf_nopiv(ExecSpace(), rect), "4 x 5");
  EXPECT_THROWS_WITH(getrs_nopiv(ExecSpace(), rect, b4), "4 x 5");
  EXPECT_THROWS_WITH(crout_iterative(ExecSpace(), rect), "4 x 5");
  EXPECT_THROWS_WITH(unpack_lu(ExecSpace(), rect, sq, sq, LuForm::Lapack), "4 x 5");
  EXPECT_THROWS_WITH(potrs(ExecSpace(), Uplo::Lower, sq, b3), "B has 3 rows");
  EXPECT_THROWS_WITH(posv(ExecSpace(), Uplo::Lower, sq, v5), "B has 5 rows");
  EXPECT_THROWS_WITH(getrs(ExecSpace(), Trans::Yes, sq, ipiv, b3), "B has 3 rows");
  EXPECT_THROWS_WITH(gesv(ExecSpace(), sq, ipiv, v5), "B has 5 rows");
  EXPECT_THROWS_WITH(getrs_nopiv(ExecSpace(), sq, b3), "B has 3 rows");
  EXPECT_THROWS_WITH(getrf(ExecSpace(), sq, short_piv), "ipiv has 3 entries");
  EXPECT_THROWS_WITH(gesv(ExecSpace(), sq, short_piv, b4), "ipiv has 3 entries");
  // A posv that throws must not have factored A first.
  auto h = Kokkos::create_mirror_view(sq);
  for (int i = 0; i < 4; ++i) h(i, i) = T(4);
  Kokkos::deep_copy(sq, h);
  EXPECT_THROWS_WITH(posv(ExecSpace(), Uplo::Lower, sq, b3), "3 rows");
  const Dense after = to_host(sq);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(after(i, i), 4.0) << "posv factored A before throwing";
  }
}

TEST(HostileMixed, PosvMixedPlanShapesThrow) {
  PosvMixedPlan<ExecSpace> plan(ExecSpace(), 4, 2, Uplo::Lower);
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> a5("a5", 5, 5), a4("a4", 4, 4);
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> b3("b3", 4, 3), b2("b2", 4, 2);
  EXPECT_THROWS_WITH(plan.posv(a5, b2, b2), "order 4");
  EXPECT_THROWS_WITH(plan.posv(a4, b3, b3), "2 right-hand sides at most");
  EXPECT_THROWS_WITH((PosvMixedPlan<ExecSpace>(ExecSpace(), -1, 1, Uplo::Lower)), "-1");
  PosvMixedPlan<ExecSpace> empty(ExecSpace(), 0, 1, Uplo::Upper);
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> a0("a0", 0, 0), b0("b0", 0, 1);
  EXPECT_EQ(empty.posv(a0, b0, b0).info, 0);
}

TEST(HostileMixed, PosvMixedBadShapesThrow) {
  Kokkos::View<double**, MemSpace> rect("rect", 4, 5), sq("sq", 4, 4), b("b", 4, 2),
      b3("b3", 3, 2), x3("x3", 4, 3);
  EXPECT_THROWS_WITH(posv_mixed(ExecSpace(), Uplo::Lower, rect, b, b), "4 x 5");
  EXPECT_THROWS_WITH(posv_mixed(ExecSpace(), Uplo::Lower, sq, b3, b), "3 rows");
  EXPECT_THROWS_WITH(posv_mixed(ExecSpace(), Uplo::Lower, sq, b, b3), "3 rows");
  EXPECT_THROWS_WITH(posv_mixed(ExecSpace(), Uplo::Lower, sq, b, x3), "B has 2 columns but X has 3");
}

TYPED_TEST(Hostile, BatchedShapeMismatchesThrowWithExtents) {
  using T = TypeParam;
  using IB = batched::InterleavedBatch<T, MemSpace>;
  using SB = batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>;
  IB a("A", 4, 3, 3), rect("R", 4, 3, 2), b5("B5", 5, 3, 1), b2rows("B2", 4, 2, 1), b("B", 4, 3, 1);
  SB sa("SA", 4, 3, 3), srect("SR", 4, 2, 3);
  Kokkos::View<int*, MemSpace> info("info", 4), short_info("short", 3);
  Kokkos::View<int**, MemSpace> ipiv("ipiv", 4, 3), few("few", 3, 3), narrow("narrow", 4, 2);
  EXPECT_THROWS_WITH(batched::potrf(ExecSpace(), Uplo::Lower, rect, info), "3 x 2");
  EXPECT_THROWS_WITH(batched::potrf(ExecSpace(), Uplo::Lower, srect, info), "2 x 3");
  EXPECT_THROWS_WITH(batched::potrf(ExecSpace(), Uplo::Lower, a, short_info), "info has 3 entries for 4");
  EXPECT_THROWS_WITH(batched::posv(ExecSpace(), Uplo::Lower, a, b5, info), "B holds 5 matrices but A holds 4");
  EXPECT_THROWS_WITH(batched::posv(ExecSpace(), Uplo::Lower, a, b2rows, info), "2 rows");
  EXPECT_THROWS_WITH(batched::posv(ExecSpace(), Uplo::Lower, a, b, short_info), "info has 3 entries");
  EXPECT_THROWS_WITH(batched::potrs(ExecSpace(), Uplo::Upper, a, b5), "B holds 5");
  EXPECT_THROWS_WITH(batched::getrf(ExecSpace(), rect, ipiv, info), "3 x 2");
  EXPECT_THROWS_WITH(batched::getrf(ExecSpace(), a, few, info), "ipiv is 3 x 3 but must be at least 4 x 3");
  EXPECT_THROWS_WITH(batched::getrf(ExecSpace(), a, narrow, info), "ipiv is 4 x 2");
  EXPECT_THROWS_WITH(batched::getrf(ExecSpace(), a, ipiv, short_info), "info has 3 entries");
  EXPECT_THROWS_WITH(batched::getrs(ExecSpace(), Trans::No, a, ipiv, b5, info), "B holds 5");
  EXPECT_THROWS_WITH(batched::getrs(ExecSpace(), Trans::No, a, ipiv, b, short_info), "info has 3");
  EXPECT_THROWS_WITH(batched::gesv(ExecSpace(), a, ipiv, b2rows, info), "2 rows");
  EXPECT_THROWS_WITH(batched::copy(ExecSpace(), a, b5), "shapes differ");
  using CB = batched::ChunkedBatch<T, MemSpace>;
  EXPECT_THROWS_WITH(CB("C", 10, 3, 3, 0), "chunk size must be positive");
  typename CB::view_type raw("raw", 2, 3, 3, 4);
  EXPECT_THROWS_WITH(CB(raw, 9), "batch 9 does not fit 2 chunks of 4");
}

TYPED_TEST(Hostile, ZeroSizesAreTrivial) {
  using T = TypeParam;
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> a0("a0", 0, 0), b0("b0", 0, 3);
  Kokkos::View<T*, MemSpace> v0("v0", 0);
  Kokkos::View<int*, MemSpace> p0("p0", 0);
  for (const auto& opt : every_potrf_variant()) {
    EXPECT_EQ(potrf(ExecSpace(), Uplo::Lower, a0, opt), 0);
  }
  EXPECT_NO_THROW(potrs(ExecSpace(), Uplo::Upper, a0, b0));
  EXPECT_EQ(posv(ExecSpace(), Uplo::Lower, a0, v0), 0);
  EXPECT_EQ(getrf(ExecSpace(), a0, p0), 0);
  EXPECT_NO_THROW(getrs(ExecSpace(), Trans::Yes, a0, p0, b0));
  EXPECT_EQ(gesv(ExecSpace(), a0, p0, b0), 0);
  EXPECT_EQ(getrf_nopiv(ExecSpace(), a0), 0);
  EXPECT_NO_THROW(getrs_nopiv(ExecSpace(), a0, v0));
  if constexpr (std::is_same<T, double>::value) {
    Kokkos::View<double**, MemSpace> x0("x0", 0, 3);
    const auto r = posv_mixed(ExecSpace(), Uplo::Lower, a0, b0, x0);
    EXPECT_EQ(r.info, 0);
  }
  // nrhs = 0: A is still factored, info 0, nothing else happens.
  const int n = 6;
  const Dense spd = random_spd<T>(n, 1u);
  auto a = to_device<T, Kokkos::LayoutLeft>(spd, Uplo::Lower, kOther);
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> bn("bn", n, 0);
  ASSERT_EQ(posv(ExecSpace(), Uplo::Lower, a, bn), 0);
  EXPECT_LT(potrf_ratio<T>(spd, factor_of(to_host(a), Uplo::Lower)), 30.0);
  Dense g = random_matrix(n, n, 2u);
  for (int i = 0; i < n; ++i) g(i, i) += n;
  for (auto& x : g.v) x = double(T(x));
  auto ga = to_device<T, Kokkos::LayoutRight>(g);
  Kokkos::View<int*, MemSpace> piv("piv", n);
  ASSERT_EQ(gesv(ExecSpace(), ga, piv, bn), 0);
  const Dense gf = to_host(ga);
  EXPECT_NE(gf(n - 1, n - 1), g(n - 1, n - 1)) << "gesv with nrhs = 0 must still factor A";
  // Batches: batch = 0, n = 0, nrhs = 0.
  using IB = batched::InterleavedBatch<T, MemSpace>;
  using SB = batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>;
  IB e("E", 0, 3, 3), eb("EB", 0, 3, 1);
  Kokkos::View<int*, MemSpace> i0("i0", 0);
  Kokkos::View<int**, MemSpace> ip0("ip0", 0, 3);
  EXPECT_NO_THROW(batched::potrf(ExecSpace(), Uplo::Lower, e, i0));
  EXPECT_NO_THROW(batched::posv(ExecSpace(), Uplo::Lower, e, eb, i0));
  EXPECT_NO_THROW(batched::potrs(ExecSpace(), Uplo::Lower, e, eb));
  EXPECT_NO_THROW(batched::getrf(ExecSpace(), e, ip0, i0));
  EXPECT_NO_THROW(batched::gesv(ExecSpace(), e, ip0, eb, i0));
  SB z("Z", 5, 0, 0), zb("ZB", 5, 0, 2);
  Kokkos::View<int*, MemSpace> info5("info5", 5);
  Kokkos::View<int**, MemSpace> ipz("ipz", 5, 0);
  for (int pass = 0; pass < 3; ++pass) {
    Kokkos::deep_copy(info5, 9);
    if (pass == 0) batched::potrf(ExecSpace(), Uplo::Upper, z, info5);
    if (pass == 1) batched::posv(ExecSpace(), Uplo::Upper, z, zb, info5);
    if (pass == 2) batched::gesv(ExecSpace(), z, ipz, zb, info5);
    ExecSpace().fence();
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info5);
    for (int p = 0; p < 5; ++p) {
      EXPECT_EQ(hi(p), 0) << "pass " << pass << " matrix " << p;
    }
  }
  // nrhs = 0 in a batch: the factorization still happens and reports.
  IB ba("BA", 3, 2, 2), bb("BB", 3, 2, 0);
  auto hba = batched::create_mirror_view(ba);
  for (int p = 0; p < 3; ++p) hba(p, 0, 0) = hba(p, 1, 1) = T(p == 1 ? -1 : 4);
  batched::deep_copy(ba, hba);
  Kokkos::View<int*, MemSpace> info3("info3", 3);
  Kokkos::deep_copy(info3, 9);
  batched::posv(ExecSpace(), Uplo::Lower, ba, bb, info3);
  ExecSpace().fence();
  auto hi3 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info3);
  EXPECT_EQ(hi3(0), 0);
  EXPECT_EQ(hi3(1), 1);
  EXPECT_EQ(hi3(2), 0);
  batched::deep_copy(hba, ba);
  EXPECT_EQ(hba(0, 0, 0), T(2)) << "posv with nrhs = 0 must still factor";
}

TYPED_TEST(Hostile, InaccessibleMemorySpaceThrows) {
  using T = TypeParam;
  if constexpr (!Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    Kokkos::View<T**, Kokkos::HostSpace> h("host_A", 3, 3), hb("host_B", 3, 1);
    Kokkos::View<T**, MemSpace> d("dev_A", 3, 3), db("dev_B", 3, 1);
    Kokkos::View<int*, Kokkos::HostSpace> hp("host_ipiv", 3);
    Kokkos::View<int*, MemSpace> dp("dev_ipiv", 3);
    EXPECT_THROWS_WITH(potrf(ExecSpace(), Uplo::Lower, h), "cannot access");
    EXPECT_THROWS_WITH(potrs(ExecSpace(), Uplo::Lower, d, hb), "cannot access");
    EXPECT_THROWS_WITH(getrf(ExecSpace(), d, hp), "cannot access");
    EXPECT_THROWS_WITH(gesv(ExecSpace(), h, dp, db), "cannot access");
    EXPECT_THROWS_WITH(getrf_nopiv(ExecSpace(), h), "cannot access");
    batched::InterleavedBatch<T, Kokkos::HostSpace> hbatch("hbatch", 2, 3, 3);
    Kokkos::View<int*, MemSpace> info("info", 2);
    EXPECT_THROWS_WITH(batched::potrf(ExecSpace(), Uplo::Lower, hbatch, info), "cannot access");
  } else {
    GTEST_SKIP() << "every memory space is host-accessible in this build";
  }
}

//--- 64-bit offsets -----------------------------------------------------------------------

// An anonymous MAP_NORESERVE mapping: address space only, pages made as they are touched.
struct Reserve {
  void* p = MAP_FAILED;
  std::size_t bytes = 0;
  explicit Reserve(std::size_t b) : bytes(b) {
    p = mmap(nullptr, b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  ~Reserve() {
    if (p != MAP_FAILED) munmap(p, bytes);
  }
  bool ok() const { return p != MAP_FAILED; }
};

constexpr std::int64_t kBig = (std::int64_t(1) << 31) + 5;  // a stride past INT_MAX elements

// A 3 x 3 matrix (or 3 of them) whose elements lie more than 2^31 elements apart: offsets
// computed in 32 bits land elsewhere (or outside the mapping), so only 64-bit index
// arithmetic reproduces the compact result.
TYPED_TEST(Hostile, StridesPast32BitsGiveCorrectResults) {
  using T = TypeParam;
  if constexpr (!kHost) {
    GTEST_SKIP() << "the mapping is host memory";
  } else {
    using Strided2 = Kokkos::View<T**, Kokkos::LayoutStride, Kokkos::HostSpace,
                                  Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    const int n = 3;
    const std::size_t span = std::size_t(2 * kBig + n + 1);
    Reserve mem(span * sizeof(T));
    if (!mem.ok()) GTEST_SKIP() << "cannot map " << span * sizeof(T) << " bytes of address space";
    T* base = static_cast<T*>(mem.p);
    const Dense a = random_spd<T>(n, 77u);
    Dense g = random_matrix(n, n, 78u);
    for (auto& x : g.v) x = double(T(x));
    for (const bool column_far : {true, false}) {
      // Column stride kBig (or row stride kBig).
      const Kokkos::LayoutStride lay = column_far ? Kokkos::LayoutStride(n, 1, n, kBig)
                                                  : Kokkos::LayoutStride(n, kBig, n, 1);
      Strided2 v(base, lay);
      ASSERT_GT(std::int64_t(v.span()), std::int64_t(INT_MAX));
      const auto load = [&](const Dense& m) {
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) v(i, j) = T(m(i, j));
      };
      for (const auto& opt : every_potrf_variant())
        for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
          SCOPED_TRACE(std::string(column_far ? "column" : "row") + " stride 2^31+5, " +
                       variant_name(opt) + " " + name(uplo));
          load(a);
          ASSERT_EQ(potrf(ExecSpace(), uplo, v, opt), 0);
          Dense f(n, n);
          for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) f(i, j) = v(i, j);
          EXPECT_LT(potrf_ratio<T>(a, factor_of(f, uplo)), 30.0);
        }
      // getrf + getrs with B at a far stride too (B is the third column block's neighbour).
      load(g);
      Kokkos::View<int*, Kokkos::HostSpace> ipiv("ipiv", n);
      ASSERT_EQ(getrf(ExecSpace(), v, ipiv), 0);
      Kokkos::View<T*, Kokkos::HostSpace> b("b", n);
      for (int i = 0; i < n; ++i) b(i) = T(i + 1);
      getrs(ExecSpace(), Trans::No, v, ipiv, b);
      Dense x(n, 1), bb(n, 1);
      for (int i = 0; i < n; ++i) x(i, 0) = b(i), bb(i, 0) = i + 1;
      EXPECT_LT(solve_ratio<T>(g, x, bb), 30.0) << (column_far ? "column" : "row") << " stride";
      load(g);
      ASSERT_EQ(getrf_nopiv(ExecSpace(), v), 0);
    }
    // A batch of 3 matrices kBig elements apart.
    using Strided3 = Kokkos::View<T***, Kokkos::LayoutStride, Kokkos::HostSpace,
                                  Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Strided3 v3(base, Kokkos::LayoutStride(3, kBig / 2, n, n, n, 1));
    batched::StridedBatch<T, Kokkos::LayoutStride, Kokkos::HostSpace> batch{
        typename batched::StridedBatch<T, Kokkos::LayoutStride, Kokkos::HostSpace>::view_type(v3)};
    for (const Kernel k : {Kernel::ThreadDirect, Kernel::TeamScratch, Kernel::TeamRows, Kernel::Registers}) {
      SCOPED_TRACE(std::string("batch stride 2^30, kernel ") + batched::name(k));
      for (int p = 0; p < 3; ++p)
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) v3(p, i, j) = T(a(i, j));
      Kokkos::View<int*, Kokkos::HostSpace> info("info", 3);
      batched::Options o;
      o.kernel = k;
      batched::potrf(ExecSpace(), Uplo::Lower, batch, info, o);
      ExecSpace().fence();
      for (int p = 0; p < 3; ++p) {
        ASSERT_EQ(info(p), 0);
        Dense f(n, n);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) f(i, j) = v3(p, i, j);
        EXPECT_LT(potrf_ratio<T>(a, factor_of(f, Uplo::Lower)), 30.0) << "matrix " << p;
      }
    }
  }
}

// An order or a column count past INT_MAX cannot be factored with int indices: a precise
// exception naming it (the View is never read, so a small mapping serves).
TYPED_TEST(Hostile, OrderPastIntMaxThrowsNamingIt) {
  using T = TypeParam;
  if constexpr (!kHost) {
    GTEST_SKIP() << "the mapping is host memory";
  } else {
    using Strided2 = Kokkos::View<T**, Kokkos::LayoutStride, Kokkos::HostSpace,
                                  Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    const std::size_t big = std::size_t(INT_MAX) + 1;
    Reserve mem((2 * big + 2) * sizeof(T));
    if (!mem.ok()) GTEST_SKIP() << "cannot map the address space";
    T* base = static_cast<T*>(mem.p);
    Strided2 huge(base, Kokkos::LayoutStride(big, 1, big, 1));
    Kokkos::View<int*, Kokkos::HostSpace> ipiv("ipiv", 4);
    const auto exec = ExecSpace();
    EXPECT_THROWS_WITH(potrf(exec, Uplo::Lower, huge), "2147483648 exceeds 2147483647");
    EXPECT_THROWS_WITH(getrf_nopiv(exec, huge), "2147483648 exceeds");
    EXPECT_THROWS_WITH(getrf(exec, huge, ipiv), "2147483648");
    Kokkos::View<T**, Kokkos::HostSpace> sq("sq", 2, 2);
    Strided2 wide(base, Kokkos::LayoutStride(2, 1, big, 1));
    EXPECT_THROWS_WITH(potrs(exec, Uplo::Lower, sq, wide), "2147483648 columns");
    EXPECT_THROWS_WITH(posv(exec, Uplo::Lower, sq, wide), "2147483648 columns");
  }
}

}  // namespace
}  // namespace test
}  // namespace kolesky
