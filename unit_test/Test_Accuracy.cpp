// LAPACK-grade accuracy (issue 8): LAPACK's test ratios with its threshold 30 on the matrix
// types of xCHKPO / xCHKGE (Kolesky_TestMatrices.hpp), for every routine and variant, float
// and double, n in {0, 1, 2, 3, 5, 10, 50, 100, 500}; info on the failing types equal to
// LAPACK's for the same matrix. The largest ratio per routine and precision is printed at the
// end of the run.
#include <gtest/gtest.h>

#include <Kolesky.hpp>
#include <Kolesky_Lapack.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "Kolesky_TestMatrices.hpp"
#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace {

constexpr double kThresh = 30.0;  // LAPACK's THRESH
constexpr double kOther = 12345.0;  // marks the triangle potrf must not touch
constexpr bool kHost = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
const int kSmall[] = {0, 1, 2, 3, 5, 10, 50, 100};  // every variant
constexpr int kLarge = 500;                          // the main variants only
const int kBatchSizes[] = {0, 1, 2, 3, 5, 10, 50, 100};

template <class T>
const char* prec() {
  return std::is_same<T, float>::value ? "float" : "double";
}
template <class Layout>
const char* layout_name() {
  return std::is_same<Layout, Kokkos::LayoutLeft>::value ? "LayoutLeft" : "LayoutRight";
}

//--- the maxima table --------------------------------------------------------------------------

struct Worst {
  double ratio = 0;
  std::string where;
  long count = 0;
};
std::map<std::string, std::map<std::string, Worst>>& maxima() {
  static std::map<std::string, std::map<std::string, Worst>> m;
  return m;
}

class MaximaPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    if (maxima().empty()) return;
    std::printf("\n[accuracy] largest LAPACK test ratio per routine (threshold %.0f)\n", kThresh);
    std::printf("%-22s %12s %12s  %s\n", "routine", "float", "double", "worst case (checks)");
    for (const auto& r : maxima()) {
      const auto f = r.second.find("float"), d = r.second.find("double");
      const auto cell = [&](decltype(f) it) {
        char b[32];
        if (it == r.second.end())
          std::snprintf(b, sizeof b, "-");
        else
          std::snprintf(b, sizeof b, "%.3g", it->second.ratio);
        return std::string(b);
      };
      const Worst& w = (d != r.second.end() && (f == r.second.end() || d->second.ratio >= f->second.ratio))
                           ? d->second
                           : f->second;
      long checks = 0;
      for (const auto& p : r.second) checks += p.second.count;
      std::printf("%-22s %12s %12s  %s (%ld)\n", r.first.c_str(), cell(f).c_str(),
                  cell(d).c_str(), w.where.c_str(), checks);
    }
    std::fflush(stdout);
  }
};
[[maybe_unused]] ::testing::Environment* const kPrinter =
    ::testing::AddGlobalTestEnvironment(new MaximaPrinter);

// Records the ratio and checks it against the threshold (a NaN fails).
void check_ratio(const std::string& routine, const char* precision, const double r,
                 const std::string& where) {
  Worst& w = maxima()[routine][precision];
  ++w.count;
  if (!(r <= w.ratio)) {
    w.ratio = r;
    w.where = where;
  }
  EXPECT_LT(r, kThresh) << routine << " ratio, " << where;
}

//--- oracles (double, O(n^3) with unit-stride inner loops) ---------------------------------

bool all_finite(const Dense& d) {
  for (double x : d.v)
    if (!std::isfinite(x)) return false;
  return true;
}

// 1-norm that lets a NaN through (std::max would drop it).
double norm1_nan(const Dense& a) {
  double best = 0;
  for (int j = 0; j < a.m; ++j) {
    double s = 0;
    for (int i = 0; i < a.n; ++i) s += std::abs(a(i, j));
    if (!(s <= best)) best = s;
  }
  return best;
}

double ratio_of(double rn, double an, int n, double e) {
  if (an == 0) return rn == 0 ? 0 : HUGE_VAL;
  return rn / (n * an * e);
}

// ||A - L L^T||_1 / (n ||A||_1 eps), L lower.
template <class T>
double llt_ratio(const Dense& a, const Dense& l) {
  const int n = a.n;
  if (n == 0) return 0;
  Dense r = a;
  for (int j = 0; j < n; ++j)
    for (int k = 0; k <= j; ++k) {
      const double f = l(j, k);
      for (int i = j; i < n; ++i) r(i, j) -= l(i, k) * f;
    }
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) r(j, i) = r(i, j);
  return ratio_of(norm1_nan(r), norm1(a), n, eps<T>());
}

// ||P A - L U||_1 / (n ||A||_1 eps) for a packed factor: getrf's (L unit lower) or Crout's
// (L with its diagonal, U unit upper). `pa`: A with the interchanges applied.
template <class T>
double lu_ratio(const Dense& pa, const Dense& f, const bool crout) {
  const int n = pa.n;
  if (n == 0) return 0;
  Dense r = pa;
  for (int j = 0; j < n; ++j)
    for (int k = 0; k <= j; ++k) {
      const double u = k == j ? (crout ? 1.0 : f(j, j)) : f(k, j);
      r(k, j) -= (crout ? f(k, k) : 1.0) * u;
      for (int i = k + 1; i < n; ++i) r(i, j) -= f(i, k) * u;
    }
  return ratio_of(norm1_nan(r), norm1(pa), n, eps<T>());
}

