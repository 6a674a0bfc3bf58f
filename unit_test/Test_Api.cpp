// The calling convention of README.md's table: every routine with every argument form it
// lists (so a missing overload fails the build), the batched solves' info handling (failed
// matrices skipped, their B untouched), const factors, rank-2 right-hand sides, the
// device-callable free functions inside a user kernel with user scratch, and the Kokkos Tools
// regions and kernel labels.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

template <class T>
class Api : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Api, Scalars);

// Every form of the table, on empty operands (nothing to do, everything instantiated).
template <class T>
void instantiate_table() {
  using L = Kokkos::LayoutLeft;
  using R = Kokkos::LayoutRight;
  const ExecSpace e;
  const Uplo u = Uplo::Lower;
  // One matrix: Views of each layout, a subview, an unmanaged View, const factors.
  Kokkos::View<T**, L, MemSpace> al("al", 0, 0);
  Kokkos::View<T**, R, MemSpace> ar("ar", 0, 0);
  Kokkos::View<T***, L, MemSpace> cube("cube", 1, 0, 0);
  auto as = Kokkos::subview(cube, 0, Kokkos::ALL, Kokkos::ALL);  // LayoutStride
  Kokkos::View<T**, L, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> au(al.data(), 0, 0);
  Kokkos::View<const T**, L, MemSpace> ac = al;
  Kokkos::View<T*, MemSpace> b1("b1", 0);
  Kokkos::View<T**, R, MemSpace> b2("b2", 0, 2);
  potrf(e, u, al);
  potrf(e, u, ar, Algo::Blocked);
  potrf(e, u, as);
  potrf(e, u, au);
  potrs(e, u, ac, b1);
  potrs(e, u, ar, b2);
  posv(e, u, as, b1);
  posv(e, u, au, b2);
  PotrfPlan<ExecSpace, T> plan(e, 0, u);
  plan.potrf(al);
  plan.potrs(ac, b1);
  plan.posv(ar, b2);
  Kokkos::View<int*, MemSpace> piv("piv", 0);
  getrf(e, al, piv);
  getrs(e, Trans::No, ac, piv, b1);
  gesv(e, ar, piv, b2);
  getrf_nopiv(e, as);
  getrs_nopiv(e, ac, b2);
  crout_iterative(e, au);
  Kokkos::View<T**, L, MemSpace> lo("lo", 0, 0), up("up", 0, 0);
  unpack_lu(e, ac, lo, up, LuForm::Crout);
  if constexpr (std::is_same<T, double>::value) {
    Kokkos::View<double*, MemSpace> x1("x1", 0);
    Kokkos::View<double**, L, MemSpace> x2("x2", 0, 2);
    posv_mixed(e, u, al, b1, x1);
    posv_mixed(e, u, ar, b2, x2);
    PosvMixedPlan<ExecSpace> mixed(e, 0, 2, u);
    mixed.posv(as, b1, x1);
    mixed.posv(au, b2, x2);
  }

  // Batches: plain rank-3 Views of each layout, the three containers, const factors, rank-2
  // right-hand sides; info everywhere a factorization precedes.
  Kokkos::View<int*, MemSpace> info("info", 0);
  Kokkos::View<int**, L, MemSpace> ipiv("ipiv", 0, 0);
  Kokkos::View<T***, R, MemSpace> vr("vr", 0, 0, 0);
  Kokkos::View<T***, L, MemSpace> vl("vl", 0, 0, 0);
  Kokkos::View<const T***, R, MemSpace> vc = vr;
  // The containers' memory space is named: its default is the default execution space's,
  // which ExecSpace (OpenMP, Serial) cannot reach in a CUDA-enabled build.
  batched::StridedBatch<T, R, MemSpace> sb("sb", 0, 0, 0);
  batched::StridedBatch<const T, R, MemSpace> sbc(sb.data);
  batched::InterleavedBatch<T, MemSpace> ib("ib", 0, 0, 0);
  batched::ChunkedBatch<T, MemSpace> cb("cb", 0, 0, 0, 4);
  Kokkos::View<T***, R, MemSpace> br("br", 0, 0, 1);
  Kokkos::View<T**, R, MemSpace> bv("bv", 0, 0);
  batched::InterleavedBatch<T, MemSpace> bi("bi", 0, 0, 1);
  batched::potrf(e, u, vr, info);
  batched::potrf(e, u, vl, info);
  batched::potrf(e, u, sb, info);
  batched::potrf(e, u, ib, info);
  batched::potrf(e, u, cb, info);
  batched::potrs(e, u, vc, br, info);
  batched::potrs(e, u, vl, bv, info);
  batched::potrs(e, u, sbc, bv, info);
  batched::potrs(e, u, ib, bi, info);
  batched::potrs(e, u, cb, br);  // every matrix
  batched::posv(e, u, vr, bv, info);
  batched::posv(e, u, vl, br, info);
  batched::posv(e, u, ib, bi, info);
  batched::getrf(e, vr, ipiv, info);
  batched::getrf(e, ib, ipiv, info);
  batched::getrs(e, Trans::No, vc, ipiv, bv, info);
  batched::getrs(e, Trans::Yes, cb, ipiv, br, info);
  batched::gesv(e, vl, ipiv, bv, info);
  batched::gesv(e, sb, ipiv, br, info);
  // Mixed orders.
  batched::VarBatch<T, MemSpace> va("va", std::vector<int>{}), vb("vb", va, 1);
  batched::potrf(e, u, va, info);
  batched::potrs(e, u, va, vb, info);
  batched::posv(e, u, va, vb, info);
}

