// Host-side oracles for the unit tests: random SPD matrices, residuals in double precision.
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/Kolesky_Types.hpp"
#include "host/Kolesky_HostPool.hpp"

namespace kolesky {
namespace test {

// Saves one knob struct (impl::FlowKnobs, impl::PotrsWarpKnobs, ...: anything with a static
// get() returning a reference) and puts it back when the test ends, even by an assertion's
// early return.
template <class Knobs>
struct KnobsRestore {
  Knobs saved = Knobs::get();
  ~KnobsRestore() { Knobs::get() = saved; }
};

// The host pool / calling-thread knob (impl::HostTeamKnobs::force), restored when the test
// ends, even by an assertion's early return.
struct HostTeamForce {
  int saved = impl::HostTeamKnobs::get().force;
  ~HostTeamForce() { impl::HostTeamKnobs::get().force = saved; }
  void set(const int force) const { impl::HostTeamKnobs::get().force = force; }
};

#ifndef KOLESKY_TEST_EXECSPACE
#error "KOLESKY_TEST_EXECSPACE must name the execution space under test"
#endif
using ExecSpace = KOLESKY_TEST_EXECSPACE;
using MemSpace = ExecSpace::memory_space;

// Column-major dense matrix in double, the oracle's working type.
struct Dense {
  int n = 0, m = 0;  // rows, columns
  std::vector<double> v;
  Dense() = default;
  Dense(int rows, int cols, double x = 0) : n(rows), m(cols), v(std::size_t(rows) * cols, x) {}
  double& operator()(int i, int j) { return v[i + std::size_t(j) * n]; }
  double operator()(int i, int j) const { return v[i + std::size_t(j) * n]; }
};

// max that keeps a NaN (std::max drops it when it comes second): a NaN result must fail.
inline double nan_max(double best, double v) { return (v <= best || best != best) ? best : v; }

inline Dense random_matrix(int n, int m, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Dense a(n, m);
  for (auto& x : a.v) x = u(gen);
  return a;
}

// A = M M^T / n + I: SPD with condition number of a few tens, rounded to T so that the
// oracle factors exactly the matrix the library sees.
template <class T>
Dense random_spd(int n, unsigned seed) {
  const Dense m = random_matrix(n, n, seed);
  Dense a(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += m(i, k) * m(j, k);
      s = s / n + (i == j ? 1.0 : 0.0);
      a(i, j) = a(j, i) = double(T(s));
    }
  return a;
}

// Symmetric, entries in [-1, 1], diagonal n: SPD by diagonal dominance, O(n^2) to make (for
// the large sizes), rounded to T.
template <class T>
Dense dominant_spd(int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Dense a(n, n);
  for (int j = 0; j < n; ++j) {
    for (int i = j + 1; i < n; ++i) a(i, j) = a(j, i) = double(T(u(gen)));
    a(j, j) = n;
  }
  return a;
}

// A = Q diag(s) Q^T with Q a product of three random Householder reflections and s
// geometric from 1 down to 1/cond: SPD with condition number cond.
inline Dense spd_with_condition(int n, double cond, unsigned seed) {
  Dense a(n, n);
  for (int i = 0; i < n; ++i) a(i, i) = n > 1 ? std::pow(cond, -double(i) / (n - 1)) : 1.0;
  std::mt19937 gen(seed);
  std::normal_distribution<double> g;
  for (int r = 0; r < 3; ++r) {
    std::vector<double> v(n);
    double nv = 0;
    for (auto& x : v) {
      x = g(gen);
      nv += x * x;
    }
    for (auto& x : v) x /= std::sqrt(nv);
    // A <- H A H with H = I - 2 v v^T.
    std::vector<double> av(n);
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += a(i, k) * v[k];
      av[i] = s;
    }
    double vav = 0;
    for (int i = 0; i < n; ++i) vav += v[i] * av[i];
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        a(i, j) += -2 * v[i] * av[j] - 2 * av[i] * v[j] + 4 * vav * v[i] * v[j];
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < j; ++i) a(i, j) = a(j, i);
  return a;
}

// The symmetric matrix times x, O(n^2) (for residuals at sizes the O(n^3) checks cannot take).
inline double solve_ratio_fast(const Dense& a, const Dense& x, const Dense& b, double eps) {
  const int n = a.n;
  if (n == 0) return 0;
  double an = 0;
  for (int j = 0; j < n; ++j) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += std::abs(a(i, j));
    an = nan_max(an, s);
  }
  double worst = 0;
  for (int r = 0; r < x.m; ++r) {
    std::vector<double> res(b.v.begin() + std::size_t(r) * n, b.v.begin() + std::size_t(r + 1) * n);
    double xn = 0;
    for (int k = 0; k < n; ++k) {
      const double xk = x(k, r);
      xn += std::abs(xk);
      for (int i = 0; i < n; ++i) res[i] -= a(i, k) * xk;
    }
    double rn = 0;
    for (double v : res) rn += std::abs(v);
    worst = nan_max(worst, rn / (an * xn * n * eps));
  }
  return worst;
}

