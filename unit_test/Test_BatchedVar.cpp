// Batches of mixed orders (VarBatch): potrf / potrs / posv against the oracle, orders across
// every size class and its edges (0, 1, 16/17, 32/33, 64/65, 96/97, 128/129, 200) mixed at
// random with 1-128, failing matrices in several classes, user buffers with gaps, bad shapes.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

template <class T>
class BatchedVar : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BatchedVar, Scalars);

constexpr double kOther = 4242.0;

std::vector<int> mixed_orders(const int random_count, const unsigned seed) {
  std::vector<int> v = {0, 1, 2, 3, 16, 17, 31, 32, 33, 64, 65, 96, 97, 128, 129, 200};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> u(1, 128);
  for (int p = 0; p < random_count; ++p) v.insert(v.begin() + int(gen() % (v.size() + 1)), u(gen));
  return v;
}

struct VarCase {
  std::vector<Dense> a, b;
  std::vector<int> expected;
};

// Failing matrices: a negative pivot halfway down or a NaN in the first column, in matrices
// of several classes (chosen by their order, wherever they landed).
template <class T>
VarCase make_var_case(const std::vector<int>& orders, const int nrhs) {
  VarCase c;
  bool neg[6] = {}, nan[6] = {};
  for (std::size_t p = 0; p < orders.size(); ++p) {
    const int n = orders[p];
    Dense a = random_spd<T>(n, 7919u * unsigned(p) + 31u * n);
    int e = 0;
    const int cls = n == 0 ? -1 : batched::impl::var_class(n);
    if (cls >= 0 && !neg[cls] && p % 3 == 1) {
      neg[cls] = true;
      a(n / 2, n / 2) = -1;
      e = n / 2 + 1;
    } else if (cls >= 0 && n > 1 && !nan[cls] && p % 3 == 2) {
      nan[cls] = true;
      a(n - 1, 0) = a(0, n - 1) = std::numeric_limits<double>::quiet_NaN();
      e = n;
    }
    Dense b = random_matrix(n, nrhs, 13u * unsigned(p) + n);
    for (auto& x : b.v) x = double(T(x));
    c.a.push_back(a);
    c.b.push_back(b);
    c.expected.push_back(e);
  }
  return c;
}

template <class HostBatch>
Dense extract(const HostBatch& h, const int p) {
  const int n = h.order(p), m = h.cols(p);
  Dense d(n, m);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) d(i, j) = h(p, i, j);
  return d;
}

// posv, or potrf then potrs, on a batch of the given orders; every matrix checked.
template <class T>
void check_var(const std::vector<int>& orders, const Uplo uplo, const int nrhs, const bool split) {
  SCOPED_TRACE(std::string("uplo=") + name(uplo) + " nrhs=" + std::to_string(nrhs) +
               (split ? " potrf+potrs" : " posv"));
  const VarCase c = make_var_case<T>(orders, nrhs);
  const int count = int(orders.size());
  batched::VarBatch<T, MemSpace> a("A", orders);
  batched::VarBatch<T, MemSpace> b("B", a, nrhs);
  ASSERT_EQ(a.size(), count);
  auto ha = batched::create_mirror_view(a);
  auto hb = batched::create_mirror_view(b);
  for (int p = 0; p < count; ++p)
    for (int j = 0; j < orders[p]; ++j) {
      for (int i = 0; i < orders[p]; ++i) ha(p, i, j) = T(in_triangle(uplo, i, j) ? c.a[p](i, j) : kOther);
    }
  for (int p = 0; p < count; ++p)
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < orders[p]; ++i) hb(p, i, j) = T(c.b[p](i, j));
  batched::deep_copy(a, ha);
  batched::deep_copy(b, hb);
  Kokkos::View<int*, MemSpace> info("info", count);
  Kokkos::deep_copy(info, -7);  // every entry must be written
  if (split) {
    batched::potrf(ExecSpace(), uplo, a, info);
    batched::potrs(ExecSpace(), uplo, a, b, info);
  } else {
    batched::posv(ExecSpace(), uplo, a, b, info);
  }
  ExecSpace().fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  batched::deep_copy(ha, a);
  batched::deep_copy(hb, b);
  int failed = 0;
  for (int p = 0; p < count; ++p) {
    const int n = orders[p];
    ASSERT_EQ(hi(p), c.expected[p]) << "matrix " << p << " of order " << n;
    if (c.expected[p] != 0) {  // its right-hand side is untouched
      ++failed;
      const Dense x = extract(hb, p);
      for (std::size_t k = 0; k < x.v.size(); ++k)
        ASSERT_EQ(x.v[k], c.b[p].v[k]) << "matrix " << p << " of order " << n;
      continue;
    }
    const Dense f = extract(ha, p);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        if (!in_triangle(uplo, i, j)) {
          ASSERT_EQ(f(i, j), kOther) << "matrix " << p;
        }
    EXPECT_LT(potrf_ratio<T>(c.a[p], factor_of(f, uplo)), 30.0) << "matrix " << p << " of order " << n;
    EXPECT_LT(solve_ratio<T>(c.a[p], extract(hb, p), c.b[p]), 30.0) << "matrix " << p << " of order " << n;
  }
  if (count >= 3) {
    EXPECT_GT(failed, 0);  // the failing matrices were really made
  }
}

}  // namespace

