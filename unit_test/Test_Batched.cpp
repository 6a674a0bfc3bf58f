// Batched potrf / potrs / posv: every layout x kernel x uplo, sizes across register, warp and
// chunk boundaries, batches around the chunk size, with failing matrices mixed in.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <limits>
#include <string>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

using batched::Kernel;
constexpr bool kHost = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
constexpr double kOther = 4242.0;

template <class T>
class Batched : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Batched, Scalars);

constexpr int kNonSpd = 1;  // matrices made to fail
constexpr int kNan = 3;

struct Case {
  std::vector<Dense> a, b;
  std::vector<int> expected;
};

template <class T>
Case make_case(int n, int count, int nrhs) {
  Case c;
  for (int p = 0; p < count; ++p) {
    Dense a = random_spd<T>(n, 7919u * p + 31u * n);
    int e = 0;
    if (p == kNonSpd) {
      a(n / 2, n / 2) = -1;
      e = n / 2 + 1;
    } else if (p == kNan) {
      a(n - 1, 0) = a(0, n - 1) = std::numeric_limits<double>::quiet_NaN();
      e = n;
    }
    Dense b = random_matrix(n, nrhs, 13u * p + n);
    for (auto& x : b.v) x = double(T(x));
    c.a.push_back(a);
    c.b.push_back(b);
    c.expected.push_back(e);
  }
  return c;
}

// Matrices checked in full: the first and last few, the failing ones, a sparse sample.
bool sampled(int p, int count) { return p < 6 || p >= count - 3 || p % 101 == 0; }

template <class HostBatch>
void fill(const HostBatch& h, const std::vector<Dense>& m, const Uplo* uplo) {
  for (int p = 0; p < h.size(); ++p)
    for (int j = 0; j < h.cols(); ++j)
      for (int i = 0; i < h.rows(); ++i)
        h(p, i, j) = (!uplo || in_triangle(*uplo, i, j)) ? m[p](i, j) : kOther;
}

template <class HostBatch>
Dense extract(const HostBatch& h, int p) {
  Dense d(h.rows(), h.cols());
  for (int j = 0; j < h.cols(); ++j)
    for (int i = 0; i < h.rows(); ++i) d(i, j) = h(p, i, j);
  return d;
}

template <class Batch>
Batch make_batch(int count, int n, int m, int chunk) {
  using T = typename Batch::value_type;
  if constexpr (std::is_same<Batch, batched::ChunkedBatch<T, MemSpace>>::value)
    return Batch("A", count, n, m, chunk);
  else
    return Batch("A", count, n, m);
}

template <class Batch>
void check_posv(const int n, const int count, const Uplo uplo, const batched::Options& opt,
                const int chunk, const int nrhs) {
  using T = typename Batch::value_type;
  SCOPED_TRACE("n=" + std::to_string(n) + " batch=" + std::to_string(count) + " uplo=" +
               name(uplo) + " kernel=" + batched::name(opt.kernel) + " algo=" + name(opt.algo) + " tile=" + std::to_string(opt.tile) +
               " chunk=" + std::to_string(chunk) + " nrhs=" + std::to_string(nrhs));
  const Case c = make_case<T>(n, count, nrhs);
  auto a = make_batch<Batch>(count, n, n, chunk);
  auto b = make_batch<Batch>(count, n, nrhs, chunk);
  auto ha = batched::create_mirror_view(a);
  auto hb = batched::create_mirror_view(b);
  fill(ha, c.a, &uplo);
  fill(hb, c.b, nullptr);
  batched::deep_copy(a, ha);
  batched::deep_copy(b, hb);
  Kokkos::View<int*, MemSpace> info("info", count);
  Kokkos::deep_copy(info, -7);  // every entry must be written
  batched::posv(ExecSpace(), uplo, a, b, info, opt);
  ExecSpace().fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  batched::deep_copy(ha, a);
  batched::deep_copy(hb, b);
  for (int p = 0; p < count; ++p) {
    ASSERT_EQ(hi(p), c.expected[p]) << "matrix " << p;
    if (c.expected[p] != 0) {  // its right-hand side is untouched
      const Dense x = extract(hb, p);
      for (std::size_t k = 0; k < x.v.size(); ++k) ASSERT_EQ(x.v[k], c.b[p].v[k]) << "matrix " << p;
      continue;
    }
    if (!sampled(p, count)) continue;
    const Dense f = extract(ha, p);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        if (!in_triangle(uplo, i, j)) {
          ASSERT_EQ(f(i, j), kOther) << "matrix " << p;
        }
    EXPECT_LT(potrf_ratio<T>(c.a[p], factor_of(f, uplo)), 30.0) << "matrix " << p;
    EXPECT_LT(solve_ratio<T>(c.a[p], extract(hb, p), c.b[p]), 30.0) << "matrix " << p;
  }
}

