// The tile-dataflow potrf (Algo::Dataflow, and Blocked's dataflow panels): sizes around the
// 64-tile and panel boundaries, both triangles and layouts, strided matrices, failures in the
// first / a middle / the last panel, NaN, repeated calls on one stream.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

template <class T>
class PotrfFlow : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(PotrfFlow, Scalars);

constexpr double kOther = -7777.0;
constexpr bool kHost = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;

template <class T>
void check_factor(const Dense& a, const Dense& f, Uplo uplo) {
  for (int j = 0; j < a.n; ++j)
    for (int i = 0; i < a.n; ++i)
      if (!in_triangle(uplo, i, j)) {
        ASSERT_EQ(f(i, j), kOther) << "other triangle written at " << i << "," << j;
      }
  EXPECT_LT(potrf_ratio<T>(a, factor_of(f, uplo)), 30.0);
}

// dst = src on the device (any layouts); a free function: nvcc takes no device lambda in a
// test body.
template <class Dst, class Src>
void copy_matrix(const Dst& dst, const Src& src) {
  const int n = int(src.extent(0));
  Kokkos::parallel_for(
      "copy", Kokkos::RangePolicy<ExecSpace>(0, n * n),
      KOKKOS_LAMBDA(const int e) { dst(e % n, e / n) = src(e % n, e / n); });
  Kokkos::fence();
}

PotrfOptions flow_opts(Algo algo, int nb = 0, bool lookahead = true) {
  PotrfOptions o;
  o.algo = algo;
  o.block_size = nb;
  o.lookahead = lookahead;
  o.panel = Panel::Dataflow;
  return o;
}

// Factor `a`'s triangle `u` stored column-major and row-major with `o`; check both factors.
template <class T>
void factor_both_layouts(const Dense& a, const Uplo u, const PotrfOptions& o) {
  auto l = to_device<T, Kokkos::LayoutLeft>(a, u, kOther);
  ASSERT_EQ(potrf(ExecSpace(), u, l, o), 0);
  check_factor<T>(a, to_host(l), u);
  auto r = to_device<T, Kokkos::LayoutRight>(a, u, kOther);
  ASSERT_EQ(potrf(ExecSpace(), u, r, o), 0);
  check_factor<T>(a, to_host(r), u);
}

// A failing minor in the first, a middle and the last tile column (the last one NaN), each
// with its exact info, then the good matrix again (nothing stale after failures).
template <class T>
void failures_then_good(const Dense& good, const PotrfOptions& o) {
  const int n = good.n;
  for (const int f : {5, n / 2 + 3, n - 1}) {
    Dense bad = good;
    bad(f, f) = f == n - 1 ? std::numeric_limits<double>::quiet_NaN() : -1;
    auto z = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
    ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, z, o), f + 1) << "fail at " << f;
  }
  auto h = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
  ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, h, o), 0);
  check_factor<T>(good, to_host(h), Uplo::Lower);
}

// Three calls of `plan` on one matrix restored from `a`'s lower triangle before each (on CUDA:
// direct, recorded, replayed), each factor checked.
template <class T, class Plan>
void plan_three_calls(Plan& plan, const Dense& a) {
  const auto a0 = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  auto x = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  for (int rep = 0; rep < 3; ++rep) {
    Kokkos::deep_copy(x, a0);
    ASSERT_EQ(plan.potrf(x), 0) << "rep " << rep;
    check_factor<T>(a, to_host(x), Uplo::Lower);
  }
}

// Puts every dataflow knob back when a test ends, also when an assertion returns early.
using FlowKnobsRestore = KnobsRestore<impl::FlowKnobs>;

std::string describe(const PotrfOptions& o, int n, Uplo u) {
  return std::string("algo=") + name(o.algo) + " n=" + std::to_string(n) +
         " nb=" + std::to_string(o.block_size) + " " + name(u) +
         (o.lookahead ? "" : " nolookahead");
}

}  // namespace

// Whole-matrix dataflow and the GPU default around tile boundaries, both triangles, both
// layouts; the other triangle is neither read nor written.
TYPED_TEST(PotrfFlow, Sizes) {
  using T = TypeParam;
  // n = 1000 on the GPU only: the host dataflow is a scalar loop per tile (5 s a type on
  // Serial, four times that under ASan), and 255 already crosses every tile boundary there.
  for (const int n : {0, 1, 2, 3, 63, 64, 65, 127, 128, 129, 255, kHost ? 0 : 1000})
    for (const Algo algo : {Algo::Dataflow, Algo::Default}) {
      const Dense a = random_spd<T>(n, 900u + n);
      for (const Uplo u : {Uplo::Lower, Uplo::Upper}) {
        const PotrfOptions o = flow_opts(algo);
        SCOPED_TRACE(describe(o, n, u));
        factor_both_layouts<T>(a, u, o);
      }
    }
}

// Blocked and BlockedLeft with dataflow panels: widths that divide n and that do not.
TYPED_TEST(PotrfFlow, Panels) {
  using T = TypeParam;
  for (const Algo algo : {Algo::Blocked, Algo::BlockedLeft})
    for (const int nb : {64, 128, 192})
      for (const bool la : {true, false})
        for (const int n : {65, 300, 641}) {
          if (algo == Algo::BlockedLeft && !la) continue;  // lookahead unused
          const PotrfOptions o = flow_opts(algo, nb, la);
          const Dense a = random_spd<T>(n, 700u + n);
          for (const Uplo u : {Uplo::Lower, Uplo::Upper}) {
            SCOPED_TRACE(describe(o, n, u));
            auto l = to_device<T, Kokkos::LayoutLeft>(a, u, kOther);
            ASSERT_EQ(potrf(ExecSpace(), u, l, o), 0);
            check_factor<T>(a, to_host(l), u);
          }
        }
}

// The dataflow potrf on the host space of whatever build this is: in a CUDA build it is
// compiled beside the device kernel, and host-side code that only the device needs must stay
// out of it (it once did not: a CUDA-only knob set outside its `if constexpr`).
TYPED_TEST(PotrfFlow, HostSpaceInEveryBuild) {
  using T = TypeParam;
  using H = Kokkos::DefaultHostExecutionSpace;
  for (const int n : {65, 130}) {
    const Dense a = random_spd<T>(n, 300u + n);
    for (const Uplo u : {Uplo::Lower, Uplo::Upper}) {
      SCOPED_TRACE(describe(flow_opts(Algo::Dataflow), n, u));
      Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace> h("h", n, n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) h(i, j) = in_triangle(u, i, j) ? T(a(i, j)) : T(kOther);
      ASSERT_EQ(potrf(H(), u, h, flow_opts(Algo::Dataflow)), 0);
      Dense f(n, n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) f(i, j) = h(i, j);
      check_factor<T>(a, f, u);
      for (int j = 0; j < n; ++j)  // a failing minor in the second tile column
        for (int i = 0; i < n; ++i) h(i, j) = in_triangle(u, i, j) ? T(a(i, j)) : T(kOther);
      h(64, 64) = T(-1);
      EXPECT_EQ(potrf(H(), u, h, flow_opts(Algo::Dataflow)), 65);
    }
  }
}

// A subview with no unit stride (every 2nd element of a bigger array).
TYPED_TEST(PotrfFlow, NonUnitStride) {
  using T = TypeParam;
  const int n = 200;
  const Dense a = random_spd<T>(n, 31u);
  Kokkos::View<T***, Kokkos::LayoutLeft, MemSpace> big("big", 2, n, n);
  auto sub = Kokkos::subview(big, 1, Kokkos::ALL, Kokkos::ALL);
  auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  copy_matrix(sub, d);
  ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, sub, flow_opts(Algo::Dataflow)), 0);
  copy_matrix(d, sub);
  check_factor<T>(a, to_host(d), Uplo::Lower);
}

