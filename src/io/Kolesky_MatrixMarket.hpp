// Matrix Market files to dense host Views and back (host code).
//
// Reader: "%%MatrixMarket matrix <coordinate|array> <real|integer|pattern>
// <general|symmetric|skew-symmetric>" (case-insensitive) into a zero-initialised dense
// View<T**, Layout, HostSpace>, T float or double. Files ending in ".gz" are decompressed
// with zlib when Kolesky was configured with it (KOLESKY_HAVE_ZLIB).
//   - Comment lines (first non-blank character '%') and blank lines are skipped anywhere
//     after the banner; line numbers in errors count every physical line from 1.
//   - array: column-major; symmetric stores the lower triangle column by column
//     (n(n+1)/2 values), skew-symmetric the strictly lower one (n(n-1)/2 values).
//   - coordinate: 1-based "i j [value]". Duplicate entries are summed (pattern entries are 1,
//     so a repeated pattern entry stays 1). Symmetric and skew-symmetric files mirror each
//     off-diagonal entry (a(j,i) = a(i,j), resp. -a(i,j)); the format stores the lower
//     triangle, but an entry in the upper one is accepted and mirrored the same way, so
//     (i,j) and (j,i) both given count as a duplicate. A skew-symmetric diagonal entry is
//     an error.
//   - Values are decimal floating-point ("inf", "nan" and a leading '+' accepted), read
//     with '.' whatever the global locale (where <charconv> has floating point; the strtod
//     fallback follows LC_NUMERIC); a finite value that overflows T is an error, one that
//     underflows reads as the nearest subnormal or zero.
// Every problem throws kolesky::matrix_market_error with the 1-based line (0: the file
// could not be opened, read or written) and the reason; nothing half-read is returned and
// *header is written only on success. Missing entries are reported at the last line read.
//
// Writer: "array real general", column-major, max_digits10 significant digits, so reading
// the file back gives the same bits. A path ending in ".gz" is written compressed (zlib).
#pragma once
#include "Kolesky_Config.hpp"

#include <Kokkos_Core.hpp>

#include "common/Kolesky_Profiling.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <istream>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <system_error>
#include <type_traits>

#ifdef KOLESKY_HAVE_ZLIB
#include <zlib.h>
#endif

// Floating-point <charconv> (GCC 11+, MSVC); otherwise strtod / snprintf, which follow the
// C locale's decimal point. KOLESKY_MM_NO_CHARCONV forces the fallback (for testing it).
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L && \
    !defined(KOLESKY_MM_NO_CHARCONV)
#define KOLESKY_IMPL_MM_CHARCONV 1
#else
#define KOLESKY_IMPL_MM_CHARCONV 0
#endif

namespace kolesky {

struct MatrixMarketHeader {
  std::string format;    // "coordinate" | "array"
  std::string field;     // "real" | "integer" | "pattern"
  std::string symmetry;  // "general" | "symmetric" | "skew-symmetric"
  int rows = 0, cols = 0;
  // Stored entries: coordinate, the count on the size line; array, rows * cols or the
  // packed triangle's size.
  long long entries = 0;
};

// The most elements read_matrix_market allocates unless told otherwise: a header may not claim
// a matrix the input could not describe. kMatrixMarketAutoLimit derives the bound from the
// input's size when it is known (a file, or a seekable stream): an array file needs >= 2
// bytes per stored entry and a coordinate file >= 4, and the dense result may hold at most
// 4096 elements per input byte (a sparse coordinate file of 1 MB may still fill a 64k x 64k
// matrix); gzip input counts 1032 bytes per compressed byte (deflate's largest ratio). With
// no size known, 2^28 elements. Pass a number to allow more (or less).
constexpr std::uint64_t kMatrixMarketAutoLimit = 0;

class matrix_market_error : public std::runtime_error {
 public:
  matrix_market_error(const std::string& source, long long line, const std::string& reason)
      : std::runtime_error("kolesky: " + source + ":" + std::to_string(line) + ": " + reason),
        source_(source),
        line_(line),
        reason_(reason) {}
  const std::string& source() const noexcept { return source_; }
  long long line() const noexcept { return line_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string source_;
  long long line_;
  std::string reason_;
};

namespace impl {
namespace mm {

template <class T>
constexpr const char* type_name() {
  return std::is_same<T, float>::value ? "float" : "double";
}

inline bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

inline std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline bool ends_with_gz(const std::string& path) {
  return path.size() >= 3 && lower(path.substr(path.size() - 3)) == ".gz";
}

inline std::string errno_text(int e) {
  return e ? ": " + std::system_category().message(e) : std::string();
}

// Tokens go into messages quoted and cut short, so a garbage line cannot flood them.
inline std::string cut(const char* b, const char* e) {
  constexpr std::ptrdiff_t max = 40;
  return e - b > max ? std::string(b, b + max) + "..." : std::string(b, e);
}
inline std::string quote(const char* b, const char* e) { return "'" + cut(b, e) + "'"; }
inline std::string quote(const std::string& s) { return quote(s.data(), s.data() + s.size()); }

// Physical lines of the input, with the tokens of the current one. `stream_error`, when
// given, is set by the stream buffer when the input ended on an error (zlib) rather than
// at its end; it is reported at the last line read, before that line is parsed.
class Lines {
 public:
  Lines(std::istream& in, const std::string& source, const std::string* stream_error)
      : in_(in), source_(source), stream_error_(stream_error) {}

