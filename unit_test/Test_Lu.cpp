// LU: Crout without pivoting (direct and iterative), getrf/getrs/gesv with partial pivoting,
// on the execution space under test, against hand-worked factors, LAPACK and a residual oracle.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "Kolesky_Lapack.hpp"
#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

template <class T>
class Lu : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Lu, Scalars);

using PivView = Kokkos::View<int*, MemSpace>;

// Entries in [-1, 1], rounded to T (the oracle sees the matrix the library sees).
template <class T>
Dense general(int n, unsigned seed) {
  Dense a = random_matrix(n, n, seed);
  for (auto& x : a.v) x = double(T(x));
  return a;
}

// Row sums of |off-diagonal| below the diagonal: leading minors non-zero, Crout is stable.
template <class T>
Dense dominant(int n, unsigned seed) {
  Dense a = general<T>(n, seed);
  for (int i = 0; i < n; ++i) a(i, i) = double(T(n + 1.0 + a(i, i)));
  return a;
}

// ||A - L U||_1 / (n ||A||_1 eps) for a packed factor; `pa` is A with getrf's rows
// interchanged (or A itself for Crout).
template <class T>
double lu_ratio(const Dense& pa, const Dense& f, bool crout) {
  const int n = pa.n;
  if (n == 0) return 0;
  Dense r(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int k = 0; k <= std::min(i, j); ++k) {
        const double l = k == i ? (crout ? f(i, i) : 1.0) : f(i, k);
        const double u = k == j ? (crout ? 1.0 : f(j, j)) : f(k, j);
        s += l * u;
      }
      r(i, j) = pa(i, j) - s;
    }
  return norm1(r) / (n * norm1(pa) * eps<T>());
}

Dense permuted(const Dense& a, const Dense& piv) {
  Dense p = a;
  for (int k = 0; k < a.n; ++k) {
    const int r = int(piv(k, 0)) - 1;
    for (int j = 0; j < a.m; ++j) std::swap(p(k, j), p(r, j));
  }
  return p;
}

template <class T, class Layout>
void check_getrf(int n, const LuOptions& opt, unsigned seed) {
  const Dense a = general<T>(n, seed);
  auto d = to_device<T, Layout>(a);
  PivView ipiv("ipiv", n);
  ASSERT_EQ(getrf(ExecSpace(), d, ipiv, opt), 0) << "n = " << n;
  const Dense f = to_host(d), piv = to_host(ipiv);
  for (int k = 0; k < n; ++k) {
    ASSERT_GE(int(piv(k, 0)), k + 1);
    ASSERT_LE(int(piv(k, 0)), n);
  }
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) ASSERT_LE(std::abs(f(i, j)), 1.0) << "|L| <= 1 with pivoting";
  EXPECT_LT(lu_ratio<T>(permuted(a, piv), f, false), 30.0) << "n = " << n;
}

TYPED_TEST(Lu, GetrfRandomEverySizeAndLayout) {
  using T = TypeParam;
  // Host paths by size: the calling thread up to 48 (192 when idle threads sleep), the pool
  // in one region up to 1024 (groups of 8 columns), recursive panels with the host BLAS
  // above; every edge crossed (the largest in one layout: the oracle is O(n^3)).
  for (const int n : {0, 1, 2, 3, 5, 7, 8, 9, 16, 17, 31, 32, 33, 47, 48, 49, 64, 65, 100, 128,
                      129, 130, 136, 191, 192, 193, 257, 511, 512, 513, 600, 1024, 1025}) {
    check_getrf<T, Kokkos::LayoutLeft>(n, {}, 10 + n);
    if (n <= 600) check_getrf<T, Kokkos::LayoutRight>(n, {}, 20 + n);
  }
}

TYPED_TEST(Lu, GetrfBlockSizesAndNativeSteps) {
  using T = TypeParam;
  for (const int nb : {1, 4, 16, 40})
    for (const Blas b : {Blas::Auto, Blas::Native}) {
      LuOptions opt;
      opt.block_size = nb;
      opt.blas = b;
      opt.panel_size = nb == 1 ? -1 : nb == 4 ? 24 : nb == 16 ? 0 : 50;  // whole, several, default
      for (const int n : {7, 50, 129}) {
        check_getrf<T, Kokkos::LayoutLeft>(n, opt, n + nb);
        check_getrf<T, Kokkos::LayoutRight>(n, opt, n + 2 * nb);
      }
    }
}