// Double tile updates, and the chain's solve, SYRK and inverted blocks in both scalars, run on
// the FP64 tensor cores where the device has them (mma.sync) and as plain multiply-adds
// otherwise: all three mixes of the knob (everything, tile updates only, nothing), and the
// diagonal tile's own updates on DMMA (8 or 4 warps) or FFMA in both scalars, with a
// failure, whatever the device default.
TYPED_TEST(PotrfFlow, TensorCoreAndPlainUpdates) {
  using T = TypeParam;
  const FlowKnobsRestore restore;
  // mma 3: 1 with float's tile updates on FFMA (float_mma = 0); double as 1. mma 4-7: 1 with
  // factor_mma 0-3 (the default, -1, is one of them per scalar); mma 8: 1 with the chain's
  // SYRK on m8n8k4 (syrk16 = 0).
  for (const int mma : {0, 1, 2, 3, 4, 5, 6, 7, 8}) {
    if (kHost && mma != 1) continue;  // the knobs only change the CUDA kernel
    if (mma == 3 && !std::is_same<T, float>::value) continue;
    impl::FlowKnobs::get().mma = (mma == 0 || mma == 2) ? mma : 1;
    impl::FlowKnobs::get().float_mma = mma == 3 ? 0 : 1;
    impl::FlowKnobs::get().factor_mma = (mma >= 4 && mma <= 7) ? mma - 4 : -1;
    impl::FlowKnobs::get().syrk16 = mma == 8 ? 0 : 1;
    for (const int n : {65, 200, kHost ? 300 : 1000})
      for (const PotrfOptions& o : {flow_opts(Algo::Dataflow), flow_opts(Algo::Blocked, 128)}) {
        SCOPED_TRACE(describe(o, n, Uplo::Lower) + " mma=" + std::to_string(mma));
        const Dense a = random_spd<T>(n, 4242u + n);
        auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d, o), 0);
        check_factor<T>(a, to_host(d), Uplo::Lower);
        Dense bad = dominant_spd<T>(n, 9u);
        bad(n - 2, n - 2) = -1;
        auto z = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, z, o), n - 1);
      }
  }
}

// The measured split thresholds per scalar, and the knob over them.
TEST(PotrfFlowKnobs, SplitRowsByScalar) {
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  k.split_rows = 0;
  EXPECT_EQ(impl::split_rows_for<double>(), 6144);
  EXPECT_EQ(impl::split_rows_for<float>(), 6144);
  {
    const impl::FastFloatScope tf32(true);  // posv_mixed's TF32 factor
    EXPECT_EQ(impl::split_rows_for<float>(), 8192);
    EXPECT_EQ(impl::split_rows_for<double>(), 6144);
  }
  EXPECT_EQ(k.below_cols % impl::kFlowTile, 0);  // whole tile columns per block
  // The first panel (no update beside it) only when the second splits too.
  EXPECT_FALSE(impl::split_here<float>(7500, 0, 1024, 1024, false));  // 5452 below the second
  EXPECT_TRUE(impl::split_here<float>(8192, 0, 1024, 1024, false));
  EXPECT_TRUE(impl::split_here<float>(7500, 0, 1024, 1024, true));
  EXPECT_FALSE(impl::split_here<float>(8192, 2048, 1024, 1024, true));  // 5120 rows below
  EXPECT_FALSE(impl::split_here<double>(7000, 0, 768, 768, false));  // 5464 below the second
  EXPECT_TRUE(impl::split_here<double>(7800, 0, 768, 768, false));
  k.split_first = 1;
  EXPECT_TRUE(impl::split_here<float>(7500, 0, 1024, 1024, false));
  k.split_first = 0;
  EXPECT_FALSE(impl::split_here<float>(8192, 0, 1024, 1024, false));
  k.split_rows = 5;  // split_rows_for reads split_rows only
  EXPECT_EQ(impl::split_rows_for<double>(), 5);
  EXPECT_EQ(impl::split_rows_for<float>(), 5);
}

// Large-n panels (CUDA): the dataflow kernel on the diagonal block and cuBLAS on the rows
// below (split_panel: column blocks on a third stream as the chain finishes them, or one TRSM
// after it), forced here from the first panel on, with the lookahead's own update on either
// stream. Widths that divide n and that do not, both triangles and layouts (a
// transposed triangle goes through TRSM from the left), a failing minor in the first, a middle
// and the last panel (exact info; the leading minor's factor is there, as LAPACK leaves it),
// NaN, a plan. Elsewhere the knobs change nothing and the host runs the small sizes.
// No tile column's flag outlives a call (failing or not): a stale one would let the next
// call's rows below start before their columns are factored.
template <class E>
void expect_no_column_flags(const E& e) {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<E, Kokkos::Cuda>::value) {
    const auto& cols = impl::cuda_flow_work(e).cols;
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cols);
    for (std::size_t j = 0; j < h.extent(0); ++j) EXPECT_EQ(h(j), 0u) << "tile column " << j;
  }
#endif
  (void)e;
}

TYPED_TEST(PotrfFlow, SplitPanels) {
  using T = TypeParam;
  auto& k = impl::FlowKnobs::get();
  const FlowKnobsRestore restore;
  k.split_rows = 1;
  k.split_first = 1;  // from the first panel whatever follows it
  // The rows below: in column blocks beside the chain (128: blocks of 128 and 64 for nb = 192,
  // two for 256; 64: three for 192) or one solve after it (0; nb = 64 always: no block is
  // narrower than the panel).
  for (const int bc : {128, 64, 0})
    for (const int la : {1, 0}) {
      k.la_side = la;
      k.below_cols = bc;
      for (const int n : {65, 300, kHost ? 0 : 1000})
        for (const int nb : {64, 192, 256}) {
          if (n == 0 || (la == 0 && nb != 192) || (bc != 128 && (la == 0 || nb != 192))) continue;
          const PotrfOptions o = flow_opts(Algo::Blocked, nb);
          const Dense a = random_spd<T>(n, 500u + n + nb);
          for (const Uplo u : {Uplo::Lower, Uplo::Upper}) {
            SCOPED_TRACE(describe(o, n, u) + " la_side=" + std::to_string(la) +
                         " below_cols=" + std::to_string(bc));
            factor_both_layouts<T>(a, u, o);
          }
          if (la == 0) continue;
          const Dense good = dominant_spd<T>(n, 7u + n);
          for (const int f : {1, nb + 5, n / 2, n - 2})
            for (const int kind : {0, 1}) {  // -1 pivot, NaN pivot
              if (f >= n) continue;
              Dense bad = good;
              bad(f, f) = kind == 0 ? -1 : std::numeric_limits<double>::quiet_NaN();
              SCOPED_TRACE(describe(o, n, Uplo::Lower) + " fail at " + std::to_string(f) +
                           " kind=" + std::to_string(kind) + " below_cols=" + std::to_string(bc));
              auto d = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
              ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d, o), f + 1);
              if (kind == 0 && f >= 2) {
                const Dense h = to_host(d);
                Dense lead(f, f), fl(f, f);
                for (int j = 0; j < f; ++j)
                  for (int i = j; i < f; ++i)
                    lead(i, j) = lead(j, i) = bad(i, j), fl(i, j) = h(i, j);
                EXPECT_LT(potrf_ratio<T>(lead, fl), 30.0);
              }
            }
          auto g = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
          ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, g, o), 0);  // the stream is clean after them
          check_factor<T>(good, to_host(g), Uplo::Lower);
          expect_no_column_flags(ExecSpace());
        }
    }
  // A plan (on CUDA a recorded graph from the second call) through the same panels.
  k.la_side = 1;
  k.below_cols = 128;
  const int n = kHost ? 300 : 1000;
  const Dense a = random_spd<T>(n, 31u);
  PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower, flow_opts(Algo::Blocked, 256));
  plan_three_calls<T>(plan, a);
}

// The device's compute capability major on CUDA, 0 elsewhere (a template, so that the CUDA
// branch is discarded where ExecSpace is a host space in a CUDA build).
template <class E>
int cuda_major(const E& e) {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<E, Kokkos::Cuda>::value) return e.cuda_device_prop().major;
#endif
  (void)e;
  return 0;
}