template <class T>
std::vector<batched::Options> kernels_for(int n) {
  std::vector<batched::Options> v;
  auto add = [&](Kernel k, Algo a) {
    batched::Options o;
    o.kernel = k;
    o.algo = a;
    v.push_back(o);
  };
  add(Kernel::Auto, Algo::Default);
  if (n <= batched::impl::kMaxRegisterN) add(Kernel::Registers, Algo::Default);
  add(Kernel::ThreadDirect, Algo::Crout);
  add(Kernel::TeamScratch, Algo::RightLooking);
  add(Kernel::TeamRows, Algo::Default);
  add(Kernel::RowRegisters, Algo::Default);  // GPU, n <= 128; elsewhere it runs as TeamRows
  v.back().tile = n % 2 ? 16 : 32;           // both panel widths
  add(Kernel::WarpStaged, Algo::Default);    // CUDA, n <= 128; elsewhere as RowRegisters
  if (n <= 33) {
    add(Kernel::ThreadDirect, Algo::Banachiewicz);
    add(Kernel::TeamScratch, Algo::Crout);
  }
  // Tiled variants with a tile order that divides n or not (default, 4 and 5).
  add(Kernel::ThreadDirect, Algo::TiledTop);
  add(Kernel::TeamScratch, Algo::TiledLeft);
  v.push_back(v.back());
  v.back().tile = 5;
  add(Kernel::ThreadDirect, Algo::TiledRight);
  v.back().tile = 4;
  add(Kernel::ThreadDirect, Algo::TiledLeft);
  v.back().tile = 5;
  return v;
}

const int kSizes[] = {1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 64, 100, 128};

template <class T>
std::vector<int> batches_for(int n, int chunk) {
  std::vector<int> v = {1, 7, chunk - 1, chunk + 1};
  if (n <= 33) v.push_back(1000);
  return v;
}

}  // namespace

TYPED_TEST(Batched, StridedLayoutRight) {
  using T = TypeParam;
  using B = batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>;
  const int chunk = batched::default_chunk<ExecSpace, T>();
  for (const int n : kSizes)
    for (const auto& opt : kernels_for<T>(n))
      for (const int count : batches_for<T>(n, chunk))
        check_posv<B>(n, count, count % 2 ? Uplo::Lower : Uplo::Upper, opt, chunk, 2);
}

// WarpStaged is compiled for orders up to 24, 32, 40, 48, 64, 96 and 128 (the loops stop at
// n) and for exactly 20, 24, 32, 40, 48, 64, 96, 128 (16-byte copies when rows are contiguous
// up to 64): every bound and its neighbours, one and two rows per lane, a block per matrix
// above 64 (panels of 8: orders around them; sm_80 and later take the split kernel there, the
// uniform 96 the block kernel), rows and columns contiguous (Lower and
// Upper of a LayoutRight batch), and no unit stride at all (LayoutLeft).
TYPED_TEST(Batched, WarpStagedOrders) {
  using T = TypeParam;
  using R = batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>;
  using L = batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>;
  batched::Options opt;
  opt.kernel = Kernel::WarpStaged;
  for (const int n : {1, 2, 5, 18, 20, 23, 24, 25, 32, 39, 40, 41, 47, 48, 49, 63, 64, 65, 71,
                      72, 73, 88, 95, 96, 97, 100, 113, 127, 128, 129}) {
    if (kHost && n > 64) continue;  // the host runs these orders as TeamRows, tested elsewhere
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      check_posv<R>(n, n < 30 ? 1000 : 301, uplo, opt, 0, 2);
      check_posv<L>(n, 9, uplo, opt, 0, 1);
    }
  }
}