// The host entry points called from inside the user's own OpenMP parallel region, a matrix
// per thread: Kokkos cannot open a team there, so the one-region paths run on the calling
// thread, with the same arithmetic (bit for bit) as the pool's run outside the region.
TYPED_TEST(Lu, HostCallsInsideAUserParallelRegion) {
#if defined(_OPENMP) && defined(KOKKOS_ENABLE_OPENMP)
  using T = TypeParam;
  if constexpr (std::is_same<ExecSpace, Kokkos::OpenMP>::value) {
    constexpr int nt = 2;
    for (const int n : {100, 300}) {
      const Dense g = general<T>(n, 900u + n), s = random_spd<T>(n, 901u + n);
      using M = decltype(to_device<T, Kokkos::LayoutLeft>(g));
      M lu_out = to_device<T, Kokkos::LayoutLeft>(g);
      M ch_out = to_device<T, Kokkos::LayoutLeft>(s, Uplo::Lower, 0.0);
      PivView piv_out("piv", n);
      ASSERT_EQ(getrf(ExecSpace(), lu_out, piv_out), 0);
      ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, ch_out), 0);
      M lu[nt], ch[nt];
      PivView piv[nt];
      int info[nt][2] = {};
      for (int t = 0; t < nt; ++t) {
        lu[t] = to_device<T, Kokkos::LayoutLeft>(g);
        ch[t] = to_device<T, Kokkos::LayoutLeft>(s, Uplo::Lower, 0.0);
        piv[t] = PivView("piv", n);
      }
#pragma omp parallel num_threads(nt)
      {
        const int t = omp_get_thread_num();
        info[t][0] = getrf(ExecSpace(), lu[t], piv[t]);
        info[t][1] = potrf(ExecSpace(), Uplo::Lower, ch[t]);
      }
      const Dense lo = to_host(lu_out), po = to_host(piv_out), co = to_host(ch_out);
      for (int t = 0; t < nt; ++t) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", thread " + std::to_string(t));
        EXPECT_EQ(info[t][0], 0);
        EXPECT_EQ(info[t][1], 0);
        const Dense l = to_host(lu[t]), p = to_host(piv[t]), c = to_host(ch[t]);
        EXPECT_EQ(p.v, po.v);
        EXPECT_EQ(l.v, lo.v);
        EXPECT_EQ(c.v, co.v);
      }
      EXPECT_LT(lu_ratio<T>(permuted(g, po), lo, false), 30.0);
    }
  } else {
    GTEST_SKIP() << "OpenMP execution space only";
  }
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

// The choice between the pool and the calling thread for mid-size host factorizations: the
// record's decisions on given times (warm-up, the faster way, the other way tried at the
// stated periods, a change of state followed).
TEST(HostTeam, StatsChooseAndKeepTrying) {
  impl::HostTeamStats s;
  const int n = 300;
  const double n3 = double(n) * n * n;
  // Warm-up: the pool twice, then the calling thread twice; the better of each pair counts.
  EXPECT_EQ(s.next(), 1);
  s.add(1, 9e-3, n);  // a cold first call
  EXPECT_EQ(s.next(), 1);
  s.add(1, 1e-3, n);
  EXPECT_EQ(s.next(), 0);
  s.add(0, 2e-3, n);
  EXPECT_EQ(s.next(), 0);
  s.add(0, 2.1e-3, n);
  EXPECT_NEAR(std::exp(s.mean[1]) * n3, 1e-3, 1e-9);
  EXPECT_NEAR(std::exp(s.mean[0]) * n3, 2e-3, 1e-9);
  // The pool is twice as fast: taken, and the calling thread tried every 64th call.
  int other = 0;
  for (int c = 0; c < 128; ++c) {
    const int w = s.next();
    other += w == 0;
    s.add(w, w == 1 ? 1e-3 : 2e-3, n);
  }
  EXPECT_EQ(other, 2);
  // The state changes: the pool now takes 4e-3. Within a few calls the calling thread wins,
  // and from then on the pool is tried only now and then.
  int switched = -1;
  for (int c = 0; c < 64 && switched < 0; ++c) {
    const int w = s.next();
    s.add(w, w == 1 ? 4e-3 : 2e-3, n);
    if (s.mean[0] < s.mean[1]) switched = c;
  }
  ASSERT_GE(switched, 0);
  EXPECT_LE(switched, 8);
  other = 0;
  for (int c = 0; c < 128; ++c) {
    const int w = s.next();
    other += w == 1;
    s.add(w, w == 1 ? 4e-3 : 2e-3, n);
  }
  EXPECT_GE(other, 2);  // every 16th call while the running means are close, then every 64th
  EXPECT_LE(other, 4);
  // And back: the pool now takes 1e-3, seen at its next try (at most 64 calls away), which is
  // repeated while it beats the calling thread's mean: taken within a few calls of that try.
  switched = -1;
  for (int c = 0; c < 160 && switched < 0; ++c) {
    const int w = s.next();
    s.add(w, w == 1 ? 1e-3 : 2e-3, n);
    if (s.mean[1] < s.mean[0]) switched = c;
  }
  ASSERT_GE(switched, 0);
  EXPECT_LE(switched, 64 + 8);
  other = 0;
  for (int c = 0; c < 128; ++c) {
    const int w = s.next();
    other += w == 0;
    s.add(w, w == 1 ? 1e-3 : 2e-3, n);
  }
  EXPECT_LE(other, 4);  // settled: the calling thread only tried now and then
  // Within 25 % of each other: the other way every 16th call.
  impl::HostTeamStats q;
  for (int c = 0; c < 4; ++c) {
    const int w = q.next();
    q.add(w, w == 1 ? 2.2e-3 : 2e-3, n);
  }
  other = 0;
  for (int c = 0; c < 128; ++c) {
    const int w = q.next();
    other += w == 1;
    q.add(w, w == 1 ? 2.2e-3 : 2e-3, n);
  }
  EXPECT_EQ(other, 8);
}

