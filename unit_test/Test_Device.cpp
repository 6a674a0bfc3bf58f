// Device-callable Serial/Team potrf and potrs, called from the test's own kernels on a batch
// of matrices (one subview each), as a user would.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <string>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

template <class T>
class DevicePotrf : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(DevicePotrf, Scalars);

constexpr int kBatch = 9;
constexpr int kBad = 4;  // this matrix is made indefinite; the others must not notice

enum class Level { Serial, Team, TeamVector };

const char* name(Level l) {
  return l == Level::Serial ? "Serial" : l == Level::Team ? "Team" : "TeamVector";
}

// (batch, n, n) with LayoutRight or (n, n, batch) with LayoutLeft: each matrix is strided
// differently, the kernels see only subviews.
template <class T, class Layout>
struct Batch {
  using View3 = Kokkos::View<T***, Layout, MemSpace>;
  static constexpr bool batch_first = std::is_same<Layout, Kokkos::LayoutRight>::value;
  View3 v;
  Batch(int n, int m)
      : v("batch", batch_first ? kBatch : n, batch_first ? n : m, batch_first ? m : kBatch) {}
  KOKKOS_INLINE_FUNCTION auto matrix(int b) const {
    if constexpr (batch_first)
      return Kokkos::subview(v, b, Kokkos::ALL(), Kokkos::ALL());
    else
      return Kokkos::subview(v, Kokkos::ALL(), Kokkos::ALL(), b);
  }
};

template <Level L, Uplo U, Algo A, class T, class Layout>
void run(const int n, const int nrhs, const int nb = kDefaultTile) {
  SCOPED_TRACE(std::string(name(L)) + " n=" + std::to_string(n) + " nb=" + std::to_string(nb) +
               " nrhs=" + std::to_string(nrhs) + " uplo=" + name(U) + " algo=" + name(A) + " " +
               (Batch<T, Layout>::batch_first ? "LayoutRight" : "LayoutLeft"));
  Batch<T, Layout> a(n, n), b(n, nrhs);
  std::vector<Dense> ha, hb;
  auto ma = Kokkos::create_mirror_view(a.v);
  auto mb = Kokkos::create_mirror_view(b.v);
  for (int p = 0; p < kBatch; ++p) {
    Dense x = random_spd<T>(n, 100u * p + n);
    if (p == kBad && n > 2) x(2, 2) = -1;
    Dense y = random_matrix(n, nrhs, 7u * p + n);
    for (auto& e : y.v) e = double(T(e));
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) {
        const double val = in_triangle(U, i, j) ? x(i, j) : 777.0;
        if (Batch<T, Layout>::batch_first) ma(p, i, j) = T(val); else ma(i, j, p) = T(val);
      }
    }
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) {
        if (Batch<T, Layout>::batch_first) mb(p, i, j) = T(y(i, j)); else mb(i, j, p) = T(y(i, j));
      }
    ha.push_back(x);
    hb.push_back(y);
  }
  Kokkos::deep_copy(a.v, ma);
  Kokkos::deep_copy(b.v, mb);
  Kokkos::View<int*, MemSpace> info("info", kBatch);
  if constexpr (L == Level::Serial) {
    Kokkos::parallel_for(
        Kokkos::RangePolicy<ExecSpace>(0, kBatch), KOKKOS_LAMBDA(const int p) {
          const auto m = a.matrix(p);
          info(p) = SerialPotrf<U, A>::invoke(m, nb);
          if (info(p) == 0) SerialPotrs<U>::invoke(m, b.matrix(p));
        });
  } else if constexpr (L == Level::Team) {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    // Host: the whole thread pool shares one matrix; GPU: two warps.
    const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
    const int ts = host ? int(ExecSpace().concurrency()) : 64;
    Kokkos::parallel_for(
        Policy(kBatch, ts),
        KOKKOS_LAMBDA(const Member& member) {
          const int p = member.league_rank();
          const auto m = a.matrix(p);
          const int r = TeamPotrf<Member, U, A>::invoke(member, m, nb);
          if (r == 0) TeamPotrs<Member, U>::invoke(member, m, b.matrix(p));
          Kokkos::single(Kokkos::PerTeam(member), [&]() { info(p) = r; });
        });
  } else {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    using Member = typename Policy::member_type;
    // GPU: 4 threads x 8 vector lanes, so both levels of parallelism are exercised.
    const bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
    const int ts = host ? int(ExecSpace().concurrency()) : 4, vl = host ? 1 : 8;
    Kokkos::parallel_for(
        Policy(kBatch, ts, vl),
        KOKKOS_LAMBDA(const Member& member) {
          const int p = member.league_rank();
          const auto m = a.matrix(p);
          const int r = TeamVectorPotrf<Member, U, A>::invoke(member, m, nb);
          if (r == 0) TeamVectorPotrs<Member, U>::invoke(member, m, b.matrix(p));
          Kokkos::single(Kokkos::PerTeam(member), [&]() { info(p) = r; });
        });
  }
  Kokkos::fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  Kokkos::deep_copy(ma, a.v);
  Kokkos::deep_copy(mb, b.v);
  for (int p = 0; p < kBatch; ++p) {
    const bool bad = p == kBad && n > 2;
    EXPECT_EQ(hi(p), bad ? 3 : 0) << "matrix " << p;
    if (bad) continue;
    Dense f(n, n), x(n, nrhs);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        f(i, j) = Batch<T, Layout>::batch_first ? ma(p, i, j) : ma(i, j, p);
        if (!in_triangle(U, i, j)) {
          EXPECT_EQ(f(i, j), 777.0);
        }
      }
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) x(i, j) = Batch<T, Layout>::batch_first ? mb(p, i, j) : mb(i, j, p);
    EXPECT_LT(potrf_ratio<T>(ha[p], factor_of(f, U)), 30.0) << "matrix " << p;
    EXPECT_LT(solve_ratio<T>(ha[p], x, hb[p]), 30.0) << "matrix " << p;
  }
}

