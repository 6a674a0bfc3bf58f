// Matrix Market reader and writer (host only): every format variant, errors with their line
// numbers, and bit-exact write -> read round trips.
#include <gtest/gtest.h>

#include <fstream>

#include <Kolesky.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef KOLESKY_TEST_DATA_DIR
#error "KOLESKY_TEST_DATA_DIR must name unit_test/data"
#endif

namespace kolesky {
namespace test {
namespace {

using Rows = std::vector<std::vector<double>>;

std::string data(const std::string& name) {
  return std::string(KOLESKY_TEST_DATA_DIR) + "/mm/" + name;
}

// A path in the test's scratch directory, distinct per process (tests may run concurrently).
std::string temp_path(const std::string& name) {
  static const std::string tag = std::to_string(std::random_device()());
  return ::testing::TempDir() + "kolesky_mm_" + tag + "_" + name;
}

template <class T = double, class Layout = Kokkos::LayoutLeft>
Kokkos::View<T**, Layout, Kokkos::HostSpace> parse(const std::string& text,
                                                    MatrixMarketHeader* h = nullptr) {
  std::istringstream in(text);
  return read_matrix_market<T, Layout>(in, "text.mtx", h);
}

// Every element, exactly (all expected values are exact in float and double).
template <class View>
void expect_matrix(const View& a, const Rows& want) {
  ASSERT_EQ(a.extent(0), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(a.extent(1), want[i].size());
    for (std::size_t j = 0; j < want[i].size(); ++j)
      EXPECT_EQ(double(a(i, j)), want[i][j]) << "at (" << i << ", " << j << ")";
  }
}

void expect_header(const MatrixMarketHeader& h, const char* format, const char* field,
                   const char* symmetry, int rows, int cols, long long entries) {
  EXPECT_EQ(h.format, format);
  EXPECT_EQ(h.field, field);
  EXPECT_EQ(h.symmetry, symmetry);
  EXPECT_EQ(h.rows, rows);
  EXPECT_EQ(h.cols, cols);
  EXPECT_EQ(h.entries, entries);
}

// f must throw matrix_market_error at `line` with `reason` in its reason.
::testing::AssertionResult fails_with(const std::function<void()>& f, long long line,
                                      const std::string& reason) {
  try {
    f();
  } catch (const matrix_market_error& e) {
    if (e.line() != line || e.reason().find(reason) == std::string::npos)
      return ::testing::AssertionFailure()
             << "got line " << e.line() << " reason \"" << e.reason() << "\"; want line "
             << line << " reason containing \"" << reason << "\"";
    const std::string what = e.what();
    const std::string prefix = "kolesky: " + e.source() + ":" + std::to_string(line) + ": ";
    if (what != prefix + e.reason())
      return ::testing::AssertionFailure() << "what() is \"" << what << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "other exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

template <class T = double>
::testing::AssertionResult text_fails_with(const std::string& text, long long line,
                                           const std::string& reason) {
  return fails_with([&] { parse<T>(text); }, line, reason);
}

template <class T = double>
::testing::AssertionResult file_fails_with(const std::string& path, long long line,
                                           const std::string& reason) {
  return fails_with([&] { read_matrix_market<T>(path); }, line, reason);
}

const Rows kSymmetric = {{4, -1, 0, 0}, {-1, 0, 0, 2.25}, {0, 0, 5.5, 0}, {0, 2.25, 0, 0}};

TEST(MatrixMarket, CoordinateRealGeneral) {
  MatrixMarketHeader h;
  auto a = read_matrix_market<double>(data("coord_general.mtx"), &h);
  static_assert(std::is_same<decltype(a),
                             Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>>::value,
                "default result type");
  expect_header(h, "coordinate", "real", "general", 3, 4, 5);
  expect_matrix(a, {{1.5, 0, 0, 7}, {0, 0, 0, 1e-3}, {0, -22.5, -0.5, 0}});
}

TEST(MatrixMarket, CoordinateInteger) {
  MatrixMarketHeader h;
  auto a = read_matrix_market<double>(data("coord_integer.mtx"), &h);
  expect_header(h, "coordinate", "integer", "general", 2, 3, 3);
  expect_matrix(a, {{7, 4, 0}, {0, 0, -12}});
}

TEST(MatrixMarket, CoordinatePatternIsOneAndRepeatsStayOne) {
  MatrixMarketHeader h;
  auto a = read_matrix_market<float>(data("coord_pattern.mtx"), &h);
  expect_header(h, "coordinate", "pattern", "general", 3, 3, 4);
  expect_matrix(a, {{1, 0, 0}, {0, 0, 1}, {1, 0, 0}});
  // Symmetric pattern: mirrored, still 1.
  expect_matrix(parse(
                    "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n1 2\n3 3\n"),
                {{0, 1, 0}, {1, 0, 0}, {0, 0, 1}});
}

TEST(MatrixMarket, CoordinateSymmetricMirrorsLowerAndUpperEntries) {
  MatrixMarketHeader h;
  // (4,2) = 2 and (2,4) = 0.25 are the same symmetric pair: summed.
  auto a = read_matrix_market<double>(data("coord_symmetric.mtx"), &h);
  expect_header(h, "coordinate", "real", "symmetric", 4, 4, 5);
  expect_matrix(a, kSymmetric);
}

TEST(MatrixMarket, CoordinateSkewSymmetric) {
  MatrixMarketHeader h;
  auto a = read_matrix_market<double>(data("coord_skew.mtx"), &h);
  expect_header(h, "coordinate", "real", "skew-symmetric", 3, 3, 2);
  expect_matrix(a, {{0, -3, 0}, {3, 0, 1.5}, {0, -1.5, 0}});
  // An upper entry mirrors with the sign flipped the other way.
  expect_matrix(parse("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 2 4\n"),
                {{0, 4}, {-4, 0}});
}

TEST(MatrixMarket, DuplicatesAreSummed) {
  auto a = read_matrix_market<double>(data("coord_duplicates.mtx"));
  expect_matrix(a, {{0, 3}, {3, 0}});
}

TEST(MatrixMarket, ArrayGeneralIsColumnMajor) {
  MatrixMarketHeader h;
  auto a = read_matrix_market<double>(data("array_general.mtx"), &h);
  expect_header(h, "array", "real", "general", 2, 3, 6);
  expect_matrix(a, {{1, 2, 3}, {4, 5, 6}});
}

TEST(MatrixMarket, ArraySymmetricIsPackedLower) {
  MatrixMarketHeader h;
  auto a = read_matrix_market<double>(data("array_symmetric.mtx"), &h);
  expect_header(h, "array", "real", "symmetric", 3, 3, 6);
  expect_matrix(a, {{11, 21, 31}, {21, 22, 32}, {31, 32, 33}});
}

TEST(MatrixMarket, ArraySkewSymmetricIsStrictlyLower) {
  MatrixMarketHeader h;
  auto a = read_matrix_market<double>(data("array_skew.mtx"), &h);
  expect_header(h, "array", "real", "skew-symmetric", 3, 3, 3);
  expect_matrix(a, {{0, -21, -31}, {21, 0, -32}, {31, 32, 0}});
  // 1 x 1 skew-symmetric: no values at all.
  expect_matrix(parse("%%MatrixMarket matrix array real skew-symmetric\n1 1\n"), {{0}});
}

TEST(MatrixMarket, ArrayInteger) {
  expect_matrix(parse("%%MatrixMarket matrix array integer general\n1 2\n-3\n+8\n"), {{-3, 8}});
}

TEST(MatrixMarket, Gzip) {
#ifdef KOLESKY_HAVE_ZLIB
  MatrixMarketHeader h;
  auto a = read_matrix_market<double>(data("coord_symmetric.mtx.gz"), &h);
  expect_header(h, "coordinate", "real", "symmetric", 4, 4, 5);
  expect_matrix(a, kSymmetric);
  // Data cut short: zlib's error, at the last line that could be read, before that line
  // is taken for the end of the input (which would be "unexpected end of file: no size line").
  EXPECT_TRUE(file_fails_with(data("truncated.mtx.gz"), 2, "gzip: unexpected end of file"));
  // Only the trailer (CRC, length) missing: every line parses, the error still comes.
  EXPECT_TRUE(
      file_fails_with(data("truncated_trailer.mtx.gz"), 8, "gzip: unexpected end of file"));
  // Writing and reading back .gz is in RoundTripIsBitExact.
#else
  EXPECT_TRUE(file_fails_with(data("coord_symmetric.mtx.gz"), 0, "configured without zlib"));
  Kokkos::View<double**, Kokkos::HostSpace> a("a", 1, 1);
  EXPECT_TRUE(fails_with([&] { write_matrix_market(temp_path("x.mtx.gz"), a); }, 0,
                         "configured without zlib"));
#endif
}

TEST(MatrixMarket, CommentsBlankLinesCaseAndCrlf) {
  const std::string text =
      "%%matrixmarket MATRIX Coordinate REAL General\r\n"
      "%\r\n"
      "\r\n"
      "   % indented comment\r\n"
      "2 2 2\r\n"
      "\t\r\n"
      "1 1 1.5\r\n"
      "% between entries\r\n"
      "2 2 -3\r\n"
      "\r\n";
  MatrixMarketHeader h;
  expect_matrix(parse(text, &h), {{1.5, 0}, {0, -3}});
  expect_header(h, "coordinate", "real", "general", 2, 2, 2);
}

TEST(MatrixMarket, EmptyMatrices) {
  auto a = parse("%%MatrixMarket matrix array real general\n0 5\n");
  EXPECT_EQ(a.extent(0), 0u);
  EXPECT_EQ(a.extent(1), 5u);
  auto b = parse("%%MatrixMarket matrix coordinate real general\n3 2 0\n");
  expect_matrix(b, {{0, 0}, {0, 0}, {0, 0}});
}

TEST(MatrixMarket, FloatReadsTheNearestFloat) {
  // 0.1 is not exact: the result must be the float nearest to 0.1, not a double rounded twice.
  auto a = parse<float>("%%MatrixMarket matrix array real general\n2 1\n0.1\n3.4028234e38\n");
  EXPECT_EQ(a(0, 0), 0.1f);
  EXPECT_EQ(a(1, 0), std::numeric_limits<float>::max());
  // The same file as double.
  auto b = parse<double>("%%MatrixMarket matrix array real general\n1 1\n1e39\n");
  EXPECT_EQ(b(0, 0), 1e39);
  // Underflow reads as the nearest subnormal or zero, not an error.
  auto c = parse<double>("%%MatrixMarket matrix array real general\n2 1\n1e-320\n1e-400\n");
  EXPECT_EQ(c(0, 0), 1e-320);
  EXPECT_EQ(c(1, 0), 0.0);
  // Magnitude is the exponent of the first significant digit, not the written exponent.
  auto d = parse<double>(
      "%%MatrixMarket matrix array real general\n4 1\n-1e-400\n0.00001e312\n"
      "123456e-325\n1000e-327\n");
  EXPECT_EQ(d(0, 0), 0.0);
  EXPECT_TRUE(std::signbit(d(0, 0)));
  EXPECT_EQ(d(1, 0), 1e307);
  EXPECT_EQ(d(2, 0), 1.23456e-320);  // a subnormal
  EXPECT_EQ(d(3, 0), 0.0);  // 1e-324 is below half the smallest subnormal
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array real general\n1 1\n0.00123e312\n", 3,
                              "out of range for double"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array real general\n1 1\n1e99999999999\n",
                              3, "out of range for double"));
}

TEST(MatrixMarket, LargeCoordinateFile) {
  // A 5500 x 5500 symmetric matrix from 60000 entry lines, against a map of the same sums.
  const int n = 5500, nnz = 60000;
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> idx(1, n);
  std::uniform_int_distribution<int> val(-1000, 1000);
  std::string text = "%%MatrixMarket matrix coordinate integer symmetric\n";
  text += std::to_string(n) + " " + std::to_string(n) + " " + std::to_string(nnz) + "\n";
  std::map<std::pair<int, int>, double> want;
  for (int k = 0; k < nnz; ++k) {
    int i = idx(gen), j = idx(gen);
    if (i < j) std::swap(i, j);
    const int v = val(gen);
    text += std::to_string(i) + " " + std::to_string(j) + " " + std::to_string(v) + "\n";
    want[{i - 1, j - 1}] += v;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto a = parse(text);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[          ] %d x %d, %d entries: %.3f s\n", n, n, nnz, s);
  double sum = 0, want_sum = 0;
  for (const auto& e : want) {
    const int i = e.first.first, j = e.first.second;
    ASSERT_EQ(a(i, j), e.second);
    ASSERT_EQ(a(j, i), e.second);
    want_sum += i == j ? e.second : 2 * e.second;
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) sum += a(i, j);
  EXPECT_EQ(sum, want_sum);  // nothing stored outside the listed entries
}

// Scalars and result layouts.
template <class P>
class MatrixMarketTyped : public ::testing::Test {};
using ScalarLayouts = ::testing::Types<
    std::pair<float, Kokkos::LayoutLeft>, std::pair<float, Kokkos::LayoutRight>,
    std::pair<double, Kokkos::LayoutLeft>, std::pair<double, Kokkos::LayoutRight>>;
TYPED_TEST_SUITE(MatrixMarketTyped, ScalarLayouts);

TYPED_TEST(MatrixMarketTyped, EveryVariant) {
  using T = typename TypeParam::first_type;
  using L = typename TypeParam::second_type;
  using Want = Kokkos::View<T**, L, Kokkos::HostSpace>;
  auto a = read_matrix_market<T, L>(data("coord_symmetric.mtx"));
  static_assert(std::is_same<decltype(a), Want>::value, "result type");
  expect_matrix(a, kSymmetric);
  auto b = read_matrix_market<T, L>(data("array_general.mtx"));
  expect_matrix(b, {{1, 2, 3}, {4, 5, 6}});
  // The layout is the one asked for: unit stride along columns (Left) or rows (Right).
  if (std::is_same<L, Kokkos::LayoutLeft>::value) {
    EXPECT_EQ(b.stride(0), 1u);
  } else {
    EXPECT_EQ(b.stride(1), 1u);
  }
  expect_matrix(read_matrix_market<T, L>(data("array_symmetric.mtx")),
                {{11, 21, 31}, {21, 22, 32}, {31, 32, 33}});
  expect_matrix(read_matrix_market<T, L>(data("coord_skew.mtx")),
                {{0, -3, 0}, {3, 0, 1.5}, {0, -1.5, 0}});
  expect_matrix(read_matrix_market<T, L>(data("coord_pattern.mtx")),
                {{1, 0, 0}, {0, 0, 1}, {1, 0, 0}});
  expect_matrix(read_matrix_market<T, L>(data("coord_integer.mtx")), {{7, 4, 0}, {0, 0, -12}});
#ifdef KOLESKY_HAVE_ZLIB
  expect_matrix(read_matrix_market<T, L>(data("coord_symmetric.mtx.gz")), kSymmetric);
#endif
}

// Random bit patterns cover every exponent, subnormals, signed zeros and infinities.
template <class T>
std::vector<T> random_values(std::size_t count, unsigned seed) {
  using Bits = typename std::conditional<sizeof(T) == 4, std::uint32_t, std::uint64_t>::type;
  std::mt19937_64 gen(seed);
  std::vector<T> v = {T(0), -T(0), T(0.1), T(1) / T(3), std::numeric_limits<T>::max(),
                      -std::numeric_limits<T>::max(), std::numeric_limits<T>::min(),
                      std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::infinity(),
                      -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::epsilon()};
  std::uniform_real_distribution<double> u(-1, 1);
  while (v.size() < count) {
    T x;
    if (v.size() % 2) {
      const Bits b = Bits(gen());
      std::memcpy(&x, &b, sizeof x);
      if (std::isnan(x)) continue;
    } else {
      x = T(u(gen));
    }
    v.push_back(x);
  }
  return v;
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TYPED_TEST(MatrixMarketTyped, RoundTripIsBitExact) {
  using T = typename TypeParam::first_type;
  using L = typename TypeParam::second_type;
  const int m = 37, n = 23;
  const auto v = random_values<T>(std::size_t(m) * n, 11);
  Kokkos::View<T**, L, Kokkos::HostSpace> a("a", m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) a(i, j) = v[std::size_t(j) * m + i];

  std::vector<std::string> paths = {temp_path("rt.mtx")};
#ifdef KOLESKY_HAVE_ZLIB
  paths.push_back(temp_path("rt.mtx.gz"));
#endif
  std::ostringstream out;
  write_matrix_market(out, a);
  std::istringstream in(out.str());
  MatrixMarketHeader h;
  std::vector<Kokkos::View<T**, L, Kokkos::HostSpace>> back = {
      read_matrix_market<T, L>(in, "<round trip>", &h)};
  expect_header(h, "array", "real", "general", m, n, std::int64_t(m) * n);
  for (const auto& p : paths) {
    write_matrix_market(p, a);
    back.push_back(read_matrix_market<T, L>(p));
    std::remove(p.c_str());
  }
  for (const auto& b : back) {
    ASSERT_EQ(b.extent(0), std::size_t(m));
    ASSERT_EQ(b.extent(1), std::size_t(n));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i)
        ASSERT_TRUE(same_bits(a(i, j), b(i, j)))
            << "(" << i << ", " << j << "): wrote " << a(i, j) << ", read " << b(i, j);
  }
}

TEST(MatrixMarket, WriterFormat) {
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> a("a", 2, 3);
  a(0, 0) = 1, a(0, 1) = 2, a(0, 2) = 0.5, a(1, 0) = -3, a(1, 1) = 1e-300, a(1, 2) = 0.1;
  std::ostringstream out;
  out.imbue(std::locale::classic());
  write_matrix_market(out, a);
  EXPECT_EQ(out.str(),
            "%%MatrixMarket matrix array real general\n2 3\n1\n-3\n2\n1e-300\n"
            "0.5\n0.10000000000000001\n");
  // Const and strided Views: a block of columns.
  Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace> c = a;
  auto s = Kokkos::subview(c, Kokkos::ALL(), std::make_pair(1, 3));
  std::ostringstream out2;
  write_matrix_market(out2, s);
  EXPECT_EQ(out2.str(), "%%MatrixMarket matrix array real general\n2 2\n2\n1e-300\n"
                        "0.5\n0.10000000000000001\n");
  // NaN is written as nan and reads back as NaN.
  Kokkos::View<float**, Kokkos::HostSpace> f("f", 1, 1);
  f(0, 0) = std::numeric_limits<float>::quiet_NaN();
  std::ostringstream out3;
  write_matrix_market(out3, f);
  std::istringstream in3(out3.str());
  EXPECT_TRUE(std::isnan(read_matrix_market<float>(in3)(0, 0)));
}

TEST(MatrixMarket, MalformedText) {
  const std::string coord = "%%MatrixMarket matrix coordinate real general\n";
  const std::string array = "%%MatrixMarket matrix array real general\n";
  // Banner.
  EXPECT_TRUE(text_fails_with("", 1, "empty input: missing %%MatrixMarket banner"));
  EXPECT_TRUE(text_fails_with("% just a comment\n2 2 0\n", 1, "missing %%MatrixMarket banner"));
  EXPECT_TRUE(text_fails_with("\n" + coord + "2 2 0\n", 1, "missing %%MatrixMarket banner"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarkt matrix coordinate real general\n", 1,
                              "garbled banner: '%%MatrixMarkt'"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix coordinate real\n2 2 0\n", 1,
                              "banner has no symmetry"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket vector coordinate real general\n", 1,
                              "unsupported object 'vector'"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix sparse real general\n", 1,
                              "unknown format 'sparse'"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix coordinate complex general\n", 1,
                              "complex matrices are not supported"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array real hermitian\n", 1,
                              "complex matrices are not supported"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix coordinate double general\n", 1,
                              "unknown field 'double'"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix coordinate real upper\n", 1,
                              "unknown symmetry 'upper'"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array pattern general\n", 1,
                              "pattern field needs the coordinate format"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array real general x\n", 1,
                              "extra token 'x' after the banner"));
  // Size line.
  EXPECT_TRUE(text_fails_with(coord + "% c\n\n", 3, "unexpected end of file: no size line"));
  EXPECT_TRUE(text_fails_with(coord + "% c\n\n3 x 2\n", 4, "column count 'x'"));
  EXPECT_TRUE(text_fails_with(coord + "3 3\n", 2, "size line has 2 numbers, expected 3"));
  EXPECT_TRUE(text_fails_with(array + "3\n", 2, "size line has 1 number, expected 2"));
  EXPECT_TRUE(text_fails_with(array + "3 3 9\n", 2, "extra token '9' after the size line"));
  EXPECT_TRUE(text_fails_with(coord + "3 -2 1\n", 2, "negative column count '-2'"));
  EXPECT_TRUE(text_fails_with(coord + "3 2 -1\n", 2, "negative entry count '-1'"));
  EXPECT_TRUE(text_fails_with(coord + "3 2.0 1\n", 2, "column count '2.0'"));
  EXPECT_TRUE(text_fails_with(coord + "2147483648 2 1\n", 2,
                              "row count '2147483648' too large (at most 2147483647)"));
  EXPECT_TRUE(text_fails_with(coord + "2 2 99999999999999999999\n", 2, "entry count"));
  // rows * cols * sizeof(double) overflows 64 bits.
  EXPECT_TRUE(text_fails_with(coord + "2147483647 2147483647 0\n", 2,
                              "2147483647 x 2147483647 double matrix does not fit"));
  // A size the input cannot describe is refused before any allocation; with the limit lifted,
  // one that exceeds any address space (16 EiB) still fails cleanly at the allocation.
  EXPECT_TRUE(text_fails_with<float>(coord + "% c\n2147483647 2147483647 0\n", 3,
                                     "refusing to allocate a 2147483647 x 2147483647 matrix"));
  {
    std::istringstream in(coord + "% c\n2147483647 2147483647 0\n");
    EXPECT_TRUE(fails_with(
        [&] { read_matrix_market<float>(in, "text.mtx", nullptr, ~std::uint64_t(0)); }, 3,
        "cannot allocate a 2147483647 x 2147483647 float matrix"));
  }
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix coordinate real symmetric\n3 4 0\n", 2,
                              "symmetric matrix must be square, size line says 3 x 4"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array real skew-symmetric\n2 1\n", 2,
                              "skew-symmetric matrix must be square"));
  // Entries.
  EXPECT_TRUE(text_fails_with(coord + "3 4 2\n1 1 1\n2 2\n", 4,
                              "entry has 2 numbers, expected 3 (row column value)"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 2\n1 1 1\n2 2 2 2\n", 4,
                              "extra token '2' after the entry"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n",
                              3,
                              "extra token '1' after the entry (pattern entries have no value)"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 2\n% c\n1 1 abc\n", 4, "value 'abc' is not a number"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 1\n0 1 1\n", 3, "row index 0 out of range [1, 3]"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 1\n1 5 1\n", 3, "column index 5 out of range [1, 4]"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 1\n-1 1 1\n", 3, "row index -1 out of range [1, 3]"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 1\n1.5 1 1\n", 3, "row index '1.5' is not an integer"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 1\n1 99999999999999999999 1\n", 3,
                              "column index 99999999999999999999 out of range [1, 4]"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 1\n1 1 1\n\n2 2 2\n", 5,
                              "more entries than the 1 declared"));
  EXPECT_TRUE(text_fails_with(coord + "3 4 3\n1 1 1\n2 2 2\n% end\n", 5,
                              "unexpected end of file: 2 of 3 declared entries read"));
  EXPECT_TRUE(text_fails_with(array + "2 2\n1\n2\n3\n", 5,
                              "unexpected end of file: 3 of 4 declared entries read"));
  EXPECT_TRUE(text_fails_with(array + "2 2\n1\n2 3\n", 4,
                              "extra token '3' after the value (array entries are one per line)"));
  EXPECT_TRUE(text_fails_with(array + "1 1\n1\n2\n", 4, "more values than the 1 of a 1 x 1"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n4\n", 6,
                              "more values than the 3 of a 2 x 2 symmetric array"));
  // Values.
  EXPECT_TRUE(
      text_fails_with(array + "2 1\n1\n1e400\n", 4, "value '1e400' out of range for double"));
  EXPECT_TRUE(text_fails_with(array + "2 1\n1\n-1e400\n", 4, "out of range for double"));
  EXPECT_TRUE(text_fails_with<float>(array + "2 1\n1\n1e39\n", 4,
                                     "value '1e39' out of range for float"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array integer general\n1 1\n1.5\n", 3,
                              "value '1.5' is not an integer (integer field)"));
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1e3\n",
                              3, "value '1e3' is not an integer"));
  EXPECT_TRUE(text_fails_with<float>(
      "%%MatrixMarket matrix array integer general\n1 1\n" + std::string("1") +
          std::string(39, '0') + "\n",
      3, "out of range for float"));
  EXPECT_TRUE(text_fails_with(
      "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 2 1\n", 3,
      "diagonal entry (2, 2) in a skew-symmetric matrix"));
  EXPECT_TRUE(text_fails_with(array + "1 1\n1\n" + std::string("2\0", 2) + "\n", 4,
                              "NUL byte in the line"));
  // Long tokens are cut short in messages.
  EXPECT_TRUE(text_fails_with(array + "1 1\n" + std::string(100, 'x') + "\n", 3,
                              "value '" + std::string(40, 'x') + "...' is not a number"));
}