// Mid-size host potrf and getrf: the pool, the calling thread and the learned choice give the
// same factor bit for bit (so the choice shows only in the time), a failing call gives its
// info either way and is not timed, and the learned choice has tried both ways.
TYPED_TEST(Lu, HostTeamWaysAgree) {
  using T = TypeParam;
  if constexpr (!Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    GTEST_SKIP() << "host execution spaces only";
  } else {
    const HostTeamForce knob;
    auto& chooser = impl::HostTeamChooser::get();
    chooser.reset();
    const bool pool = impl::host_team(ExecSpace()) > 1;
    for (const int n : {200, 300, 500}) {  // above the sleeping pool's calling-thread sizes
      SCOPED_TRACE("n = " + std::to_string(n));
      const Dense g = general<T>(n, 700u + n), s = random_spd<T>(n, 701u + n);
      Dense lu[3], lp[3], ch[3];
      for (const int force : {0, 1, -1}) {
        knob.set(force);
        for (int rep = 0; rep < (force < 0 ? 6 : 1); ++rep) {
          auto a = to_device<T, Kokkos::LayoutLeft>(g);
          auto c = to_device<T, Kokkos::LayoutLeft>(s, Uplo::Lower, 0.0);
          PivView piv("piv", n);
          ASSERT_EQ(getrf(ExecSpace(), a, piv), 0);
          ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, c), 0);
          lu[force + 1] = to_host(a), lp[force + 1] = to_host(piv), ch[force + 1] = to_host(c);
          if (rep > 0) {
            EXPECT_EQ(lu[force + 1].v, lu[0].v) << "rep " << rep;
            EXPECT_EQ(ch[force + 1].v, ch[0].v) << "rep " << rep;
          }
        }
      }
      EXPECT_EQ(lu[0].v, lu[2].v);
      EXPECT_EQ(lu[1].v, lu[2].v);
      EXPECT_EQ(lp[0].v, lp[2].v);
      EXPECT_EQ(lp[1].v, lp[2].v);
      EXPECT_EQ(ch[0].v, ch[2].v);
      EXPECT_EQ(ch[1].v, ch[2].v);
      EXPECT_LT(lu_ratio<T>(permuted(g, lp[2]), lu[2], false), 30.0);
      // Six learned calls: the pool twice, the calling thread twice, then the faster.
      for (const auto r : {impl::HostRoutine::Getrf, impl::HostRoutine::Potrf}) {
        const impl::HostTeamStats st = chooser.stats(r, int(sizeof(T)), n);
        EXPECT_GE(st.count[0], pool ? 2 : 0);
        EXPECT_GE(st.count[1], pool ? 2 : 0);
        EXPECT_EQ(st.count[0] + st.count[1], pool ? 6 : 0);
      }
      // A failing matrix: its exact info on each way; not recorded.
      Dense bad = s;
      bad(n / 2, n / 2) = -1;
      const impl::HostTeamStats before = chooser.stats(impl::HostRoutine::Potrf, int(sizeof(T)), n);
      for (const int force : {0, 1, -1, -1}) {
        knob.set(force);
        auto c = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, 0.0);
        EXPECT_EQ(potrf(ExecSpace(), Uplo::Lower, c), n / 2 + 1) << "force " << force;
      }
      const impl::HostTeamStats after = chooser.stats(impl::HostRoutine::Potrf, int(sizeof(T)), n);
      EXPECT_EQ(after.count[0], before.count[0]);
      EXPECT_EQ(after.count[1], before.count[1]);
    }
  }
}

