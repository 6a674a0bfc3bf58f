// Host Cholesky of a mid-size matrix over the host pool in one parallel region, without BLAS
// calls: the lower triangle of a column-major n x n matrix in groups of G columns, dealt out
// cyclically to the pool's threads; at step k every thread applies group k's rank-G update to
// its own groups to the right, the owner of group k + 1 first, which it then factors at once
// (lookahead of one). Each hand-off is a flag per group. Between the one-thread block
// (host_potrf_block, n <= 128) and the recursive panels with the host BLAS: each of their
// BLAS calls is a parallel region of its own, and under OMP_WAIT_POLICY=passive each one
// wakes sleeping threads.
#pragma once
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <vector>

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_Types.hpp"
#include "host/Kolesky_HostPool.hpp"

namespace kolesky {
namespace impl {

// Factors the kb <= G columns of a group (`a`: its top-left diagonal entry, m rows from
// there), left-looking inside the group. Returns the first failing column (1-based, local)
// or 0; the columns before it are final.
template <int G, class T>
int chol_group_factor(const int m, const int kb, T* const a, const std::ptrdiff_t lda) {
  for (int c = 0; c < kb; ++c) {
    T* const cc = a + c * lda;
    for (int p = 0; p < c; p += 2) {  // the group's earlier columns, two per pass
      const T* const l0 = a + p * lda;
      if (p + 1 < c) {
        const T* const l1 = l0 + lda;
        const T u0 = l0[c], u1 = l1[c];
        KOLESKY_IVDEP
        for (int i = c; i < m; ++i) cc[i] -= l0[i] * u0 + l1[i] * u1;
      } else {
        const T u0 = l0[c];
        KOLESKY_IVDEP
        for (int i = c; i < m; ++i) cc[i] -= l0[i] * u0;
      }
    }
    const T d = cc[c];
    if (!usable_pivot(d)) return c + 1;
    const T s = std::sqrt(d), r = T(1) / s;
    cc[c] = s;
    for (int i = c + 1; i < m; ++i) cc[i] *= r;
  }
  return 0;
}

// Group k's update of the columns to its right: x(i, j) -= sum_t L(i, t) L(j, t), i >= j.
// Column pointers start at row 0; l[t] is the group's column t from row 0.
template <int G, class T>
struct CholGroupUpdate {
  const T* l[G];
  int n, kb;

  CholGroupUpdate(const int n_, const int kb_, const T* col0, const std::ptrdiff_t lda)
      : n(n_), kb(kb_) {
    for (int t = 0; t < G; ++t) l[t] = col0 + (t < kb ? t : 0) * lda;
  }

  void apply(T* const x, const int j) const {
    for (int t = 0; t < kb; ++t) {
      const T* const lt = l[t];
      const T u = lt[j];
      KOLESKY_IVDEP
      for (int i = j; i < n; ++i) x[i] -= lt[i] * u;
    }
  }

  // Columns j and j + 1: each L entry loaded once for two multiply-adds.
  void apply2(T* const x0, T* const x1, const int j) const {
    if (kb < G) {
      apply(x0, j);
      apply(x1, j + 1);
      return;
    }
    T u0[G], u1[G];
    for (int t = 0; t < G; ++t) u0[t] = l[t][j], u1[t] = l[t][j + 1];
    T d = T(0);
    for (int t = 0; t < G; ++t) d += l[t][j] * u0[t];
    x0[j] -= d;
    KOLESKY_IVDEP
    for (int i = j + 1; i < n; ++i) {
      T s0 = T(0), s1 = T(0), r0 = T(0), r1 = T(0);  // half-length dependency chains
      for (int t = 0; t < G; t += 2) {
        const T v = l[t][i], w = l[t + 1][i];
        s0 += v * u0[t];
        s1 += v * u1[t];
        r0 += w * u0[t + 1];
        r1 += w * u1[t + 1];
      }
      x0[i] -= s0 + r0;
      x1[i] -= s1 + r1;
    }
  }
};

// Lower triangle of the column-major n x n matrix a; returns LAPACK's info. On failure the
// columns before the failing one hold their factor.
template <class Exec, int G, class T>
int host_potrf_threads(const Exec& exec, const int n, T* const a, const std::ptrdiff_t lda,
                       int team) {
  const int ng = (n + G - 1) / G;
  if (team > ng) team = ng;
  if (team < 1) team = 1;
  HostGroupFlags done(ng);
  std::vector<int> fail(std::size_t(ng), 0);
  const auto factor = [&](const int g) {
    const int k0 = g * G, kb = n - k0 < G ? n - k0 : G;
    const int r = chol_group_factor<G>(n - k0, kb, a + k0 + k0 * lda, lda);
    fail[std::size_t(g)] = r != 0 ? k0 + r : 0;
    done.publish(g);
  };
  const auto body = [&](const int t) {
    if (t == 0) factor(0);
    for (int k = 0; k < ng; ++k) {
      done.wait(k);
      if (fail[std::size_t(k)] != 0) return;  // every thread stops at the same group
      const int k0 = k * G, kb = n - k0 < G ? n - k0 : G;
      const CholGroupUpdate<G, T> g(n, kb, a + k0 * lda, lda);
      int j = k + 1;
      j += ((t - j) % team + team) % team;  // this thread's first group after k
      for (; j < ng; j += team) {
        const int c0 = j * G, c1 = n - c0 < G ? n : c0 + G;
        int c = c0;
        for (; c + 2 <= c1; c += 2) g.apply2(a + c * lda, a + (c + 1) * lda, c);
        if (c < c1) g.apply(a + c * lda, c);
        if (j == k + 1) factor(j);
      }
    }
  };
  exec.fence();
  if (team == 1) {
    body(0);
  } else {
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_for("kolesky::potrf_threads", Policy(exec, 1, team),
                         [&](const typename Policy::member_type& mb) { body(mb.team_rank()); });
    exec.fence();
  }
  for (int g = 0; g < ng; ++g)
    if (fail[std::size_t(g)] != 0) return fail[std::size_t(g)];
  return 0;
}

}  // namespace impl
}  // namespace kolesky