TEST(MatrixMarket, MalformedFiles) {
  EXPECT_TRUE(file_fails_with(data("empty.mtx"), 1, "empty input"));
  EXPECT_TRUE(file_fails_with(data("bad_banner.mtx"), 1, "unknown symmetry 'general-ish'"));
  EXPECT_TRUE(file_fails_with(data("bad_size.mtx"), 3, "negative column count '-2'"));
  EXPECT_TRUE(file_fails_with(data("bad_index.mtx"), 4, "column index 5 out of range [1, 4]"));
  EXPECT_TRUE(file_fails_with(data("too_few_entries.mtx"), 6,
                              "unexpected end of file: 3 of 4 declared entries read"));
  EXPECT_TRUE(file_fails_with(data("too_many_entries.mtx"), 6, "more values than the 2"));
  EXPECT_TRUE(file_fails_with(data("bad_value.mtx"), 4, "value '1.0x' is not a number"));
  EXPECT_TRUE(file_fails_with(data("overflow.mtx"), 5, "value '1e400' out of range for double"));
  EXPECT_TRUE(file_fails_with<float>(data("overflow.mtx"), 4,
                                     "value '1e300' out of range for float"));
  EXPECT_TRUE(file_fails_with(data("skew_diagonal.mtx"), 4,
                              "diagonal entry (2, 2) in a skew-symmetric matrix"));
  EXPECT_TRUE(file_fails_with(data("complex.mtx"), 1, "complex matrices are not supported"));
  // The source in what() is the path.
  try {
    read_matrix_market<double>(data("bad_index.mtx"));
    FAIL() << "no exception";
  } catch (const matrix_market_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "kolesky: " + data("bad_index.mtx") + ":4: column index 5 out of range [1, 4]");
  }
}