// posv_mixed's fast factor: under a FastFloatScope the float tile updates run on the TF32
// tensor cores (CUDA, sm_80 and later) and cuBLAS's SYRKs become GEMMs over the whole square
// (the other triangle is scratch then, so only the factor is checked). The factor must pass
// LAPACK's ratio with TF32's epsilon, failures give the exact info, and on such a GPU the
// factor differs from the plain one (the path ran). Elsewhere the scope changes nothing.
TEST(PotrfFlowTf32, FastScope) {
  const double eps_tf32 = std::ldexp(1.0, -10);
  const bool tensor_cores = cuda_major(ExecSpace()) >= 8;
  PotrfOptions def;
  for (const int n : {65, 200, kHost ? 300 : 1000})
    for (const PotrfOptions& o : {flow_opts(Algo::Dataflow), flow_opts(Algo::Blocked, 128), def}) {
      SCOPED_TRACE(describe(o, n, Uplo::Lower));
      const Dense a = random_spd<float>(n, 31u + n);
      auto d = to_device<float, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
      Dense bad = dominant_spd<float>(n, 9u);
      bad(n / 2, n / 2) = -1;
      auto z = to_device<float, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
      {
        const impl::FastFloatScope fast(true);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d, o), 0);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, z, o), n / 2 + 1);
      }
      const Dense l = factor_of(to_host(d), Uplo::Lower);
      EXPECT_LT(potrf_ratio<float>(a, l) * eps<float>() / eps_tf32, 30.0);
      if (tensor_cores && n >= 1000 && o.algo == Algo::Dataflow) {
        auto p = to_device<float, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, p, o), 0);
        const Dense lp = factor_of(to_host(p), Uplo::Lower);
        double diff = 0;
        for (std::size_t e = 0; e < l.v.size(); ++e) diff = std::max(diff, std::abs(l.v[e] - lp.v[e]));
        EXPECT_GT(diff, 0.0);
      }
    }
}

// A non-positive or NaN pivot in the first, a middle and the last tile column / panel: info
// is exactly the first failing minor, the columns before it are the factor's, and the next
// call on the same stream (the counters and flags reset themselves) succeeds.
TYPED_TEST(PotrfFlow, Failures) {
  using T = TypeParam;
  const int n = kHost ? 400 : 1000;
  const Dense good = dominant_spd<T>(n, 5u);
  for (const PotrfOptions& o : {flow_opts(Algo::Dataflow), flow_opts(Algo::Blocked, 128),
                                flow_opts(Algo::Blocked, 128, false), flow_opts(Algo::Default)})
    // 8, 15, 72, 93: the second 8-column half of a 16-column panel (the GPU chain factors
    // each half's diagonal block in registers).
    for (const int k : {0, 1, 8, 15, 63, 64, 72, 93, 130, n / 2, n - 1})
      for (const int kind : {0, 1, 2}) {  // -1 pivot, NaN pivot, NaN below the diagonal
        Dense a = good;
        if (kind == 0) a(k, k) = -1;
        if (kind == 1) a(k, k) = std::numeric_limits<double>::quiet_NaN();
        if (kind == 2 && k > 0) a(k, k / 2) = a(k / 2, k) = std::numeric_limits<double>::quiet_NaN();
        if (kind == 2 && k == 0) a(0, 0) = std::numeric_limits<double>::infinity();
        SCOPED_TRACE(describe(o, n, Uplo::Lower) + " k=" + std::to_string(k) +
                     " kind=" + std::to_string(kind));
        auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d, o), k + 1);
        // Columns before the failing one are finished: compare with a good factorization of
        // the leading block.
        if (k >= 2 && kind == 0) {
          const Dense f = to_host(d);
          Dense lead(k, k);
          for (int j = 0; j < k; ++j)
            for (int i = 0; i < k; ++i) lead(i, j) = a(i, j);
          Dense fl(k, k);
          for (int j = 0; j < k; ++j)
            for (int i = j; i < k; ++i) fl(i, j) = f(i, j);
          EXPECT_LT(potrf_ratio<T>(lead, fl), 30.0);
        }
        auto g = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, g, o), 0);
      }
}

// Pivots below the least normal number (the GPU chain's fast 16-column panel flushes them to
// zero, finds its check failed and factors the panel again exactly) and near the largest: rows
// and columns of a random SPD matrix decoupled at a panel's first and second 8-column half, in
// a later tile and at the last column. Their factor is sqrt of the pivot and zeros; the rest
// is an ordinary factor.
TYPED_TEST(PotrfFlow, SubnormalAndHugePivots) {
  using T = TypeParam;
  const int n = kHost ? 300 : 1000;
  const double tiny = double(std::numeric_limits<T>::denorm_min()) * 1000;
  const double huge = double(std::numeric_limits<T>::max()) / 4;
  const std::array<int, 4> ks = {3, 12, 70, n - 1};
  Dense a = random_spd<T>(n, 77u);
  for (const int k : ks) {
    for (int i = 0; i < n; ++i) a(i, k) = a(k, i) = 0;
    a(k, k) = k == 70 ? huge : tiny;
  }
  ASSERT_LT(double(T(tiny)), double(std::numeric_limits<T>::min()));
  for (const PotrfOptions& o : {flow_opts(Algo::Dataflow), flow_opts(Algo::Default)}) {
    SCOPED_TRACE(describe(o, n, Uplo::Lower));
    auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d, o), 0);
    Dense f = to_host(d);
    Dense rest = a;
    for (const int k : ks) {
      const double want = std::sqrt(a(k, k));
      EXPECT_NEAR(f(k, k), want, 4 * eps<T>() * want) << "pivot " << k;
      for (int i = k + 1; i < n; ++i) ASSERT_EQ(f(i, k), 0.0) << i << "," << k;
      for (int j = 0; j < k; ++j) ASSERT_EQ(f(k, j), 0.0) << k << "," << j;
      f(k, k) = rest(k, k) = 1;
    }
    check_factor<T>(rest, f, Uplo::Lower);
  }
}

// CUDA: the kernels launched as plain __global__s (FlowKnobs::raw_launch: 1 the one kernel,
// 2, the default, the split launch's too) against the TeamPolicy launch: sizes across tile
// boundaries, both triangles and layouts, few teams, failures in the first, a middle and the
// last tile column, blocked panels, a plan's recorded replays; the split launch's kernels raw
// at knob 2 and above only. Under a Kokkos tool the
// launch goes through Kokkos, named kolesky::potrf_flow, and the raw one is not taken.
TYPED_TEST(PotrfFlow, RawLaunch) {
  using T = TypeParam;
  if (kHost) GTEST_SKIP() << "the raw launch is CUDA only";
  EXPECT_EQ(impl::FlowKnobs().raw_launch, 2);
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  auto& raws = impl::flow_raw_launches();
  for (const int raw : {2, 0}) {
    k.raw_launch = raw;
    for (const int teams : {0, 3}) {
      k.teams = teams;
      for (const int n : {1, 2, 63, 65, 129, 255, 1000}) {
        if (teams != 0 && n > 255) continue;
        const Dense good = dominant_spd<T>(n, 150u + n);
        const PotrfOptions o = flow_opts(Algo::Dataflow);
        SCOPED_TRACE(describe(o, n, Uplo::Lower) + " raw=" + std::to_string(raw) +
                     " teams=" + std::to_string(teams));
        const auto before = raws.load();
        for (const Uplo u : {Uplo::Lower, Uplo::Upper}) factor_both_layouts<T>(good, u, o);
        if (n > 64) {
          if (raw >= 1)
            EXPECT_GE(raws.load(), before + 4);
          else
            EXPECT_EQ(raws.load(), before);
          failures_then_good<T>(good, o);
        }
      }
    }
    k.teams = 0;
    const int n = 1000;
    const Dense good = dominant_spd<T>(n, 160u);
    const PotrfOptions o = flow_opts(Algo::Blocked, 256);
    SCOPED_TRACE(describe(o, n, Uplo::Lower) + " raw=" + std::to_string(raw));
    factor_both_layouts<T>(good, Uplo::Lower, o);
    PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower);
    plan_three_calls<T>(plan, good);
    Dense bad = good;
    bad(n / 2, n / 2) = std::numeric_limits<double>::quiet_NaN();
    const auto b0 = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
    ASSERT_EQ(plan.potrf(b0), n / 2 + 1);
    const auto g0 = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
    ASSERT_EQ(plan.potrf(g0), 0);
    check_factor<T>(good, to_host(g0), Uplo::Lower);
    // The split launch (the chain's kernel, the tiles', the one kernel that resumes a
    // cancelled launch: 3 cancels it), raw at knob 2 and above only.
    for (const int split : {2, 3})
      for (const int r : {raw, raw + 1}) {  // 2, 3 and 0, 1
        k.split_chain = split;
        k.raw_launch = r;
        SCOPED_TRACE("split=" + std::to_string(split) + " raw_launch=" + std::to_string(r));
        const auto before = raws.load();
        factor_both_layouts<T>(good, Uplo::Lower, flow_opts(Algo::Dataflow));
        if (r >= 2)
          EXPECT_GE(raws.load(), before + 6);
        else
          EXPECT_EQ(raws.load(), before);
        failures_then_good<T>(good, flow_opts(Algo::Dataflow));
      }
    k.split_chain = -1;
    k.raw_launch = raw;
  }
  // A tool attached: the Kokkos launch, which the tool sees.
  namespace KT = Kokkos::Tools::Experimental;
  static int flows = 0;
  flows = 0;
  struct Unset {
    ~Unset() { Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr); }
  } unset;
  KT::set_begin_parallel_for_callback([](const char* name, uint32_t, uint64_t*) {
    if (std::string(name) == "kolesky::potrf_flow") ++flows;
  });
  k.raw_launch = 2;
  const Dense good = dominant_spd<T>(300, 170u);
  const auto before = raws.load();
  factor_both_layouts<T>(good, Uplo::Lower, flow_opts(Algo::Dataflow));
  EXPECT_EQ(raws.load(), before);
  EXPECT_GE(flows, 2);
}

