// Many small Gaussian-process regressions at once, one batched Cholesky for all of them.
//
//   04_batched_gaussian_process [gps]      (default 10000)
//
// Each GP g sees n_g (16 to 64) noisy samples y = f_g(x) + noise of a known function
// f_g(x) = sin(x / l_g + phase_g) on [0, 1], with its own length scale l_g. With the squared-
// exponential kernel k(x, x') = exp(-(x - x')^2 / (2 l^2)) and noise variance s^2, the
// program builds every K + s^2 I directly in a batch-fastest layout on the default execution
// space (no conversion: see example 02), pads the smaller systems with identity rows so that
// one batch of order 64 holds them all, and calls kolesky::batched::posv once for
// alpha = (K + s^2 I)^-1 y. From the factor L it takes log det = 2 sum log L_ii, hence the log
// marginal likelihood -y'alpha/2 - log det/2 - n log(2 pi)/2, and it predicts the mean
// k(x*, X) alpha at test points. It does so for the true length scales and for a third and
// three times them (model selection by likelihood), and prints a table.
// Checks: at the true length scales the predictive error is below the noise level; the true
// length scales have the highest mean likelihood; the log-determinants of a few matrices
// match an LU with partial pivoting on the host; one GP whose matrix is deliberately made
// indefinite reports info = 4 while every other one reports 0. Exit 0 only if all pass.
#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace {

// Kokkos 3.x keeps its math functions in Kokkos::Experimental, 4.x in Kokkos.
namespace math {
#if KOKKOS_VERSION >= 30700
using Kokkos::exp;
using Kokkos::log;
using Kokkos::sin;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sin;
#endif
}  // namespace math

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Batch = kolesky::batched::ChunkedBatch<double, Mem>;

constexpr int kMinN = 16, kMaxN = 64;  // samples per GP; the batch has order kMaxN
constexpr int kTests = 8;              // test points per GP
constexpr double kNoise = 0.05;        // noise standard deviation s
constexpr int kBadOrder = 4;           // the indefinite GP's first failing minor

KOKKOS_INLINE_FUNCTION double uniform01(std::uint64_t key) {  // splitmix64, in [0, 1)
  std::uint64_t z = key + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / 9007199254740992.0);
}

KOKKOS_INLINE_FUNCTION double truth(const double x, const double ell, const double phase) {
  return math::sin(x / ell + phase);
}

KOKKOS_INLINE_FUNCTION double kernel(const double x, const double y, const double ell) {
  const double d = x - y;
  return math::exp(-0.5 * d * d / (ell * ell));
}

KOKKOS_INLINE_FUNCTION double test_point(const int t) { return 0.1 + 0.8 * t / (kTests - 1); }

// The GPs' data: sizes, true length scales and phases, samples (x, y), padded with zeros.
// The execution space's preferred layout (on a GPU, GP index fastest: coalesced when a
// thread handles one GP), kept for the host copy too.
template <class Space>
struct Data {
  Kokkos::View<int*, Space> n;
  Kokkos::View<double*, Space> ell, phase;
  Kokkos::View<double**, Exec::array_layout, Space> x, y;  // (gp, kMaxN)
  int bad = 0;                                             // the GP made indefinite
};

Data<Mem> make_data(const Exec& exec, const int gps) {
  using Samples = decltype(Data<Mem>::x);
  Data<Mem> d{Kokkos::View<int*, Mem>("n", gps), Kokkos::View<double*, Mem>("ell", gps),
              Kokkos::View<double*, Mem>("phase", gps), Samples("x", gps, kMaxN),
              Samples("y", gps, kMaxN), gps / 2};
  const auto n = d.n;
  const auto ell = d.ell, phase = d.phase;
  const auto x = d.x, y = d.y;
  Kokkos::parallel_for(
      "make_data", Kokkos::RangePolicy<Exec>(exec, 0, gps), KOKKOS_LAMBDA(const int g) {
        const std::uint64_t key = std::uint64_t(g) * (2 * kMaxN + 3);
        const int ng = kMinN + int(uniform01(key) * (kMaxN - kMinN + 1));
        const double l = 0.1 + 0.2 * uniform01(key + 1), ph = 6.283185307179586 * uniform01(key + 2);
        n(g) = ng;
        ell(g) = l;
        phase(g) = ph;
        for (int i = 0; i < ng; ++i) {  // one sample in each of ng equal cells
          const double xi = (i + uniform01(key + 3 + i)) / ng;
          const double e = 1.7320508075688772 * kNoise * (2 * uniform01(key + 3 + kMaxN + i) - 1);
          x(g, i) = xi;
          y(g, i) = truth(xi, l, ph) + e;  // uniform noise of standard deviation kNoise
        }
      });
  return d;
}