// Inputs found by the fuzzer (unit_test/fuzz, scripts/fuzz.sh).
TEST(MatrixMarket, FuzzLongTokensAreCutShortInEveryMessage) {
  const std::string x(300, 'x'), cut = "'" + std::string(40, 'x') + "...'";
  // The whole reason, exactly: no message may carry a garbage token in full.
  auto reason = [](const std::string& text) -> std::string {
    try {
      parse(text);
    } catch (const matrix_market_error& e) {
      return e.reason();
    }
    return "no matrix_market_error";
  };
  EXPECT_EQ(reason("%%MatrixMarket " + x + " array real general\n"),
            "unsupported object " + cut + " (only 'matrix')");
  EXPECT_EQ(reason("%%MatrixMarket matrix " + x + " real general\n"),
            "unknown format " + cut + " (expected coordinate or array)");
  EXPECT_EQ(reason("%%MatrixMarket matrix array " + x + " general\n"),
            "unknown field " + cut + " (expected real, integer or pattern)");
  EXPECT_EQ(reason("%%MatrixMarket matrix array real " + x + "\n"),
            "unknown symmetry " + cut + " (expected general, symmetric or skew-symmetric)");
  EXPECT_EQ(reason("%%MatrixMarket matrix coordinate real general\n2 2 1\n-1" + x + " 1 1\n"),
            "row index -1" + std::string(38, 'x') + "... out of range [1, 2]");
  EXPECT_EQ(reason("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 " +
                   std::string(60, '9') + "\n"),
            "column index " + std::string(40, '9') + "... out of range [1, 2]");
}