template <Level L, Algo A, class T>
void run_all() {
  for (const int n : {1, 2, 3, 17, 33, 64})
    for (const int nrhs : {1, 4}) {
      run<L, Uplo::Lower, A, T, Kokkos::LayoutRight>(n, nrhs);
      run<L, Uplo::Upper, A, T, Kokkos::LayoutLeft>(n, nrhs);
    }
  run<L, Uplo::Lower, A, T, Kokkos::LayoutLeft>(40, 70);  // more columns than a team has threads
  if constexpr (is_tiled(A)) {
    // Sizes around the tile order, and tile orders that do not divide n.
    for (const int nb : {1, 3, 8, 16})
      for (const int n : {nb - 1, nb, nb + 1, 2 * nb + 3, 37}) {
        if (n < 1) continue;
        run<L, Uplo::Lower, A, T, Kokkos::LayoutRight>(n, 2, nb);
        run<L, Uplo::Upper, A, T, Kokkos::LayoutLeft>(n, 1, nb);
      }
  }
}

}  // namespace

TYPED_TEST(DevicePotrf, SerialCrout) { run_all<Level::Serial, Algo::Crout, TypeParam>(); }
TYPED_TEST(DevicePotrf, SerialBanachiewicz) {
  run_all<Level::Serial, Algo::Banachiewicz, TypeParam>();
}
TYPED_TEST(DevicePotrf, SerialRightLooking) {
  run_all<Level::Serial, Algo::RightLooking, TypeParam>();
}
TYPED_TEST(DevicePotrf, TeamCrout) { run_all<Level::Team, Algo::Crout, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamBanachiewicz) { run_all<Level::Team, Algo::Banachiewicz, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamRightLooking) { run_all<Level::Team, Algo::RightLooking, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamDefault) { run_all<Level::Team, Algo::Default, TypeParam>(); }
TYPED_TEST(DevicePotrf, SerialTiledRight) { run_all<Level::Serial, Algo::TiledRight, TypeParam>(); }
TYPED_TEST(DevicePotrf, SerialTiledLeft) { run_all<Level::Serial, Algo::TiledLeft, TypeParam>(); }
TYPED_TEST(DevicePotrf, SerialTiledTop) { run_all<Level::Serial, Algo::TiledTop, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamTiledRight) { run_all<Level::Team, Algo::TiledRight, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamTiledLeft) { run_all<Level::Team, Algo::TiledLeft, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamTiledTop) { run_all<Level::Team, Algo::TiledTop, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamVectorCrout) { run_all<Level::TeamVector, Algo::Crout, TypeParam>(); }
TYPED_TEST(DevicePotrf, TeamVectorRightLooking) {
  run_all<Level::TeamVector, Algo::RightLooking, TypeParam>();
}
TYPED_TEST(DevicePotrf, TeamVectorBanachiewicz) {
  run_all<Level::TeamVector, Algo::Banachiewicz, TypeParam>();
}
TYPED_TEST(DevicePotrf, TeamVectorTiledLeft) {
  run_all<Level::TeamVector, Algo::TiledLeft, TypeParam>();
}
TYPED_TEST(DevicePotrf, TeamVectorTiledTop) {
  run_all<Level::TeamVector, Algo::TiledTop, TypeParam>();
}

}  // namespace test
}  // namespace kolesky