template <class T>
using Batch3 = Kokkos::View<T***, Kokkos::LayoutRight, MemSpace>;

// Batch of `count` SPD n x n matrices (matrix 2 made non-SPD), B of one column each.
template <class T, class Layout>
void fill_spd(const Kokkos::View<T***, Layout, MemSpace>& a, const Kokkos::View<T**, Kokkos::LayoutRight, MemSpace>& b,
              std::vector<Dense>& as, std::vector<Dense>& bs) {
  const int count = int(a.extent(0)), n = int(a.extent(1));
  auto ha = Kokkos::create_mirror_view(a);
  auto hb = Kokkos::create_mirror_view(b);
  for (int p = 0; p < count; ++p) {
    Dense m = random_spd<T>(n, 100u + p);
    if (p == 2) m(n - 1, n - 1) = -5;
    Dense r = random_matrix(n, 1, 200u + p);
    for (int i = 0; i < n; ++i) {
      hb(p, i) = T(r(i, 0));
      r(i, 0) = double(T(r(i, 0)));
      for (int j = 0; j < n; ++j) ha(p, i, j) = T(m(i, j));
    }
    as.push_back(m);
    bs.push_back(r);
  }
  Kokkos::deep_copy(a, ha);
  Kokkos::deep_copy(b, hb);
}

}  // namespace

TYPED_TEST(Api, TableCompilesAndRunsOnEmptyOperands) {
  instantiate_table<TypeParam>();
  Kokkos::fence();
}

// Plain rank-3 Views of both layouts, a rank-2 B, const factors; the failed matrix is skipped
// by potrs and its B left as it was.
TYPED_TEST(Api, BatchedSolvesOnPlainViewsSkipFailedMatrices) {
  using T = TypeParam;
  const int count = 6, n = 9;
  for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
    Kokkos::View<T***, Kokkos::LayoutLeft, MemSpace> a("a", count, n, n);
    Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> b("b", count, n);
    std::vector<Dense> as, bs;
    fill_spd<T>(a, b, as, bs);
    Kokkos::View<int*, MemSpace> info("info", count);
    batched::potrf(ExecSpace(), uplo, a, info);
    Kokkos::View<const T***, Kokkos::LayoutLeft, MemSpace> ac = a;
    batched::potrs(ExecSpace(), uplo, ac, b, info);
    Kokkos::fence();
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
    for (int p = 0; p < count; ++p) {
      SCOPED_TRACE("matrix " + std::to_string(p) + " " + name(uplo));
      Dense x(n, 1);
      for (int i = 0; i < n; ++i) x(i, 0) = hb(p, i);
      if (p == 2) {
        EXPECT_EQ(hi(p), n);
        for (int i = 0; i < n; ++i) EXPECT_EQ(x(i, 0), bs[p](i, 0)) << "B of a failed matrix";
      } else {
        EXPECT_EQ(hi(p), 0);
        EXPECT_LT(solve_ratio<T>(as[p], x, bs[p]), 30.0);
      }
    }
  }
}