// Every order to 100, and two past the old and the new end of the one-region path: the host
// group update's row chunks (two vectors, one, a half, a quarter, then single rows) and its
// packed and unpacked paths meet every remainder; from 49 on the pool and the calling thread
// must agree bit for bit (pivots too).
TYPED_TEST(Lu, GetrfEveryOrderBothWays) {
  using T = TypeParam;
  constexpr bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  const HostTeamForce knob;
  std::vector<int> orders;
  for (int n = 1; n <= 100; ++n) orders.push_back(n);
  orders.push_back(513);
  orders.push_back(1000);
  for (const int n : orders) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const Dense g = general<T>(n, 900u + n);
    Dense f[2], p[2];
    for (const int force : {0, 1}) {
      if (host) knob.set(force);
      auto a = to_device<T, Kokkos::LayoutLeft>(g);
      PivView piv("piv", n);
      ASSERT_EQ(getrf(ExecSpace(), a, piv), 0);
      f[force] = to_host(a), p[force] = to_host(piv);
      for (int k = 0; k < n; ++k) {
        ASSERT_GE(int(p[force](k, 0)), k + 1);
        ASSERT_LE(int(p[force](k, 0)), n);
      }
      if (force == 0 || n <= 100) {
        EXPECT_LT(lu_ratio<T>(permuted(g, p[force]), f[force], false), 30.0) << "force " << force;
      }
    }
    if (host) {
      EXPECT_EQ(f[0].v, f[1].v);
      EXPECT_EQ(p[0].v, p[1].v);
    }
  }
}

TYPED_TEST(Lu, GetrfHandWorkedNeedsPivot) {
  using T = TypeParam;
  Dense a(2, 2);
  a(0, 0) = 0, a(0, 1) = 1, a(1, 0) = 2, a(1, 1) = 3;
  auto d = to_device<T, Kokkos::LayoutLeft>(a);
  PivView ipiv("ipiv", 2);
  ASSERT_EQ(getrf(ExecSpace(), d, ipiv), 0);
  const Dense f = to_host(d), piv = to_host(ipiv);
  EXPECT_EQ(piv(0, 0), 2);
  EXPECT_EQ(piv(1, 0), 2);
  EXPECT_EQ(f(0, 0), 2);  // U = [[2, 3], [0, 1]], L21 = 0
  EXPECT_EQ(f(0, 1), 3);
  EXPECT_EQ(f(1, 0), 0);
  EXPECT_EQ(f(1, 1), 1);
  // Crout cannot: the first leading minor is zero.
  auto c = to_device<T, Kokkos::LayoutLeft>(a);
  EXPECT_EQ(getrf_nopiv(ExecSpace(), c), 1);
}

TYPED_TEST(Lu, GetrfSingularMatchesLapack) {
  using T = TypeParam;
  for (const int n : {1, 5, 40, 130, 300, 520})
    for (const int zero_col : {0, n / 2, n - 1, n > 8 ? 9 : 0}) {
      Dense a = general<T>(n, 7 * n + zero_col);
      for (int i = 0; i < n; ++i) a(i, zero_col) = 0;
      auto d = to_device<T, Kokkos::LayoutLeft>(a);
      PivView ipiv("ipiv", n);
      const int info = getrf(ExecSpace(), d, ipiv);
#ifdef KOLESKY_HAVE_LAPACK
      std::vector<T> h(a.v.begin(), a.v.end());
      std::vector<int> hp(n);
      EXPECT_EQ(info, baselines::lapack_getrf(n, h.data(), n, hp.data()))
          << "n = " << n << ", zero column " << zero_col;
#endif
      // A zero column k: U(k, k) = 0 whatever came before.
      EXPECT_EQ(info, zero_col + 1) << "n = " << n;
    }
}