Dense permuted(const Dense& a, const std::vector<int>& ipiv) {
  Dense p = a;
  for (int k = 0; k < a.n; ++k) {
    const int r = ipiv[k] - 1;
    if (r != k)
      for (int j = 0; j < a.m; ++j) std::swap(p(k, j), p(r, j));
  }
  return p;
}

Dense transpose(const Dense& a) {
  Dense t(a.m, a.n);
  for (int j = 0; j < a.m; ++j)
    for (int i = 0; i < a.n; ++i) t(j, i) = a(i, j);
  return t;
}

template <class T>
int lapack_potrf_info(const Dense& a, Uplo uplo) {
#ifdef KOLESKY_HAVE_LAPACK
  std::vector<T> c(a.v.begin(), a.v.end());
  return baselines::lapack_potrf(uplo, a.n, c.data(), std::max(1, a.n));
#else
  (void)a, (void)uplo;
  return -2;
#endif
}
template <class T>
int lapack_getrf_info(const Dense& a) {
#ifdef KOLESKY_HAVE_LAPACK
  std::vector<T> c(a.v.begin(), a.v.end());
  std::vector<int> p(std::max(1, a.n));
  return baselines::lapack_getrf(a.n, c.data(), std::max(1, a.n), p.data());
#else
  (void)a;
  return -2;
#endif
}

// What a correct factorization must report: the designed info (LAPACK must agree), or
// LAPACK's where only it can tell. -2: no LAPACK and no designed value.
int expected_info(const gen::Matrix& m, const int lapack) {
  if (m.info != gen::kFromLapack) {
    if (lapack != -2) {
      EXPECT_EQ(lapack, m.info) << "LAPACK on " << m.type << " n=" << m.a.n;
    }
    return m.info;
  }
  return lapack;
}

// getrf's info: as expected_info, except on the rank-deficient type (see gen::Matrix::rank).
void check_lu_info(const gen::Matrix& m, const int info, const int lapack) {
  if (m.rank < 0) {
    const int want = expected_info(m, lapack);
    if (want != -2) {
      ASSERT_EQ(info, want);
    }
    return;
  }
  EXPECT_TRUE(lapack == -2 || lapack == 0 || lapack > m.rank) << "LAPACK's info " << lapack;
  ASSERT_TRUE(info == 0 || info > m.rank) << "info " << info << " inside the rank " << m.rank
                                          << " (LAPACK: " << lapack << ")";
}

//--- potrf / potrs / posv ------------------------------------------------------------------

struct PotrfVariant {
  std::string name;
  PotrfOptions opt;
  int max_n;
};

std::vector<PotrfVariant> potrf_variants() {
  std::vector<PotrfVariant> v;
  const auto add = [&](const std::string& nm, Algo a, Blas b, int nb, int max_n, int cut = 128) {
    PotrfOptions o;
    o.algo = a;
    o.blas = b;
    o.block_size = nb;
    o.tail_cutoff = cut;
    v.push_back({nm, o, max_n});
  };
  // The main variants (n = 500 too).
  add("Default", Algo::Default, Blas::Auto, 0, kLarge);
  add("Blocked/Vendor", Algo::Blocked, Blas::Vendor, 0, kLarge);
  add("Blocked/Native", Algo::Blocked, Blas::Native, 0, kLarge);
  add("BlockedLeft/Vendor", Algo::BlockedLeft, Blas::Vendor, 0, kLarge);
  add("BlockedLeft/Native", Algo::BlockedLeft, Blas::Native, 0, kLarge);
  add("Recursive/Vendor", Algo::Recursive, Blas::Vendor, 0, kLarge);
  add("Recursive/Native", Algo::Recursive, Blas::Native, 0, kLarge);
  // Several panels at the small sizes.
  add("Blocked/Vendor/nb16", Algo::Blocked, Blas::Vendor, 16, 100);
  add("Blocked/Native/nb16", Algo::Blocked, Blas::Native, 16, 100);
  add("BlockedLeft/Vendor/nb16", Algo::BlockedLeft, Blas::Vendor, 16, 100);
  add("BlockedLeft/Native/nb7", Algo::BlockedLeft, Blas::Native, 7, 100);
  // One team.
  add("Crout", Algo::Crout, Blas::Auto, 0, 100);
  add("Banachiewicz", Algo::Banachiewicz, Blas::Auto, 0, 100);
  add("RightLooking", Algo::RightLooking, Blas::Auto, 0, 100);
  add("TiledRight", Algo::TiledRight, Blas::Auto, 0, 100);
  add("TiledLeft/nb5", Algo::TiledLeft, Blas::Auto, 5, 100);
  add("TiledTop", Algo::TiledTop, Blas::Auto, 0, 100);
  // The documents' column schemes (a launch or more per column: small n only).
  add("ColumnKernels", Algo::ColumnKernels, Blas::Auto, 0, 100);
  add("RightLookingKernels", Algo::RightLookingKernels, Blas::Auto, 0, 100);
  add("CroutCutoff", Algo::CroutCutoff, Blas::Auto, 0, 100);
  add("CroutCutoff/cut16", Algo::CroutCutoff, Blas::Auto, 0, 100, 16);
  return v;
}

template <class T>
class Accuracy : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Accuracy, Scalars);