TYPED_TEST(BatchedVar, MixedOrdersPosv) {
  const auto orders = mixed_orders(150, 5u);
  check_var<TypeParam>(orders, Uplo::Lower, 2, false);
  check_var<TypeParam>(orders, Uplo::Upper, 1, false);
}

TYPED_TEST(BatchedVar, MixedOrdersPotrfThenPotrs) {
  const auto orders = mixed_orders(60, 11u);
  check_var<TypeParam>(orders, Uplo::Upper, 3, true);
  check_var<TypeParam>(orders, Uplo::Lower, 1, true);
}

// One class only, and one matrix: the launches for empty classes are skipped.
TYPED_TEST(BatchedVar, SingleClassAndSingleMatrix) {
  check_var<TypeParam>(std::vector<int>(40, 33), Uplo::Lower, 1, false);
  check_var<TypeParam>({7, 1, 12, 16, 5, 2, 9, 3, 4, 14}, Uplo::Upper, 2, false);
  check_var<TypeParam>({100, 70, 128, 97, 65, 90, 80, 120, 66, 99}, Uplo::Lower, 1, true);
  for (const int n : {1, 16, 17, 128, 129}) {
    const std::vector<int> one = {n};
    const VarCase c = make_var_case<TypeParam>(one, 1);  // p = 0: never made to fail
    batched::VarBatch<TypeParam, MemSpace> a("A", one);
    auto ha = batched::create_mirror_view(a);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) ha(0, i, j) = TypeParam(c.a[0](i, j));
    batched::deep_copy(a, ha);
    Kokkos::View<int*, MemSpace> info("info", 1);
    batched::potrf(ExecSpace(), Uplo::Lower, a, info);
    ExecSpace().fence();
    batched::deep_copy(ha, a);
    auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
    EXPECT_EQ(hi(0), 0) << n;
    EXPECT_LT(potrf_ratio<TypeParam>(c.a[0], factor_of(extract(ha, 0), Uplo::Lower)), 30.0) << n;
  }
}

// The GPU's solve by class: threads to 16, a warp per matrix to 256 (Lower reads the factor
// down its columns, Upper stages its tiles), a team per matrix when the last class passes 256;
// and the team for every class when the warp solve is switched off.
TYPED_TEST(BatchedVar, SolveAcrossWarpLimit) {
  const std::vector<int> wide = {17, 257, 5, 100, 300, 33, 129, 256, 64};
  const std::vector<int> narrow = {17, 250, 5, 100, 200, 33, 129, 256, 64};
  for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
    check_var<TypeParam>(wide, uplo, 2, true);
    check_var<TypeParam>(narrow, uplo, 1, true);
  }
  const KnobsRestore<kolesky::impl::PotrsWarpKnobs> restore;
  kolesky::impl::PotrsWarpKnobs::get().batched = 0;
  check_var<TypeParam>(narrow, Uplo::Upper, 2, true);
}