TYPED_TEST(Lu, NanOrInfGivesInfo) {
  using T = TypeParam;
  // Diagonally dominant, so no interchange before the bad entry's column: the entry (or what
  // it spreads into that column) is that column's pivot, hence getrf's info is its column.
  // Crout's first non-finite diagonal entry is the later of its row and column.
  for (const int n : {37, 300})
    for (const double bad : {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity()})
      for (const int pos : {0, n / 2, n - 1}) {
        Dense a = dominant<T>(n, 3 + pos);
        const int col = (pos * 7) % n;
        a(pos, col) = bad;
        auto d = to_device<T, Kokkos::LayoutLeft>(a);
        PivView ipiv("ipiv", n);
        EXPECT_EQ(getrf(ExecSpace(), d, ipiv), col + 1)
            << "n = " << n << ", value " << bad << " at (" << pos << ", " << col << ")";
        auto c = to_device<T, Kokkos::LayoutLeft>(a);
        EXPECT_EQ(getrf_nopiv(ExecSpace(), c), std::max(pos, col) + 1)
            << "n = " << n << ", value " << bad << " at (" << pos << ", " << col << ")";
      }
}

template <class T, class ALayout, class BLayout>
void check_solve(int n, int nrhs, Trans trans, const LuOptions& opt) {
  const Dense a = general<T>(n, 100 + n), b = general<T>(n, 200 + nrhs);
  Dense bb(n, nrhs);
  for (int j = 0; j < nrhs; ++j)
    for (int i = 0; i < n; ++i) bb(i, j) = b(i, j % n);
  auto d = to_device<T, ALayout>(a);
  auto x = to_device<T, BLayout>(bb);
  PivView ipiv("ipiv", n);
  ASSERT_EQ(getrf(ExecSpace(), d, ipiv, opt), 0);
  getrs(ExecSpace(), trans, d, ipiv, x, opt);
  Dense at = a;
  if (trans == Trans::Yes)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) at(i, j) = a(j, i);
  EXPECT_LT(solve_ratio<T>(at, to_host(x), bb), 30.0)
      << "n = " << n << ", nrhs = " << nrhs << ", trans " << (trans == Trans::Yes);
}

TYPED_TEST(Lu, GetrsEveryTransLayoutAndRhsCount) {
  using T = TypeParam;
  for (const Trans t : {Trans::No, Trans::Yes})
    for (const Blas b : {Blas::Auto, Blas::Native}) {
      LuOptions opt;
      opt.blas = b;
      for (const int n : {1, 3, 33, 100})
        for (const int nrhs : {1, 5}) {
          check_solve<T, Kokkos::LayoutLeft, Kokkos::LayoutLeft>(n, nrhs, t, opt);
          check_solve<T, Kokkos::LayoutRight, Kokkos::LayoutRight>(n, nrhs, t, opt);
        }
    }
}

TYPED_TEST(Lu, GesvRank1RhsAndSingular) {
  using T = TypeParam;
  const int n = 45;
  const Dense a = general<T>(n, 5), b = general<T>(n, 6);
  Dense b1(n, 1);
  for (int i = 0; i < n; ++i) b1(i, 0) = b(i, 0);
  auto d = to_device<T, Kokkos::LayoutLeft>(a);
  Kokkos::View<T*, MemSpace> x("x", n);
  auto xh = Kokkos::create_mirror_view(x);
  for (int i = 0; i < n; ++i) xh(i) = T(b1(i, 0));
  Kokkos::deep_copy(x, xh);
  PivView ipiv("ipiv", n);
  ASSERT_EQ(gesv(ExecSpace(), d, ipiv, x), 0);
  EXPECT_LT(solve_ratio<T>(a, to_host(x), b1), 30.0);
  // Singular: info, B untouched.
  Dense s = a;
  for (int i = 0; i < n; ++i) s(i, 3) = 0;
  auto ds = to_device<T, Kokkos::LayoutLeft>(s);
  Kokkos::deep_copy(x, xh);
  EXPECT_EQ(gesv(ExecSpace(), ds, ipiv, x), 4);
  const Dense after = to_host(x);
  for (int i = 0; i < n; ++i) EXPECT_EQ(after(i, 0), double(xh(i)));
}

//--- Crout ------------------------------------------------------------------------------------