// One potrf call: info as expected (LAPACK's), the other triangle untouched, the ratio.
template <class T, class Layout>
void potrf_case(const gen::Matrix& m, const Uplo uplo, const PotrfVariant& v, const int lapack) {
  const int n = m.a.n;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + name(uplo) + " " +
                            layout_name<Layout>() + " " + v.name + " " + prec<T>();
  SCOPED_TRACE(where);
  auto d = to_device<T, Layout>(m.a, uplo, kOther);
  const int info = potrf(ExecSpace(), uplo, d, v.opt);
  const int want = expected_info(m, lapack);
  if (m.info == gen::kFromLapack && lapack > 0) {
    // 0.1/eps types that rounding made indefinite for LAPACK: any info > 0 is right; an
    // info of 0 must come with a good factor.
    if (info > 0) return;
  } else if (want != -2) {
    ASSERT_EQ(info, want);
  }
  if (info != 0) return;
  const Dense f = to_host(d);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      if (!in_triangle(uplo, i, j)) {
        ASSERT_EQ(f(i, j), kOther) << "wrote (" << i << "," << j << ")";
      }
  const Dense l = factor_of(f, uplo);
  ASSERT_TRUE(all_finite(l)) << "info = 0 with a non-finite factor";
  check_ratio("potrf", prec<T>(), llt_ratio<T>(m.a, l), where);
}

template <class T>
void potrf_sweep(const int n, const std::vector<gen::Spd>& types, bool main_only) {
  for (const gen::Spd t : types) {
    if (!gen::applicable(t, n)) continue;
    const gen::Matrix m = gen::spd<T>(t, n, 11);
    const int lapack[2] = {lapack_potrf_info<T>(m.a, Uplo::Lower),
                           lapack_potrf_info<T>(m.a, Uplo::Upper)};
    for (const auto& v : potrf_variants()) {
      if (n > v.max_n || (main_only && v.max_n < kLarge)) continue;
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        const int li = lapack[uplo == Uplo::Lower ? 0 : 1];
        potrf_case<T, Kokkos::LayoutLeft>(m, uplo, v, li);
        potrf_case<T, Kokkos::LayoutRight>(m, uplo, v, li);
      }
    }
  }
}

TYPED_TEST(Accuracy, PotrfEveryTypeVariantUploLayout) {
  using T = TypeParam;
  const std::vector<gen::Spd> all(std::begin(gen::kAllSpd), std::end(gen::kAllSpd));
  for (const int n : kSmall) potrf_sweep<T>(n, all, false);
}

TYPED_TEST(Accuracy, PotrfLargeMainVariants) {
  using T = TypeParam;
  potrf_sweep<T>(kLarge,
                 {gen::Spd::WellConditioned, gen::Spd::CondSqrtOneSmall, gen::Spd::CondEpsGeometric,
                  gen::Spd::NearOverflow, gen::Spd::ZeroMiddle, gen::Spd::NegativeLast},
                 true);
}

// Solve checks shared by the single-matrix solvers.
template <class T>
void check_solution(const char* routine, const gen::Matrix& m, const Dense& a_op,
                    const gen::System& s, const Dense& x, const std::string& where) {
  ASSERT_TRUE(all_finite(x)) << routine << ": non-finite solution, " << where;
  check_ratio(routine, prec<T>(), solve_ratio<T>(a_op, x, s.b), where);
  if (m.cond_inf > 0)  // well conditioned: the forward error too (xGET04)
    check_ratio(std::string(routine) + " |x-xt|", prec<T>(),
                gen::error_ratio<T>(x, s.x, m.cond_inf), where);
}

bool solvable(const gen::Matrix& m, int lapack) {
  return m.info == 0 || (m.info == gen::kFromLapack && lapack == 0);
}

template <class T, class ALayout, class BLayout>
void posv_case(const gen::Matrix& m, const Uplo uplo, const PotrfVariant& v, bool rank1) {
  const int n = m.a.n;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + name(uplo) + " A " +
                            layout_name<ALayout>() + " B " + (rank1 ? "rank-1" : layout_name<BLayout>()) +
                            " " + v.name + " " + prec<T>();
  SCOPED_TRACE(where);
  const gen::System s = gen::rhs<T>(m.a, rank1 ? 1 : 3, false, 21u + n);
  auto a = to_device<T, ALayout>(m.a, uplo, kOther);
  Dense x;
  if (rank1) {
    Kokkos::View<T*, MemSpace> b("b", n);
    auto h = Kokkos::create_mirror_view(b);
    for (int i = 0; i < n; ++i) h(i) = T(s.b(i, 0));
    Kokkos::deep_copy(b, h);
    ASSERT_EQ(posv(ExecSpace(), uplo, a, b, v.opt), 0);
    x = to_host(b);
  } else {
    auto b = to_device<T, BLayout>(s.b);
    ASSERT_EQ(posv(ExecSpace(), uplo, a, b, v.opt), 0);
    x = to_host(b);
  }
  check_solution<T>("posv", m, m.a, s, x, where);
}

template <class T, class Layout>
void potrs_case(const gen::Matrix& m, const Uplo uplo, const Blas blas) {
  const int n = m.a.n;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + name(uplo) + " " +
                            layout_name<Layout>() + (blas == Blas::Vendor ? " Vendor " : " Native ") +
                            prec<T>();
  SCOPED_TRACE(where);
  const gen::System s = gen::rhs<T>(m.a, 4, false, 31u + n);
  auto a = to_device<T, Layout>(m.a, uplo, kOther);
  ASSERT_EQ(potrf(ExecSpace(), uplo, a), 0);
  auto b = to_device<T, Layout>(s.b);
  potrs(ExecSpace(), uplo, a, b, blas);
  check_solution<T>("potrs", m, m.a, s, to_host(b), where);
}