// CUDA: a synchronous call's one kernel hands info back through the stream's pinned word and
// leaves the device word zero, and the next call skips its memset (FlowKnobs::mapped_info,
// on by default). Failures in the first, a middle and the last tile column then a good matrix
// (a stale failure would make the good call a no-op that reports it); a blocked factorization
// (not the one kernel) that fails in between, leaving its failure in the device word, then
// the one kernel again; the default algorithm; the split launch and a plan, which do not hand
// info back this way; the knob off.
TYPED_TEST(PotrfFlow, MappedInfo) {
  using T = TypeParam;
  if (kHost) GTEST_SKIP() << "the pinned info word is CUDA only";
  EXPECT_EQ(impl::FlowKnobs().mapped_info, 1);
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  auto& mapped = impl::flow_mapped_calls();
  const auto factor = [](const Dense& m, const PotrfOptions& o) {
    auto x = to_device<T, Kokkos::LayoutLeft>(m, Uplo::Lower, kOther);
    const int info = potrf(ExecSpace(), Uplo::Lower, x, o);
    return std::make_pair(info, x);
  };
  for (const int on : {1, 0}) {
    k.mapped_info = on;
    for (const int n : {65, 130, 1000}) {
      const Dense good = dominant_spd<T>(n, 180u + n);
      const PotrfOptions o = flow_opts(Algo::Dataflow);
      SCOPED_TRACE(describe(o, n, Uplo::Lower) + " mapped_info=" + std::to_string(on));
      const auto before = mapped.load();
      failures_then_good<T>(good, o);  // 4 calls
      EXPECT_EQ(mapped.load(), before + (on ? 4 : 0));
      Dense bad = good;
      bad(n / 2, n / 2) = -1;
      const PotrfOptions blocked = flow_opts(Algo::Blocked, 64);
      EXPECT_EQ(factor(bad, blocked).first, n / 2 + 1);  // leaves n / 2 + 1 in the word
      auto g = factor(good, o);
      ASSERT_EQ(g.first, 0);
      check_factor<T>(good, to_host(g.second), Uplo::Lower);
      EXPECT_EQ(factor(bad, o).first, n / 2 + 1);
      auto h = factor(good, blocked);  // after the one kernel's failure: its word is zero
      ASSERT_EQ(h.first, 0);
      check_factor<T>(good, to_host(h.second), Uplo::Lower);
      // posv takes the word through potrf too, then solves (B unchanged when it fails).
      Dense b = random_matrix(n, 2, 181u);
      for (auto& v : b.v) v = double(T(v));
      auto bd = to_device<T, Kokkos::LayoutLeft>(b);
      auto a2 = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
      EXPECT_EQ(posv(ExecSpace(), Uplo::Lower, a2, bd, o), n / 2 + 1);
      auto a3 = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
      ASSERT_EQ(posv(ExecSpace(), Uplo::Lower, a3, bd, o), 0);
      EXPECT_LT(solve_ratio_fast(good, to_host(bd), b, eps<T>()), 30.0);
      EXPECT_EQ(mapped.load(), before + (on ? 8 : 0));
    }
    // The default through posv at an order of the one kernel and one of the split launch.
    for (const int n : {500, 4096}) {
      const Dense good = dominant_spd<T>(n, 190u + n);
      Dense b = random_matrix(n, 1, 191u);
      for (auto& v : b.v) v = double(T(v));
      SCOPED_TRACE("default n=" + std::to_string(n) + " mapped_info=" + std::to_string(on));
      const auto before = mapped.load();
      Dense bad = good;
      bad(n - 1, n - 1) = std::numeric_limits<double>::quiet_NaN();
      for (const bool fail : {false, true, false}) {
        auto da = to_device<T, Kokkos::LayoutLeft>(fail ? bad : good, Uplo::Lower, kOther);
        auto db = to_device<T, Kokkos::LayoutLeft>(b);
        ASSERT_EQ(posv(ExecSpace(), Uplo::Lower, da, db), fail ? n : 0);
        if (!fail) {
          EXPECT_LT(solve_ratio_fast(good, to_host(db), b, eps<T>()), 30.0);
        }
      }
      EXPECT_EQ(mapped.load(), before + (n == 500 && on ? 3 : 0));
    }
  }
  // A plan: its recording holds the one kernel alone (no memset, no copy); replays of a
  // failing matrix then a good one; a direct call with the knob off that fails in between
  // (its failure left in the plan's word) before the recording is replayed again.
  k.mapped_info = 1;
  const int n = 300;
  const Dense good = dominant_spd<T>(n, 200u);
  Dense bad = good;
  bad(n / 2, n / 2) = -1;
  const auto g0 = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
  const auto b0 = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
  auto x = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
  PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower);
  const auto before = mapped.load();
  plan_three_calls<T>(plan, good);
  EXPECT_EQ(factor(good, flow_opts(Algo::Dataflow)).first, 0);
  ASSERT_EQ(plan.potrf(x), 0);  // direct: the next call on x records
  for (const bool fail : {true, false, true, false}) {
    Kokkos::deep_copy(x, fail ? b0 : g0);
    ASSERT_EQ(plan.potrf(x), fail ? n / 2 + 1 : 0);
    EXPECT_TRUE(plan.uses_graph());
    if (!fail) check_factor<T>(good, to_host(x), Uplo::Lower);
  }
  k.mapped_info = 0;
  auto y = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
  ASSERT_EQ(plan.potrf(y), n / 2 + 1);  // direct: another matrix
  EXPECT_FALSE(plan.uses_graph());
  k.mapped_info = 1;
  Kokkos::deep_copy(x, g0);
  ASSERT_EQ(plan.potrf(x), 0);
  EXPECT_TRUE(plan.uses_graph());
  check_factor<T>(good, to_host(x), Uplo::Lower);
  EXPECT_EQ(mapped.load(), before + 1);
}

// Few teams (2, 3, 7, and the whole grid): every task but the first few queues behind others,
// so a wait on a larger task number would hang here. Factors, failures in the first, a middle
// and the last tile column (exact info), a good matrix after them; whole-matrix and panel
// launches.
TYPED_TEST(PotrfFlow, FewTeams) {
  using T = TypeParam;
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  {  // The caps: the caller's and the knob, the smaller positive one wins; never one team.
    const int conc = impl::flow_teams(ExecSpace(), 1 << 20);
    const auto capped = [&](const int c) { return conc < c ? conc : c; };
    EXPECT_EQ(impl::flow_teams(ExecSpace(), 1 << 20, 3), capped(3));
    EXPECT_EQ(impl::flow_teams(ExecSpace(), 1 << 20, 1), 2);  // never the chain alone
    EXPECT_EQ(impl::flow_teams(ExecSpace(), 5, 0), capped(5));  // nor more than the tasks
    k.teams = 3;
    EXPECT_EQ(impl::flow_teams(ExecSpace(), 1 << 20, 0), capped(3));
    EXPECT_EQ(impl::flow_teams(ExecSpace(), 1 << 20, 5), capped(3));
    k.teams = 7;
    EXPECT_EQ(impl::flow_teams(ExecSpace(), 1 << 20, 2), capped(2));
    EXPECT_EQ(impl::flow_teams(ExecSpace(), 1 << 20, 0), capped(7));
  }
  for (const int teams : {2, 3, 7, 0})
    for (const int n : {130, 300, kHost ? 0 : 1000}) {
      if (n == 0 || (n == 1000 && teams == 2)) continue;
      k.teams = teams;
      k.panel_teams = teams == 3 ? 5 : 0;  // both caps on the lookahead panels
      const Dense good = dominant_spd<T>(n, 40u + n);
      for (const PotrfOptions& o : {flow_opts(Algo::Dataflow), flow_opts(Algo::Blocked, 128)}) {
        SCOPED_TRACE(describe(o, n, Uplo::Lower) + " teams=" + std::to_string(teams));
        auto g = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
        ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, g, o), 0);
        check_factor<T>(good, to_host(g), Uplo::Lower);
        failures_then_good<T>(good, o);
      }
    }
}