// 004's unit test: A = [[4, 24], [2, 15]] = L U with L = [[4, 0], [2, 3]], U = [[1, 6], [0, 1]].
TYPED_TEST(Lu, CroutHandWorked2x2And3x3) {
  using T = TypeParam;
  Dense a(2, 2);
  a(0, 0) = 4, a(0, 1) = 24, a(1, 0) = 2, a(1, 1) = 15;
  const double f2[2][2] = {{4, 6}, {2, 3}};  // packed: L with diagonal, U above
  // By hand: l11 = 2, u12 = 2, u13 = 3; l21 = 1, l31 = 3; l22 = 3, u23 = 2; l32 = 2; l33 = 3.
  Dense b(3, 3);
  const double a3[3][3] = {{2, 4, 6}, {1, 5, 9}, {3, 8, 16}};
  const double f3[3][3] = {{2, 2, 3}, {1, 3, 2}, {3, 2, 3}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) b(i, j) = a3[i][j];
  for (int variant = 0; variant < 4; ++variant) {
    for (int k = 0; k < 2; ++k) {
      const Dense& m = k == 0 ? a : b;
      auto d = to_device<T, Kokkos::LayoutRight>(m);
      if (variant == 0) {
        ASSERT_EQ(getrf_nopiv(ExecSpace(), d), 0);
      } else {
        IterativeCroutOptions o;
        o.block = variant == 1 ? 8 : variant == 2 ? 16 : 32;
        const auto r = crout_iterative(ExecSpace(), d, o);
        ASSERT_EQ(r.info, 0);
        ASSERT_TRUE(r.converged);
        EXPECT_EQ(r.max_delta, 0.0);
      }
      const Dense f = to_host(d);
      for (int i = 0; i < m.n; ++i)
        for (int j = 0; j < m.n; ++j)
          EXPECT_EQ(f(i, j), k == 0 ? f2[i][j] : f3[i][j])
              << "variant " << variant << " (" << i << ", " << j << ")";
    }
  }
  auto d = to_device<T, Kokkos::LayoutLeft>(b);
  ASSERT_EQ(getrf_nopiv(ExecSpace(), d), 0);
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> l("L", 3, 3), u("U", 3, 3);
  unpack_lu(ExecSpace(), d, l, u, LuForm::Crout);
  const Dense lh = to_host(l), uh = to_host(u);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(lh(i, j), i >= j ? f3[i][j] : 0.0);
      EXPECT_EQ(uh(i, j), i < j ? f3[i][j] : i == j ? 1.0 : 0.0);
    }
}

template <class T, class Layout>
void check_crout(int n, const LuOptions& opt, unsigned seed) {
  const Dense a = dominant<T>(n, seed);
  auto d = to_device<T, Layout>(a);
  ASSERT_EQ(getrf_nopiv(ExecSpace(), d, opt), 0) << "n = " << n;
  EXPECT_LT(lu_ratio<T>(a, to_host(d), true), 30.0) << "n = " << n;
  // And a solve with it.
  const Dense b = general<T>(n, seed + 1);
  Dense b2(n, 2);
  for (int i = 0; i < n; ++i) b2(i, 0) = b(i, 0), b2(i, 1) = b(i, std::min(1, n - 1));
  auto x = to_device<T, Layout>(b2);
  getrs_nopiv(ExecSpace(), d, x, opt);
  EXPECT_LT(solve_ratio<T>(a, to_host(x), b2), 30.0) << "n = " << n;
}

TYPED_TEST(Lu, CroutEverySizeBlockAndLayout) {
  using T = TypeParam;
  for (const int nb : {0, 8, 33})
    for (const Blas b : {Blas::Auto, Blas::Native}) {
      LuOptions opt;
      opt.block_size = nb;
      opt.blas = b;
      for (const int n : {0, 1, 2, 3, 31, 32, 33, 64, 65, 150, 300}) {
        check_crout<T, Kokkos::LayoutLeft>(n, opt, n + nb);
        check_crout<T, Kokkos::LayoutRight>(n, opt, n + nb + 1);
      }
    }
}

TYPED_TEST(Lu, CroutZeroMinorGivesExactInfo) {
  using T = TypeParam;
  for (const int n : {2, 10, 100, 200})
    for (const int k : {0, n / 2, n - 1}) {
      // Row k zero in columns 0..k: the leading minor of order k + 1 is singular and
      // L(k, 0..k) comes out exactly zero in every variant.
      Dense a = dominant<T>(n, 11 + k);
      for (int j = 0; j <= k; ++j) a(k, j) = 0;
      for (const int nb : {0, 16})
        for (const Blas b : {Blas::Auto, Blas::Native}) {
          LuOptions opt;
          opt.block_size = nb;
          opt.blas = b;
          auto d = to_device<T, Kokkos::LayoutLeft>(a);
          EXPECT_EQ(getrf_nopiv(ExecSpace(), d, opt), k + 1) << "n = " << n << ", k = " << k;
        }
      auto d = to_device<T, Kokkos::LayoutLeft>(a);
      const auto r = crout_iterative(ExecSpace(), d);
      EXPECT_TRUE(!r.converged || r.info == k + 1) << "n = " << n << ", k = " << k;
    }
}

