// Test matrices in the manner of LAPACK's xLATMS (as xCHKPO / xCHKGE use it): A = Q diag(s) Q^T
// (SPD) or U diag(s) V^T (general) with random orthogonal factors made of Householder
// reflections, singular-value distributions by condition number, scaling near underflow and
// overflow of the scalar under test, and the failing types (a zero / negative pivot, a
// zero column, rank deficiency). Generated in double on the host, then rounded to T, so the
// oracle sees exactly the matrix the library sees. Every type has a name for failure messages.
#pragma once
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "Kolesky_TestUtils.hpp"

namespace kolesky {
namespace test {
namespace gen {

// SPD types (potrf, potrs, posv, batched potrf). The failing ones are built from the
// well-conditioned matrix as LAPACK does: row and column k zeroed (and for Negative a
// negative diagonal entry put back), or an indefinite 2 x 2 leading minor at k - 1, k.
enum class Spd {
  Diagonal,           // Q = I, s in [1, 2]
  WellConditioned,    // cond 2, geometric
  CondSqrtGeometric,  // cond sqrt(0.1 / eps), s geometric
  CondSqrtOneSmall,   // one s = 1 / cond, the rest 1
  CondSqrtOneLarge,   // one s = 1, the rest 1 / cond
  CondEpsGeometric,   // cond 0.1 / eps (LAPACK's BADC2)
  CondEpsOneSmall,
  CondEpsOneLarge,
  NearUnderflow,  // well conditioned, max |a_ij| = 0.25 * tiny / eps (LAPACK's SMALL)
  NearOverflow,   // max |a_ij| = 1 / SMALL
  ZeroFirst,      // row and column 0 zero: info 1
  ZeroMiddle,     // ... n / 2: info n / 2 + 1
  ZeroLast,       // ... n - 1: info n
  NegativeFirst,  // as Zero*, with a(k, k) < 0
  NegativeMiddle,
  NegativeLast,
  IndefiniteMinor  // |a(k, k-1)| = 10 sqrt(a(k, k) a(k-1, k-1)) at k = n / 2: info k + 1
};
constexpr Spd kAllSpd[] = {
    Spd::Diagonal,        Spd::WellConditioned, Spd::CondSqrtGeometric, Spd::CondSqrtOneSmall,
    Spd::CondSqrtOneLarge, Spd::CondEpsGeometric, Spd::CondEpsOneSmall, Spd::CondEpsOneLarge,
    Spd::NearUnderflow,   Spd::NearOverflow,    Spd::ZeroFirst,         Spd::ZeroMiddle,
    Spd::ZeroLast,        Spd::NegativeFirst,   Spd::NegativeMiddle,    Spd::NegativeLast,
    Spd::IndefiniteMinor};

inline const char* name(Spd t) {
  switch (t) {
    case Spd::Diagonal: return "Diagonal";
    case Spd::WellConditioned: return "WellConditioned";
    case Spd::CondSqrtGeometric: return "CondSqrtEps_Geometric";
    case Spd::CondSqrtOneSmall: return "CondSqrtEps_OneSmall";
    case Spd::CondSqrtOneLarge: return "CondSqrtEps_OneLarge";
    case Spd::CondEpsGeometric: return "CondEps_Geometric";
    case Spd::CondEpsOneSmall: return "CondEps_OneSmall";
    case Spd::CondEpsOneLarge: return "CondEps_OneLarge";
    case Spd::NearUnderflow: return "NearUnderflow";
    case Spd::NearOverflow: return "NearOverflow";
    case Spd::ZeroFirst: return "ZeroPivotFirst";
    case Spd::ZeroMiddle: return "ZeroPivotMiddle";
    case Spd::ZeroLast: return "ZeroPivotLast";
    case Spd::NegativeFirst: return "NegativePivotFirst";
    case Spd::NegativeMiddle: return "NegativePivotMiddle";
    case Spd::NegativeLast: return "NegativePivotLast";
    case Spd::IndefiniteMinor: return "IndefiniteMinorMiddle";
  }
  return "?";
}

// General types (getrf, getrs, gesv; getrf_nopiv only where noted).
enum class Ge {
  WellConditioned,  // cond 2
  CondSqrtGeometric,
  CondSqrtOneSmall,
  CondSqrtOneLarge,
  CondEpsGeometric,
  CondEpsOneSmall,
  CondEpsOneLarge,
  NearUnderflow,
  NearOverflow,
  DiagonallyDominant,  // entries in [-1, 1], a(i, i) = n + 1 + u: unpivoted LU is stable
  SpdWellConditioned,  // Q diag(s) Q^T, cond 2: unpivoted LU is stable
  SpdCondSqrt,         // ... cond sqrt(0.1 / eps)
  ZeroColumnFirst,     // info 1
  ZeroColumnMiddle,    // info n / 2 + 1
  ZeroColumnLast,      // info n
  ZeroColumnsLastHalf, // columns n/2 .. n-1 zero: info n / 2 + 1
  RankDeficient        // the last max(1, n / 4) singular values zero: info as LAPACK's
};
constexpr Ge kAllGe[] = {Ge::WellConditioned,    Ge::CondSqrtGeometric,  Ge::CondSqrtOneSmall,
                         Ge::CondSqrtOneLarge,   Ge::CondEpsGeometric,   Ge::CondEpsOneSmall,
                         Ge::CondEpsOneLarge,    Ge::NearUnderflow,      Ge::NearOverflow,
                         Ge::DiagonallyDominant, Ge::SpdWellConditioned, Ge::SpdCondSqrt,
                         Ge::ZeroColumnFirst,    Ge::ZeroColumnMiddle,   Ge::ZeroColumnLast,
                         Ge::ZeroColumnsLastHalf, Ge::RankDeficient};

inline const char* name(Ge t) {
  switch (t) {
    case Ge::WellConditioned: return "WellConditioned";
    case Ge::CondSqrtGeometric: return "CondSqrtEps_Geometric";
    case Ge::CondSqrtOneSmall: return "CondSqrtEps_OneSmall";
    case Ge::CondSqrtOneLarge: return "CondSqrtEps_OneLarge";
    case Ge::CondEpsGeometric: return "CondEps_Geometric";
    case Ge::CondEpsOneSmall: return "CondEps_OneSmall";
    case Ge::CondEpsOneLarge: return "CondEps_OneLarge";
    case Ge::NearUnderflow: return "NearUnderflow";
    case Ge::NearOverflow: return "NearOverflow";
    case Ge::DiagonallyDominant: return "DiagonallyDominant";
    case Ge::SpdWellConditioned: return "SpdWellConditioned";
    case Ge::SpdCondSqrt: return "SpdCondSqrtEps";
    case Ge::ZeroColumnFirst: return "ZeroColumnFirst";
    case Ge::ZeroColumnMiddle: return "ZeroColumnMiddle";
    case Ge::ZeroColumnLast: return "ZeroColumnLast";
    case Ge::ZeroColumnsLastHalf: return "ZeroColumnsLastHalf";
    case Ge::RankDeficient: return "RankDeficient";
  }
  return "?";
}

// Types for which unpivoted (Crout) LU is stable.
inline bool nopiv_stable(Ge t) {
  return t == Ge::DiagonallyDominant || t == Ge::SpdWellConditioned || t == Ge::SpdCondSqrt;
}

// A generated matrix. `info`: what any correct factorization reports (0, or the designed
// failing pivot); kFromLapack: only LAPACK on the same matrix can tell (ill-conditioned near
// 1/eps, rank deficient by rounding).
constexpr int kFromLapack = -1;
struct Matrix {
  Dense a;               // rounded to T
  std::string type;      // the type's name
  int info = 0;
  double cond_inf = 0;   // ||A||_inf ||A^-1||_inf where known (well-conditioned types), else 0
  // Rank deficient by its singular values (rank < n): in floating point the trailing pivots
  // come out tiny or exactly zero depending on rounding (LAPACK scales by the reciprocal of
  // the pivot, Kolesky divides), so info is 0 or names a pivot past the rank.
  int rank = -1;
};

template <class T>
constexpr double lapack_eps() {  // LAPACK's 'Precision': eps * base
  return std::numeric_limits<T>::epsilon();
}
// LAPACK's SMALL of xLATB4: 0.25 * safe minimum / precision.
template <class T>
double small_norm() {
  return 0.25 * double(std::numeric_limits<T>::min()) / lapack_eps<T>();
}

// A random orthogonal n x n matrix, the product of n Householder reflections I - 2 v v^T with
// v normal random (O(n^3)); cached per (n, seed) because the large sizes reuse it.
inline const Dense& orthogonal(int n, unsigned seed) {
  static std::map<std::pair<int, unsigned>, Dense> cache;
  auto it = cache.find({n, seed});
  if (it != cache.end()) return it->second;
  Dense q(n, n);
  for (int i = 0; i < n; ++i) q(i, i) = 1;
  std::mt19937 gen(seed * 2654435761u + unsigned(n));
  std::normal_distribution<double> g;
  std::vector<double> v(n), qv(n);
  for (int r = 0; r < n; ++r) {
    double nv = 0;
    for (auto& x : v) {
      x = g(gen);
      nv += x * x;
    }
    const double s = 1 / std::sqrt(nv);
    for (auto& x : v) x *= s;
    // Q <- Q (I - 2 v v^T) = Q - 2 (Q v) v^T.
    std::fill(qv.begin(), qv.end(), 0.0);
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i) qv[i] += q(i, k) * v[k];
    for (int j = 0; j < n; ++j) {
      const double f = 2 * v[j];
      for (int i = 0; i < n; ++i) q(i, j) -= qv[i] * f;
    }
  }
  return cache.emplace(std::make_pair(n, seed), std::move(q)).first->second;
}

// U diag(s) V^T.
inline Dense usv(const Dense& u, const std::vector<double>& s, const Dense& v) {
  const int n = u.n;
  Dense a(n, n);
  std::vector<double> vs(n);
  for (int k = 0; k < n; ++k) {
    if (s[k] == 0) continue;
    for (int j = 0; j < n; ++j) vs[j] = s[k] * v(j, k);
    for (int j = 0; j < n; ++j) {
      const double f = vs[j];
      for (int i = 0; i < n; ++i) a(i, j) += u(i, k) * f;
    }
  }
  return a;
}

inline double norm_inf(const Dense& a) {
  double best = 0;
  for (int i = 0; i < a.n; ++i) {
    double s = 0;
    for (int j = 0; j < a.m; ++j) s += std::abs(a(i, j));
    best = std::max(best, s);
  }
  return best;
}

// Singular values: MODE 3 (geometric), 2 (one small), 1 (one large) of xLATMS.
enum class Mode { Geometric, OneSmall, OneLarge };
inline std::vector<double> sigma(int n, double cond, Mode mode) {
  std::vector<double> s(n, 1.0);
  for (int i = 0; i < n; ++i) {
    if (mode == Mode::Geometric)
      s[i] = n > 1 ? std::pow(cond, -double(i) / (n - 1)) : 1.0;
    else if (mode == Mode::OneSmall)
      s[i] = i == n - 1 && n > 1 ? 1 / cond : 1.0;
    else
      s[i] = i == 0 || n == 1 ? 1.0 : 1 / cond;
  }
  return s;
}

template <class T>
void round_to(Dense& a) {
  for (auto& x : a.v) x = double(T(x));
}

// Symmetrize (rounding can make Q D Q^T slightly unsymmetric) from the lower triangle.
inline void symmetrize(Dense& a) {
  for (int j = 0; j < a.n; ++j)
    for (int i = j + 1; i < a.n; ++i) a(j, i) = a(i, j);
}

inline void scale_to(Dense& a, double target) {
  double m = 0;
  for (double x : a.v) m = std::max(m, std::abs(x));
  if (m == 0) return;
  for (auto& x : a.v) x = x / m * target;
}

// Whether the type makes sense at order n (the failing types need a pivot to fail).
inline bool applicable(Spd t, int n) {
  if (n == 0) return t == Spd::WellConditioned;
  if (t == Spd::IndefiniteMinor) return n >= 2;
  return true;
}
inline bool applicable(Ge t, int n) {
  if (n == 0) return t == Ge::WellConditioned;
  return true;
}

template <class T>
Matrix spd(Spd t, int n, unsigned seed = 1) {
  Matrix m;
  m.type = name(t);
  const double eps = lapack_eps<T>();
  const double c_sqrt = std::sqrt(0.1 / eps), c_eps = 0.1 / eps;
  std::vector<double> s;
  switch (t) {
    case Spd::CondSqrtGeometric: s = sigma(n, c_sqrt, Mode::Geometric); break;
    case Spd::CondSqrtOneSmall: s = sigma(n, c_sqrt, Mode::OneSmall); break;
    case Spd::CondSqrtOneLarge: s = sigma(n, c_sqrt, Mode::OneLarge); break;
    case Spd::CondEpsGeometric: s = sigma(n, c_eps, Mode::Geometric); break;
    case Spd::CondEpsOneSmall: s = sigma(n, c_eps, Mode::OneSmall); break;
    case Spd::CondEpsOneLarge: s = sigma(n, c_eps, Mode::OneLarge); break;
    default: s = sigma(n, 2.0, Mode::Geometric); break;
  }
  if (t == Spd::Diagonal) {
    std::mt19937 g(seed + 7u * n);
    std::uniform_real_distribution<double> u(1.0, 2.0);
    m.a = Dense(n, n);
    for (int i = 0; i < n; ++i) m.a(i, i) = u(g);
  } else {
    const Dense& q = orthogonal(n, seed);
    m.a = usv(q, s, q);
    symmetrize(m.a);
  }
  if (t == Spd::NearUnderflow) scale_to(m.a, small_norm<T>());
  if (t == Spd::NearOverflow) scale_to(m.a, 1 / small_norm<T>());
  const int mid = n / 2;
  int k = -1;
  if (t == Spd::ZeroFirst || t == Spd::NegativeFirst) k = 0;
  if (t == Spd::ZeroMiddle || t == Spd::NegativeMiddle) k = mid;
  if (t == Spd::ZeroLast || t == Spd::NegativeLast) k = n - 1;
  if (k >= 0) {
    const double d = m.a(k, k);
    for (int i = 0; i < n; ++i) m.a(i, k) = m.a(k, i) = 0;
    if (t == Spd::NegativeFirst || t == Spd::NegativeMiddle || t == Spd::NegativeLast)
      m.a(k, k) = -d;
    m.info = k + 1;
  }
  if (t == Spd::IndefiniteMinor) {
    const int j = std::max(1, mid);
    m.a(j, j - 1) = m.a(j - 1, j) = 10 * std::sqrt(m.a(j, j) * m.a(j - 1, j - 1));
    m.info = j + 1;
  }
  if (t == Spd::CondEpsGeometric || t == Spd::CondEpsOneSmall || t == Spd::CondEpsOneLarge)
    m.info = kFromLapack;  // 0.1 / eps: rounding to T may already make it indefinite
  round_to<T>(m.a);
  if (t == Spd::WellConditioned && n > 0) {
    std::vector<double> si(n);
    for (int i = 0; i < n; ++i) si[i] = 1 / s[i];
    const Dense& q = orthogonal(n, seed);
    m.cond_inf = norm_inf(m.a) * norm_inf(usv(q, si, q));
  }
  return m;
}

template <class T>
Matrix general(Ge t, int n, unsigned seed = 1) {
  Matrix m;
  m.type = name(t);
  const double eps = lapack_eps<T>();
  const double c_sqrt = std::sqrt(0.1 / eps), c_eps = 0.1 / eps;
  std::vector<double> s;
  switch (t) {
    case Ge::CondSqrtGeometric:
    case Ge::SpdCondSqrt: s = sigma(n, c_sqrt, Mode::Geometric); break;
    case Ge::CondSqrtOneSmall: s = sigma(n, c_sqrt, Mode::OneSmall); break;
    case Ge::CondSqrtOneLarge: s = sigma(n, c_sqrt, Mode::OneLarge); break;
    case Ge::CondEpsGeometric: s = sigma(n, c_eps, Mode::Geometric); break;
    case Ge::CondEpsOneSmall: s = sigma(n, c_eps, Mode::OneSmall); break;
    case Ge::CondEpsOneLarge: s = sigma(n, c_eps, Mode::OneLarge); break;
    default: s = sigma(n, 2.0, Mode::Geometric); break;
  }
  if (t == Ge::RankDeficient) {
    s = sigma(n, 2.0, Mode::Geometric);
    for (int i = n - std::max(1, n / 4); i < n; ++i) s[i] = 0;
  }
  const Dense& u = orthogonal(n, seed);
  const bool sym = t == Ge::SpdWellConditioned || t == Ge::SpdCondSqrt;
  const Dense& v = sym ? u : orthogonal(n, seed + 1000003u);
  if (t == Ge::DiagonallyDominant) {
    std::mt19937 g(seed + 13u * n);
    std::uniform_real_distribution<double> r(-1.0, 1.0);
    m.a = Dense(n, n);
    for (auto& x : m.a.v) x = r(g);
    for (int i = 0; i < n; ++i) m.a(i, i) = n + 1.0 + m.a(i, i);
  } else {
    m.a = usv(u, s, v);
    if (sym) symmetrize(m.a);
  }
  if (t == Ge::NearUnderflow) scale_to(m.a, small_norm<T>());
  if (t == Ge::NearOverflow) scale_to(m.a, 1 / small_norm<T>());
  int z0 = -1, z1 = -1;
  if (t == Ge::ZeroColumnFirst) z0 = 0, z1 = 1;
  if (t == Ge::ZeroColumnMiddle) z0 = n / 2, z1 = z0 + 1;
  if (t == Ge::ZeroColumnLast) z0 = n - 1, z1 = n;
  if (t == Ge::ZeroColumnsLastHalf) z0 = n / 2, z1 = n;
  if (z0 >= 0) {
    for (int j = z0; j < z1; ++j)
      for (int i = 0; i < n; ++i) m.a(i, j) = 0;
    m.info = z0 + 1;
  }
  if (t == Ge::RankDeficient) m.info = kFromLapack, m.rank = n - std::max(1, n / 4);
  round_to<T>(m.a);
  if (t == Ge::WellConditioned && n > 0) {
    std::vector<double> si(n);
    for (int i = 0; i < n; ++i) si[i] = 1 / s[i];
    m.cond_inf = norm_inf(m.a) * norm_inf(usv(v, si, u));  // A^-1 = V diag(1/s) U^T
  }
  return m;
}

// Exact solution and right-hand sides b = op(A) x (in double, rounded to T), as xLARHS.
struct System {
  Dense x, b;
};
template <class T>
System rhs(const Dense& a, int nrhs, bool trans, unsigned seed) {
  const int n = a.n;
  System s{random_matrix(n, nrhs, seed), Dense(n, nrhs)};
  round_to<T>(s.x);
  for (int r = 0; r < nrhs; ++r)
    for (int k = 0; k < n; ++k) {
      const double xk = s.x(k, r);
      for (int i = 0; i < n; ++i) s.b(i, r) += (trans ? a(k, i) : a(i, k)) * xk;
    }
  round_to<T>(s.b);
  return s;
}

// xGET04: max over columns ||x - x_true||_inf / (||x_true||_inf cond eps).
template <class T>
double error_ratio(const Dense& x, const Dense& xt, double cond) {
  double worst = 0;
  for (int r = 0; r < x.m; ++r) {
    double d = 0, xn = 0;
    for (int i = 0; i < x.n; ++i) {
      d = std::max(d, std::abs(x(i, r) - xt(i, r)));
      xn = std::max(xn, std::abs(xt(i, r)));
    }
    if (xn > 0) worst = std::max(worst, d / (xn * cond * eps<T>()));
  }
  return worst;
}

}  // namespace gen
}  // namespace test
}  // namespace kolesky