// The GPU's solve: a warp per matrix for orders 17-256 whose factor has a unit stride (its
// tiles staged through shared memory when the factor is row-major: Lower of a LayoutRight
// batch), the team solve past 256 and for LayoutLeft batches (no unit stride) and when the
// warp solve is switched off. Every 32-row block boundary, both triangles, one and three
// right-hand sides, failed matrices skipped (their B untouched). Elsewhere: the host solve.
TYPED_TEST(Batched, PotrsWarpOrders) {
  using T = TypeParam;
  using R = batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>;
  using L = batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>;
  const batched::Options opt;
  for (const int n : {17, 31, 32, 33, 63, 64, 65, 96, 97, 127, 128, 129, 160, 200, 255, 256, 257})
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) check_posv<R>(n, 9, uplo, opt, 0, n % 2 ? 1 : 3);
  for (const int n : {40, 200}) check_posv<L>(n, 5, Uplo::Lower, opt, 0, 2);
  const KnobsRestore<kolesky::impl::PotrsWarpKnobs> restore;
  kolesky::impl::PotrsWarpKnobs::get().batched = 0;
  for (const int n : {33, 200})
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) check_posv<R>(n, 9, uplo, opt, 0, 2);
}

TYPED_TEST(Batched, StridedLayoutLeft) {
  using T = TypeParam;
  using B = batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>;
  for (const int n : {1, 3, 16, 17, 33, 64})
    for (const auto& opt : kernels_for<T>(n))
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) check_posv<B>(n, 37, uplo, opt, 0, 1);
}

TYPED_TEST(Batched, Interleaved) {
  using T = TypeParam;
  using B = batched::InterleavedBatch<T, MemSpace>;
  const int chunk = batched::default_chunk<ExecSpace, T>();
  for (const int n : kSizes) {
    auto opts = kernels_for<T>(n);
    if (kHost) {
      batched::Options o;
      o.kernel = Kernel::SimdLanes;
      opts.push_back(o);
    }
    for (const auto& opt : opts)
      for (const int count : batches_for<T>(n, chunk))
        check_posv<B>(n, count, count % 2 ? Uplo::Upper : Uplo::Lower, opt, chunk, 1);
  }
}

TYPED_TEST(Batched, Chunked) {
  using T = TypeParam;
  using B = batched::ChunkedBatch<T, MemSpace>;
  const int def = batched::default_chunk<ExecSpace, T>();
  for (const int chunk : {def, 3, 2 * def})
    for (const int n : {1, 2, 5, 8, 16, 17, 32, 33, 64})
      for (const auto& opt : kernels_for<T>(n))
        for (const int count : batches_for<T>(n, chunk))
          check_posv<B>(n, count, count % 2 ? Uplo::Lower : Uplo::Upper, opt, chunk, 3);
  if (kHost) {
    batched::Options o;
    o.kernel = Kernel::SimdLanes;
    for (const int n : {1, 4, 17, 40})
      for (const int count : {def - 1, def + 1, 5 * def + 3})
        check_posv<B>(n, count, Uplo::Lower, o, 2 * def, 2);
  }
}

// SimdLanes (host) factors four columns a pass, then two, then one: a failing pivot (negative,
// or NaN in the pivot's row) at every column of orders that end in each of those, in one lane
// of an interleaved batch, with the exact info and the other lanes untouched by it.
TYPED_TEST(Batched, SimdLanesFailingColumns) {
  if constexpr (kHost) {
    using T = TypeParam;
    using B = batched::InterleavedBatch<T, MemSpace>;
    batched::Options o;
    o.kernel = Kernel::SimdLanes;
    const int chunk = batched::default_chunk<ExecSpace, T>();
    const int count = 2 * chunk + 1, bad = chunk + 1;  // a full group's lane, and the tail
    for (const int n : {4, 5, 6, 7, 9, 12, 13})
      for (int k = 0; k < n; ++k)
        for (const bool nan : {false, true})
          for (const int p_bad : {bad, count - 1}) {
            SCOPED_TRACE("n=" + std::to_string(n) + " k=" + std::to_string(k) + " nan=" +
                         std::to_string(nan) + " matrix=" + std::to_string(p_bad));
            B a("A", count, n, n);
            auto h = batched::create_mirror_view(a);
            std::vector<Dense> m;
            for (int p = 0; p < count; ++p) {
              Dense d = random_spd<T>(n, 17u * p + n);
              if (p == p_bad) {
                if (nan)
                  d(k, 0) = d(0, k) = std::numeric_limits<double>::quiet_NaN();
                else
                  d(k, k) = -1;
              }
              m.push_back(d);
            }
            fill(h, m, nullptr);
            batched::deep_copy(a, h);
            Kokkos::View<int*, MemSpace> info("info", count);
            batched::potrf(ExecSpace(), Uplo::Lower, a, info, o);
            ExecSpace().fence();
            auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
            batched::deep_copy(h, a);
            for (int p = 0; p < count; ++p) {
              // NaN in row k (column 0) reaches pivot k, or pivot 0 when k = 0.
              ASSERT_EQ(hi(p), p == p_bad ? k + 1 : 0) << "matrix " << p;
              if (p != p_bad) {
                EXPECT_LT(potrf_ratio<T>(m[p], factor_of(extract(h, p), Uplo::Lower)), 30.0)
                    << "matrix " << p;
              }
            }
          }
  } else {
    GTEST_SKIP() << "SimdLanes is the host's kernel";
  }
}