// CUDA: the chain in a kernel of its own beside the tiles' kernel (impl::flow_split): the
// tiles at one or two teams per SM (split 1 / 2), at two with each tile loaded after its
// updates (5), and split 3, where the chain's kernel does
// not claim the chain, so the tile team that draws ticket 0 cancels the launch and the one
// kernel queued after it factors the matrix (what happens when the chain's kernel does not
// start in time). Both scalars, both layouts and triangles, failures in the first, a middle
// and the last tile column, NaN, a good matrix after failures, a plan (PlanSplitGraph checks
// its recordings), and the default picks (from n = 3072: float at two teams per SM, double
// at one, at two from 4096; float's 5120 takes the late tiles). Double's tiles also solve by
// the chain's inverted blocks (tile_inv 1 with splits 1-3; by default from 3584).
TYPED_TEST(PotrfFlow, SplitChain) {
  using T = TypeParam;
  if (kHost) GTEST_SKIP() << "the split is CUDA only";
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  // {split, tile_inv}: tile_inv 1 has double's tiles solve by the chain's inverted blocks
  // (splits 1-3; the default takes them from n = 3584 only; 3 takes the cancel path).
  const std::pair<int, int> cases[] = {{2, -1}, {3, -1}, {1, -1}, {5, -1}, {2, 1}, {1, 1}, {3, 1}};
  for (const auto& [split, inv] : cases)
    for (const int n : {200, 1000}) {
      if (inv == 1 && !std::is_same<T, double>::value) continue;  // double only
      k.split_chain = split;
      k.tile_inv = inv;
      const Dense good = dominant_spd<T>(n, 90u + n);
      const PotrfOptions o = flow_opts(Algo::Dataflow);
      SCOPED_TRACE(describe(o, n, Uplo::Lower) + " split=" + std::to_string(split) +
                   " tile_inv=" + std::to_string(inv));
      for (const Uplo u : {Uplo::Lower, Uplo::Upper}) factor_both_layouts<T>(good, u, o);
      failures_then_good<T>(good, o);
      PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower, o);
      for (int rep = 0; rep < 3; ++rep) {
        auto p = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
        ASSERT_EQ(plan.potrf(p), 0);
        check_factor<T>(good, to_host(p), Uplo::Lower);
      }
    }
  // Knob 4: panels' launches split too where the updates beside them are the vendor's (which
  // do not read info); with native updates the panels keep one kernel.
  k.split_chain = 4;
  k.tile_inv = 1;
  for (const int n : {1000, 1100})
    for (const Blas blas : {Blas::Auto, Blas::Native}) {
      const Dense good = dominant_spd<T>(n, 92u + n);
      PotrfOptions o = flow_opts(Algo::Blocked, 256);
      o.blas = blas;
      SCOPED_TRACE(describe(o, n, Uplo::Lower) + " split=4" +
                   (blas == Blas::Native ? " native" : ""));
      for (const Uplo u : {Uplo::Lower, Uplo::Upper}) factor_both_layouts<T>(good, u, o);
      failures_then_good<T>(good, o);
      PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower, o);
      plan_three_calls<T>(plan, good);
    }
  k.split_chain = -1;  // the default picks (double's 4096 / 4608: tiles by inverted blocks)
  k.tile_inv = -1;
  for (const int n : {3072, 3200, 4096, std::is_same<T, float>::value ? 5120 : 4608}) {
    SCOPED_TRACE("default n=" + std::to_string(n));
    const Dense a = dominant_spd<T>(n, 95u);
    Dense b = random_matrix(n, 2, 96u);
    for (auto& v : b.v) v = double(T(v));
    auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    auto db = to_device<T, Kokkos::LayoutLeft>(b);
    ASSERT_EQ(posv(ExecSpace(), Uplo::Lower, d, db), 0);
    EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
  }
}

#ifdef KOKKOS_ENABLE_CUDA
// Kernel nodes of one dataflow launch of `a` recorded on a stream of its own, and how many of
// them run at the device's highest priority (the split's chain kernel).
template <class T, class V>
std::pair<int, int> recorded_flow_kernels(const V& a) {
  impl::CudaSide side(impl::CudaSide::Default);
  impl::FlowWorkOf<Kokkos::Cuda> work;
  Kokkos::View<int*, Kokkos::CudaSpace> info("info", 1);
  const int n = int(a.extent(0));
  int least = 0, greatest = 0;
  cudaDeviceGetStreamPriorityRange(&least, &greatest);
  // The first launch (direct) loads the kernels and makes the workspace and the chain's
  // stream; the recording follows.
  impl::flow_potrf(*side.exec, n, impl::lower_of<Uplo::Lower>(a), info.data(), 0,
                   impl::flow_tiles(n), work);
  side.exec->fence();
  std::pair<int, int> r{0, 0};
  if (cudaStreamBeginCapture(side.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
    return {-1, -1};
  impl::flow_potrf(*side.exec, n, impl::lower_of<Uplo::Lower>(a), info.data(), 0,
                   impl::flow_tiles(n), work);
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(side.stream, &g) != cudaSuccess) return {-2, -2};
  std::size_t count = 0;
  cudaGraphGetNodes(g, nullptr, &count);
  std::vector<cudaGraphNode_t> nodes(count);
  cudaGraphGetNodes(g, nodes.data(), &count);
  for (const cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    cudaGraphNodeGetType(node, &type);
    if (type != cudaGraphNodeTypeKernel) continue;
    ++r.first;
    cudaKernelNodeAttrValue val{};
    cudaGraphKernelNodeGetAttribute(node, cudaKernelNodeAttributePriority, &val);
    if (val.priority == greatest && greatest != least) ++r.second;
  }
  cudaGraphDestroy(g);
  return r;
}
#endif

// CUDA: the split launch inside a recorded graph (a plan's replays). The recording holds both
// kernels, the chain's at the highest priority, and the cancel path's check and one-kernel
// launch; a plan's replays factor good matrices, report each failing minor exactly (first, a
// middle, the last tile column, NaN) on the recorded matrix, and a good one after them;
// split 3 takes the cancel path at every replay; without DMMA tile updates (knob mma = 0) the
// launch keeps one kernel. Then the default pick at 3072 in a plan.
TYPED_TEST(PotrfFlow, PlanSplitGraph) {
  if (kHost) GTEST_SKIP() << "the split is CUDA only";
#ifdef KOKKOS_ENABLE_CUDA
  using T = TypeParam;
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  const int n = 1000;
  const Dense good = dominant_spd<T>(n, 97u);
  const auto g0 = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
  for (const int split : {0, 2, 3}) {
    k.split_chain = split;
    k.tile_inv = 1;  // double's tiles by the chain's inverted blocks in the recordings too
    SCOPED_TRACE("split=" + std::to_string(split));
    auto x = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
    const auto nodes = recorded_flow_kernels<T>(x);
    EXPECT_EQ(nodes.first, split == 0 ? 1 : 4);
    int least = 0, greatest = 0;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (least != greatest) EXPECT_EQ(nodes.second, split == 0 ? 0 : 1);
    if (split == 0) continue;
    PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower, flow_opts(Algo::Dataflow));
    for (int rep = 0; rep < 3; ++rep) {  // direct, recorded, replayed
      Kokkos::deep_copy(x, g0);
      ASSERT_EQ(plan.potrf(x), 0) << "rep " << rep;
      check_factor<T>(good, to_host(x), Uplo::Lower);
    }
    EXPECT_TRUE(plan.uses_graph());
    for (const int f : {5, n / 2 + 3, n - 1}) {
      Dense bad = good;
      bad(f, f) = f == n - 1 ? std::numeric_limits<double>::quiet_NaN() : -1;
      const auto z = to_device<T, Kokkos::LayoutLeft>(bad, Uplo::Lower, kOther);
      Kokkos::deep_copy(x, z);
      ASSERT_EQ(plan.potrf(x), f + 1) << "fail at " << f;
      EXPECT_TRUE(plan.uses_graph());
    }
    Kokkos::deep_copy(x, g0);
    ASSERT_EQ(plan.potrf(x), 0);
    EXPECT_TRUE(plan.uses_graph());
    check_factor<T>(good, to_host(x), Uplo::Lower);
  }
  {
    // The tiles' kernel has DMMA updates only: without them the launch is not split.
    k.split_chain = 2;
    k.mma = 0;
    auto x = to_device<T, Kokkos::LayoutLeft>(good, Uplo::Lower, kOther);
    EXPECT_EQ(recorded_flow_kernels<T>(x).first, 1);
    k.mma = 1;
  }
  k.split_chain = -1;  // the default pick from 3072 (double: the tiles at one team per SM)
  k.tile_inv = -1;
  const int m = 3072;
  const Dense a = dominant_spd<T>(m, 98u);
  EXPECT_EQ(recorded_flow_kernels<T>(to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, 0.0)).first,
            4);
  Dense b = random_matrix(m, 2, 99u);
  for (auto& v : b.v) v = double(T(v));
  PotrfPlan<ExecSpace, T> plan(ExecSpace(), m, Uplo::Lower);
  const auto a0 = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
  for (int rep = 0; rep < 3; ++rep) {
    Kokkos::deep_copy(d, a0);
    auto db = to_device<T, Kokkos::LayoutLeft>(b);
    ASSERT_EQ(plan.posv(d, db), 0) << "rep " << rep;
    EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
  }
  EXPECT_TRUE(plan.uses_graph());
