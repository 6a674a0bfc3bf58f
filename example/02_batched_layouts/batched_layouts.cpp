// Batched layouts: when does converting a batch of small SPD systems pay off?
//
//   02_batched_layouts [batch] [n ...]     (default: 100000 systems each of order 8, 16, 32)
//
// Applications usually hold many small matrices as a rank-3 View (batch, n, n), each matrix
// contiguous: kolesky::batched::StridedBatch. The batched kernels often run faster on a
// batch-fastest layout, where element (r, c) of consecutive matrices sits side by side:
// InterleavedBatch (all matrices), or ChunkedBatch (groups of a SIMD width on CPUs, a warp on
// GPUs). This program solves the same systems A x = b in each layout on the default execution
// space: it converts them with kolesky::batched::copy, factors (batched::potrf), solves
// (batched::potrs) and converts the solutions back, timing every step (best of 3). Compare
// "total" when you convert for a single solve; compare "potrf+potrs" when you can build the
// batch in the fast layout in the first place (as example 04 does) or reuse the factors.
// Checks: every info is 0, every residual |b - A x| / (|A| |x|) is below 10 n eps, and every
// layout's solutions agree with the strided ones; exit 0 only if all pass.
#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Strided = kolesky::batched::StridedBatch<double, Kokkos::LayoutRight, Mem>;
using Interleaved = kolesky::batched::InterleavedBatch<double, Mem>;
using Chunked = kolesky::batched::ChunkedBatch<double, Mem>;
using InfoView = Kokkos::View<int*, Mem>;
constexpr int kReps = 3;

// Uniform in [-1, 1) from a 64-bit key (splitmix64): reproducible whatever the thread count.
KOKKOS_INLINE_FUNCTION double uniform(std::uint64_t key) {
  std::uint64_t z = key + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// A(p) symmetric, off-diagonal entries in [-1, 1), diagonal in [n, n + 1): strictly
// diagonally dominant, so SPD. b(p) in [-1, 1).
void fill(const Exec& exec, const Strided& a, const Strided& b) {
  const int n = a.rows();
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<Exec>(exec, 0, a.size()), KOKKOS_LAMBDA(const int p) {
        const std::uint64_t base = std::uint64_t(p) * std::uint64_t(n) * std::uint64_t(n + 1);
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < i; ++j) a(p, i, j) = a(p, j, i) = uniform(base + i * n + j);
          a(p, i, i) = n + 0.5 * (uniform(base + i * n + i) + 1.0);
          b(p, i, 0) = uniform(base + n * n + i);
        }
      });
}

KOKKOS_INLINE_FUNCTION double absval(const double v) { return v < 0 ? -v : v; }
// The larger of m and v, a NaN v counting as huge so that it fails the checks.
KOKKOS_INLINE_FUNCTION double maxnan(const double m, const double v) {
  return v <= m ? m : (v == v ? v : 1e300);
}

template <class F>
double timed(const Exec& exec, F&& f) {
  exec.fence();
  Kokkos::Timer timer;
  f();
  exec.fence();
  return timer.seconds();
}

struct Result {
  double in = 0, potrf = 0, potrs = 0, out = 0;  // seconds, best of kReps
  int failed = 0;                                 // matrices with info != 0
  double residual = 0;                            // max |b - A x|_inf / (|A|_inf |x|_inf)
  double diff = 0;                                // max |x - x_strided|_inf / |x_strided|_inf
  double total() const { return in + potrf + potrs + out; }
};

double min_or(double best, double t) { return best == 0 || t < best ? t : best; }

// Factor and solve the systems (a0, b0) in the layout of `a` and `b`, leaving the solutions
// in x (strided). For the strided batch itself nothing is converted: a0 and b0 are restored
// before each repetition outside the timings.
template <class Batch>
Result solve_in(const Exec& exec, const Strided& a0, const Strided& b0, const Batch& a,
                const Batch& b, const Strided& x, const InfoView& info) {
  constexpr bool strided = std::is_same<Batch, Strided>::value;
  Result r;
  for (int rep = 0; rep < kReps; ++rep) {
    double t_in = 0, t_out = 0;
    if constexpr (strided) {
      Kokkos::deep_copy(exec, a.data, a0.data);
      Kokkos::deep_copy(exec, b.data, b0.data);
    } else {
      t_in = timed(exec, [&] {
        kolesky::batched::copy(exec, a0, a);
        kolesky::batched::copy(exec, b0, b);
      });
    }
    const double t_potrf =
        timed(exec, [&] { kolesky::batched::potrf(exec, kolesky::Uplo::Lower, a, info); });
    const double t_potrs =
        timed(exec, [&] { kolesky::batched::potrs(exec, kolesky::Uplo::Lower, a, b); });
    if constexpr (strided)
      Kokkos::deep_copy(exec, x.data, b.data);
    else
      t_out = timed(exec, [&] { kolesky::batched::copy(exec, b, x); });
    r.in = min_or(r.in, t_in);
    r.potrf = min_or(r.potrf, t_potrf);
    r.potrs = min_or(r.potrs, t_potrs);
    r.out = min_or(r.out, t_out);
  }
  int failed = 0;
  Kokkos::parallel_reduce(
      "count_failed", Kokkos::RangePolicy<Exec>(exec, 0, a.size()),
      KOKKOS_LAMBDA(const int p, int& f) { f += info(p) != 0 ? 1 : 0; }, failed);
  r.failed = failed;
  return r;
}