TYPED_TEST(Batched, RankThreeViewIsStrided) {
  using T = TypeParam;
  const int n = 5, count = 9;
  Kokkos::View<T***, Kokkos::LayoutRight, MemSpace> a("A", count, n, n);
  auto h = Kokkos::create_mirror_view(a);
  for (int p = 0; p < count; ++p) {
    const Dense d = random_spd<T>(n, p);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) h(p, i, j) = T(d(i, j));
  }
  Kokkos::deep_copy(a, h);
  Kokkos::View<int*, MemSpace> info("info", count);
  batched::potrf(ExecSpace(), Uplo::Lower, a, info);
  ExecSpace().fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  for (int p = 0; p < count; ++p) EXPECT_EQ(hi(p), 0);
}

TYPED_TEST(Batched, LayoutConversionsRoundTrip) {
  using T = TypeParam;
  const int n = 6, m = 4, count = 45;
  batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace> s("s", count, n, m), back("b", count, n, m);
  batched::InterleavedBatch<T, MemSpace> il("i", count, n, m);
  batched::ChunkedBatch<T, MemSpace> ch("c", count, n, m, 8);
  auto hs = batched::create_mirror_view(s);
  for (int p = 0; p < count; ++p)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) hs(p, i, j) = T(1000 * p + 10 * i + j);
  batched::deep_copy(s, hs);
  batched::copy(ExecSpace(), s, il);
  batched::copy(ExecSpace(), il, ch);
  batched::copy(ExecSpace(), ch, back);
  ExecSpace().fence();
  auto hb = batched::create_mirror_view(back);
  batched::deep_copy(hb, back);
  auto hc = batched::create_mirror_view(ch);
  batched::deep_copy(hc, ch);
  for (int p = 0; p < count; ++p)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) {
        ASSERT_EQ(hb(p, i, j), T(1000 * p + 10 * i + j));
        // Physical position in the chunked layout, as documented.
        ASSERT_EQ(hc.data.data()[(p / 8) * 8 * n * m + (i * m + j) * 8 + p % 8], hb(p, i, j));
      }
}

// Conversions through the tiled transpose (GPU): several tiles of matrices and of elements,
// partial tiles, LayoutLeft and LayoutRight strided sides.
template <class T, class Layout>
void round_trip(const int count, const int n, const int m, const int chunk = 32) {
  SCOPED_TRACE("count=" + std::to_string(count) + " n=" + std::to_string(n) + " m=" +
               std::to_string(m) + " chunk=" + std::to_string(chunk));
  batched::StridedBatch<T, Layout, MemSpace> s("s", count, n, m), back("b", count, n, m);
  batched::InterleavedBatch<T, MemSpace> il("i", count, n, m);
  batched::ChunkedBatch<T, MemSpace> ch("c", count, n, m, chunk);
  auto hs = batched::create_mirror_view(s);
  for (int p = 0; p < count; ++p)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) hs(p, i, j) = T(p % 1000 + 0.25 * i + 0.001 * j);
  batched::deep_copy(s, hs);
  batched::copy(ExecSpace(), s, il);
  batched::copy(ExecSpace(), il, back);
  batched::copy(ExecSpace(), back, ch);
  Kokkos::deep_copy(back.data, T(-1));
  batched::copy(ExecSpace(), ch, back);
  ExecSpace().fence();
  auto hb = batched::create_mirror_view(back);
  batched::deep_copy(hb, back);
  for (int p = 0; p < count; ++p)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) ASSERT_EQ(hb(p, i, j), hs(p, i, j)) << p << " " << i << " " << j;
}

TYPED_TEST(Batched, LayoutConversionsTiles) {
  using T = TypeParam;
  round_trip<T, Kokkos::LayoutRight>(100, 7, 9);
  round_trip<T, Kokkos::LayoutLeft>(100, 7, 9);
  round_trip<T, Kokkos::LayoutRight>(33, 32, 32);
  round_trip<T, Kokkos::LayoutLeft>(1, 1, 1);
  round_trip<T, Kokkos::LayoutRight>(65, 1, 3);
}