#endif
}

// A small mix for the sanitizers: whole-matrix and panel dataflow, both triangles, failures,
// a plan; three teams, where tasks queue.
TYPED_TEST(PotrfFlow, Sanitize) {
  using T = TypeParam;
  {
    const FlowKnobsRestore restore;
    const Dense b = random_spd<T>(330, 78u);
    impl::FlowKnobs::get().teams = 3;
    for (const int raw : {0, 1}) {  // 1: the one kernel as a plain __global__ (CUDA)
      impl::FlowKnobs::get().raw_launch = raw;
      auto d = to_device<T, Kokkos::LayoutLeft>(b, Uplo::Lower, kOther);
      ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d, flow_opts(Algo::Dataflow)), 0);
      check_factor<T>(b, to_host(d), Uplo::Lower);
    }
  }
  // The chain's kernel beside the tiles' (CUDA; 4: panels; 6: 2 with double's tiles solving
  // by the chain's inverted blocks).
  for (const int split : {2, 3, 4, 5, 6, -2, -3}) {  // -2, -3: 2, 3 as raw kernels
    const FlowKnobsRestore restore;
    impl::FlowKnobs::get().raw_launch = split > 0 ? 1 : 2;
    impl::FlowKnobs::get().split_chain = split == 6 ? 2 : split < 0 ? -split : split;
    impl::FlowKnobs::get().tile_inv = split == 6 ? 1 : 0;
    const Dense b = random_spd<T>(330, 79u);
    auto d = to_device<T, Kokkos::LayoutLeft>(b, Uplo::Lower, kOther);
    const PotrfOptions o = split == 4 ? flow_opts(Algo::Blocked, 128) : flow_opts(Algo::Dataflow);
    ASSERT_EQ(potrf(ExecSpace(), Uplo::Lower, d, o), 0);
    check_factor<T>(b, to_host(d), Uplo::Lower);
  }
  const Dense a = random_spd<T>(200, 77u);
  for (const PotrfOptions& o : {flow_opts(Algo::Dataflow), flow_opts(Algo::Blocked, 64),
                                flow_opts(Algo::Blocked, 64, false)})
    for (const Uplo u : {Uplo::Lower, Uplo::Upper}) {
      SCOPED_TRACE(describe(o, 200, u));
      auto d = to_device<T, Kokkos::LayoutLeft>(a, u, kOther);
      ASSERT_EQ(potrf(ExecSpace(), u, d, o), 0);
      check_factor<T>(a, to_host(d), u);
      Dense bad = a;
      bad(70, 70) = std::numeric_limits<double>::quiet_NaN();
      auto z = to_device<T, Kokkos::LayoutLeft>(bad, u, kOther);
      ASSERT_EQ(potrf(ExecSpace(), u, z, o), 71);
    }
  PotrfPlan<ExecSpace, T> plan(ExecSpace(), 200, Uplo::Lower);
  for (int rep = 0; rep < 3; ++rep) {
    auto d = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    ASSERT_EQ(plan.potrf(d), 0);
  }
}

// Orders where the GPU default changes strategy, checked by a solve (O(n^2) on the host).
TYPED_TEST(PotrfFlow, LargeSolve) {
  using T = TypeParam;
  std::vector<int> sizes = {2049};
  if (!kHost) sizes = {2049, 4096, 4097, 8192};
  for (const int n : sizes) {
    const Dense a = dominant_spd<T>(n, 13u + n);
    Dense b = random_matrix(n, 1, 14u);
    for (auto& x : b.v) x = double(T(x));
    for (const Algo algo : {Algo::Default, Algo::Dataflow}) {
      if (kHost && algo == Algo::Default) continue;  // the host default is tested elsewhere
      const PotrfOptions o = flow_opts(algo);
      SCOPED_TRACE(describe(o, n, Uplo::Lower));
      auto da = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, 0.0);
      auto db = to_device<T, Kokkos::LayoutLeft>(b);
      ASSERT_EQ(posv(ExecSpace(), Uplo::Lower, da, db, o), 0);
      EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
    }
  }
}

// flow_tile_inv's pick: double's split launches (splits 1-3) with the chain on DMMA, from n =
// 3584 by default; knob 0 never, 1 at every order; never for float, one kernel, splits 4-5,
// or without the chain's DMMA (the inverted blocks are its own).
TEST(PotrfFlowPick, TileInv) {
#ifdef KOKKOS_ENABLE_CUDA
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  impl::FlowPotrf<double> d;
  impl::FlowPotrf<float> f;
  d.chain_mma = f.chain_mma = true;
  k.tile_inv = -1;
  EXPECT_FALSE(impl::flow_tile_inv(3583, d, 2));
  for (const int split : {1, 2, 3}) EXPECT_TRUE(impl::flow_tile_inv(3584, d, split)) << split;
  for (const int split : {0, 4, 5}) EXPECT_FALSE(impl::flow_tile_inv(4096, d, split)) << split;
  EXPECT_FALSE(impl::flow_tile_inv(4096, f, 2));
  k.tile_inv = 1;
  EXPECT_TRUE(impl::flow_tile_inv(200, d, 1));
  EXPECT_FALSE(impl::flow_tile_inv(200, d, 0));
  EXPECT_FALSE(impl::flow_tile_inv(4096, f, 1));
  d.chain_mma = false;
  EXPECT_FALSE(impl::flow_tile_inv(4096, d, 2));
  d.chain_mma = true;
  k.tile_inv = 0;
  EXPECT_FALSE(impl::flow_tile_inv(4096, d, 2));
#else
  GTEST_SKIP() << "the split is CUDA only";
#endif
}

// The chain's diagonal-tile updates by default on m16n8k4 (8 warps) in both scalars, the
// knob over that, and never on DMMA where the chain is not.
TEST(PotrfFlowPick, FactorMma) {
  const FlowKnobsRestore restore;
  auto& k = impl::FlowKnobs::get();
  k.factor_mma = -1;
  EXPECT_EQ(impl::flow_factor_mma<double>(true), 3);
  EXPECT_EQ(impl::flow_factor_mma<float>(true), 3);
  EXPECT_EQ(impl::flow_factor_mma<double>(false), 0);
  for (const int knob : {0, 1, 2, 3}) {
    k.factor_mma = knob;
    EXPECT_EQ(impl::flow_factor_mma<double>(true), knob);
    EXPECT_EQ(impl::flow_factor_mma<float>(true), knob);
    EXPECT_EQ(impl::flow_factor_mma<float>(false), 0);
  }
}