template <class T>
void solve_sweep(const int n, const std::vector<gen::Spd>& types) {
  std::vector<PotrfVariant> vs;
  for (const auto& v : potrf_variants())
    if (v.name == "Default" || v.name == "Crout" ||
        (n <= 100 && (v.name == "Blocked/Native/nb16" || v.name == "BlockedLeft/Vendor/nb16")) ||
        (n > 100 && v.name == "Recursive/Vendor"))
      vs.push_back(v);
  for (const gen::Spd t : types) {
    if (!gen::applicable(t, n)) continue;
    const gen::Matrix m = gen::spd<T>(t, n, 12);
    if (!solvable(m, lapack_potrf_info<T>(m.a, Uplo::Lower))) continue;
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      for (const auto& v : vs) {
        if (v.name == "Crout" && n > 100) continue;
        posv_case<T, Kokkos::LayoutLeft, Kokkos::LayoutLeft>(m, uplo, v, false);
        posv_case<T, Kokkos::LayoutRight, Kokkos::LayoutRight>(m, uplo, v, false);
        posv_case<T, Kokkos::LayoutRight, Kokkos::LayoutLeft>(m, uplo, v, true);
      }
      for (const Blas b : {Blas::Vendor, Blas::Native}) {
        potrs_case<T, Kokkos::LayoutLeft>(m, uplo, b);
        potrs_case<T, Kokkos::LayoutRight>(m, uplo, b);
      }
    }
  }
}

const std::vector<gen::Spd> kSolveTypes = {
    gen::Spd::Diagonal,         gen::Spd::WellConditioned,  gen::Spd::CondSqrtGeometric,
    gen::Spd::CondSqrtOneSmall, gen::Spd::CondSqrtOneLarge, gen::Spd::CondEpsGeometric,
    gen::Spd::CondEpsOneSmall,  gen::Spd::CondEpsOneLarge,  gen::Spd::NearUnderflow,
    gen::Spd::NearOverflow};

TYPED_TEST(Accuracy, PotrsPosv) {
  using T = TypeParam;
  for (const int n : kSmall) solve_sweep<T>(n, kSolveTypes);
  solve_sweep<T>(kLarge, {gen::Spd::WellConditioned, gen::Spd::CondSqrtGeometric,
                          gen::Spd::NearUnderflow});
}

// dsposv: float factor, double refinement, double fallback; double accuracy either way.
template <class Layout>
void posv_mixed_case(const gen::Matrix& m, const Uplo uplo, const int lapack) {
  const int n = m.a.n;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + name(uplo) + " " +
                            layout_name<Layout>() + " double";
  SCOPED_TRACE(where);
  const gen::System s = gen::rhs<double>(m.a, 2, false, 41u + n);
  auto a = to_device<double, Layout>(m.a, uplo, kOther);
  auto b = to_device<double, Layout>(s.b);
  Kokkos::View<double**, Layout, MemSpace> x("x", n, 2);
  PosvMixedOptions o;
  o.factor = MixedFactor::Float;  // the refinement on every device (Auto may take posv's path)
  const auto r = posv_mixed(ExecSpace(), uplo, a, b, x, o);
  const int want = expected_info(m, lapack);
  if (want != -2) {
    ASSERT_EQ(r.info, want);
  }
  if (r.info != 0) return;
  if (r.iterations >= 0) {  // refined: A unchanged
    const Dense after = to_host(a);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(after(i, j), in_triangle(uplo, i, j) ? m.a(i, j) : kOther) << i << "," << j;
  }
  const Dense bh = to_host(b);  // B is not changed
  for (std::size_t k = 0; k < bh.v.size(); ++k) {
    ASSERT_EQ(bh.v[k], s.b.v[k]);
  }
  check_solution<double>("posv_mixed", m, m.a, s, to_host(x), where);
}

TEST(AccuracyMixed, PosvMixed) {
  for (const int n : {0, 1, 2, 3, 5, 10, 50, 100, kLarge})
    for (const gen::Spd t : gen::kAllSpd) {
      if (!gen::applicable(t, n)) continue;
      if (n == kLarge && t != gen::Spd::WellConditioned && t != gen::Spd::CondSqrtOneSmall &&
          t != gen::Spd::CondEpsGeometric && t != gen::Spd::ZeroMiddle)
        continue;
      const gen::Matrix m = gen::spd<double>(t, n, 13);
      // Refinement from float needs cond < ~1/eps_float; past that it falls back.
      for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
        const int lapack = lapack_potrf_info<double>(m.a, uplo);
        if (m.info == gen::kFromLapack && lapack != 0) continue;
        posv_mixed_case<Kokkos::LayoutLeft>(m, uplo, lapack);
        posv_mixed_case<Kokkos::LayoutRight>(m, uplo, lapack);
      }
    }
}

//--- getrf / getrs / gesv / getrf_nopiv -----------------------------------------------------

struct LuVariant {
  std::string name;
  LuOptions opt;
  int max_n;
};