  // The next raw line; false at the end of the input.
  bool next_raw() {
    errno = 0;
    const bool got = bool(std::getline(in_, buf_));
    if (got) ++line_;
    if (in_.bad()) fail("read error" + errno_text(errno));
    // c_str() scanning would silently drop whatever follows a NUL.
    if (got && buf_.find('\0') != std::string::npos)
      fail("NUL byte in the line (not a text file?)");
    if (in_.eof() && stream_error_ && !stream_error_->empty()) fail(*stream_error_);
    if (!got) return false;
    p_ = buf_.c_str();
    return true;
  }
  // The next line that is neither blank nor a comment.
  bool next_data() {
    while (next_raw()) {
      skip();
      if (*p_ != '\0' && *p_ != '%') return true;
    }
    return false;
  }
  // The next token of the current line into [b, e); false when there is none left.
  bool token(const char*& b, const char*& e) {
    skip();
    if (*p_ == '\0') return false;
    b = p_;
    while (*p_ != '\0' && !is_blank(*p_)) ++p_;
    e = p_;
    return true;
  }
  void expect_end(const char* what) {
    const char *b = nullptr, *e = nullptr;
    if (token(b, e)) fail("extra token " + quote(b, e) + " " + what);
  }
  long long line() const { return line_; }
  [[noreturn]] void fail(const std::string& reason) const { fail_at(line_, reason); }
  [[noreturn]] void fail_at(long long line, const std::string& reason) const {
    throw matrix_market_error(source_, line, reason);
  }