// The CUDA kernel's task numbering (checked on every backend: it is plain arithmetic):
// every ticket names one task and every task is named once, and every task a task waits
// for has a smaller ticket (tiles (i, k) and (j, k), the chain's columns and the partial
// tasks those wait for), which is what keeps the persistent kernel free of deadlock whatever
// the number of resident teams.
TEST(PotrfFlowOrder, TasksOnceAndAfterTheirInputs) {
  using F = impl::FlowPotrf<double>;
  struct Shape {
    int nt, j0, j1;
  };
  for (const Shape sh : {Shape{1, 0, 1}, Shape{2, 0, 2}, Shape{3, 0, 3}, Shape{5, 0, 5},
                         Shape{48, 0, 48}, Shape{64, 0, 16}, Shape{64, 16, 32}, Shape{64, 48, 64},
                         Shape{17, 5, 6}, Shape{17, 5, 7}, Shape{17, 5, 9}, Shape{520, 0, 12},
                         Shape{70, 3, 40}}) {
    SCOPED_TRACE("nt=" + std::to_string(sh.nt) + " j0=" + std::to_string(sh.j0) +
                 " j1=" + std::to_string(sh.j1));
    F f{};
    f.nt = sh.nt;
    f.j0 = sh.j0;
    f.j1 = sh.j1;
    const int tasks = f.cuda_ntasks();
    // Ticket of each task by kind (1 partial below, 2 partial diagonal, 3 tile) and tile.
    std::vector<int> pos(std::size_t(4) * sh.nt * sh.nt, -1);
    const auto at = [&](int kind, int i, int j) -> int& {
      return pos[(std::size_t(kind) * sh.nt + i) * sh.nt + j];
    };
    std::vector<std::array<int, 3>> order(tasks);
    for (int t = 1; t < tasks; ++t) {
      int kind = -1, i = -1, j = -1;
      f.cuda_task(t, kind, i, j);
      ASSERT_TRUE(kind >= 1 && kind <= 3 && i >= 0 && i < sh.nt && j >= sh.j0 && j < sh.nt)
          << "t=" << t << " kind=" << kind << " i=" << i << " j=" << j;
      ASSERT_EQ(at(kind, i, j), -1) << "named twice: t=" << t << " kind=" << kind;
      at(kind, i, j) = t;
      order[t] = {kind, i, j};
    }
    // The chain's column c can finish once its partials (and earlier columns) have.
    std::vector<int> chain(sh.nt + 1, 0);
    for (int c = sh.j0; c < sh.j1; ++c) {
      int r = c > sh.j0 ? chain[c - 1] : 0;
      if (c >= sh.j0 + 2) {
        ASSERT_NE(at(1, c, c - 1), -1) << "partial below missing at column " << c;
        ASSERT_NE(at(2, c, c), -1) << "partial diag missing at column " << c;
        r = std::max({r, at(1, c, c - 1), at(2, c, c)});
      }
      chain[c] = r;
    }
    // Every tile of the columns is the chain's (the diagonal and, but in the last column, the
    // tile below it) or one tile task's, never both.
    const auto chains = [&](int i, int k) { return i == k || (i == k + 1 && k + 1 < sh.j1); };
    for (int k = sh.j0; k < sh.j1; ++k)
      for (int i = k; i < sh.nt; ++i)
        EXPECT_EQ(at(3, i, k) != -1, !chains(i, k)) << "tile (" << i << ", " << k << ")";
    const auto input = [&](int i, int k) { return chains(i, k) ? chain[i] : at(3, i, k); };
    for (int t = 1; t < tasks; ++t) {
      const int kind = order[t][0], i = order[t][1], j = order[t][2];
      // Columns read: tiles (i, k) and (jr, k), k in [j0, ke); a partial of chain column i
      // reads rows i and i - 1 up to column i - 2 (the chain applies column i - 1 itself).
      int ke = j, jr = j;
      if (kind == 3) {
        EXPECT_LT(input(j, j), t) << "tile (" << i << ", " << j << ") before its diagonal";
      } else {
        ke = i - 1;
        jr = i - 1;
      }
      for (int k = sh.j0; k < ke; ++k) {
        EXPECT_LT(input(i, k), t) << "task " << t << " before (" << i << ", " << k << ")";
        EXPECT_LT(input(jr, k), t) << "task " << t << " before (" << jr << ", " << k << ")";
      }
    }
  }
}

}  // namespace test
}  // namespace kolesky

namespace kolesky {
namespace test {

// A plan reused on several matrices (same and different Views, both triangles), a failing
// matrix followed by a good one, and the wrong order refused.
TYPED_TEST(PotrfFlow, PlanReuse) {
  using T = TypeParam;
  for (const int n : {0, 1, 65, 150, 300, kHost ? 700 : 2049})
    for (const Uplo u : {Uplo::Lower, Uplo::Upper}) {
      PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, u);
      SCOPED_TRACE("n=" + std::to_string(n) + " " + name(u));
      const Dense a = dominant_spd<T>(n, 40u + n), c = dominant_spd<T>(n, 41u + n);
      auto x = to_device<T, Kokkos::LayoutLeft>(a, u, kOther);
      auto y = to_device<T, Kokkos::LayoutLeft>(c, u, kOther);
      const auto x0 = to_device<T, Kokkos::LayoutLeft>(a, u, kOther);
      // Three calls on x (direct, recorded, replayed), then y, then x again.
      for (int rep = 0; rep < 3; ++rep) {
        Kokkos::deep_copy(x, x0);
        ASSERT_EQ(plan.potrf(x), 0) << "rep " << rep;
        if (n <= 300) check_factor<T>(a, to_host(x), u);
      }
      ASSERT_EQ(plan.potrf(y), 0);
      if (n <= 300) check_factor<T>(c, to_host(y), u);
      Kokkos::deep_copy(x, x0);
      ASSERT_EQ(plan.potrf(x), 0);
      // A solve through the plan.
      Dense b = random_matrix(n, 2, 3u);
      for (auto& v : b.v) v = double(T(v));
      auto db = to_device<T, Kokkos::LayoutLeft>(b);
      plan.potrs(x, db);
      EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
      if (n < 2) continue;
      // A failing matrix twice (recorded on the second call), then the good one again.
      Dense bad = a;
      bad(n / 2, n / 2) = -1;
      auto z = to_device<T, Kokkos::LayoutLeft>(bad, u, kOther);
      const auto z0 = to_device<T, Kokkos::LayoutLeft>(bad, u, kOther);
      ASSERT_EQ(plan.potrf(z), n / 2 + 1);
      Kokkos::deep_copy(z, z0);
      ASSERT_EQ(plan.potrf(z), n / 2 + 1);
      Kokkos::deep_copy(x, x0);
      ASSERT_EQ(plan.posv(x, db), 0);
    }
  PotrfPlan<ExecSpace, T> plan(ExecSpace(), 10, Uplo::Lower);
  Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace> wrong("wrong", 11, 11);
  EXPECT_THROW(plan.potrf(wrong), kolesky::invalid_argument);
}

// On CUDA the third call on one matrix replays a recorded graph; small orders (one launch of
// a staged kernel) record nothing.
TYPED_TEST(PotrfFlow, PlanGraph) {
  using T = TypeParam;
  if (kHost) GTEST_SKIP() << "graphs are CUDA only";
  for (const int n : {100, 300, 1000, 5000}) {
    PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower);
    const Dense a = dominant_spd<T>(n, 60u);
    const auto a0 = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    auto x = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    for (int rep = 0; rep < 3; ++rep) {
      Kokkos::deep_copy(x, a0);
      ASSERT_EQ(plan.potrf(x), 0);
    }
    EXPECT_EQ(plan.uses_graph(), n > 100) << "n=" << n;
    Dense b = random_matrix(n, 1, 3u);
    for (auto& v : b.v) v = double(T(v));
    auto db = to_device<T, Kokkos::LayoutLeft>(b);
    plan.potrs(x, db);
    EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
  }
}