// The host's tiled copy with streaming stores (from 4 MiB up where its stores fill whole lines;
// here forced for every shape): blocks of matrices past the 2048-matrix super-block and partial
// ones, element counts that are not multiples of the tiles, chunks shorter than a block
// (several runs), and a strided side with padded rows (no contiguous runs).
TYPED_TEST(Batched, LayoutConversionsStreamingHost) {
  using T = TypeParam;
  struct Force {  // restored however the test ends
    std::size_t saved = kolesky::batched::impl::host_stream_copy_bytes();
    Force() { kolesky::batched::impl::host_stream_copy_bytes() = 0; }
    ~Force() { kolesky::batched::impl::host_stream_copy_bytes() = saved; }
  } force;
  round_trip<T, Kokkos::LayoutRight>(2100, 5, 7, 8);
  round_trip<T, Kokkos::LayoutLeft>(2100, 5, 7, 32);
  round_trip<T, Kokkos::LayoutRight>(77, 32, 32, 3);
  round_trip<T, Kokkos::LayoutLeft>(1, 1, 1, 8);
  round_trip<T, Kokkos::LayoutRight>(4097, 2, 2, 16);
  {
    const int count = 300, n = 9, m = 11;
    Kokkos::View<T***, Kokkos::LayoutRight, MemSpace> big("big", count, n + 1, m + 3);
    auto sub = Kokkos::subview(big, Kokkos::ALL, std::make_pair(0, n), std::make_pair(1, m + 1));
    batched::StridedBatch<T, Kokkos::LayoutStride, MemSpace> s(sub);
    batched::InterleavedBatch<T, MemSpace> il("i", count, n, m);
    Kokkos::deep_copy(big, T(-7));
    auto hs = Kokkos::create_mirror_view(big);
    Kokkos::deep_copy(hs, big);
    for (int p = 0; p < count; ++p)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j) hs(p, i, j + 1) = T(p + 0.5 * i + 0.125 * j);
    Kokkos::deep_copy(big, hs);
    batched::copy(ExecSpace(), s, il);
    Kokkos::deep_copy(big, T(0));
    batched::copy(ExecSpace(), il, s);
    ExecSpace().fence();
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), big);
    for (int p = 0; p < count; ++p)
      for (int i = 0; i < n + 1; ++i)
        for (int j = 0; j < m + 3; ++j) {
          const bool in = i < n && j >= 1 && j <= m;
          ASSERT_EQ(hb(p, i, j), in ? T(p + 0.5 * i + 0.125 * j - 0.125) : T(0))
              << p << " " << i << " " << j;
        }
  }
}

TYPED_TEST(Batched, EmptyAndBadArguments) {
  using T = TypeParam;
  batched::InterleavedBatch<T, MemSpace> a("A", 4, 3, 3), rect("R", 4, 3, 2), b("B", 5, 3, 1);
  batched::InterleavedBatch<T, MemSpace> empty("E", 0, 3, 3), zero("Z", 4, 0, 0);
  Kokkos::View<int*, MemSpace> info("info", 4), short_info("s", 3);
  EXPECT_NO_THROW(batched::potrf(ExecSpace(), Uplo::Lower, empty, info));
  Kokkos::deep_copy(info, 9);
  batched::potrf(ExecSpace(), Uplo::Lower, zero, info);
  ExecSpace().fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  for (int p = 0; p < 4; ++p) EXPECT_EQ(hi(p), 0);
  EXPECT_THROW(batched::potrf(ExecSpace(), Uplo::Lower, rect, info), kolesky::invalid_argument);
  EXPECT_THROW(batched::potrf(ExecSpace(), Uplo::Lower, a, short_info), kolesky::invalid_argument);
  EXPECT_THROW(batched::posv(ExecSpace(), Uplo::Lower, a, b, info), kolesky::invalid_argument);
  batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace> s("S", 8, 3, 3);
  Kokkos::View<int*, MemSpace> info8("info8", 8);
  batched::Options o;
  o.kernel = Kernel::SimdLanes;  // needs batch stride 1
  if (kHost) {
    const std::string m = [&] {
      try {
        batched::potrf(ExecSpace(), Uplo::Lower, s, info8, o);
      } catch (const kolesky::invalid_argument& e) {
        return std::string(e.what());
      }
      return std::string();
    }();
    EXPECT_NE(m.find("SimdLanes"), std::string::npos) << m;
  }
}

}  // namespace test
}  // namespace kolesky
