// `kolesky factor` and `kolesky solve`: read a Matrix Market file, factor it on the chosen
// backend, check the result on the host.
#include <Kolesky.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "Cli_Common.hpp"

namespace kolesky_cli {
namespace {

template <class T>
using HostMatrix = Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

std::string base_name(const std::string& path) {
  const auto p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

template <class T>
long long count_nonzeros(const HostMatrix<T>& a) {
  long long nz = 0;
  for (std::size_t j = 0; j < a.extent(1); ++j)
    for (std::size_t i = 0; i < a.extent(0); ++i) nz += a(i, j) != T(0);
  return nz;
}

template <class T>
bool is_symmetric(const HostMatrix<T>& a) {
  for (std::size_t j = 0; j < a.extent(1); ++j)
    for (std::size_t i = j + 1; i < a.extent(0); ++i)
      if (!(a(i, j) == a(j, i))) return false;
  return true;
}

// Largest ||b - A x||_inf / (||A||_inf ||x||_inf) over the columns (0 for x = b = 0).
template <class T>
double solve_residual(const HostMatrix<T>& a, const HostMatrix<T>& b, const HostMatrix<T>& x) {
  const std::size_t n = a.extent(0);
  double anorm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < n; ++j) s += std::fabs(double(a(i, j)));
    anorm = std::max(anorm, s);
  }
  double worst = 0;
  std::vector<double> r(n);
  for (std::size_t c = 0; c < b.extent(1); ++c) {
    double xnorm = 0;
    for (std::size_t i = 0; i < n; ++i) {
      r[i] = double(b(i, c));
      xnorm = std::max(xnorm, std::fabs(double(x(i, c))));
    }
    for (std::size_t j = 0; j < n; ++j) {
      const double xj = double(x(j, c));
      for (std::size_t i = 0; i < n; ++i) r[i] -= double(a(i, j)) * xj;
    }
    double rnorm = 0;
    for (std::size_t i = 0; i < n; ++i) rnorm = std::max(rnorm, std::fabs(r[i]));
    const double den = anorm * xnorm;
    // A NaN anywhere must not pass as a small residual.
    const double rel = den > 0 ? rnorm / den : rnorm > 0 || std::isnan(rnorm) ? INFINITY : 0.0;
    worst = std::isnan(rel) || std::isnan(worst) ? NAN : std::max(worst, rel);
  }
  return worst;
}

void line(const char* label, const std::string& value) {
  std::printf("%-10s: %s\n", label, value.c_str());
}

std::string residual_text(double rel, double in_eps, double threshold, const char* what) {
  return fmt("%.3e", rel) + " (" + what + "), " + fmt("%.3g", in_eps) + " n*eps (threshold " +
         fmt("%g", threshold) + ")";
}

template <class Exec, class T>
int factor(const FactorArgs& args, const Exec& exec) {
  using Mem = typename Exec::memory_space;
  using DeviceMatrix = Kokkos::View<T**, Kokkos::LayoutLeft, Mem>;
  const Common& opt = args.common;
  const std::string backend = opt.backend.empty() ? default_backend() : opt.backend;
  Progress progress(opt.quiet);

  progress.say("reading ", args.file, " ...");
  kolesky::MatrixMarketHeader h;
  const HostMatrix<T> a = kolesky::read_matrix_market<T, Kokkos::LayoutLeft>(args.file, &h);
  if (h.rows != h.cols)
    throw Error(kInput, args.file + ": the matrix is " + std::to_string(h.rows) + " x " +
                            std::to_string(h.cols) + ", not square");
  const int n = h.rows;

  bool chol = args.method == Method::Chol;
  std::string why = args.method == Method::Chol ? "--chol" : "--lu";
  if (args.method == Method::Auto) {
    chol = h.symmetry == "symmetric";
    why = "chosen from the header (" + h.symmetry + ")";
  }
  if (chol && args.method == Method::Chol && !is_symmetric(a))
    std::cerr << "kolesky: warning: " << args.file
              << " is not symmetric; --chol uses its lower triangle only\n";

  HostMatrix<T> b;  // solve: the right-hand sides
  const bool ones = args.solve && args.rhs.empty();
  if (args.solve) {
    if (ones) {
      b = HostMatrix<T>("kolesky_cli::b", std::size_t(n), 1);
      for (int i = 0; i < n; ++i) {
        double s = 0;
        for (int j = 0; j < n; ++j) s += double(a(i, j));
        b(i, 0) = T(s);
      }
    } else {
      progress.say("reading ", args.rhs, " ...");
      b = kolesky::read_matrix_market<T, Kokkos::LayoutLeft>(args.rhs);
      if (b.extent(0) != std::size_t(n))
        throw Error(kInput, args.rhs + ": the right-hand side has " +
                                std::to_string(b.extent(0)) + " rows, but A is " +
                                std::to_string(n) + " x " + std::to_string(n));
      if (b.extent(1) == 0) throw Error(kInput, args.rhs + ": the right-hand side has no columns");
    }
  }

  // Separate device copies: on a host backend a mirror would alias `a`, which the checks need.
  DeviceMatrix da("kolesky_cli::A", std::size_t(n), std::size_t(n));
  Kokkos::deep_copy(da, a);
  Kokkos::View<int*, Mem> ipiv("kolesky_cli::ipiv", std::size_t(n));
  const char* routine = chol ? "potrf" : "getrf";
  progress.say("factoring: ", n, " x ", n, ", ", routine, ", ", backend, ", ",
               precision_name<T>(), " ...");
  // A first, untimed-for-the-headline factorization of a copy: it pays the one-time set-up of
  // the process (handles, module loading, workspaces), reported apart from the warm time.
  double first_time = 0;
  {
    DeviceMatrix dw("kolesky_cli::A_first", std::size_t(n), std::size_t(n));
    Kokkos::deep_copy(dw, a);
    exec.fence();
    Stopwatch first_clock;
    if (chol)
      kolesky::potrf(exec, kolesky::Uplo::Lower, dw);
    else
      kolesky::getrf(exec, dw, ipiv);
    exec.fence();
    first_time = first_clock.seconds();
  }
  exec.fence();
  Stopwatch factor_clock;
  const int info = chol ? kolesky::potrf(exec, kolesky::Uplo::Lower, da)
                        : kolesky::getrf(exec, da, ipiv);
  exec.fence();
  const double factor_time = factor_clock.seconds();

  double solve_time = 0;
  HostMatrix<T> x;
  if (args.solve && info == 0) {
    progress.say("solving: ", b.extent(1), " right-hand side", b.extent(1) == 1 ? "" : "s",
                 " ...");
    DeviceMatrix db("kolesky_cli::B", b.extent(0), b.extent(1));
    Kokkos::deep_copy(db, b);
    exec.fence();
    Stopwatch solve_clock;
    if (chol)
      kolesky::potrs(exec, kolesky::Uplo::Lower, da, db);
    else
      kolesky::getrs(exec, kolesky::Trans::No, da, ipiv, db);
    exec.fence();
    solve_time = solve_clock.seconds();
    x = HostMatrix<T>("kolesky_cli::X", b.extent(0), b.extent(1));
    Kokkos::deep_copy(x, db);
  }

  // The checks, on the host.
  double rel = 0;
  if (info == 0) {
    progress.say("checking ...");
    if (args.solve) {
      rel = solve_residual(a, b, x);
    } else {
      const auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), da);
      const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ipiv);
      rel = chol ? chol_residual(a, f) : lu_residual(a, f, p);
    }
  }
  const double in_eps = scaled<T>(rel, n);

  line("matrix", base_name(args.file) + " (" + std::to_string(n) + " x " + std::to_string(n) +
                     ", " + std::to_string(count_nonzeros(a)) + " nonzeros; " + h.format + " " +
                     h.field + " " + h.symmetry + ")");
  std::string r = chol ? "potrf (Cholesky, lower)" : "getrf (LU, partial pivoting)";
  if (args.solve) r = chol ? "potrf + potrs (Cholesky, lower)" : "getrf + getrs (LU, partial pivoting)";
  line("routine", r + ", " + why);
  line("backend", backend);
  line("precision", precision_name<T>());
  if (args.solve) {
    line("rhs", (ones ? std::string("A * ones") : base_name(args.rhs)) + " (" +
                    std::to_string(b.extent(1)) + " column" + (b.extent(1) == 1 ? "" : "s") +
                    ")");
    line("time", fmt("%.6f", factor_time) + " s factor, " +
                     (info == 0 ? fmt("%.6f", solve_time) + " s solve" : std::string("no solve")));
  } else {
    line("time", fmt("%.6f", factor_time) + " s");
    line("GFLOP/s", gflops(chol ? kolesky::flops::potrf(n) : getrf_flops(n), factor_time));
  }
  line("first call", fmt("%.6f", first_time) + " s (the process's first factorization: one-time "
                         "set-up included; the time above is a warm call)");
  if (info != 0)
    line("residual", "not computed (info != 0)");
  else if (args.solve)
    line("residual", residual_text(rel, in_eps, opt.threshold, "||b - A x||_inf / (||A||_inf ||x||_inf)"));
  else
    line("residual", residual_text(rel, in_eps, opt.threshold,
                                   chol ? "||A - L L^T||_F / ||A||_F" : "||P A - L U||_F / ||A||_F"));
  if (ones && info == 0) {
    double err = 0;
    for (int i = 0; i < n; ++i) err = std::max(err, std::fabs(double(x(i, 0)) - 1.0));
    line("error", fmt("%.3e", err) + " (||x - 1||_inf against the all-ones solution)");
  }
  line("info", std::to_string(info));

  if (info > 0)
    throw Error(kNumerical, chol ? "not positive definite: leading minor " + std::to_string(info)
                                 : "singular: U(" + std::to_string(info) + "," +
                                       std::to_string(info) + ") = 0");
  if (info < 0) throw Error(kRuntime, std::string(routine) + " returned info " + std::to_string(info));
  if (!(in_eps <= opt.threshold))
    throw Error(kCheck, "check failed: residual " + fmt("%.3g", in_eps) +
                            " n*eps exceeds the threshold " + fmt("%g", opt.threshold));
  if (args.solve && !args.out.empty()) {
    progress.say("writing ", args.out, " ...");
    kolesky::write_matrix_market(args.out, x);
    line("out", args.out);
  }
  progress.say("done");
  return kSuccess;
}

}  // namespace

int run_factor(const FactorArgs& args) {
  const std::string backend = args.common.backend.empty() ? default_backend() : args.common.backend;
  return with_backend(backend, [&](const auto& exec) {
    using Exec = std::decay_t<decltype(exec)>;
    return with_precision(args.common.precision, [&](auto t) {
      return factor<Exec, decltype(t)>(args, exec);
    });
  });
}

}  // namespace kolesky_cli