struct Row {
  double scale = 0;                           // model length scale / true one
  double t_build = 0, t_posv = 0, t_post = 0;  // seconds
  double lml = 0;                             // mean log marginal likelihood
  double rmse = 0, max_err = 0;               // predictive mean against the truth
  int failed = 0, bad_info = 0;               // info != 0 among the good GPs; the bad GP's info
};

template <class F>
double timed(const Exec& exec, F&& f) {
  exec.fence();
  Kokkos::Timer timer;
  f();
  exec.fence();
  return timer.seconds();
}

// Fit every GP with length scale scale * l_g; `logdet` receives 2 sum log L_ii per GP.
Row fit(const Exec& exec, const Data<Mem>& d, const double scale, const Batch& k, const Batch& alpha,
        const Kokkos::View<int*, Mem>& info, const Kokkos::View<double*, Mem>& logdet) {
  const int gps = k.size(), bad = d.bad;
  const auto n = d.n;
  const auto ell = d.ell, phase = d.phase;
  const auto x = d.x, y = d.y;
  Row r;
  r.scale = scale;
  // One thread per GP: in a batch-fastest layout, neighbouring threads write neighbouring
  // addresses (coalesced on a GPU).
  r.t_build = timed(exec, [&] {
    Kokkos::parallel_for(
        "build_K", Kokkos::RangePolicy<Exec>(exec, 0, gps), KOKKOS_LAMBDA(const int g) {
          const int ng = n(g);
          const double l = scale * ell(g);
          for (int i = 0; i < kMaxN; ++i) {
            for (int j = 0; j < i; ++j)
              k(g, i, j) = k(g, j, i) = i < ng ? kernel(x(g, i), x(g, j), l) : 0.0;
            // Identity padding beyond ng: L_ii = 1 and alpha_i = 0 there.
            k(g, i, i) = i < ng ? 1.0 + kNoise * kNoise : 1.0;
            alpha(g, i, 0) = i < ng ? y(g, i) : 0.0;
          }
          if (g == bad) k(g, kBadOrder - 1, kBadOrder - 1) = -1;  // indefinite on purpose
        });
  });
  r.t_posv = timed(exec, [&] {
    kolesky::batched::posv(exec, kolesky::Uplo::Lower, k, alpha, info);
  });

  // Likelihood and predictions, one thread per GP; the failed GP is left out.
  double lml = 0, sq = 0, emax = 0;
  int failed = 0, bad_info = 0;
  r.t_post = timed(exec, [&] {
    Kokkos::parallel_reduce(
        "posterior", Kokkos::RangePolicy<Exec>(exec, 0, gps),
        KOKKOS_LAMBDA(const int g, double& lsum, double& s2, double& em, int& nf, int& bi) {
          if (g == bad) {
            bi += info(g);
            return;
          }
          if (info(g) != 0) {
            ++nf;
            return;
          }
          const int ng = n(g);
          const double l = scale * ell(g);
          double fit = 0, ld = 0;
          for (int i = 0; i < ng; ++i) {
            fit += y(g, i) * alpha(g, i, 0);
            ld += 2 * math::log(k(g, i, i));
          }
          logdet(g) = ld;
          lsum += -0.5 * fit - 0.5 * ld - 0.5 * ng * math::log(6.283185307179586);
          for (int t = 0; t < kTests; ++t) {
            const double xt = test_point(t);
            double mean = 0;
            for (int i = 0; i < ng; ++i) mean += kernel(xt, x(g, i), l) * alpha(g, i, 0);
            const double e = mean - truth(xt, ell(g), phase(g));
            s2 += e * e;
            const double ae = e < 0 ? -e : e;
            em = ae <= em ? em : (ae == ae ? ae : 1e300);  // a NaN counts as huge
          }
        },
        lml, sq, Kokkos::Max<double>(emax), failed, bad_info);
  });
  const int good = gps - 1;
  r.lml = lml / good;
  r.rmse = std::sqrt(sq / (double(good) * kTests));
  r.max_err = emax;
  r.failed = failed;
  r.bad_info = bad_info;
  return r;
}