TYPED_TEST(Api, BatchedPosvAndLuOnPlainViews) {
  using T = TypeParam;
  const int count = 5, n = 7;
  Batch3<T> a("a", count, n, n);
  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> b("b", count, n);
  std::vector<Dense> as, bs;
  fill_spd<T>(a, b, as, bs);
  Batch3<T> a2("a2", count, n, n);
  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> b2("b2", count, n);
  Kokkos::deep_copy(a2, a);
  Kokkos::deep_copy(b2, b);
  // LU on a copy whose matrix 3 is singular (a zero column).
  auto ha2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a2);
  for (int i = 0; i < n; ++i) ha2(3, i, 1) = 0;
  Kokkos::deep_copy(a2, ha2);
  Kokkos::View<int*, MemSpace> info("info", count), info2("info2", count);
  Kokkos::View<int**, Kokkos::LayoutLeft, MemSpace> ipiv("ipiv", count, n);
  batched::posv(ExecSpace(), Uplo::Lower, a, b, info);
  batched::gesv(ExecSpace(), a2, ipiv, b2, info2);
  Kokkos::fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  auto hi2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info2);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  auto hb2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b2);
  for (int p = 0; p < count; ++p) {
    SCOPED_TRACE("matrix " + std::to_string(p));
    Dense x(n, 1), x2(n, 1);
    for (int i = 0; i < n; ++i) x(i, 0) = hb(p, i), x2(i, 0) = hb2(p, i);
    EXPECT_EQ(hi(p), p == 2 ? n : 0);
    if (p != 2) {
      EXPECT_LT(solve_ratio<T>(as[p], x, bs[p]), 30.0);
    }
    if (p == 3) {
      EXPECT_GT(hi2(p), 0);
      for (int i = 0; i < n; ++i) EXPECT_EQ(x2(i, 0), bs[p](i, 0)) << "B of a singular matrix";
    } else {
      EXPECT_EQ(hi2(p), 0);
      EXPECT_LT(solve_ratio<T>(as[p], x2, bs[p]), 30.0);
    }
  }
}

namespace {
// A user kernel: each team stages its matrix in team scratch (team_scratch_size), factors it
// with the free-function form and solves with it.
template <class T>
void user_kernel(const Batch3<T>& a, const Kokkos::View<T**, Kokkos::LayoutRight, MemSpace>& b,
                 const Kokkos::View<int*, MemSpace>& info, const Uplo uplo) {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = Policy::member_type;
  using Scratch = Kokkos::View<T**, ExecSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const int n = int(a.extent(1));
  Policy policy(int(a.extent(0)), recommended_team_size<ExecSpace>(n));
  policy.set_scratch_size(0, Kokkos::PerTeam(team_scratch_size<T, ExecSpace>(n)));
  Kokkos::parallel_for(
      "user_kernel", policy, KOKKOS_LAMBDA(const Member& m) {
        const int p = m.league_rank();
        Scratch s(m.team_scratch(0), n, n);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n * n),
                             [&](const int t) { s(t / n, t % n) = a(p, t / n, t % n); });
        m.team_barrier();
        const int r = team_potrf(m, uplo, s);
        m.team_barrier();
        auto bp = Kokkos::subview(b, p, Kokkos::ALL);
        if (r == 0) team_potrs(m, uplo, s, bp);
        Kokkos::single(Kokkos::PerTeam(m), [&]() { info(p) = r; });
      });
}
}  // namespace

TYPED_TEST(Api, DeviceFreeFunctionsInAUserKernelWithScratch) {
  using T = TypeParam;
  const int count = 5, n = 11;
  for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
    Batch3<T> a("a", count, n, n);
    Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> b("b", count, n);
    std::vector<Dense> as, bs;
    fill_spd<T>(a, b, as, bs);
    Kokkos::View<int*, MemSpace> info("info", count);
    user_kernel<T>(a, b, info, uplo);
    Kokkos::fence();
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
    for (int p = 0; p < count; ++p) {
      SCOPED_TRACE("matrix " + std::to_string(p) + " " + name(uplo));
      EXPECT_EQ(hi(p), p == 2 ? n : 0);
      if (p == 2) continue;
      Dense x(n, 1);
      for (int i = 0; i < n; ++i) x(i, 0) = hb(p, i);
      EXPECT_LT(solve_ratio<T>(as[p], x, bs[p]), 30.0);
    }
  }
  EXPECT_EQ(recommended_team_size<Kokkos::DefaultHostExecutionSpace>(6), 1);
  EXPECT_GE(team_scratch_size<T>(8), sizeof(T) * 64);
}