TEST(MatrixMarket, FuzzEmptyMatrixWithAHugeExtent) {
  // 0 x 200007890: valid, empty, and no work proportional to the other extent.
  MatrixMarketHeader h;
  auto a = parse("%%MatrixMarket matrix array real general\n0 0000000000000200007890\n", &h);
  EXPECT_EQ(a.extent(0), 0u);
  EXPECT_EQ(a.extent(1), 200007890u);
  expect_header(h, "array", "real", "general", 0, 200007890, 0);
  auto b = parse<float, Kokkos::LayoutRight>(
      "%%MatrixMarket matrix coordinate pattern general\n2147483647 0 0\n");
  EXPECT_EQ(b.extent(0), 2147483647u);
  EXPECT_EQ(b.extent(1), 0u);
}

// A header may not claim more than the input can describe: a 40-byte file that declares a
// 40000 x 40000 matrix fails at its size line, without allocating 12.8 GB.
TEST(MatrixMarket, BoundedByTheInputsSize) {
  const std::string tiny = "%%MatrixMarket matrix coordinate real general\n40000 40000 1\n1 1 2\n";
  const std::string path = temp_path("tiny_claims_big.mtx");
  {
    std::ofstream f(path);
    f << tiny;
  }
  EXPECT_TRUE(file_fails_with(path, 2, "refusing to allocate a 40000 x 40000 matrix"));
  EXPECT_TRUE(text_fails_with(tiny, 2, "refusing to allocate"));  // a seekable stream too
  // An array file claiming more entries than its bytes can hold.
  EXPECT_TRUE(text_fails_with("%%MatrixMarket matrix array real general\n3000 3000\n1\n", 2,
                              "more than"));
  // A coordinate file may be far larger as a dense matrix than as text (sparse input).
  std::ostringstream big;
  big << "%%MatrixMarket matrix coordinate real general\n1500 1500 2000\n";
  for (int k = 0; k < 2000; ++k) big << 1 + k % 1500 << " " << 1 + (7 * k) % 1500 << " 1\n";
  EXPECT_EQ(parse(big.str()).extent(0), 1500u);
  // The caller may lower or raise the limit.
  std::istringstream in(big.str());
  EXPECT_TRUE(fails_with([&] { read_matrix_market<double>(in, "low.mtx", nullptr, 1000); }, 2,
                         "the limit is 1000 elements"));
  std::istringstream in2(tiny);
  EXPECT_TRUE(fails_with(
      [&] { read_matrix_market<float>(in2, "raised.mtx", nullptr, std::uint64_t(1) << 20); }, 2,
      "refusing"));  // 1.6e9 elements is still over a 2^20 limit
  std::remove(path.c_str());
}