// A user's buffer: int offsets with gaps between the matrices, which must stay untouched.
TYPED_TEST(BatchedVar, WrapsUserBufferWithGaps) {
  using T = TypeParam;
  const std::vector<int> orders = {5, 0, 40, 130, 1, 17};
  const int gap = 3;
  Kokkos::View<int*, MemSpace> off("off", orders.size()), ord("ord", orders.size());
  auto hoff = Kokkos::create_mirror_view(off);
  auto hord = Kokkos::create_mirror_view(ord);
  int total = gap;
  for (std::size_t p = 0; p < orders.size(); ++p) {
    hoff(p) = total;
    hord(p) = orders[p];
    total += orders[p] * orders[p] + gap;
  }
  Kokkos::deep_copy(off, hoff);
  Kokkos::deep_copy(ord, hord);
  Kokkos::View<T*, MemSpace> values("values", total);
  auto hv = Kokkos::create_mirror_view(values);
  for (int k = 0; k < total; ++k) hv(k) = T(77);
  std::vector<Dense> mats;
  for (std::size_t p = 0; p < orders.size(); ++p) {
    const int n = orders[p];
    mats.push_back(random_spd<T>(n, 100u + unsigned(p)));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) hv(hoff(p) + i + j * n) = T(mats.back()(i, j));
  }
  Kokkos::deep_copy(values, hv);
  batched::VarBatch<T, MemSpace> a(values, off, ord);
  EXPECT_EQ(a.max_order(), 130);
  Kokkos::View<int*, MemSpace> info("info", orders.size());
  batched::potrf(ExecSpace(), Uplo::Lower, a, info);
  ExecSpace().fence();
  Kokkos::deep_copy(hv, values);
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  for (std::size_t p = 0; p < orders.size(); ++p) {
    const int n = orders[p];
    EXPECT_EQ(hi(p), 0);
    for (int k = 1; k <= gap; ++k) EXPECT_EQ(hv(hoff(p) - k), T(77)) << "gap before matrix " << p;
    Dense f(n, n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) f(i, j) = hv(hoff(p) + i + j * n);
    EXPECT_LT(potrf_ratio<T>(mats[p], factor_of(f, Uplo::Lower)), 30.0) << "matrix " << p;
  }
  EXPECT_EQ(hv(total - 1), T(77));
}

TYPED_TEST(BatchedVar, EmptyAndBadArguments) {
  using T = TypeParam;
  using VB = batched::VarBatch<T, MemSpace>;
  Kokkos::View<int*, MemSpace> info("info", 3), short_info("s", 2);
  VB empty("E", std::vector<int>{});
  EXPECT_NO_THROW(batched::potrf(ExecSpace(), Uplo::Lower, empty, info));
  auto what = [](auto f) {
    try {
      f();
    } catch (const kolesky::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(what([] { VB("A", std::vector<int>{3, -1}); }).find("negative order"),
            std::string::npos);
  VB a("A", std::vector<int>{3, 4, 5});
  EXPECT_NE(what([&] { batched::potrf(ExecSpace(), Uplo::Lower, a, short_info); }).find("info"),
            std::string::npos);
  VB other("B", std::vector<int>{3, 5, 4}, 1), fewer("F", std::vector<int>{3, 4}, 1);
  EXPECT_NE(what([&] { batched::potrs(ExecSpace(), Uplo::Lower, a, other, info); }).find("orders"),
            std::string::npos);
  EXPECT_NE(what([&] { batched::posv(ExecSpace(), Uplo::Lower, a, fewer, info); }).find("holds 2"),
            std::string::npos);
  EXPECT_NE(what([&] { batched::potrf(ExecSpace(), Uplo::Lower, other, info); }).find("square"),
            std::string::npos);
  // A matrix that runs past the end of the buffer.
  Kokkos::View<T*, MemSpace> values("v", 20);
  Kokkos::View<long*, MemSpace> off("off", 2);
  Kokkos::View<int*, MemSpace> ord("ord", 2);
  auto ho = Kokkos::create_mirror_view(off);
  auto hn = Kokkos::create_mirror_view(ord);
  ho(0) = 0, ho(1) = 9, hn(0) = 3, hn(1) = 4;  // 9 + 16 > 20
  Kokkos::deep_copy(off, ho);
  Kokkos::deep_copy(ord, hn);
  EXPECT_NE(what([&] { VB(values, off, ord); }).find("matrix 1 (4 x 4 at offset 9)"),
            std::string::npos);
  Kokkos::View<int*, MemSpace> ord3("ord3", 3);
  EXPECT_NE(what([&] { VB(values, off, ord3); }).find("offsets has 2 entries"), std::string::npos);
}

}  // namespace test
}  // namespace kolesky