 private:
  void skip() {
    while (is_blank(*p_)) ++p_;
  }
  std::istream& in_;
  const std::string& source_;
  const std::string* stream_error_;
  std::string buf_;
  const char* p_ = "";
  long long line_ = 0;
};

// A non-negative decimal integer (an optional '+' allowed); false if the token is not one.
inline bool parse_count(const char* b, const char* e, long long& v, bool& too_big) {
  too_big = false;
  if (b < e && *b == '+') ++b;
  if (b == e || *b < '0' || *b > '9') return false;
  const auto r = std::from_chars(b, e, v);
  if (r.ptr != e) return false;
  too_big = r.ec == std::errc::result_out_of_range;
  return true;
}

#if KOLESKY_IMPL_MM_CHARCONV
// from_chars reports overflow and underflow alike: tell them apart by the decimal exponent of
// the first significant digit of the (valid, nonzero) token, > 0 for overflow.
inline bool overflows(const char* p, const char* e) {
  if (*p == '-') ++p;
  bool seen = false, frac = false;
  long long int_digits = 0, lead_zeros = 0, x = 0;
  for (; p < e && *p != 'e' && *p != 'E'; ++p) {
    if (*p == '.') {
      frac = true;
    } else if (!seen && *p == '0') {
      lead_zeros += frac;
    } else {
      seen = true;
      int_digits += !frac;
    }
  }
  if (p < e) {
    const bool neg = *++p == '-';
    p += *p == '-' || *p == '+';
    for (; p < e && x < 1000000000; ++p) x = 10 * x + (*p - '0');  // saturates
    if (neg) x = -x;
  }
  return (int_digits > 0 ? int_digits - 1 : -(lead_zeros + 1)) + x > 0;
}
#endif

template <class T>
T parse_value(Lines& lines, const char* b, const char* e, bool integer) {
  if (integer) {
    const char* p = b + (*b == '+' || *b == '-');
    bool digits = p < e;
    for (; p < e; ++p) digits = digits && *p >= '0' && *p <= '9';
    if (!digits) lines.fail("value " + quote(b, e) + " is not an integer (integer field)");
  }
  T v = T(0);
#if KOLESKY_IMPL_MM_CHARCONV
  // from_chars: locale-independent and several times faster than strtod; it takes no '+'.
  const char* p = b + (*b == '+' && e - b > 1 && b[1] != '-' && b[1] != '+');
  const auto r = std::from_chars(p, e, v);
  if (r.ptr != e) lines.fail("value " + quote(b, e) + " is not a number");
  if (r.ec == std::errc::result_out_of_range) {
    if (overflows(p, e))
      lines.fail("value " + quote(b, e) + " out of range for " + type_name<T>());
    v = *p == '-' ? -T(0) : T(0);  // below half the smallest subnormal
  }
#else
  // The token is followed by a blank or the line's terminating '\0', so strto* stops there.
  char* end = nullptr;
  errno = 0;
  if constexpr (std::is_same<T, float>::value)
    v = std::strtof(b, &end);
  else
    v = std::strtod(b, &end);
  if (end != e) lines.fail("value " + quote(b, e) + " is not a number");
  if (errno == ERANGE && std::isinf(v))
    lines.fail("value " + quote(b, e) + " out of range for " + type_name<T>());
#endif
  return v;
}

// Banner and size line, checked; the allocation is left to the caller.
// Input bytes (0: unknown) and the element limit (kMatrixMarketAutoLimit: from the bytes).
struct ReadLimits {
  std::uint64_t bytes = 0;
  std::uint64_t max_elements = 0;
};

inline MatrixMarketHeader read_header(Lines& lines, std::size_t elem_size,
                                      const char* elem_name, const ReadLimits& lim = {}) {
  MatrixMarketHeader h;
  const char *b = nullptr, *e = nullptr;
  const std::string usage =
      " (expected '%%MatrixMarket matrix <coordinate|array> <real|integer|pattern> "
      "<general|symmetric|skew-symmetric>')";
  if (!lines.next_raw()) lines.fail_at(1, "empty input: missing %%MatrixMarket banner");
  if (!lines.token(b, e) || std::string(b, e).compare(0, 2, "%%") != 0)
    lines.fail("missing %%MatrixMarket banner" + usage);
  if (lower(std::string(b, e)) != "%%matrixmarket")
    lines.fail("garbled banner: " + quote(b, e) + usage);
  std::string tok[4];
  const char* what[4] = {"object", "format", "field", "symmetry"};
  for (int k = 0; k < 4; ++k) {
    if (!lines.token(b, e)) lines.fail(std::string("banner has no ") + what[k] + usage);
    tok[k] = lower(std::string(b, e));
  }
  lines.expect_end("after the banner");
  if (tok[0] != "matrix") lines.fail("unsupported object " + quote(tok[0]) + " (only 'matrix')");
  if (tok[1] != "coordinate" && tok[1] != "array")
    lines.fail("unknown format " + quote(tok[1]) + " (expected coordinate or array)");
  if (tok[2] == "complex" || tok[3] == "hermitian")
    lines.fail("complex matrices are not supported");
  if (tok[2] != "real" && tok[2] != "integer" && tok[2] != "pattern")
    lines.fail("unknown field " + quote(tok[2]) + " (expected real, integer or pattern)");
  if (tok[3] != "general" && tok[3] != "symmetric" && tok[3] != "skew-symmetric")
    lines.fail("unknown symmetry " + quote(tok[3]) +
               " (expected general, symmetric or skew-symmetric)");
  if (tok[2] == "pattern" && tok[1] == "array")
    lines.fail("the pattern field needs the coordinate format");
  h.format = tok[1];
  h.field = tok[2];
  h.symmetry = tok[3];

  const bool coord = h.format == "coordinate";
  const int want = coord ? 3 : 2;
  const char* names[3] = {"row count", "column count", "entry count"};
  long long v[3] = {0, 0, 0};
  if (!lines.next_data())
    lines.fail("unexpected end of file: no size line (expected '" +
               std::string(coord ? "rows columns entries" : "rows columns") + "')");
  for (int k = 0; k < want; ++k) {
    bool too_big = false;
    if (!lines.token(b, e))
      lines.fail("size line has " + std::to_string(k) + " number" + (k == 1 ? "" : "s") +
                 ", expected " + std::to_string(want) +
                 (coord ? " (rows columns entries)" : " (rows columns)"));
    if (*b == '-' && e - b > 1 && b[1] >= '0' && b[1] <= '9')
      lines.fail(std::string("negative ") + names[k] + " " + quote(b, e) + " on the size line");
    if (!parse_count(b, e, v[k], too_big))
      lines.fail(std::string(names[k]) + " " + quote(b, e) +
                 " on the size line is not a non-negative integer");
    if (too_big || (k < 2 && v[k] > INT_MAX))
      lines.fail(std::string(names[k]) + " " + quote(b, e) + " too large (at most " +
                 std::to_string(k < 2 ? (long long)INT_MAX : LLONG_MAX) + ")");
  }
  lines.expect_end("after the size line");
  h.rows = int(v[0]);
  h.cols = int(v[1]);
  // rows, cols <= INT_MAX, so their product fits 64 bits; the bytes need not fit size_t.
  const auto count = std::uint64_t(v[0]) * std::uint64_t(v[1]);
  if (count > std::uint64_t(std::numeric_limits<std::size_t>::max() / elem_size))
    lines.fail(std::to_string(v[0]) + " x " + std::to_string(v[1]) + " " + elem_name +
               " matrix does not fit in memory addresses");
  if (h.symmetry != "general" && h.rows != h.cols)
    lines.fail(h.symmetry + " matrix must be square, size line says " + std::to_string(v[0]) +
               " x " + std::to_string(v[1]));
  const long long n = v[0];
  h.entries = coord ? v[2]
                    : h.symmetry == "general"   ? n * v[1]
                    : h.symmetry == "symmetric" ? n * (n + 1) / 2
                                                : (n > 0 ? n * (n - 1) / 2 : 0);
  // Refuse, before allocating, what the input cannot hold.
  const std::string dims = std::to_string(v[0]) + " x " + std::to_string(v[1]);
  if (lim.max_elements == 0 && lim.bytes > 0) {
    const std::uint64_t per = coord ? 4 : 2;
    if (std::uint64_t(h.entries) > lim.bytes / per + 16)
      lines.fail("the size line claims " + std::to_string(h.entries) + " stored entries, more "
                 "than " + std::to_string(lim.bytes) + " bytes of input can hold");
  }
  const std::uint64_t cap =
      lim.max_elements != 0 ? lim.max_elements
      : lim.bytes > 0 ? std::max<std::uint64_t>(std::uint64_t(1) << 24,
                                                lim.bytes > (std::uint64_t(1) << 50) / 4096
                                                    ? (std::uint64_t(1) << 50)
                                                    : lim.bytes * 4096)
                      : std::uint64_t(1) << 28;
  if (count > cap)
    lines.fail("refusing to allocate a " + dims + " matrix (" + std::to_string(count) +
               " elements) for " +
               (lim.bytes > 0 ? std::to_string(lim.bytes) + " bytes of input" : std::string("this input")) +
               ": the limit is " + std::to_string(cap) +
               " elements (pass max_elements to read_matrix_market to allow more)");
  return h;
}

template <class T, class Layout>
Kokkos::View<T**, Layout, Kokkos::HostSpace> read_body(Lines& lines, MatrixMarketHeader& h,
                                                       const ReadLimits& lim) {
  using View = Kokkos::View<T**, Layout, Kokkos::HostSpace>;
  h = read_header(lines, sizeof(T), type_name<T>(), lim);
  View a;
  try {
    a = View("kolesky::read_matrix_market", std::size_t(h.rows), std::size_t(h.cols));
  } catch (const std::exception&) {
    // Kokkos reports a failed allocation as std::bad_alloc or (3.x) std::runtime_error.
    lines.fail("cannot allocate a " + std::to_string(h.rows) + " x " + std::to_string(h.cols) +
               " " + type_name<T>() + " matrix");
  }
  const bool integer = h.field == "integer";
  const bool pattern = h.field == "pattern";
  const bool sym = h.symmetry == "symmetric";
  const bool skew = h.symmetry == "skew-symmetric";
  const long long total = h.entries;
  const char *b = nullptr, *e = nullptr;

  auto missing = [&](long long k) {
    lines.fail("unexpected end of file: " + std::to_string(k) + " of " + std::to_string(total) +
               " declared entries read");
  };
  if (h.format == "coordinate") {
    const int want = pattern ? 2 : 3;
    const char* what = pattern ? " (row column)" : " (row column value)";
    long long k = 0;
    while (lines.next_data()) {
      if (k == total)
        lines.fail("more entries than the " + std::to_string(total) +
                   " declared on the size line");
      long long idx[2];
      const long long bound[2] = {h.rows, h.cols};
      const char* names[2] = {"row", "column"};
      T v = T(1);
      for (int t = 0; t < want; ++t) {
        if (!lines.token(b, e))
          lines.fail("entry has " + std::to_string(t) + " number" + (t == 1 ? "" : "s") +
                     ", expected " + std::to_string(want) + what);
        if (t < 2) {
          bool too_big = false;
          const bool neg = *b == '-' && e - b > 1 && b[1] >= '0' && b[1] <= '9';
          if (!neg && !parse_count(b, e, idx[t], too_big))
            lines.fail(std::string(names[t]) + " index " + quote(b, e) + " is not an integer");
          if (neg || too_big || idx[t] < 1 || idx[t] > bound[t])
            lines.fail(std::string(names[t]) + " index " + cut(b, e) +
                       " out of range [1, " + std::to_string(bound[t]) + "]");
        } else {
          v = parse_value<T>(lines, b, e, integer);
        }
      }
      lines.expect_end(pattern ? "after the entry (pattern entries have no value)"
                               : "after the entry");
      const auto i = std::size_t(idx[0] - 1), j = std::size_t(idx[1] - 1);
      if (skew && i == j)
        lines.fail("diagonal entry (" + std::to_string(idx[0]) + ", " + std::to_string(idx[1]) +
                   ") in a skew-symmetric matrix");
      if (pattern) {
        a(i, j) = T(1);
        if (sym && i != j) a(j, i) = T(1);
        if (skew) a(j, i) = T(-1);
      } else {
        a(i, j) += v;
        if (sym && i != j) a(j, i) += v;
        if (skew) a(j, i) -= v;
      }
      ++k;
    }
    if (k < total) missing(k);
  } else {
    // Column-major; symmetric forms walk the lower triangle, row i from j (or j + 1) down.
    const std::size_t m = std::size_t(h.rows);
    const std::size_t first = skew ? 1 : 0;
    std::size_t i = first, j = 0;
    long long k = 0;
    while (lines.next_data()) {
      if (k == total)
        lines.fail("more values than the " + std::to_string(total) + " of a " +
                   std::to_string(h.rows) + " x " + std::to_string(h.cols) + " " + h.symmetry +
                   " array");
      lines.token(b, e);  // next_data() guarantees one
      const T v = parse_value<T>(lines, b, e, integer);
      lines.expect_end("after the value (array entries are one per line)");
      a(i, j) = v;
      if (sym && i != j) a(j, i) = v;
      if (skew) a(j, i) = -v;
      if (++i == m) {
        ++j;
        i = sym ? j : skew ? j + 1 : 0;
      }
      ++k;
    }
    if (k < total) missing(k);
  }
  return a;
}

template <class T, class Layout>
Kokkos::View<T**, Layout, Kokkos::HostSpace> read(std::istream& in, const std::string& source,
                                                  MatrixMarketHeader& h,
                                                  const std::string* stream_error = nullptr,
                                                  ReadLimits lim = {}) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "read_matrix_market: T must be float or double");
  static_assert(std::is_same<Layout, Kokkos::LayoutLeft>::value ||
                    std::is_same<Layout, Kokkos::LayoutRight>::value,
                "read_matrix_market: Layout must be LayoutLeft or LayoutRight");
  if (lim.bytes == 0 && lim.max_elements == 0) {  // a seekable stream: the bytes left in it
    const auto here = in.tellg();
    if (here != std::streampos(-1) && in.seekg(0, std::ios::end)) {
      const auto end = in.tellg();
      if (end != std::streampos(-1) && end >= here) lim.bytes = std::uint64_t(end - here);
      in.seekg(here);
    }
    in.clear();
  }
  Lines lines(in, source, stream_error);
  return read_body<T, Layout>(lines, h, lim);
}

#ifdef KOLESKY_HAVE_ZLIB
// A read-only streambuf over a gzFile; a zlib error (corrupt or truncated data) ends the
// input and is kept for Lines to report.
class GzInBuf : public std::streambuf {
 public:
  GzInBuf(gzFile f, const std::string& path) : f_(f), path_(path), buf_(new char[kSize]) {
    gzbuffer(f_, 1 << 17);
  }
  ~GzInBuf() override { gzclose(f_); }
  GzInBuf(const GzInBuf&) = delete;
  GzInBuf& operator=(const GzInBuf&) = delete;
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!error_.empty()) return traits_type::eof();
    const int n = gzread(f_, buf_.get(), kSize);
    int code = Z_OK;
    const char* msg = gzerror(f_, &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      // zlib prefixes the path, which the error's source already names.
      std::string m = msg && *msg ? msg : "read error";
      if (m.compare(0, path_.size() + 2, path_ + ": ") == 0) m.erase(0, path_.size() + 2);
      error_ = "gzip: " + m;
    }
    if (n <= 0) return traits_type::eof();
    setg(buf_.get(), buf_.get(), buf_.get() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  static constexpr unsigned kSize = 1u << 16;
  gzFile f_;
  std::string path_;
  std::unique_ptr<char[]> buf_;
  std::string error_;
};
#endif

// Chunked formatting of the array: `sink(data, size)` returns false on a write error.
template <class View, class Sink>
bool write_array(const View& a, Sink&& sink) {
  using T = typename View::non_const_value_type;
  constexpr int digits = std::numeric_limits<T>::max_digits10;
  constexpr std::size_t chunk = 1 << 16, slack = 64;  // slack > the longest "%.17g\n"
  std::unique_ptr<char[]> buf(new char[chunk + slack]);
  std::size_t used = 0;
  // Not ostream <<: the stream's locale must not change the file's format.
  used += std::snprintf(buf.get(), slack, "%%%%MatrixMarket matrix array real general\n");
  used += std::snprintf(buf.get() + used, slack, "%llu %llu\n",
                        (unsigned long long)a.extent(0), (unsigned long long)a.extent(1));
  for (std::size_t j = 0; j < a.extent(1); ++j)
    for (std::size_t i = 0; i < a.extent(0); ++i) {
#if KOLESKY_IMPL_MM_CHARCONV
      // Same text as "%.*g" (the standard says so), four times faster than snprintf.
      char* p = std::to_chars(buf.get() + used, buf.get() + used + slack - 1, T(a(i, j)),
                              std::chars_format::general, digits)
                    .ptr;
      *p++ = '\n';
      used = std::size_t(p - buf.get());
#else
      used += std::snprintf(buf.get() + used, slack, "%.*g\n", digits, double(a(i, j)));
#endif
      if (used >= chunk) {
        if (!sink(buf.get(), used)) return false;
        used = 0;
      }
    }
  return sink(buf.get(), used);
}

template <class View>
void check_writable(const View& a, const std::string& target) {
  static_assert(Kokkos::is_view<View>::value, "write_matrix_market: a must be a Kokkos::View");
  static_assert(View::rank == 2, "write_matrix_market: a must be a rank-2 View");
  using T = typename View::non_const_value_type;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "write_matrix_market: the value type must be float or double");
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible,
      "write_matrix_market: a must be host-accessible (deep_copy it to a host mirror)");
  // The reader refuses extents above INT_MAX; do not write what cannot be read back.
  if (a.extent(0) > std::size_t(INT_MAX) || a.extent(1) > std::size_t(INT_MAX))
    throw matrix_market_error(target, 0,
                              "cannot write a " + std::to_string(a.extent(0)) + " x " +
                                  std::to_string(a.extent(1)) + " matrix: extent above INT_MAX");
}

}  // namespace mm
}  // namespace impl