std::vector<LuVariant> getrf_variants() {
  std::vector<LuVariant> v;
  const auto add = [&](const std::string& nm, Blas b, int base, int panel, int max_n) {
    LuOptions o;
    o.blas = b;
    o.block_size = base;
    o.panel_size = panel;
    v.push_back({nm, o, max_n});
  };
  add("Vendor", Blas::Vendor, 0, 0, kLarge);
  add("Native", Blas::Native, 0, 0, kLarge);
  add("Native/base4/panel16", Blas::Native, 4, 16, 100);
  add("Vendor/base8/panel24", Blas::Vendor, 8, 24, 100);
  add("Auto/base1/onepanel", Blas::Auto, 1, -1, 100);
  return v;
}

template <class T, class Layout>
void getrf_case(const gen::Matrix& m, const LuVariant& v, const int lapack) {
  const int n = m.a.n;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + layout_name<Layout>() +
                            " " + v.name + " " + prec<T>();
  SCOPED_TRACE(where);
  auto d = to_device<T, Layout>(m.a);
  Kokkos::View<int*, MemSpace> ipiv("ipiv", n);
  const int info = getrf(ExecSpace(), d, ipiv, v.opt);
  check_lu_info(m, info, lapack);
  const Dense f = to_host(d), ph = to_host(ipiv);
  std::vector<int> piv(n);
  for (int k = 0; k < n; ++k) {
    piv[k] = int(ph(k, 0));
    ASSERT_GE(piv[k], k + 1);
    ASSERT_LE(piv[k], n);
  }
  ASSERT_TRUE(all_finite(f)) << "non-finite factor of a finite matrix";
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) {
      ASSERT_LE(std::abs(f(i, j)), 1.0) << "|L| <= 1";
    }
  // The factorization is completed whatever info is (LAPACK's xCHKGE checks it too).
  check_ratio("getrf", prec<T>(), lu_ratio<T>(permuted(m.a, piv), f, false), where);
}

template <class T>
void getrf_sweep(const int n, const std::vector<gen::Ge>& types, bool main_only) {
  for (const gen::Ge t : types) {
    if (!gen::applicable(t, n)) continue;
    const gen::Matrix m = gen::general<T>(t, n, 14);
    const int lapack = lapack_getrf_info<T>(m.a);
    for (const auto& v : getrf_variants()) {
      if (n > v.max_n || (main_only && v.max_n < kLarge)) continue;
      getrf_case<T, Kokkos::LayoutLeft>(m, v, lapack);
      getrf_case<T, Kokkos::LayoutRight>(m, v, lapack);
    }
  }
}

TYPED_TEST(Accuracy, GetrfEveryTypeVariantLayout) {
  using T = TypeParam;
  const std::vector<gen::Ge> all(std::begin(gen::kAllGe), std::end(gen::kAllGe));
  for (const int n : kSmall) getrf_sweep<T>(n, all, false);
  getrf_sweep<T>(kLarge,
                 {gen::Ge::WellConditioned, gen::Ge::CondSqrtOneSmall, gen::Ge::CondEpsGeometric,
                  gen::Ge::NearUnderflow, gen::Ge::ZeroColumnMiddle, gen::Ge::RankDeficient},
                 true);
}

template <class T, class Layout>
void getrs_case(const gen::Matrix& m, const Trans trans, const LuVariant& v) {
  const int n = m.a.n;
  const bool tr = trans == Trans::Yes;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + layout_name<Layout>() +
                            (tr ? " Trans " : " NoTrans ") + v.name + " " + prec<T>();
  SCOPED_TRACE(where);
  const gen::System s = gen::rhs<T>(m.a, 3, tr, 51u + n);
  auto d = to_device<T, Layout>(m.a);
  Kokkos::View<int*, MemSpace> ipiv("ipiv", n);
  ASSERT_EQ(getrf(ExecSpace(), d, ipiv, v.opt), 0);
  auto b = to_device<T, Kokkos::LayoutLeft>(s.b);
  getrs(ExecSpace(), trans, d, ipiv, b, v.opt);
  check_solution<T>("getrs", m, tr ? transpose(m.a) : m.a, s, to_host(b), where);
}

template <class T, class Layout>
void gesv_case(const gen::Matrix& m, const bool rank1) {
  const int n = m.a.n;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + layout_name<Layout>() +
                            (rank1 ? " rank-1 " : " rank-2 ") + prec<T>();
  SCOPED_TRACE(where);
  const gen::System s = gen::rhs<T>(m.a, rank1 ? 1 : 2, false, 61u + n);
  auto d = to_device<T, Layout>(m.a);
  Kokkos::View<int*, MemSpace> ipiv("ipiv", n);
  Dense x;
  if (rank1) {
    Kokkos::View<T*, MemSpace> b("b", n);
    auto h = Kokkos::create_mirror_view(b);
    for (int i = 0; i < n; ++i) h(i) = T(s.b(i, 0));
    Kokkos::deep_copy(b, h);
    ASSERT_EQ(gesv(ExecSpace(), d, ipiv, b), 0);
    x = to_host(b);
  } else {
    auto b = to_device<T, Layout>(s.b);
    ASSERT_EQ(gesv(ExecSpace(), d, ipiv, b), 0);
    x = to_host(b);
  }
  check_solution<T>("gesv", m, m.a, s, x, where);
}

template <class T>
void lu_solve_sweep(const int n, const std::vector<gen::Ge>& types) {
  for (const gen::Ge t : types) {
    if (!gen::applicable(t, n)) continue;
    const gen::Matrix m = gen::general<T>(t, n, 15);
    if (m.info != 0) continue;  // singular types: no solution to check
    for (const auto& v : getrf_variants()) {
      if (n > v.max_n || (n == kLarge && v.name != "Vendor")) continue;
      for (const Trans tr : {Trans::No, Trans::Yes}) {
        getrs_case<T, Kokkos::LayoutLeft>(m, tr, v);
        getrs_case<T, Kokkos::LayoutRight>(m, tr, v);
      }
    }
    gesv_case<T, Kokkos::LayoutLeft>(m, false);
    gesv_case<T, Kokkos::LayoutRight>(m, true);
  }
}