inline double norm1(const Dense& a) {
  double best = 0;
  for (int j = 0; j < a.m; ++j) {
    double s = 0;
    for (int i = 0; i < a.n; ++i) s += std::abs(a(i, j));
    best = nan_max(best, s);
  }
  return best;
}

template <class T>
constexpr double eps() {
  return std::numeric_limits<T>::epsilon();
}

// LAPACK's potrf test ratio ||A - L L^T||_1 / (n ||A||_1 eps); L lower triangular.
template <class T>
double potrf_ratio(const Dense& a, const Dense& l) {
  const int n = a.n;
  if (n == 0) return 0;
  Dense r(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int k = 0; k <= std::min(i, j); ++k) s += l(i, k) * l(j, k);
      r(i, j) = a(i, j) - s;
    }
  return norm1(r) / (n * norm1(a) * eps<T>());
}

// Backward error of a solve, worst column: ||b - A x||_1 / (||A||_1 ||x||_1 n eps).
template <class T>
double solve_ratio(const Dense& a, const Dense& x, const Dense& b) {
  const int n = a.n;
  if (n == 0) return 0;
  const double an = norm1(a);
  double worst = 0;
  for (int r = 0; r < x.m; ++r) {
    double rn = 0, xn = 0;
    for (int i = 0; i < n; ++i) {
      double s = b(i, r);
      for (int k = 0; k < n; ++k) s -= a(i, k) * x(k, r);
      rn += std::abs(s);
      xn += std::abs(x(i, r));
    }
    worst = nan_max(worst, rn / (an * xn * n * eps<T>()));
  }
  return worst;
}

// The lower-triangular factor held in `f` (Upper: transposed).
inline Dense factor_of(const Dense& f, Uplo uplo) {
  Dense l(f.n, f.n);
  for (int j = 0; j < f.n; ++j)
    for (int i = j; i < f.n; ++i) l(i, j) = uplo == Uplo::Lower ? f(i, j) : f(j, i);
  return l;
}

inline bool in_triangle(Uplo uplo, int i, int j) { return uplo == Uplo::Lower ? i >= j : i <= j; }

// Device view <-> oracle. The triangle not referenced is filled with `other`.
template <class T, class Layout>
Kokkos::View<T**, Layout, MemSpace> to_device(const Dense& a, Uplo uplo, double other) {
  Kokkos::View<T**, Layout, MemSpace> d("A", a.n, a.m);
  auto h = Kokkos::create_mirror_view(d);
  for (int j = 0; j < a.m; ++j)
    for (int i = 0; i < a.n; ++i) h(i, j) = T(in_triangle(uplo, i, j) ? a(i, j) : other);
  Kokkos::deep_copy(d, h);
  return d;
}
// Every element copied.
template <class T, class Layout>
Kokkos::View<T**, Layout, MemSpace> to_device(const Dense& a) {
  Kokkos::View<T**, Layout, MemSpace> d("B", a.n, a.m);
  auto h = Kokkos::create_mirror_view(d);
  for (int j = 0; j < a.m; ++j)
    for (int i = 0; i < a.n; ++i) h(i, j) = T(a(i, j));
  Kokkos::deep_copy(d, h);
  return d;
}

template <class View>
Dense to_host(const View& d) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  if constexpr (View::rank == 1) {
    Dense a(int(d.extent(0)), 1);
    for (int i = 0; i < a.n; ++i) a(i, 0) = h(i);
    return a;
  } else {
    Dense a(int(d.extent(0)), int(d.extent(1)));
    for (int j = 0; j < a.m; ++j)
      for (int i = 0; i < a.n; ++i) a(i, j) = h(i, j);
    return a;
  }
}

}  // namespace test
}  // namespace kolesky
