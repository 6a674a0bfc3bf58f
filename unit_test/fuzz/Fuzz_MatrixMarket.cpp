// libFuzzer target for the Matrix Market reader: the input bytes as an istream, read as
// double and float into both layouts. matrix_market_error is the only expected outcome
// besides success; any other exception, a crash, a sanitizer report, a hang or an
// out-of-memory is a finding. Successful reads are checked against what the banner promises.
#include <io/Kolesky_MatrixMarket.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>

namespace {

// The reader allocates the dense rows x cols matrix from the size line before it reads the
// body, so a 40-byte file may legitimately ask for gigabytes: that is not a bug of a dense
// reader, but it would make libFuzzer report out-of-memory (or spend its time in memset).
// Inputs whose header asks for more than this many elements stop after the header.
constexpr std::uint64_t kMaxElements = std::uint64_t(1) << 20;
// The longest reason the reader composes from cut-short tokens and fixed text.
constexpr std::size_t kMaxReason = 256;

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FINDING: %s: %s\n", what, detail.c_str());
  std::abort();
}

bool same(double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); }

// What every successful read must satisfy, whatever the input.
template <class View>
void check(const View& a, const kolesky::MatrixMarketHeader& h) {
  if (a.extent(0) != std::size_t(h.rows) || a.extent(1) != std::size_t(h.cols))
    finding("extents", std::to_string(a.extent(0)) + " x " + std::to_string(a.extent(1)) +
                           " for a size line of " + std::to_string(h.rows) + " x " +
                           std::to_string(h.cols));
  // A 0 x 10^9 matrix is valid and empty: loop only over elements that exist.
  if (a.size() == 0) return;
  const bool sym = h.symmetry == "symmetric", skew = h.symmetry == "skew-symmetric";
  for (std::size_t j = 0; j < a.extent(1); ++j)
    for (std::size_t i = 0; i < a.extent(0); ++i) {
      const double x = a(i, j);
      const std::string at = "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
      if (sym && !same(x, a(j, i))) finding("not symmetric", at);
      if (skew && !same(x, -double(a(j, i)))) finding("not skew-symmetric", at);
      if (h.field == "pattern" && !(x == 0 || x == 1 || (skew && x == -1)))
        finding("pattern value not 0 or +-1", at);
      if (h.field == "integer" && std::isfinite(x) && std::trunc(x) != x)
        finding("integer field read a fraction", at);
    }
}

// Returns the error's line, or -1 on success.
template <class T, class Layout>
long long read_one(const std::string& text, const kolesky::MatrixMarketHeader* h_ref,
                   Kokkos::View<T**, Layout, Kokkos::HostSpace>& out) {
  std::istringstream in(text);
  kolesky::MatrixMarketHeader h;
  try {
    out = kolesky::read_matrix_market<T, Layout>(in, "fuzz", &h);
  } catch (const kolesky::matrix_market_error& e) {
    if (e.line() < 1) finding("error without a line", e.what());
    // Tokens are quoted cut short in messages, so a garbage line cannot flood them.
    if (e.reason().size() > kMaxReason) finding("reason too long", e.reason().substr(0, 200));
    return e.line();
  } catch (const std::exception& e) {
    finding("unexpected exception", e.what());
  } catch (...) {
    finding("unexpected exception", "not a std::exception");
  }
  check(out, h);
  if (h_ref && (h.rows != h_ref->rows || h.cols != h_ref->cols ||
                h.entries != h_ref->entries || h.field != h_ref->field))
    finding("headers differ between reads", text.substr(0, 80));
  return -1;
}

template <class T>
long long read_both_layouts(const std::string& text, const kolesky::MatrixMarketHeader* h) {
  Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace> l;
  Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> r;
  const long long el = read_one(text, h, l);
  const long long er = read_one(text, h, r);
  if (el != er)
    finding("layouts disagree", "lines " + std::to_string(el) + " and " + std::to_string(er));
  if (el < 0 && l.size() > 0)
    for (std::size_t j = 0; j < l.extent(1); ++j)
      for (std::size_t i = 0; i < l.extent(0); ++i)
        if (!same(l(i, j), r(i, j))) finding("layouts read different values", "");
  return el;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Views need an initialized Kokkos (their zero-fill runs on the default host space).
  // One OpenMP thread: the matrices are tiny and the fuzzer runs one input at a time.
  setenv("OMP_NUM_THREADS", "1", 0);
  setenv("OMP_PROC_BIND", "false", 0);
  Kokkos::initialize();
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The header alone, with the reader's own parser: inputs that ask for more than
  // kMaxElements stop here (see above); every other input is read in full.
  kolesky::MatrixMarketHeader h;
  bool header_ok = false;
  {
    std::istringstream in(text);
    const std::string source = "fuzz";
    kolesky::impl::mm::Lines lines(in, source, nullptr);
    try {
      // float: the smaller element passes the reader's address-space check more often.
      h = kolesky::impl::mm::read_header(lines, sizeof(float), "float");
      header_ok = true;
    } catch (const kolesky::matrix_market_error&) {
    }
  }
  if (header_ok && std::uint64_t(h.rows) * std::uint64_t(h.cols) > kMaxElements) return 0;

  const long long ed = read_both_layouts<double>(text, header_ok ? &h : nullptr);
  const long long ef = read_both_layouts<float>(text, header_ok ? &h : nullptr);
  if (ed < 0 && !header_ok) finding("read succeeded but the header check failed", "");
  // Whatever double rejects, float rejects too, at that line or earlier (a value may overflow
  // float only).
  if (ed >= 0 && (ef < 0 || ef > ed))
    finding("float accepted what double rejects",
            "double line " + std::to_string(ed) + ", float line " + std::to_string(ef));
  return 0;
}