const std::vector<gen::Ge> kLuSolveTypes = {
    gen::Ge::WellConditioned, gen::Ge::CondSqrtGeometric, gen::Ge::CondSqrtOneSmall,
    gen::Ge::CondSqrtOneLarge, gen::Ge::CondEpsGeometric, gen::Ge::CondEpsOneSmall,
    gen::Ge::CondEpsOneLarge, gen::Ge::NearUnderflow, gen::Ge::NearOverflow,
    gen::Ge::DiagonallyDominant};

TYPED_TEST(Accuracy, GetrsGesv) {
  using T = TypeParam;
  for (const int n : kSmall) lu_solve_sweep<T>(n, kLuSolveTypes);
  lu_solve_sweep<T>(kLarge, {gen::Ge::WellConditioned, gen::Ge::CondEpsOneSmall});
}

template <class T, class Layout>
void nopiv_case(const gen::Matrix& m, const LuOptions& opt, const std::string& vname) {
  const int n = m.a.n;
  const std::string where = m.type + " n=" + std::to_string(n) + " " + layout_name<Layout>() +
                            " " + vname + " " + prec<T>();
  SCOPED_TRACE(where);
  auto d = to_device<T, Layout>(m.a);
  ASSERT_EQ(getrf_nopiv(ExecSpace(), d, opt), 0);
  const Dense f = to_host(d);
  ASSERT_TRUE(all_finite(f));
  check_ratio("getrf_nopiv", prec<T>(), lu_ratio<T>(m.a, f, true), where);
  const gen::System s = gen::rhs<T>(m.a, 2, false, 71u + n);
  auto b = to_device<T, Layout>(s.b);
  getrs_nopiv(ExecSpace(), d, b, opt);
  check_solution<T>("getrs_nopiv", m, m.a, s, to_host(b), where);
}

TYPED_TEST(Accuracy, GetrfNopivStableTypes) {
  using T = TypeParam;
  for (const int n : {0, 1, 2, 3, 5, 10, 50, 100, kLarge})
    for (const gen::Ge t : gen::kAllGe) {
      if (!gen::nopiv_stable(t) || !gen::applicable(t, n)) continue;
      const gen::Matrix m = gen::general<T>(t, n, 16);
      for (const Blas b : {Blas::Vendor, Blas::Native})
        for (const int base : {0, 8}) {
          if (n == kLarge && base != 0) continue;
          LuOptions o;
          o.blas = b;
          o.block_size = base;
          const std::string vn = std::string(b == Blas::Vendor ? "Vendor" : "Native") +
                                 "/base" + std::to_string(base);
          nopiv_case<T, Kokkos::LayoutLeft>(m, o, vn);
          nopiv_case<T, Kokkos::LayoutRight>(m, o, vn);
        }
    }
}

//--- batched -------------------------------------------------------------------------------

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
std::string batch_name() {
  using T = typename Batch::value_type;
  if (std::is_same<Batch, batched::ChunkedBatch<T, MemSpace>>::value) return "ChunkedBatch";
  if (std::is_same<Batch, batched::InterleavedBatch<T, MemSpace>>::value) return "InterleavedBatch";
  if (std::is_same<Batch, batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>>::value)
    return "StridedBatch<Left>";
  return "StridedBatch<Right>";
}

template <class HostBatch>
Dense extract(const HostBatch& h, int p) {
  Dense d(h.rows(), h.cols());
  for (int j = 0; j < h.cols(); ++j)
    for (int i = 0; i < h.rows(); ++i) d(i, j) = h(p, i, j);
  return d;
}

// Every kernel (and variant) that applies at order n for this batch layout.
template <class Batch>
std::vector<batched::Options> batched_kernels(int n) {
  std::vector<batched::Options> v;
  const auto add = [&](Kernel k, Algo a, int tile = 0) {
    batched::Options o;
    o.kernel = k;
    o.algo = a;
    o.tile = tile;
    v.push_back(o);
  };
  add(Kernel::Auto, Algo::Default);
  if (n <= batched::impl::kMaxRegisterN) add(Kernel::Registers, Algo::Default);
  for (const Kernel k : {Kernel::ThreadDirect, Kernel::TeamScratch}) {
    add(k, Algo::Crout);
    add(k, Algo::Banachiewicz);
    add(k, Algo::RightLooking);
    add(k, Algo::TiledRight);
    add(k, Algo::TiledLeft, 5);
    add(k, Algo::TiledTop);
  }
  add(Kernel::TeamRows, Algo::Default);
  if (!kHost && n <= 128) {
    add(Kernel::RowRegisters, Algo::Default, 16);
    add(Kernel::RowRegisters, Algo::Default, 32);
  }
  if (!kHost && n <= 128) add(Kernel::WarpStaged, Algo::Default, 0);
  using T = typename Batch::value_type;
  if (kHost && !std::is_same<Batch, batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>>::value &&
      !std::is_same<Batch, batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>>::value)
    add(Kernel::SimdLanes, Algo::Default);
  return v;
}