// log |det| of GP g's kernel matrix (true length scale) by Gaussian elimination with partial
// pivoting on the host, rebuilt from the samples; `negative` tells the determinant's sign.
double host_logdet(const Data<Kokkos::HostSpace>& hd, const int g, bool& negative) {
  const int n = hd.n(g);
  std::vector<double> a(std::size_t(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double dx = hd.x(g, i) - hd.x(g, j);
      a[i * n + j] = std::exp(-0.5 * dx * dx / (hd.ell(g) * hd.ell(g))) +
                     (i == j ? kNoise * kNoise : 0.0);
    }
  double ld = 0;
  negative = false;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int i = c + 1; i < n; ++i)
      if (std::fabs(a[i * n + c]) > std::fabs(a[p * n + c])) p = i;
    if (p != c) {
      for (int j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
      negative = !negative;
    }
    const double piv = a[c * n + c];
    if (piv < 0) negative = !negative;
    ld += std::log(std::fabs(piv));
    for (int i = c + 1; i < n; ++i) {
      const double m = a[i * n + c] / piv;
      for (int j = c + 1; j < n; ++j) a[i * n + j] -= m * a[c * n + j];
    }
  }
  return ld;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int gps = 10000;
  if (argc > 1) {
    char* end = nullptr;
    const long v = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || v < 8 || v > 10000000) {
      std::fprintf(stderr, "usage: %s [gps]   (8 or more Gaussian processes)\n", argv[0]);
      return 2;
    }
    gps = int(v);
  }
  const Exec exec;
  const Data<Mem> d = make_data(exec, gps);
  Batch k("K", gps, kMaxN, kMaxN, kolesky::batched::default_chunk<Exec, double>());
  Batch alpha("alpha", gps, kMaxN, 1, k.chunk());
  Kokkos::View<int*, Mem> info("info", gps);
  Kokkos::View<double*, Mem> logdet("logdet", gps);

  std::printf("Kolesky %s on %s: %d Gaussian processes, %d to %d samples each (padded to %d),\n"
              "noise %.2f, predictions at %d points each; GP %d made indefinite on purpose\n\n",
              KOLESKY_VERSION, Exec::name(), gps, kMinN, kMaxN, kMaxN, kNoise, kTests, d.bad);
  std::printf("  %-11s %9s %9s %9s %12s %9s %9s %7s\n", "length x", "build ms", "posv ms",
              "post. ms", "mean log L", "RMSE", "max err", "failed");
  Row rows[3];
  const double scales[3] = {1.0 / 3, 1.0, 3.0};
  Kokkos::View<double*, Kokkos::HostSpace> logdet_host("logdet_host", gps);
  for (int s = 0; s < 3; ++s) {
    rows[s] = fit(exec, d, scales[s], k, alpha, info, logdet);
    const Row& r = rows[s];
    std::printf("  %-11.3f %9.2f %9.2f %9.2f %12.3f %9.4f %9.4f %7d\n", r.scale,
                1e3 * r.t_build, 1e3 * r.t_posv, 1e3 * r.t_post, r.lml, r.rmse, r.max_err,
                r.failed);
    if (s == 1) Kokkos::deep_copy(logdet_host, logdet);  // the true length scales' factors
  }
  const double flops = double(gps) * kMaxN * kMaxN * kMaxN / 3.0;
  std::printf("  posv at the true length scales: %.2f GFLOP/s counting the padded order %d\n\n",
              flops / rows[1].t_posv * 1e-9, kMaxN);

  bool ok = true;
  auto report = [&](const bool good, const char* what) {
    std::printf("  %-6s %s\n", good ? "OK" : "FAILED", what);
    ok = ok && good;
  };
  char line[256];
  const Row& truth_row = rows[1];
  std::snprintf(line, sizeof line,
                "true length scales: RMSE %.4f below the noise level %.2f, max error %.3f < %.2f",
                truth_row.rmse, kNoise, truth_row.max_err, 4 * kNoise);
  report(truth_row.rmse < kNoise && truth_row.max_err < 4 * kNoise, line);
  std::snprintf(line, sizeof line,
                "true length scales have the highest mean log likelihood (%.2f > %.2f, %.2f)",
                rows[1].lml, rows[0].lml, rows[2].lml);
  report(rows[1].lml > rows[0].lml && rows[1].lml > rows[2].lml, line);
  int failed = 0;
  bool bad_ok = true;
  for (const Row& r : rows) {
    failed += r.failed;
    bad_ok = bad_ok && r.bad_info == kBadOrder;
  }
  std::snprintf(line, sizeof line, "every other GP reports info = 0 (%d failures)", failed);
  report(failed == 0, line);
  std::snprintf(line, sizeof line, "the indefinite GP %d reports info = %d in every fit (got %d)",
                d.bad, kBadOrder, truth_row.bad_info);
  report(bad_ok, line);

  // log det from the batched Cholesky against an LU on the host, for a few GPs.
  const Data<Kokkos::HostSpace> hd{Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.n),
                Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.ell),
                Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.phase),
                Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.x),
                Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.y), d.bad};
  std::printf("\n  %8s %4s %14s %14s %9s\n", "GP", "n", "2 sum log L_ii", "host LU", "rel diff");
  for (const int g : {0, 1, gps / 3, gps - 1}) {
    bool negative = false;
    const double ref = host_logdet(hd, g, negative);
    const double got = logdet_host(g);
    const double rel = std::fabs(got - ref) / std::fmax(1.0, std::fabs(ref));
    const bool good = !negative && rel < 1e-9;
    std::printf("  %8d %4d %14.8f %14.8f %9.1e %s\n", g, hd.n(g), got, ref, rel,
                good ? "OK" : "FAILED");
    ok = ok && good;
  }
  std::printf("\n%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}
