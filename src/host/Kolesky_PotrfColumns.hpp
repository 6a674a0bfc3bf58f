// The column-at-a-time schemes of the documents the project came from (reference/000, 001,
// 002), as host-level variants. They launch one to three kernels per column, so they are
// latency-bound; they exist so that users (and our benchmarks) can see what the blocked
// default buys. All work on the lower triangle of a strided matrix.
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Compat.hpp"
#include "dense/Kolesky_Blas3.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"
#include "host/Kolesky_Potrf_Impl.hpp"

namespace kolesky {
namespace impl {

// 000: for each column j, (1) one team reduces row j to the pivot d = a(j,j) - sum a(j,k)^2
// and stores sqrt(d); (2) a thread per row i > j computes the dot of rows i and j, the pivot
// row staged in scratch a tile at a time, and scales by the reciprocal of the pivot.
template <class Exec, class T>
void column_kernels_potrf(const Exec& exec, const int n, const Strided<T> a,
                          const InfoView<Exec>& info) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  constexpr int kTile = 256;
  constexpr bool host = is_host_exec<Exec>();
  constexpr int rows = host ? 64 : 128;
  for (int j = 0; j < n; ++j) {
    Kokkos::parallel_for(
        "kolesky::potrf_column_diagonal", Policy(exec, 1, is_host_exec<Exec>() ? 1 : 256),
        KOKKOS_LAMBDA(const Member& mb) {
          if (info(0) != 0) return;
          T s = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(mb, j), [&](const int k, T& acc) { acc += a(j, k) * a(j, k); },
              s);
          Kokkos::single(Kokkos::PerTeam(mb), [&]() {
            const T d = a(j, j) - s;
            if (usable_pivot(d))
              a(j, j) = sqrt(d);
            else
              info(0) = j + 1;
          });
        });
    const int m = n - j - 1;
    if (m == 0) break;
    Policy policy(exec, (m + rows - 1) / rows, is_host_exec<Exec>() ? 1 : rows);
    policy.set_scratch_size(0, Kokkos::PerTeam(Scratch<Exec, T>::shmem_size(kTile)));
    Kokkos::parallel_for(
        "kolesky::potrf_column", policy, KOKKOS_LAMBDA(const Member& mb) {
          if (info(0) != 0) return;
          Scratch<Exec, T> piv(mb.team_scratch(0), kTile);
          const int r0 = j + 1 + mb.league_rank() * rows;
          const int cnt = imin(rows, n - r0);
          // Each thread keeps its rows' partial dots across tiles (one row per thread on
          // GPUs; the host's single thread walks all rows of the team per tile).
          T acc[host ? rows : 1] = {};
          for (int k0 = 0; k0 < j; k0 += kTile) {
            const int kt = imin(kTile, j - k0);
            Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, kt),
                                 [&](const int k) { piv(k) = a(j, k0 + k); });
            mb.team_barrier();
            Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, cnt), [&](const int t) {
              T s = 0;
              for (int k = 0; k < kt; ++k) s += a(r0 + t, k0 + k) * piv(k);
              acc[host ? t : 0] += s;
            });
            mb.team_barrier();
          }
          const T rinv = T(1) / a(j, j);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, cnt), [&](const int t) {
            a(r0 + t, j) = (a(r0 + t, j) - acc[host ? t : 0]) * rinv;
          });
        });
  }
}

// 001: for each column k, three kernels: sqrt of the pivot, divide the column below it,
// eliminate (rank-1 update of the trailing lower triangle). (001's fourth kernel zeroes the
// other triangle; Kolesky never touches it.)
template <class Exec, class T>
void right_looking_kernels_potrf(const Exec& exec, const int n, const Strided<T> a,
                                 const InfoView<Exec>& info) {
  using Range = Kokkos::RangePolicy<Exec>;
  for (int k = 0; k < n; ++k) {
    Kokkos::parallel_for(
        "kolesky::potrf_sqrt", Range(exec, 0, 1), KOKKOS_LAMBDA(int) {
          if (info(0) != 0) return;
          const T d = a(k, k);
          if (usable_pivot(d))
            a(k, k) = sqrt(d);
          else
            info(0) = k + 1;
        });
    const int m = n - k - 1;
    if (m == 0) break;
    Kokkos::parallel_for(
        "kolesky::potrf_divide", Range(exec, 0, m), KOKKOS_LAMBDA(const int t) {
          if (info(0) == 0) a(k + 1 + t, k) /= a(k, k);
        });
    // Column-major friendly: consecutive indices walk down a column.
    Kokkos::parallel_for(
        "kolesky::potrf_eliminate", Range(exec, 0, std::size_t(m) * m),
        KOKKOS_LAMBDA(const std::size_t t) {
          const int i = int(t % m), jj = int(t / m);
          if (i < jj || info(0) != 0) return;
          a(k + 1 + i, k + 1 + jj) -= a(k + 1 + i, k) * a(k + 1 + jj, k);
        });
  }
}

// 002: Crout, column by column: the pivot, then the column's rows in parallel; once fewer
// than `cutoff` columns remain, one thread finishes them (the parallel loop would cost more
// than it saves).
template <class Exec, class T>
void crout_cutoff_potrf(const Exec& exec, const int n, const Strided<T> a,
                        const InfoView<Exec>& info, const int cutoff) {
  using Range = Kokkos::RangePolicy<Exec>;
  const int tail = imin(n, cutoff < 0 ? 0 : cutoff);
  for (int j = 0; j < n - tail; ++j) {
    Kokkos::parallel_for(
        "kolesky::potrf_crout_pivot", Range(exec, 0, 1), KOKKOS_LAMBDA(int) {
          if (info(0) != 0) return;
          T d = a(j, j);
          for (int k = 0; k < j; ++k) d -= a(j, k) * a(j, k);
          if (usable_pivot(d))
            a(j, j) = sqrt(d);
          else
            info(0) = j + 1;
        });
    Kokkos::parallel_for(
        "kolesky::potrf_crout_column", Range(exec, j + 1, n), KOKKOS_LAMBDA(const int i) {
          if (info(0) != 0) return;
          T s = a(i, j);
          for (int k = 0; k < j; ++k) s -= a(i, k) * a(j, k);
          a(i, j) = s / a(j, j);
        });
  }
  if (tail == 0) return;
  const int j0 = n - tail;
  Kokkos::parallel_for(
      "kolesky::potrf_crout_tail", Range(exec, 0, 1), KOKKOS_LAMBDA(int) {
        if (info(0) != 0) return;
        const int r = SerialPotrfInternal<Algo::Crout>::invoke(n, a, j0);
        if (r != 0) info(0) = r;
      });
}

}  // namespace impl
}  // namespace kolesky