TYPED_TEST(Lu, CroutIterativeMatchesDirect) {
  using T = TypeParam;
  const double tol = std::is_same<T, float>::value ? 1e-4 : 1e-11;
  for (const int block : {8, 16, 32})
    for (const int n : {1, 40, 150}) {
      const Dense a = dominant<T>(n, 31 + n);
      auto direct = to_device<T, Kokkos::LayoutLeft>(a);
      ASSERT_EQ(getrf_nopiv(ExecSpace(), direct), 0);
      auto it = to_device<T, Kokkos::LayoutRight>(a);
      IterativeCroutOptions o;
      o.block = block;
      o.section = 48;  // several sections and strips at these sizes
      const auto r = crout_iterative(ExecSpace(), it, o);
      ASSERT_TRUE(r.converged) << "n = " << n << ", block " << block;
      EXPECT_EQ(r.info, 0);
      EXPECT_GE(r.sweeps, n > 0 ? 1 : 0);
      const Dense fd = to_host(direct), fi = to_host(it);
      double worst = 0;
      for (std::size_t e = 0; e < fd.v.size(); ++e)
        worst = std::max(worst, std::abs(fd.v[e] - fi.v[e]) / (1 + std::abs(fd.v[e])));
      EXPECT_LT(worst, tol) << "n = " << n << ", block " << block;
      EXPECT_LT(lu_ratio<T>(a, fi, true), 30.0);
    }
}

TYPED_TEST(Lu, CroutIterativeReportsNonConvergence) {
  using T = TypeParam;
  const int n = 60;
  const Dense a = dominant<T>(n, 77);
  auto d = to_device<T, Kokkos::LayoutLeft>(a);
  IterativeCroutOptions o;
  o.max_sweeps = 2;  // a dense section needs more
  const auto r = crout_iterative(ExecSpace(), d, o);
  EXPECT_FALSE(r.converged);
  EXPECT_GT(r.max_delta, 0.0);
  EXPECT_LE(r.sweeps, 2 * ((n + 255) / 256) * 2);
  // A zero leading minor: the iterate divides by zero and diverges; reported, no hang.
  Dense z = a;
  z(0, 0) = 0;
  auto dz = to_device<T, Kokkos::LayoutLeft>(z);
  const auto rz = crout_iterative(ExecSpace(), dz);
  EXPECT_TRUE(!rz.converged || rz.info > 0);
}

TYPED_TEST(Lu, BadArgumentsThrow) {
  using T = TypeParam;
  Kokkos::View<T**, MemSpace> rect("rect", 4, 5), sq("sq", 4, 4);
  PivView ipiv("ipiv", 4), shortp("short", 3);
  EXPECT_THROW(getrf(ExecSpace(), rect, ipiv), kolesky::invalid_argument);
  EXPECT_THROW(getrf(ExecSpace(), sq, shortp), kolesky::invalid_argument);
  EXPECT_THROW(getrf_nopiv(ExecSpace(), rect), kolesky::invalid_argument);
  Kokkos::View<T*, MemSpace> b("b", 5);
  EXPECT_THROW(getrs(ExecSpace(), Trans::No, sq, ipiv, b), kolesky::invalid_argument);
  IterativeCroutOptions o;
  o.block = 7;
  EXPECT_THROW(crout_iterative(ExecSpace(), sq, o), kolesky::invalid_argument);
}

//--- Batched ------------------------------------------------------------------------------------

template <class Batch>
Batch lu_batch(int count, int n, int m) {
  using T = typename Batch::value_type;
  if constexpr (std::is_same<Batch, batched::ChunkedBatch<T, MemSpace>>::value)
    return Batch("A", count, n, m, batched::default_chunk<ExecSpace, T>());
  else
    return Batch("A", count, n, m);
}