// Residual of every system, and the largest difference from the reference solutions.
void check(const Exec& exec, const Strided& a0, const Strided& b0, const Strided& x,
           const Strided& xref, Result& r) {
  const int n = a0.rows();
  double res = 0, diff = 0;
  Kokkos::parallel_reduce(
      "check", Kokkos::RangePolicy<Exec>(exec, 0, a0.size()),
      KOKKOS_LAMBDA(const int p, double& rm, double& dm) {
        double rmax = 0, amax = 0, xmax = 0, dmax = 0, refmax = 0;
        for (int i = 0; i < n; ++i) {
          double s = b0(p, i, 0), row = 0;
          for (int k = 0; k < n; ++k) {
            s -= a0(p, i, k) * x(p, k, 0);
            row += absval(a0(p, i, k));
          }
          rmax = maxnan(rmax, absval(s));
          amax = maxnan(amax, row);
          xmax = maxnan(xmax, absval(x(p, i, 0)));
          dmax = maxnan(dmax, absval(x(p, i, 0) - xref(p, i, 0)));
          refmax = maxnan(refmax, absval(xref(p, i, 0)));
        }
        rm = maxnan(rm, rmax / (amax * xmax));
        dm = maxnan(dm, dmax / refmax);
      },
      Kokkos::Max<double>(res), Kokkos::Max<double>(diff));
  r.residual = res;
  r.diff = diff;
}

bool parse_int(const char* s, int lo, int hi, int& v) {
  char* end = nullptr;
  const long x = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || x < lo || x > hi) return false;
  v = int(x);
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int batch = 100000;
  std::vector<int> orders;
  if (argc > 1 && !parse_int(argv[1], 1, 100000000, batch)) {
    std::fprintf(stderr, "usage: %s [batch] [n ...]   (n from 1 to 128)\n", argv[0]);
    return 2;
  }
  for (int k = 2; k < argc; ++k) {
    int n = 0;
    if (!parse_int(argv[k], 1, 128, n)) {
      std::fprintf(stderr, "usage: %s [batch] [n ...]   (n from 1 to 128)\n", argv[0]);
      return 2;
    }
    orders.push_back(n);
  }
  if (orders.empty()) orders = {8, 16, 32};

  const Exec exec;
  const int chunk = kolesky::batched::default_chunk<Exec, double>();
  const double eps = std::numeric_limits<double>::epsilon();
  std::printf("Kolesky %s on %s: %d SPD systems per order, best of %d runs, times in ms\n",
              KOLESKY_VERSION, Exec::name(), batch, kReps);
  bool ok = true;
  for (const int n : orders) {
    Strided a0("A0", batch, n, n), b0("B0", batch, n, 1), xref("Xref", batch, n, 1),
        x("X", batch, n, 1);
    InfoView info("info", batch);
    fill(exec, a0, b0);
    Result rs, ri, rc;
    {
      Strided a("A", batch, n, n), b("B", batch, n, 1);
      rs = solve_in(exec, a0, b0, a, b, xref, info);
    }
    check(exec, a0, b0, xref, xref, rs);
    {
      Interleaved a("A", batch, n, n), b("B", batch, n, 1);
      ri = solve_in(exec, a0, b0, a, b, x, info);
    }
    check(exec, a0, b0, x, xref, ri);
    {
      Chunked a("A", batch, n, n, chunk), b("B", batch, n, 1, chunk);
      rc = solve_in(exec, a0, b0, a, b, x, info);
    }
    check(exec, a0, b0, x, xref, rc);

    const double gflop = double(batch) * n * n * n / 3.0 * 1e-9;
    std::printf("\nn = %d (potrf: %.3g GFLOP)\n", n, gflop);
    std::printf("  %-12s %8s %8s %8s %8s %9s %9s %8s %10s %9s\n", "layout", "in", "potrf",
                "potrs", "back", "p.+p.", "total", "vs str.", "residual", "diff");
    const std::string chunked = "chunked(" + std::to_string(chunk) + ")";
    const struct {
      const char* name;
      const Result& r;
    } rows[] = {{"strided", rs}, {"interleaved", ri}, {chunked.c_str(), rc}};
    for (const auto& row : rows) {
      const Result& r = row.r;
      const double limit = 10 * n * eps;
      const bool good = r.failed == 0 && r.residual < limit && r.diff < 1e-12;
      ok = ok && good;
      std::printf("  %-12s %8.3f %8.3f %8.3f %8.3f %9.3f %9.3f %7.2fx %10.2e %9.1e %s", row.name,
                  1e3 * r.in, 1e3 * r.potrf, 1e3 * r.potrs, 1e3 * r.out,
                  1e3 * (r.potrf + r.potrs), 1e3 * r.total(), rs.total() / r.total(),
                  r.residual, r.diff, good ? "OK" : "FAILED");
      if (r.failed) std::printf(" (%d matrices with info != 0)", r.failed);
      std::printf("\n");
    }
    std::printf("  potrf: %.1f GFLOP/s strided, %.1f interleaved, %.1f chunked\n",
                gflop / rs.potrf, gflop / ri.potrf, gflop / rc.potrf);
  }
  std::printf("\n%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}