template <class T, class Layout = Kokkos::LayoutLeft>
Kokkos::View<T**, Layout, Kokkos::HostSpace> read_matrix_market(
    std::istream& in, const std::string& source_name = "<stream>",
    MatrixMarketHeader* header = nullptr,
    const std::uint64_t max_elements = kMatrixMarketAutoLimit) {
  const impl::Region region("kolesky::read_matrix_market");
  MatrixMarketHeader h;
  impl::mm::ReadLimits lim;
  lim.max_elements = max_elements;
  auto a = impl::mm::read<T, Layout>(in, source_name, h, nullptr, lim);
  if (header) *header = h;
  return a;
}

template <class T, class Layout = Kokkos::LayoutLeft>
Kokkos::View<T**, Layout, Kokkos::HostSpace> read_matrix_market(
    const std::string& path, MatrixMarketHeader* header = nullptr,
    const std::uint64_t max_elements = kMatrixMarketAutoLimit) {
  const impl::Region region("kolesky::read_matrix_market");
  MatrixMarketHeader h;
  impl::mm::ReadLimits lim;
  lim.max_elements = max_elements;
  {  // the file's size bounds what its header may claim
    std::ifstream probe(path, std::ios::binary | std::ios::ate);
    if (probe.is_open() && probe.tellg() >= 0) {
      lim.bytes = std::uint64_t(probe.tellg());
      if (impl::mm::ends_with_gz(path)) lim.bytes *= 1032;
    }
  }
  Kokkos::View<T**, Layout, Kokkos::HostSpace> a;
  if (impl::mm::ends_with_gz(path)) {
#ifdef KOLESKY_HAVE_ZLIB
    errno = 0;
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw matrix_market_error(path, 0, "cannot open file" + impl::mm::errno_text(errno));
    impl::mm::GzInBuf buf(f, path);
    std::istream in(&buf);
    a = impl::mm::read<T, Layout>(in, path, h, &buf.error(), lim);
#else
    throw matrix_market_error(path, 0,
                              "cannot read a gzip-compressed file: Kolesky was configured "
                              "without zlib (KOLESKY_HAVE_ZLIB)");
#endif
  } else {
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in.is_open())
      throw matrix_market_error(path, 0, "cannot open file" + impl::mm::errno_text(errno));
    a = impl::mm::read<T, Layout>(in, path, h, nullptr, lim);
  }
  if (header) *header = h;
  return a;
}