// The plan's solves (CUDA: the second call with the same A and B records, later ones replay;
// any direct call drops the recording): each solve path (one launch at 3 right-hand sides,
// the team per right-hand side at 300 / 40, the GEMM sweeps at 600 and 2100 with 40), B
// restored before each call; another B in between, then a wider one (its workspaces grow),
// then the first B again: recorded anew, never a replay of a graph whose workspace moved.
TYPED_TEST(PotrfFlow, PlanSolveGraph) {
  using T = TypeParam;
  for (const auto& [n, nrhs] : std::vector<std::pair<int, int>>{
           {300, 3}, {300, 40}, {600, 40}, {kHost ? 700 : 2100, 40}}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs));
    PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower);
    const Dense a = dominant_spd<T>(n, 62u + n);
    auto x = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    ASSERT_EQ(plan.potrf(x), 0);
    Dense b = random_matrix(n, nrhs, 63u), c = random_matrix(n, 3 * nrhs, 64u);
    for (auto& v : b.v) v = double(T(v));
    for (auto& v : c.v) v = double(T(v));
    const auto b0 = to_device<T, Kokkos::LayoutLeft>(b);
    const auto c0 = to_device<T, Kokkos::LayoutLeft>(c);
    auto db = to_device<T, Kokkos::LayoutLeft>(b);
    auto dc = to_device<T, Kokkos::LayoutLeft>(c);
    auto dd = to_device<T, Kokkos::LayoutLeft>(b);  // another B of the same shape
    const auto solve_b = [&](const bool replay) {
      Kokkos::deep_copy(db, b0);
      plan.potrs(x, db);
      EXPECT_EQ(plan.potrs_uses_graph(), replay && !kHost);
      EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
    };
    solve_b(false);  // direct
    solve_b(true);   // recorded, replayed
    solve_b(true);   // replayed
    plan.potrs(x, dd);
    EXPECT_FALSE(plan.potrs_uses_graph());
    EXPECT_LT(solve_ratio_fast(a, to_host(dd), b, eps<T>()), 30.0);
    solve_b(false);  // after another B: direct
    plan.potrs(x, dc);
    EXPECT_LT(solve_ratio_fast(a, to_host(dc), c, eps<T>()), 30.0);
    Kokkos::deep_copy(dc, c0);
    plan.potrs(x, dc);  // recorded at the wider size
    EXPECT_EQ(plan.potrs_uses_graph(), !kHost);
    EXPECT_LT(solve_ratio_fast(a, to_host(dc), c, eps<T>()), 30.0);
    solve_b(false);
    solve_b(true);
  }
}

#ifdef KOKKOS_ENABLE_CUDA
// A plan's graph keeps the priorities of the streams its kernels were captured from: capture
// gives each kernel node its stream's priority (the lookahead stream's is the device's
// highest), and impl::instantiate_graph makes the graph run them so instead of at the launch
// stream's priority.
template <class V>
struct Fill {
  Kokkos::View<V*, Kokkos::CudaSpace> v;
  V x;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const { v(i) = x; }
};

template <class E>
void check_graph_priorities() {
  if constexpr (!std::is_same<E, Kokkos::Cuda>::value) {
    GTEST_SKIP() << "graphs are CUDA only";
  } else {
    int least = 0, greatest = 0;
    ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
    if (least == greatest) GTEST_SKIP() << "the device has one stream priority";
    impl::CudaSide side;  // the lookahead's stream
    int prio = least;
    ASSERT_EQ(cudaStreamGetPriority(side.stream, &prio), cudaSuccess);
    ASSERT_EQ(prio, greatest);
    Kokkos::View<int*, Kokkos::CudaSpace> v("v", 64);
    ASSERT_EQ(cudaStreamBeginCapture(side.stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    Kokkos::deep_copy(*side.exec, v, 3);  // a kernel in Kokkos 3.4, a memset in later ones
    Kokkos::parallel_for("kolesky::test_graph_priority",
                         Kokkos::RangePolicy<Kokkos::Cuda>(*side.exec, 0, 64), Fill<int>{v, 7});
    cudaGraph_t g = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(side.stream, &g), cudaSuccess);
    std::size_t count = 0;
    ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &count), cudaSuccess);
    std::vector<cudaGraphNode_t> nodes(count);
    ASSERT_EQ(cudaGraphGetNodes(g, nodes.data(), &count), cudaSuccess);
    int kernels = 0;
    for (const cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type;
      ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
      if (type != cudaGraphNodeTypeKernel) continue;
      ++kernels;
      cudaKernelNodeAttrValue val{};
      ASSERT_EQ(cudaGraphKernelNodeGetAttribute(node, cudaKernelNodeAttributePriority, &val),
                cudaSuccess);
      EXPECT_EQ(val.priority, greatest) << "kernel node " << kernels;
    }
    EXPECT_GE(kernels, 1);
    // (cudaGraphExecGetFlags does not report the priority flag on CUDA 13, so the graph's use
    // of it shows only in timings: docs/performance_log.md, issue 15 session 24.)
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(impl::instantiate_graph(&exec, g), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, side.stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(side.stream), cudaSuccess);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(h(i), 7) << i;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
  }
}
#endif

#ifdef KOKKOS_ENABLE_CUDA
// impl::graph_shape: recordings that differ only in their kernels' arguments share a shape (a
// plan updates its instantiated graph with them); more kernels or a memset in front do not.
template <class E>
void check_graph_shapes() {
  if constexpr (!std::is_same<E, Kokkos::Cuda>::value) {
    GTEST_SKIP() << "graphs are CUDA only";
  } else {
    impl::CudaSide side;
    Kokkos::View<int*, Kokkos::CudaSpace> v("v", 64), u("u", 64);
    const auto record = [&](const int kernels, const bool memset, const int x) {
      EXPECT_EQ(cudaStreamBeginCapture(side.stream, cudaStreamCaptureModeThreadLocal),
                cudaSuccess);
      if (memset) cudaMemsetAsync(u.data(), 0, sizeof(int), side.stream);
      for (int q = 0; q < kernels; ++q)
        Kokkos::parallel_for("kolesky::test_graph_shape",
                             Kokkos::RangePolicy<Kokkos::Cuda>(*side.exec, 0, 64),
                             Fill<int>{q % 2 ? u : v, x + q});
      cudaGraph_t g = nullptr;
      EXPECT_EQ(cudaStreamEndCapture(side.stream, &g), cudaSuccess);
      const std::vector<int> shape = impl::graph_shape(g);
      cudaGraphDestroy(g);
      return shape;
    };
    const auto one = record(1, false, 1), two = record(2, false, 1);
    EXPECT_EQ(one.size(), 2u);
    EXPECT_EQ(two.size(), 4u);
    EXPECT_NE(one, two);
    EXPECT_EQ(two, record(2, false, 5));  // other arguments: the same shape
    EXPECT_NE(two, record(2, true, 1));   // a memset ahead of them
    EXPECT_EQ(two[3], 1);                 // the second kernel waits on the first
  }
}
#endif

TEST(PotrfFlowGraph, Shapes) {
#ifdef KOKKOS_ENABLE_CUDA
  check_graph_shapes<ExecSpace>();
#else
  GTEST_SKIP() << "graphs are CUDA only";
#endif
}

TEST(PotrfFlowGraph, KeepsStreamPriorities) {
#ifdef KOKKOS_ENABLE_CUDA
  check_graph_priorities<ExecSpace>();
#else
  GTEST_SKIP() << "graphs are CUDA only";
#endif
}

// With a Kokkos Tools callback set, Kokkos fences around its kernels, which a stream capture
// forbids: the plan must run directly (it used to throw from inside the recording).
TYPED_TEST(PotrfFlow, PlanUnderAToolRunsDirectly) {
  using T = TypeParam;
  namespace KT = Kokkos::Tools::Experimental;
  static int kernels = 0;
  kernels = 0;
  KT::set_begin_parallel_for_callback([](const char*, uint32_t, uint64_t*) { ++kernels; });
  for (const int n : {300, 1000, 5000}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    PotrfPlan<ExecSpace, T> plan(ExecSpace(), n, Uplo::Lower);
    const Dense a = dominant_spd<T>(n, 61u);
    const auto a0 = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    auto x = to_device<T, Kokkos::LayoutLeft>(a, Uplo::Lower, kOther);
    for (int rep = 0; rep < 3; ++rep) {
      Kokkos::deep_copy(x, a0);
      ASSERT_EQ(plan.potrf(x), 0);
    }
    EXPECT_FALSE(plan.uses_graph());
    Dense b = random_matrix(n, 1, 4u);
    for (auto& v : b.v) v = double(T(v));
    auto db = to_device<T, Kokkos::LayoutLeft>(b);
    plan.potrs(x, db);
    EXPECT_LT(solve_ratio_fast(a, to_host(db), b, eps<T>()), 30.0);
  }
  KT::set_begin_parallel_for_callback(nullptr);
  EXPECT_GT(kernels, 0);
}

}  // namespace test
}  // namespace kolesky