std::string kernel_name(const batched::Options& o) {
  return std::string(batched::name(o.kernel)) + "/" + name(o.algo) +
         (o.tile ? "/tile" + std::to_string(o.tile) : "");
}

// A batch holding every applicable SPD type at order n, twice (two seeds).
template <class T>
std::vector<gen::Matrix> spd_batch(int n) {
  std::vector<gen::Matrix> ms;
  for (const unsigned seed : {17u, 18u})
    for (const gen::Spd t : gen::kAllSpd)
      if (gen::applicable(t, n) || n == 0) ms.push_back(gen::spd<T>(n == 0 ? gen::Spd::WellConditioned : t, n, seed));
  return ms;
}

template <class Batch>
void batched_potrf_case(const std::vector<gen::Matrix>& ms, const std::vector<int>& lapack,
                        const Uplo uplo, const batched::Options& opt, const bool solve) {
  using T = typename Batch::value_type;
  const int count = int(ms.size()), n = count ? ms[0].a.n : 0, nrhs = 2;
  const std::string where = "n=" + std::to_string(n) + " batch=" + std::to_string(count) + " " +
                            batch_name<Batch>() + " " + name(uplo) + " " + kernel_name(opt) + " " +
                            prec<T>();
  SCOPED_TRACE(where);
  auto a = make_batch<Batch>(count, n, n);
  auto b = make_batch<Batch>(count, n, nrhs);
  auto ha = batched::create_mirror_view(a);
  auto hb = batched::create_mirror_view(b);
  std::vector<gen::System> sys;
  for (int p = 0; p < count; ++p) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) ha(p, i, j) = T(in_triangle(uplo, i, j) ? ms[p].a(i, j) : kOther);
    sys.push_back(gen::rhs<T>(ms[p].a, nrhs, false, 81u + p));
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) hb(p, i, j) = T(sys[p].b(i, j));
  }
  batched::deep_copy(a, ha);
  batched::deep_copy(b, hb);
  Kokkos::View<int*, MemSpace> info("info", count);
  Kokkos::deep_copy(info, -7);  // every entry must be written
  if (solve)
    batched::posv(ExecSpace(), uplo, a, b, info, opt);
  else
    batched::potrf(ExecSpace(), uplo, a, info, opt);
  ExecSpace().fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  batched::deep_copy(ha, a);
  batched::deep_copy(hb, b);
  for (int p = 0; p < count; ++p) {
    const gen::Matrix& m = ms[p];
    SCOPED_TRACE("matrix " + std::to_string(p) + " " + m.type);
    const int want = expected_info(m, lapack[p]);
    if (!(m.info == gen::kFromLapack && lapack[p] > 0 && hi(p) > 0) && want != -2) {
      ASSERT_EQ(hi(p), want);
    }
    if (hi(p) != 0) {
      if (solve) {  // its right-hand side untouched
        for (int j = 0; j < nrhs; ++j)
          for (int i = 0; i < n; ++i) ASSERT_EQ(double(hb(p, i, j)), sys[p].b(i, j));
      }
      continue;
    }
    const Dense f = extract(ha, p);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        if (!in_triangle(uplo, i, j)) {
          ASSERT_EQ(f(i, j), kOther) << "wrote (" << i << "," << j << ")";
        }
    const Dense l = factor_of(f, uplo);
    ASSERT_TRUE(all_finite(l));
    check_ratio("batched potrf", prec<T>(), llt_ratio<T>(m.a, l), m.type + " " + where);
    if (solve) check_solution<T>("batched posv", m, m.a, sys[p], extract(hb, p), m.type + " " + where);
  }
}

template <class Batch>
void batched_potrf_sweep() {
  using T = typename Batch::value_type;
  for (const int n : kBatchSizes) {
    const auto ms = spd_batch<T>(n);
    std::vector<int> lapack[2];
    for (const auto& m : ms) {
      lapack[0].push_back(lapack_potrf_info<T>(m.a, Uplo::Lower));
      lapack[1].push_back(lapack_potrf_info<T>(m.a, Uplo::Upper));
    }
    int k = 0;
    for (const auto& opt : batched_kernels<Batch>(n)) {
      const Uplo uplo = k++ % 2 ? Uplo::Upper : Uplo::Lower;
      batched_potrf_case<Batch>(ms, lapack[uplo == Uplo::Lower ? 0 : 1], uplo, opt, false);
      if (opt.kernel == Kernel::Auto || opt.kernel == Kernel::ThreadDirect)
        batched_potrf_case<Batch>(ms, lapack[uplo == Uplo::Lower ? 1 : 0],
                                  uplo == Uplo::Lower ? Uplo::Upper : Uplo::Lower, opt, true);
    }
  }
}

TYPED_TEST(Accuracy, BatchedPotrfPosvEveryLayoutKernel) {
  using T = TypeParam;
  batched_potrf_sweep<batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>>();
  batched_potrf_sweep<batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>>();
  batched_potrf_sweep<batched::InterleavedBatch<T, MemSpace>>();
  batched_potrf_sweep<batched::ChunkedBatch<T, MemSpace>>();
}

