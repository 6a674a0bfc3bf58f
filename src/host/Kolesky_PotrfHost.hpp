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
#include <memory>
#include <vector>

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_Types.hpp"
#include "host/Kolesky_HostPool.hpp"
#include "host/Kolesky_HostRankUpdate.hpp"

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
// Column pointers start at row 0. A full group updates four columns at a time: their
// triangular corner row by row, then the rows below by host_rank_update, from a copy of L's
// rows below the group when `work` is given (HostPackedL).
template <int G, class T>
struct CholGroupUpdate {
  static constexpr int NC = kHostUpdateColumns;
  const T* l0;  // the group's column 0, from row 0
  std::ptrdiff_t lda;
  int n, kb, pb;
  HostPackedL<T> pk;  // rows from pb

  // Entries `work` needs for group k0's rows below it.
  static std::size_t packed_size(const int n, const int k0) {
    return HostPackedL<T>::size(G, n - k0 - G);
  }

  CholGroupUpdate(const int n_, const int kb_, const int k0, const T* col0,
                  const std::ptrdiff_t lda_, T* const work = nullptr)
      : l0(col0), lda(lda_), n(n_), kb(kb_), pb(k0 + G) {
    if (work && kb == G) pk.template pack<G>(l0, lda, pb, n, work);
  }

  void apply(T* const x, const int j) const {
    for (int t = 0; t < kb; ++t) {
      const T* const lt = l0 + t * lda;
      const T u = lt[j];
      KOLESKY_IVDEP
      for (int i = j; i < n; ++i) x[i] -= lt[i] * u;
    }
  }

  template <int C>
  void apply_full(T* const* x, const int j) const {
    T u[C][G];
    for (int c = 0; c < C; ++c)
      for (int t = 0; t < G; ++t) u[c][t] = l0[t * lda + j + c];
    for (int c = 0; c < C; ++c)
      for (int i = j + c; i < j + C; ++i) {
        T s = x[c][i];
        for (int t = 0; t < G; ++t) s -= l0[t * lda + i] * u[c][t];
        x[c][i] = s;
      }
    const int i = j + C;
    if (pk.l)
      host_rank_update<G, C>(x, u, i, n, pk.l + (i - pb), pk.ld);
    else
      host_rank_update<G, C>(x, u, i, n, l0 + i, lda);
  }

  // Columns [c0, c1) of the matrix a.
  void apply_columns(T* const a, const std::ptrdiff_t ld, int c0, const int c1) const {
    if (kb < G) {
      for (; c0 < c1; ++c0) apply(a + c0 * ld, c0);
      return;
    }
    for (; c0 + NC <= c1; c0 += NC) {
      T* x[NC];
      for (int c = 0; c < NC; ++c) x[c] = a + (c0 + c) * ld;
      apply_full<NC>(x, c0);
    }
    for (; c0 < c1; ++c0) {
      T* x[1] = {a + c0 * ld};
      apply_full<1>(x, c0);
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
  using U = CholGroupUpdate<G, T>;
  HostGroupFlags done(ng);
  std::vector<int> fail(std::size_t(ng), 0);
  // Per thread: its packed copy of the current group's L (packing costs about one column's
  // update: done while 32 or more columns are to the group's right).
  constexpr int kPackFrom = 32;
  const std::size_t pks = U::packed_size(n, 0);
  const std::unique_ptr<T[]> packs(n >= G + kPackFrom ? new T[std::size_t(team) * pks] : nullptr);
  const auto factor = [&](const int g) {
    const int k0 = g * G, kb = n - k0 < G ? n - k0 : G;
    const int r = chol_group_factor<G>(n - k0, kb, a + k0 + k0 * lda, lda);
    fail[std::size_t(g)] = r != 0 ? k0 + r : 0;
    done.publish(g);
  };
  const auto body = [&](const int t) {
    if (t == 0) factor(0);
    for (int k = 0; k < ng; ++k) {
      int j = k + 1;
      j += ((t - j) % team + team) % team;  // this thread's first group after k
      if (j >= ng) break;                   // and its last step
      done.wait(k);
      if (fail[std::size_t(k)] != 0) return;  // every thread stops at the same group
      const int k0 = k * G, kb = n - k0 < G ? n - k0 : G;
      T* const work = n - k0 - G >= kPackFrom ? packs.get() + std::size_t(t) * pks : nullptr;
      const U g(n, kb, k0, a + k0 * lda, lda, work);
      for (; j < ng; j += team) {
        const int c0 = j * G, c1 = n - c0 < G ? n : c0 + G;
        g.apply_columns(a, lda, c0, c1);
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
