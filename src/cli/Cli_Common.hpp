// The kolesky command-line tool: shared types, backend and precision dispatch, progress
// lines, and the host-side checks (residuals computed in double from the T data).
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace kolesky_cli {

// Exit codes (documented in `kolesky --help`).
enum ExitCode : int {
  kSuccess = 0,
  kUsage = 1,      // bad option or value, unknown or absent backend
  kInput = 2,      // unreadable or malformed file, wrong shapes, output not writable
  kNumerical = 3,  // info > 0
  kCheck = 4,      // a residual above the threshold
  kRuntime = 5,    // anything else (out of memory, a backend failure)
};

// An error with the exit code it maps to; main() prints what() on stderr.
class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

struct Common {
  std::string precision = "double";
  std::string backend;  // empty: the default execution space
  double threshold = 100.0;
  bool quiet = false;
};

enum class Method { Auto, Lu, Chol };

struct FactorArgs {
  Common common;
  std::string file;
  Method method = Method::Auto;
  bool solve = false;
  std::string rhs;  // solve: empty means b = A * ones
  std::string out;  // solve: where to write x
};

struct BenchArgs {
  Common common;
  std::vector<int> sizes;
  int batch = 1;
  int repeat = 3;
  unsigned seed = 1;
};

int run_factor(const FactorArgs& args);  // factor and solve
int run_bench(const BenchArgs& args);

// ---- backends ----------------------------------------------------------------------------

// The backends this build knows, compiled in or not, in the order they are listed.
inline const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> all = {"serial", "openmp", "cuda"};
  return all;
}

inline std::vector<std::string> compiled_backends() {
  std::vector<std::string> v;
#ifdef KOKKOS_ENABLE_SERIAL
  v.push_back("serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  v.push_back("openmp");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  v.push_back("cuda");
#endif
  return v;
}

inline std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

inline std::string default_backend() {
  using D = Kokkos::DefaultExecutionSpace;
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same<D, Kokkos::Cuda>::value) return "cuda";
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  if (std::is_same<D, Kokkos::OpenMP>::value) return "openmp";
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  if (std::is_same<D, Kokkos::Serial>::value) return "serial";
#endif
  const auto c = compiled_backends();  // another default (HIP, Threads): the first we run on
  return c.empty() ? std::string() : c.front();
}

// "" when `name` is usable, else the message (CLI11 validator convention).
inline std::string check_backend(const std::string& name) {
  const auto c = compiled_backends();
  if (std::find(c.begin(), c.end(), name) != c.end()) return {};
  const auto& k = known_backends();
  if (std::find(k.begin(), k.end(), name) != k.end())
    return "backend '" + name + "' is not compiled into this build of kolesky (available: " +
           join(c) + ")";
  return "unknown backend '" + name + "' (available: " + join(c) + ")";
}

// f(exec) on the named backend's default instance.
template <class F>
int with_backend(const std::string& name, F&& f) {
#ifdef KOKKOS_ENABLE_SERIAL
  if (name == "serial") return f(Kokkos::Serial());
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  if (name == "openmp") return f(Kokkos::OpenMP());
#endif
#ifdef KOKKOS_ENABLE_CUDA
  if (name == "cuda") return f(Kokkos::Cuda());
#endif
  const std::string why = check_backend(name);
  throw Error(kUsage, why.empty() ? "backend '" + name + "' is not supported" : why);
}

// f(T()) for T = float or double.
template <class F>
int with_precision(const std::string& name, F&& f) {
  if (name == "float") return f(float());
  if (name == "double") return f(double());
  throw Error(kUsage, "unknown precision '" + name + "' (expected float or double)");
}

template <class T>
const char* precision_name() {
  return std::is_same<T, float>::value ? "float" : "double";
}

// ---- output helpers ----------------------------------------------------------------------

// Progress lines on stderr with the time since the tool started, unless --quiet.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), start_(std::chrono::steady_clock::now()) {}
  template <class... A>
  void say(const A&... a) const {
    if (quiet_) return;
    std::ostringstream s;
    char t[32];
    std::snprintf(t, sizeof t, "[kolesky %7.2f s] ", seconds());
    s << t;
    (s << ... << a);
    s << '\n';
    std::cerr << s.str() << std::flush;
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  bool quiet_;
  std::chrono::steady_clock::time_point start_;
};

class Stopwatch {
 public:
  Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

inline std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

inline std::string gflops(double flops, double seconds) {
  return seconds > 0 ? fmt("%.3f", flops / seconds * 1e-9) : std::string("-");
}

// LAPACK's count for the LU of an n x n matrix (dgetrf with m = n).
inline double getrf_flops(double n) { return 2.0 * n * n * n / 3.0 - n * n / 2.0 + 5.0 * n / 6.0; }

// Residuals are reported relative and as multiples of n * eps(T), the unit the threshold uses.
template <class T>
double scaled(double relative, long long n) {
  const double unit = double(std::max(n, 1LL)) * double(std::numeric_limits<T>::epsilon());
  return relative / unit;
}

// ---- host checks (A and the factor are host-accessible Views of T) -------------------------

using HostPolicy =
    Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>;

// ||A - L L^T||_F / ||A||_F over the lower triangle (what potrf reads), off-diagonal entries
// counted twice. L is the lower triangle of F.
template <class AView, class FView>
double chol_residual(const AView& a, const FView& f) {
  const int n = int(a.extent(0));
  double num = 0, den = 0;
  // Column j of the lower triangle of L L^T: sum over k <= j of L(j:n, k) L(j, k).
  Kokkos::parallel_reduce(
      "kolesky::cli::chol_residual", HostPolicy(0, n),
      [=](const int j, double& acc) {
        std::vector<double> c(std::size_t(n - j), 0.0);
        for (int k = 0; k <= j; ++k) {
          const double ljk = double(f(j, k));
          for (int i = j; i < n; ++i) c[std::size_t(i - j)] += double(f(i, k)) * ljk;
        }
        for (int i = j; i < n; ++i) {
          const double r = double(a(i, j)) - c[std::size_t(i - j)];
          acc += (i == j ? 1.0 : 2.0) * r * r;
        }
      },
      num);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) den += (i == j ? 1.0 : 2.0) * double(a(i, j)) * double(a(i, j));
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// ||P A - L U||_F / ||A||_F with L unit lower, U upper packed in F and LAPACK's 1-based ipiv.
template <class AView, class FView, class PView>
double lu_residual(const AView& a, const FView& f, const PView& ipiv) {
  const int n = int(a.extent(0));
  // Row i of P A is row perm[i] of A: the interchanges applied in order.
  Kokkos::View<int*, Kokkos::HostSpace> perm("kolesky::cli::perm", std::size_t(n));
  for (int i = 0; i < n; ++i) perm(i) = i;
  for (int k = 0; k < n; ++k) std::swap(perm(k), perm(ipiv(k) - 1));
  double num = 0, den = 0;
  Kokkos::parallel_reduce(
      "kolesky::cli::lu_residual", HostPolicy(0, n),
      [=](const int j, double& acc) {
        std::vector<double> c(std::size_t(n), 0.0);
        for (int k = 0; k <= j; ++k) {
          const double ukj = double(f(k, j));
          c[std::size_t(k)] += ukj;  // L(k, k) = 1
          for (int i = k + 1; i < n; ++i) c[std::size_t(i)] += double(f(i, k)) * ukj;
        }
        for (int i = 0; i < n; ++i) {
          const double r = double(a(perm(i), j)) - c[std::size_t(i)];
          acc += r * r;
        }
      },
      num);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) den += double(a(i, j)) * double(a(i, j));
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace kolesky_cli