// batched::potrs after batched::potrf on the solvable types.
template <class Batch>
void batched_potrs_case(const int n, const Uplo uplo) {
  using T = typename Batch::value_type;
  std::vector<gen::Matrix> ms;
  for (const gen::Spd t : kSolveTypes)
    if (gen::applicable(t, n)) {
      gen::Matrix m = gen::spd<T>(t, n, 19);
      if (solvable(m, lapack_potrf_info<T>(m.a, uplo))) ms.push_back(std::move(m));
    }
  const int count = int(ms.size()), nrhs = 3;
  const std::string where = "n=" + std::to_string(n) + " " + batch_name<Batch>() + " " +
                            name(uplo) + " " + prec<T>();
  SCOPED_TRACE(where);
  auto a = make_batch<Batch>(count, n, n);
  auto b = make_batch<Batch>(count, n, nrhs);
  auto ha = batched::create_mirror_view(a);
  auto hb = batched::create_mirror_view(b);
  std::vector<gen::System> sys;
  for (int p = 0; p < count; ++p) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) ha(p, i, j) = T(ms[p].a(i, j));
    sys.push_back(gen::rhs<T>(ms[p].a, nrhs, false, 91u + p));
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) hb(p, i, j) = T(sys[p].b(i, j));
  }
  batched::deep_copy(a, ha);
  batched::deep_copy(b, hb);
  Kokkos::View<int*, MemSpace> info("info", count);
  batched::potrf(ExecSpace(), uplo, a, info);
  batched::potrs(ExecSpace(), uplo, a, b);
  ExecSpace().fence();
  auto hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), info);
  batched::deep_copy(hb, b);
  for (int p = 0; p < count; ++p) {
    ASSERT_EQ(hi(p), 0) << ms[p].type;
    check_solution<T>("batched potrs", ms[p], ms[p].a, sys[p], extract(hb, p), ms[p].type + " " + where);
  }
}

TYPED_TEST(Accuracy, BatchedPotrs) {
  using T = TypeParam;
  for (const int n : kBatchSizes)
    for (const Uplo uplo : {Uplo::Lower, Uplo::Upper}) {
      batched_potrs_case<batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>>(n, uplo);
      batched_potrs_case<batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>>(n, uplo);
      batched_potrs_case<batched::InterleavedBatch<T, MemSpace>>(n, uplo);
      batched_potrs_case<batched::ChunkedBatch<T, MemSpace>>(n, uplo);
    }
}

// batched::getrf + getrs on every general type (twice); info per matrix against LAPACK;
// the solve on the nonsingular ones, the others' right-hand sides untouched.
template <class Batch, class PivLayout>
void batched_lu_case(const int n, const Trans trans) {
  using T = typename Batch::value_type;
  std::vector<gen::Matrix> ms;
  for (const unsigned seed : {23u, 24u})
    for (const gen::Ge t : gen::kAllGe)
      if (gen::applicable(t, n) || n == 0)
        ms.push_back(gen::general<T>(n == 0 ? gen::Ge::WellConditioned : t, n, seed));
  const int count = int(ms.size()), nrhs = 2;
  const bool tr = trans == Trans::Yes;
  const std::string where = "n=" + std::to_string(n) + " " + batch_name<Batch>() + " ipiv " +
                            layout_name<PivLayout>() + (tr ? " Trans " : " NoTrans ") + prec<T>();
  SCOPED_TRACE(where);
  auto a = make_batch<Batch>(count, n, n);
  auto b = make_batch<Batch>(count, n, nrhs);
  auto ha = batched::create_mirror_view(a);
  auto hb = batched::create_mirror_view(b);
  std::vector<gen::System> sys;
  for (int p = 0; p < count; ++p) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) ha(p, i, j) = T(ms[p].a(i, j));
    sys.push_back(gen::rhs<T>(ms[p].a, nrhs, tr, 101u + p));
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) hb(p, i, j) = T(sys[p].b(i, j));
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
    const gen::Matrix& m = ms[p];
    SCOPED_TRACE("matrix " + std::to_string(p) + " " + m.type);
    check_lu_info(m, hi(p), lapack_getrf_info<T>(m.a));
    std::vector<int> piv(n);
    for (int k = 0; k < n; ++k) {
      piv[k] = hp(p, k);
      ASSERT_GE(piv[k], k + 1);
      ASSERT_LE(piv[k], n);
    }
    const Dense f = extract(ha, p);
    ASSERT_TRUE(all_finite(f));
    check_ratio("batched getrf", prec<T>(), lu_ratio<T>(permuted(m.a, piv), f, false),
                m.type + " " + where);
    if (hi(p) != 0) {
      for (int j = 0; j < nrhs; ++j)
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(double(hb(p, i, j)), sys[p].b(i, j));
        }
      continue;
    }
    if (m.info != 0) continue;  // rank deficient by rounding: no solution to check
    check_solution<T>("batched getrs", m, tr ? transpose(m.a) : m.a, sys[p], extract(hb, p),
                      m.type + " " + where);
  }
}

TYPED_TEST(Accuracy, BatchedGetrfGetrsEveryLayout) {
  using T = TypeParam;
  for (const int n : kBatchSizes)
    for (const Trans t : {Trans::No, Trans::Yes}) {
      batched_lu_case<batched::StridedBatch<T, Kokkos::LayoutRight, MemSpace>, Kokkos::LayoutRight>(n, t);
      batched_lu_case<batched::StridedBatch<T, Kokkos::LayoutLeft, MemSpace>, Kokkos::LayoutLeft>(n, t);
      batched_lu_case<batched::InterleavedBatch<T, MemSpace>, Kokkos::LayoutLeft>(n, t);
      batched_lu_case<batched::ChunkedBatch<T, MemSpace>, Kokkos::LayoutRight>(n, t);
    }
}

}  // namespace
}  // namespace test
}  // namespace kolesky
