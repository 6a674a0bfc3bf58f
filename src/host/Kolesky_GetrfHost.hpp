// Host LU kernels on column-major blocks (unit stride, so the compiler vectorizes them):
//
//   host_getrf_block     serial_getrf's result by the calling thread, G columns at a time
//   host_getrf_threads   the same over the host pool in one parallel region (mid-size
//                        matrices): column groups dealt out cyclically, each group factored by
//                        its owner as soon as its last update lands (lookahead of one)
//
// Both make the same pivot choices and report the same info as serial_getrf: the first
// column (1-based) whose pivot is zero or not finite; such a column is left unscaled and
// updates nothing.
#pragma once
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <memory>
#include <vector>

#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Lu_Internal.hpp"
#include "host/Kolesky_HostPool.hpp"
#include "host/Kolesky_HostRankUpdate.hpp"

namespace kolesky {
namespace impl {

// First index of the largest pivot_key in x[0, len): the maximum in eight independent lanes
// (a vectorizable reduction), then the first entry that reaches it.
template <class T>
int host_pivot_index(const int len, const T* x) {
  T lane[8] = {};
  int i = 0;
  for (; i + 8 <= len; i += 8)
    for (int t = 0; t < 8; ++t) {
      const T k = pivot_key(x[i + t]);
      lane[t] = k > lane[t] ? k : lane[t];
    }
  T best = T(-1);
  for (int t = 0; t < 8; ++t) best = lane[t] > best ? lane[t] : best;
  for (; i < len; ++i) {
    const T k = pivot_key(x[i]);
    best = k > best ? k : best;
  }
  for (i = 0; i < len; ++i)
    if (pivot_key(x[i]) == best) return i;
  return 0;
}

// Factors the kb <= G columns of a group; `a` is the group's top-left diagonal entry, m the
// rows from there. Left-looking inside the group: each column takes the earlier columns'
// updates in one fused pass. Interchanges are applied to the group's own columns only;
// piv[t] is the local row chosen for column t, ok[t] whether its pivot was usable.
// Returns the first failing column (1-based, local) or 0.
template <int G, class T>
int lu_group_factor(const int m, const int kb, T* const a, const std::ptrdiff_t lda, int* piv,
                    bool* ok) {
  int info = 0;
  for (int t = 0; t < G; ++t) ok[t] = false, piv[t] = t;
  for (int c = 0; c < kb && c < m; ++c) {
    T* const cc = a + c * lda;
    // The earlier group columns' updates, each row taking them one at a time in column order
    // (rows above c and below alike, as right-looking elimination does, so that equal rows
    // stay equal and an exactly singular matrix meets an exactly zero pivot), two columns per
    // pass over the rows below both.
    for (int p = 0; p < c;) {
      if (!ok[p]) {
        ++p;
        continue;
      }
      int p2 = p + 1;
      while (p2 < c && !ok[p2]) ++p2;
      const T* const l0 = a + p * lda;
      const T u0 = cc[p];
      if (p2 < c) {
        const T* const l1 = a + p2 * lda;
        for (int i = p + 1; i <= p2; ++i) cc[i] -= l0[i] * u0;
        const T u1 = cc[p2];
        KOLESKY_IVDEP
        for (int i = p2 + 1; i < m; ++i) cc[i] = (cc[i] - l0[i] * u0) - l1[i] * u1;
        p = p2 + 1;
      } else {
        KOLESKY_IVDEP
        for (int i = p + 1; i < m; ++i) cc[i] -= l0[i] * u0;
        p = c;
      }
    }
    const int p = c + host_pivot_index(m - c, cc + c);
    piv[c] = p;
    if (p != c)
      for (int j = 0; j < kb; ++j) {
        T* const cj = a + j * lda;
        const T x = cj[c];
        cj[c] = cj[p];
        cj[p] = x;
      }
    const T d = cc[c];
    if (!usable_lu_pivot(d)) {
      if (info == 0) info = c + 1;
      continue;
    }
    ok[c] = true;
    // A division, not a multiplication by 1 / d: a row equal to the pivot row then gets the
    // multiplier 1 exactly (x * (1 / x) is not always 1), and its remainder is exactly zero.
    for (int i = c + 1; i < m; ++i) cc[i] /= d;
  }
  return info;
}

// A factored group of G columns applied to columns to its right (interchanges, U rows, rank-G
// update of the rows below by host_rank_update) or to its left (interchanges only). Column
// pointers start at the group's first row. The U rows are the unit lower triangle's inverse
// times the top rows (a product of independent multiply-adds instead of a substitution chain).
// A group with a failed pivot (or fewer than G columns) takes the general path: sequential,
// failed columns skipped.
template <int G, class T>
struct LuGroupUpdate {
  static constexpr int NC = kHostUpdateColumns;
  const T* l0;  // the group's first row
  std::ptrdiff_t lda;
  int m, kb;
  int piv[G];
  bool ok[G];
  bool full;
  T li[G][G];  // li[q][r] = (L11^{-1})(r, q) when full
  HostPackedL<T> pk;