// Every matrix general; matrix 1 has a zero column (info), matrix 3 a NaN (info > 0); the
// others must come out right whatever their neighbours do.
template <class Batch, class PivLayout>
void check_batched_gesv(const int n, const int count, const int nrhs, const Trans trans) {
  using T = typename Batch::value_type;
  SCOPED_TRACE("n=" + std::to_string(n) + " batch=" + std::to_string(count));
  std::vector<Dense> as, bs;
  auto a = lu_batch<Batch>(count, n, n), b = lu_batch<Batch>(count, n, nrhs);
  auto ha = batched::create_mirror_view(a);
  auto hb = batched::create_mirror_view(b);
  for (int p = 0; p < count; ++p) {
    Dense m = general<T>(n, 1000 + p), r = general<T>(std::max(n, nrhs), 2000 + p);
    if (p == 1) for (int i = 0; i < n; ++i) m(i, n / 2) = 0;
    if (p == 3) m(n - 1, 0) = std::numeric_limits<double>::quiet_NaN();
    as.push_back(m);
    Dense rb(n, nrhs);
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) rb(i, j) = r(i, j);
    bs.push_back(rb);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) ha(p, i, j) = T(m(i, j));
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) hb(p, i, j) = T(rb(i, j));
  }
  batched::deep_copy(a, ha);
  batched::deep_copy(b, hb);
  Kokkos::View<int**, PivLayout, MemSpace> ipiv("ipiv", count, n);
  Kokkos::View<int*, MemSpace> info("info", count);
  Kokkos::deep_copy(info, -7);
  batched::getrf(ExecSpace(), a, ipiv, info);
  batched::getrs(ExecSpace(), trans, a, ipiv, b, info);
  ExecSpace().fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ipiv);
  batched::deep_copy(ha, a);
  batched::deep_copy(hb, b);
  for (int p = 0; p < count; ++p) {
    if (p == 1) {
      ASSERT_EQ(hi(p), n / 2 + 1);
    } else if (p == 3) {
      ASSERT_GT(hi(p), 0);
    } else {
      ASSERT_EQ(hi(p), 0) << "matrix " << p;
    }
    if (hi(p) != 0) {  // right-hand side untouched
      for (int j = 0; j < nrhs; ++j)
        for (int i = 0; i < n; ++i) ASSERT_EQ(double(hb(p, i, j)), double(T(bs[p](i, j))));
      continue;
    }
    Dense f(n, n), piv(n, 1), x(n, nrhs), at = as[p];
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) f(i, j) = ha(p, i, j);
    for (int i = 0; i < n; ++i) piv(i, 0) = hp(p, i);
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) x(i, j) = hb(p, i, j);
    EXPECT_LT(lu_ratio<T>(permuted(as[p], piv), f, false), 30.0) << "matrix " << p;
    if (trans == Trans::Yes)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) at(i, j) = as[p](j, i);
    EXPECT_LT(solve_ratio<T>(at, x, bs[p]), 30.0) << "matrix " << p;
  }
}

TYPED_TEST(Lu, BatchedEveryLayout) {
  using T = TypeParam;
  for (const int n : {1, 2, 5, 16, 33})
    for (const int count : {7, 70}) {
      const Trans t = count == 7 ? Trans::No : Trans::Yes;
      check_batched_gesv<batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>,
                         Kokkos::LayoutRight>(n, count, 2, t);
      check_batched_gesv<batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>,
                         Kokkos::LayoutLeft>(n, count, 1, t);
      check_batched_gesv<batched::InterleavedBatch<T, MemSpace>, Kokkos::LayoutLeft>(n, count, 3, t);
      check_batched_gesv<batched::ChunkedBatch<T, MemSpace>, Kokkos::LayoutRight>(n, count, 1, t);
    }
}

TYPED_TEST(Lu, BatchedBadArguments) {
  using T = TypeParam;
  batched::InterleavedBatch<T, MemSpace> a("A", 4, 3, 3), rect("R", 4, 3, 2);
  Kokkos::View<int**, MemSpace> ipiv("ipiv", 4, 3), small("small", 3, 3);
  Kokkos::View<int*, MemSpace> info("info", 4);
  EXPECT_THROW(batched::getrf(ExecSpace(), rect, ipiv, info), kolesky::invalid_argument);
  EXPECT_THROW(batched::getrf(ExecSpace(), a, small, info), kolesky::invalid_argument);
  batched::InterleavedBatch<T, MemSpace> b("B", 3, 3, 1);
  EXPECT_THROW(batched::getrs(ExecSpace(), Trans::No, a, ipiv, b, info), kolesky::invalid_argument);
}

}  // namespace
}  // namespace test
}  // namespace kolesky