TEST(MatrixMarket, HeaderUntouchedOnError) {
  MatrixMarketHeader h;
  h.rows = -7;
  EXPECT_THROW(read_matrix_market<double>(data("too_few_entries.mtx"), &h), matrix_market_error);
  EXPECT_EQ(h.rows, -7);
  EXPECT_EQ(h.format, "");
}

TEST(MatrixMarket, FilesThatCannotBeOpened) {
  const std::string missing = data("no_such_file.mtx");
  EXPECT_TRUE(file_fails_with(missing, 0, "cannot open file: No such file or directory"));
  try {
    read_matrix_market<double>(missing);
  } catch (const matrix_market_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_EQ(e.source(), missing);
  }
#ifdef KOLESKY_HAVE_ZLIB
  EXPECT_TRUE(file_fails_with(data("no_such_file.mtx.gz"), 0, "cannot open file"));
#endif
  // A directory opens but cannot be read.
  EXPECT_TRUE(file_fails_with(data(""), 0, "read error"));
  Kokkos::View<double**, Kokkos::HostSpace> a("a", 1, 1);
  EXPECT_TRUE(fails_with([&] { write_matrix_market(data("no_such_dir/x.mtx"), a); }, 0,
                         "cannot open for writing"));
}

}  // namespace
}  // namespace test
}  // namespace kolesky