  // `work`: room for packed_size(m) entries, or null; a full group's rows below its diagonal
  // block are then copied there (HostPackedL).
  static std::size_t packed_size(const int m) { return HostPackedL<T>::size(G, m - G); }

  LuGroupUpdate(const int m_, const int kb_, const T* a, const std::ptrdiff_t lda_, const int* piv_,
                const bool* ok_, T* const work = nullptr)
      : l0(a), lda(lda_), m(m_), kb(kb_ < m_ ? kb_ : m_) {
    full = kb == G;
    for (int t = 0; t < G; ++t) {
      piv[t] = t < kb ? piv_[t] : t, ok[t] = t < kb && ok_[t];
      if (t < kb) full = full && ok[t];
    }
    if (!full) return;
    for (int q = 0; q < G; ++q) {
      for (int r = 0; r < G; ++r) li[q][r] = r == q ? T(1) : T(0);
      for (int r = q + 1; r < G; ++r) {
        T x = T(0);
        for (int t = q; t < r; ++t) x -= l0[t * lda + r] * li[q][t];
        li[q][r] = x;
      }
    }
    if (work) pk.template pack<G>(l0, lda, G, m, work);
  }

  void swap(T* const x) const {
    for (int t = 0; t < kb; ++t) {
      const T v = x[t];
      x[t] = x[piv[t]];
      x[piv[t]] = v;
    }
  }

  void apply_general(T* const x) const {
    swap(x);
    for (int p = 0; p < kb; ++p) {
      if (!ok[p]) continue;
      for (int q = p + 1; q < kb; ++q) x[q] -= l0[p * lda + q] * x[p];
    }
    for (int p = 0; p < kb; ++p) {
      if (!ok[p]) continue;
      const T* const lp = l0 + p * lda;
      const T u = x[p];
      KOLESKY_IVDEP
      for (int i = kb; i < m; ++i) x[i] -= lp[i] * u;
    }
  }

  template <int C>
  void apply_full(T* const* x) const {
    T u[C][G];
    for (int c = 0; c < C; ++c) {
      swap(x[c]);
      for (int r = 0; r < G; ++r) u[c][r] = T(0);
    }
    for (int q = 0; q < G; ++q)
      for (int c = 0; c < C; ++c) {
        const T y = x[c][q];
        for (int r = q; r < G; ++r) u[c][r] += li[q][r] * y;
      }
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < G; ++r) x[c][r] = u[c][r];
    if (pk.l)
      host_rank_update<G, C>(x, u, G, m, pk.l, pk.ld);
    else
      host_rank_update<G, C>(x, u, G, m, l0 + G, lda);
  }