// Orders and counts above INT_MAX are refused up front (a View over no memory: only its
// extents matter).
TEST(ApiLimits, BatchOrdersAboveIntMaxAreRefused) {
  const std::size_t big = std::size_t(INT_MAX) + 1;
  Kokkos::View<double***, Kokkos::LayoutRight, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      huge(nullptr, 0, big, big);
  Kokkos::View<int*, MemSpace> info("info", 0);
  EXPECT_THROW(batched::potrf(ExecSpace(), Uplo::Lower, huge, info), kolesky::invalid_argument);
  bool threw = false;
  try {
    batched::potrs(ExecSpace(), Uplo::Lower, huge, huge, info);
  } catch (const kolesky::invalid_argument& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find("2147483648 rows"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(threw);
}

// The host BLAS this program loaded: with the OpenMP OpenBLAS chosen at configure time (and
// the same soname as the pthreads build), the RPATH must have made it the one loaded.
TEST(ApiHostBlas, TheConfiguredVariantIsLoaded) {
#ifdef KOLESKY_TEST_EXPECT_OPENMP_BLAS
  EXPECT_EQ(host_blas_threading(), BlasThreading::OpenMP) << name(host_blas_threading());
#else
  std::printf("host BLAS threading: %s\n", name(host_blas_threading()));
#endif
}

namespace {
std::vector<std::string> g_regions, g_kernels;
void on_region(const char* name) { g_regions.emplace_back(name); }
void on_kernel(const char* name, const std::uint32_t, std::uint64_t*) { g_kernels.emplace_back(name); }
}  // namespace

// Kokkos Tools see a region named after every routine and only kernels labelled kolesky::
// (Kokkos' own copies and View initializations aside).
TEST(ApiTools, RegionsAndKernelLabels) {
  g_regions.clear();
  g_kernels.clear();
  namespace KT = Kokkos::Tools::Experimental;
  KT::set_push_region_callback(on_region);
  KT::set_begin_parallel_for_callback(on_kernel);
  KT::set_begin_parallel_reduce_callback(on_kernel);
  KT::set_begin_parallel_scan_callback(on_kernel);
  {
    const int n = 40;
    const Dense d = random_spd<double>(n, 5u);
    auto a = to_device<double, Kokkos::LayoutLeft>(d);
    Kokkos::View<double*, MemSpace> b("b", n), x("x", n);
    Kokkos::deep_copy(b, 1.0);
    posv(ExecSpace(), Uplo::Lower, a, b);
    auto a2 = to_device<double, Kokkos::LayoutLeft>(d);
    posv_mixed(ExecSpace(), Uplo::Lower, a2, b, x);
    Kokkos::View<int*, MemSpace> piv("piv", n);
    auto a3 = to_device<double, Kokkos::LayoutLeft>(d);
    gesv(ExecSpace(), a3, piv, b);
    Batch3<double> ab("ab", 3, 4, 4);
    Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> bb("bb", 3, 4);
    Kokkos::View<int*, MemSpace> info("info", 3);
    batched::posv(ExecSpace(), Uplo::Lower, ab, bb, info);
    Kokkos::fence();
  }
  KT::set_push_region_callback(nullptr);
  KT::set_begin_parallel_for_callback(nullptr);
  KT::set_begin_parallel_reduce_callback(nullptr);
  KT::set_begin_parallel_scan_callback(nullptr);
  const std::set<std::string> regions(g_regions.begin(), g_regions.end());
  for (const char* r : {"kolesky::posv", "kolesky::potrf", "kolesky::potrs", "kolesky::posv_mixed",
                        "kolesky::gesv", "kolesky::getrf", "kolesky::getrs",
                        "kolesky::batched::posv", "kolesky::batched::potrf"})
    EXPECT_TRUE(regions.count(r)) << "no region " << r;
  EXPECT_FALSE(g_kernels.empty());
  for (const auto& k : g_kernels)
    EXPECT_TRUE(k.rfind("kolesky::", 0) == 0 || k.rfind("Kokkos::", 0) == 0) << "kernel label " << k;
}

}  // namespace test
}  // namespace kolesky