template <class View>
void write_matrix_market(std::ostream& out, const View& a) {
  const impl::Region region("kolesky::write_matrix_market");
  impl::mm::check_writable(a, "<stream>");
  const bool ok = impl::mm::write_array(a, [&](const char* p, std::size_t n) {
    return bool(out.write(p, std::streamsize(n)));
  });
  if (!ok) throw matrix_market_error("<stream>", 0, "write error");
}

template <class View>
void write_matrix_market(const std::string& path, const View& a) {
  impl::mm::check_writable(a, path);
  if (impl::mm::ends_with_gz(path)) {
#ifdef KOLESKY_HAVE_ZLIB
    errno = 0;
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f)
      throw matrix_market_error(path, 0,
                                "cannot open for writing" + impl::mm::errno_text(errno));
    const bool ok = impl::mm::write_array(a, [&](const char* p, std::size_t n) {
      return n == 0 || gzwrite(f, p, unsigned(n)) == int(n);
    });
    if (gzclose(f) != Z_OK || !ok) throw matrix_market_error(path, 0, "gzip write error");
#else
    throw matrix_market_error(path, 0,
                              "cannot write a gzip-compressed file: Kolesky was configured "
                              "without zlib (KOLESKY_HAVE_ZLIB)");
#endif
    return;
  }
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out.is_open())
    throw matrix_market_error(path, 0, "cannot open for writing" + impl::mm::errno_text(errno));
  const bool ok = impl::mm::write_array(a, [&](const char* p, std::size_t n) {
    return bool(out.write(p, std::streamsize(n)));
  });
  out.close();
  if (!ok || out.fail()) throw matrix_market_error(path, 0, "write error");
}

}  // namespace kolesky