  // Columns [j0, j1) of the matrix, given by a pointer at the group's first row of column 0.
  void apply_columns(T* const row0, const std::ptrdiff_t ld, int j0, const int j1) const {
    if (!full) {
      for (; j0 < j1; ++j0) apply_general(row0 + j0 * ld);
      return;
    }
    for (; j0 + NC <= j1; j0 += NC) {
      T* x[NC];
      for (int c = 0; c < NC; ++c) x[c] = row0 + (j0 + c) * ld;
      apply_full<NC>(x);
    }
    for (; j0 < j1; ++j0) {
      T* x[1] = {row0 + j0 * ld};
      apply_full<1>(x);
    }
  }
};

// m x w block (m rows from the block's first row, leading dimension lda) G columns at a time:
// each group factored, then applied to the block's columns to its right and its interchanges to
// the columns to its left; ipiv[c] = row_offset + (local pivot row) + 1, as serial_getrf
// writes it.
template <int G, class T>
int host_getrf_block(const int m, const int w, T* const a, const std::ptrdiff_t lda, int* ipiv,
                     const int row_offset) {
  int info = 0;
  const int kn = m < w ? m : w;
  // Packing costs about one column's update: done for groups with 32 columns or more to their
  // right (so never in the blocked path's 32-column panels).
  using U = LuGroupUpdate<G, T>;
  constexpr int kPackFrom = 32;
  const std::unique_ptr<T[]> work(w >= G + kPackFrom ? new T[U::packed_size(m)] : nullptr);
  for (int k = 0; k < kn; k += G) {
    const int kb = kn - k < G ? kn - k : G;
    T* const ak = a + k + k * lda;
    int piv[G];
    bool ok[G];
    const int r = lu_group_factor<G>(m - k, kb, ak, lda, piv, ok);
    if (r != 0 && info == 0) info = k + r;
    for (int t = 0; t < kb; ++t) ipiv[k + t] = row_offset + k + piv[t] + 1;
    const U g(m - k, kb, ak, lda, piv, ok, w - k - kb >= kPackFrom ? work.get() : nullptr);
    for (int j = 0; j < k; ++j) g.swap(a + k + j * lda);
    g.apply_columns(a + k, lda, k + kb, w);
  }
  return info;
}

// n x n column-major matrix over `team` threads of the host pool (one parallel region, no BLAS
// call): group g of G columns belongs to thread g % team; at step k every thread applies
// group k to its own groups to the right, the owner of group k + 1 first, which it then
// factors at once, so the next step's group is ready when the others get there. Interchanges
// reach the groups to the left at the end (nothing reads them before). Waits spin on one flag
// per group (the team's threads run concurrently: TeamPolicy guarantees it).
template <class Exec, int G, class T>
int host_getrf_threads(const Exec& exec, const int n, T* const a, const std::ptrdiff_t lda,
                       int* ipiv, int team) {
  const int ng = (n + G - 1) / G;
  if (team > ng) team = ng;
  if (team <= 1) return host_getrf_block<G>(n, n, a, lda, ipiv, 0);
  using U = LuGroupUpdate<G, T>;
  HostGroupFlags done(ng);
  std::vector<int> fail(std::size_t(ng), 0);
  std::vector<char> okc(std::size_t(ng) * G, 0);
  // Per thread: its packed copy of the current group's L, and the left interchanges' buffers.
  const std::size_t pks = U::packed_size(n);
  const std::unique_ptr<T[]> packs(new T[std::size_t(team) * (pks + std::size_t(n))]);
  const std::unique_ptr<int[]> perms(new int[std::size_t(team) * std::size_t(n)]);
  const auto factor = [&](const int g) {
    const int k0 = g * G, kb = n - k0 < G ? n - k0 : G;
    int piv[G];
    bool ok[G];
    const int r = lu_group_factor<G>(n - k0, kb, a + k0 + k0 * lda, lda, piv, ok);
    for (int t = 0; t < kb; ++t) ipiv[k0 + t] = k0 + piv[t] + 1;
    for (int t = 0; t < G; ++t) okc[std::size_t(g) * G + t] = ok[t];
    fail[std::size_t(g)] = r != 0 ? k0 + r : 0;
    done.publish(g);
  };
  using Policy = Kokkos::TeamPolicy<Exec>;
  exec.fence();
  Kokkos::parallel_for(
      "kolesky::getrf_threads", Policy(exec, 1, team),
      [&](const typename Policy::member_type& mb) {
        const int t = mb.team_rank();
        T* const pk = packs.get() + std::size_t(t) * (pks + std::size_t(n));
        if (t == 0) factor(0);
        for (int k = 0; k < ng; ++k) {
          int j = k + 1;
          j += ((t - j) % team + team) % team;  // this thread's first group after k
          if (j >= ng) break;                   // and its last step
          done.wait(k);
          const int k0 = k * G, kb = n - k0 < G ? n - k0 : G;
          int piv[G];
          bool ok[G];
          for (int q = 0; q < G; ++q) {
            piv[q] = q < kb ? ipiv[k0 + q] - 1 - k0 : q;
            ok[q] = okc[std::size_t(k) * G + q] != 0;
          }
          const U g(n - k0, kb, a + k0 + k0 * lda, lda, piv, ok, pk);
          for (; j < ng; j += team) {
            const int c0 = j * G, c1 = n - c0 < G ? n : c0 + G;
            g.apply_columns(a + k0, lda, c0, c1);
            if (j == k + 1) factor(j);
          }
        }
        mb.team_barrier();  // every group is factored and done being read
        // The later groups' interchanges on this thread's groups (rows below each group), as
        // one permutation per group: the swaps composed once, then a gather per column, in
        // place of each column's chain of dependent swaps.
        int* const pm = perms.get() + std::size_t(t) * std::size_t(n);
        T* const tv = pk + pks;
        for (int j = t; j < ng; j += team) {
          const int r0 = (j + 1) * G;
          if (r0 >= n) break;
          for (int r = r0; r < n; ++r) pm[r] = r;
          for (int r = r0; r < n; ++r) {
            const int p = ipiv[r] - 1, v = pm[r];
            pm[r] = pm[p];
            pm[p] = v;
          }
          for (int c = j * G; c < r0; ++c) {
            T* const col = a + c * lda;
            for (int r = r0; r < n; ++r) tv[r] = col[pm[r]];
            for (int r = r0; r < n; ++r) col[r] = tv[r];
          }
        }
      });
  exec.fence();
  for (int g = 0; g < ng; ++g)
    if (fail[std::size_t(g)] != 0) return fail[std::size_t(g)];
  return 0;
}

}  // namespace impl
}  // namespace kolesky
