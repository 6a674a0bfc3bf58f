// Inner layer: Cholesky on a pointer and two strides, so one kernel serves every layout.
//
// Everything is written for the lower triangle. The upper case A = U^T U is the same
// computation on the transposed matrix (U = L^T), i.e. the same pointer with the row and
// column strides swapped; the callers do that swap, nothing below knows about Uplo.
//
// Return value: LAPACK's info (0, or j+1 when the j-th pivot is not positive and finite).
#pragma once
#include <Kokkos_Core.hpp>

#include <cstddef>

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_Types.hpp"

namespace kolesky {
namespace impl {

// A strided matrix: element (i, j) at p[i*rs + j*cs]. 64-bit offsets (n may exceed 46340).
template <class T>
struct Strided {
  T* p;
  std::ptrdiff_t rs, cs;
  KOKKOS_FORCEINLINE_FUNCTION T& operator()(const int i, const int j) const {
    return p[i * rs + j * cs];
  }
  KOKKOS_INLINE_FUNCTION Strided transposed() const { return {p, cs, rs}; }
  KOKKOS_INLINE_FUNCTION Strided shifted(const int i, const int j) const {
    return {p + i * rs + j * cs, rs, cs};
  }
};

// While one is alive (and on), float factorizations on CUDA may multiply on the TF32 tensor
// cores (10-bit mantissas): cuBLAS's GEMMs and the dataflow kernel's tile updates
// (posv_mixed's fast_factor, whose refinement restores the accuracy). One flag per host thread.
inline bool& fast_float_flag() {
  static thread_local bool f = false;
  return f;
}
struct FastFloatScope {
  bool saved;
  explicit FastFloatScope(const bool on) : saved(fast_float_flag()) { fast_float_flag() = on; }
  ~FastFloatScope() { fast_float_flag() = saved; }
  FastFloatScope(const FastFloatScope&) = delete;
  FastFloatScope& operator=(const FastFloatScope&) = delete;
};

//---------------------------------------------------------------------------------------------
// Serial: one thread factors the whole matrix.
//---------------------------------------------------------------------------------------------
template <Algo A>
struct SerialPotrfInternal;

template <>
struct SerialPotrfInternal<Algo::Crout> {
  // `first`: columns before it are finished (the host-level CroutCutoff ends this way).
  template <class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const int n, const Strided<T> a, const int first = 0) {
    for (int j = first; j < n; ++j) {
      T d = a(j, j);
      for (int k = 0; k < j; ++k) d -= a(j, k) * a(j, k);
      if (!usable_pivot(d)) return j + 1;
      d = sqrt(d);
      a(j, j) = d;
      for (int i = j + 1; i < n; ++i) {
        T s = a(i, j);
        for (int k = 0; k < j; ++k) s -= a(i, k) * a(j, k);
        a(i, j) = s / d;
      }
    }
    return 0;
  }
};

template <>
struct SerialPotrfInternal<Algo::Banachiewicz> {
  template <class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const int n, const Strided<T> a) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j) {
        T s = a(i, j);
        for (int k = 0; k < j; ++k) s -= a(i, k) * a(j, k);
        a(i, j) = s / a(j, j);
      }
      T d = a(i, i);
      for (int k = 0; k < i; ++k) d -= a(i, k) * a(i, k);
      if (!usable_pivot(d)) return i + 1;
      a(i, i) = sqrt(d);
    }
    return 0;
  }
};

template <>
struct SerialPotrfInternal<Algo::RightLooking> {
  template <class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const int n, const Strided<T> a) {
    for (int k = 0; k < n; ++k) {
      T d = a(k, k);
      if (!usable_pivot(d)) return k + 1;
      d = sqrt(d);
      a(k, k) = d;
      for (int i = k + 1; i < n; ++i) a(i, k) /= d;
      for (int j = k + 1; j < n; ++j) {
        const T ajk = a(j, k);
        for (int i = j; i < n; ++i) a(i, j) -= a(i, k) * ajk;
      }
    }
    return 0;
  }
};

// Device-level Default and Blocked: the right-looking loop (its inner loop is unit-stride
// for column-major storage, which is what the batched and blocked callers use).
template <>
struct SerialPotrfInternal<Algo::Default> : SerialPotrfInternal<Algo::RightLooking> {};
template <>
struct SerialPotrfInternal<Algo::Blocked> : SerialPotrfInternal<Algo::RightLooking> {};

//---------------------------------------------------------------------------------------------
// Team: the threads of one team share the matrix. Every thread returns the same info.
// Par::Team spreads loops over the team's threads, Par::TeamVector over its threads and
// their vector lanes (the same code; only the range type differs).
//---------------------------------------------------------------------------------------------
enum class Par { Team, TeamVector };

template <Par P, class Member>
KOKKOS_INLINE_FUNCTION auto team_range(const Member& member, const int begin, const int end) {
  if constexpr (P == Par::Team)
    return Kokkos::TeamThreadRange(member, begin, end);
  else
    return Kokkos::TeamVectorRange(member, begin, end);
}
template <Par P, class Member>
KOKKOS_INLINE_FUNCTION auto team_range(const Member& member, const int count) {
  return team_range<P>(member, 0, count);
}

template <Algo A, Par P = Par::Team>
struct TeamPotrfInternal;

template <Par P>
struct TeamPotrfInternal<Algo::RightLooking, P> {
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const int n,
                                           const Strided<T> a) {
    // Flatten the trailing square so consecutive threads touch the unit-stride index.
    const bool row_fast = a.rs <= a.cs;
    for (int k = 0; k < n; ++k) {
      const T d = a(k, k);  // read by all before anyone writes it (after the next barrier)
      if (!usable_pivot(d)) return k + 1;
      const T s = sqrt(d);
      Kokkos::parallel_for(team_range<P>(member, k + 1, n),
                           [&](const int i) { a(i, k) /= s; });
      member.team_barrier();
      const int m = n - k - 1;
      Kokkos::parallel_for(team_range<P>(member, m * m + 1), [&](const int t) {
        if (t == m * m) {
          a(k, k) = s;
          return;
        }
        const int u = t % m, v = t / m;
        const int i = k + 1 + (row_fast ? u : v), j = k + 1 + (row_fast ? v : u);
        if (i >= j) a(i, j) -= a(i, k) * a(j, k);
      });
      member.team_barrier();
    }
    return 0;
  }
};

template <Par P>
struct TeamPotrfInternal<Algo::Crout, P> {
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const int n,
                                           const Strided<T> a) {
    for (int j = 0; j < n; ++j) {
      const T ajj = a(j, j);
      T sum = 0;
      Kokkos::parallel_reduce(
          team_range<P>(member, j),
          [&](const int k, T& acc) { acc += a(j, k) * a(j, k); }, sum);
      member.team_barrier();  // every read of a(j, j) is done
      const T d = ajj - sum;
      if (!usable_pivot(d)) return j + 1;
      const T s = sqrt(d);
      Kokkos::parallel_for(team_range<P>(member, j, n), [&](const int i) {
        if (i == j) {
          a(j, j) = s;
          return;
        }
        T x = a(i, j);
        for (int k = 0; k < j; ++k) x -= a(i, k) * a(j, k);
        a(i, j) = x / s;
      });
      member.team_barrier();
    }
    return 0;
  }
};

template <Par P>
struct TeamPotrfInternal<Algo::Banachiewicz, P> {
  // Row i is a forward substitution with the finished rows above it, then a dot product.
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const int n,
                                           const Strided<T> a) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j) {
        const T aij = a(i, j);
        T sum = 0;
        Kokkos::parallel_reduce(
            team_range<P>(member, j),
            [&](const int k, T& acc) { acc += a(i, k) * a(j, k); }, sum);
        member.team_barrier();  // every read of a(i, j) is done
        Kokkos::single(Kokkos::PerTeam(member), [&]() { a(i, j) = (aij - sum) / a(j, j); });
        member.team_barrier();
      }
      const T aii = a(i, i);
      T sum = 0;
      Kokkos::parallel_reduce(
          team_range<P>(member, i),
          [&](const int k, T& acc) { acc += a(i, k) * a(i, k); }, sum);
      member.team_barrier();
      const T d = aii - sum;
      if (!usable_pivot(d)) return i + 1;
      Kokkos::single(Kokkos::PerTeam(member), [&]() { a(i, i) = sqrt(d); });
      member.team_barrier();
    }
    return 0;
  }
};

template <Par P>
struct TeamPotrfInternal<Algo::Default, P> : TeamPotrfInternal<Algo::RightLooking, P> {};
template <Par P>
struct TeamPotrfInternal<Algo::Blocked, P> : TeamPotrfInternal<Algo::RightLooking, P> {};

//---------------------------------------------------------------------------------------------
// Tiled forms (Algo::TiledRight / TiledLeft / TiledTop), written once over an execution
// context: SerialCtx runs a loop on the calling thread, TeamCtx spreads it over a team.
// Tile routines take any rectangle of the matrix (a "tile" is just their argument), so one
// row-parallel call can cover a whole panel.
//---------------------------------------------------------------------------------------------
struct SerialCtx {
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_each(const int begin, const int end, const F& f) const {
    for (int i = begin; i < end; ++i) f(i);
  }
  KOKKOS_INLINE_FUNCTION void barrier() const {}
};

template <class Member, Par P>
struct TeamCtx {
  const Member& member;
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_each(const int begin, const int end, const F& f) const {
    Kokkos::parallel_for(team_range<P>(member, begin, end), f);
  }
  KOKKOS_INLINE_FUNCTION void barrier() const { member.team_barrier(); }
};

// POTRF of a kb x kb diagonal tile, right-looking, rows in parallel. Local info.
template <class Ctx, class T>
KOKKOS_INLINE_FUNCTION int tile_potrf(const Ctx& ctx, const int kb, const Strided<T> a) {
  for (int k = 0; k < kb; ++k) {
    const T d = a(k, k);  // nobody writes a(k, k) before the next barrier
    if (!usable_pivot(d)) return k + 1;
    const T s = sqrt(d);
    ctx.for_each(k + 1, kb, [&](const int i) { a(i, k) /= s; });
    ctx.barrier();
    ctx.for_each(k, kb, [&](const int i) {
      if (i == k) {
        a(k, k) = s;
        return;
      }
      const T lik = a(i, k);
      for (int j = k + 1; j <= i; ++j) a(i, j) -= lik * a(j, k);
    });
    ctx.barrier();
  }
  return 0;
}

// TRSM: B <- B L^{-T} for an m x kb block B and a finished kb x kb lower tile L.
template <class Ctx, class T>
KOKKOS_INLINE_FUNCTION void tile_trsm(const Ctx& ctx, const int m, const int kb,
                                      const Strided<T> l, const Strided<T> b) {
  ctx.for_each(0, m, [&](const int i) {
    for (int j = 0; j < kb; ++j) {
      T x = b(i, j);
      for (int p = 0; p < j; ++p) x -= b(i, p) * l(j, p);
      b(i, j) = x / l(j, j);
    }
  });
  ctx.barrier();
}

// GEMM / SYRK: C <- C - A B^T for C m x nc, A m x kb, B nc x kb. With `lower` only the
// entries j <= i are touched (a diagonal block: SYRK when A and B are the same rows).
template <class Ctx, class T>
KOKKOS_INLINE_FUNCTION void tile_update(const Ctx& ctx, const int m, const int nc, const int kb,
                                        const Strided<T> a, const Strided<T> b,
                                        const Strided<T> c, const bool lower) {
  ctx.for_each(0, m, [&](const int i) {
    const int jend = lower && i + 1 < nc ? i + 1 : nc;
    for (int j = 0; j < jend; ++j) {
      T x = 0;
      for (int p = 0; p < kb; ++p) x += a(i, p) * b(j, p);
      c(i, j) -= x;
    }
  });
  ctx.barrier();
}

template <Algo A, class Ctx, class T>
KOKKOS_INLINE_FUNCTION int tiled_potrf(const Ctx& ctx, const int n, const Strided<T> a, int nb) {
  static_assert(is_tiled(A), "tiled_potrf: a tiled Algo");
  if (nb < 1) nb = kDefaultTile;
  for (int c0 = 0; c0 < n; c0 += nb) {
    const int kb = n - c0 < nb ? n - c0 : nb, rest = n - c0 - kb;
    const auto diag = a.shifted(c0, c0), below = a.shifted(c0 + kb, c0);
    if constexpr (A == Algo::TiledRight) {
      // Factor the panel, then push its update into every trailing tile at once.
      const int r = tile_potrf(ctx, kb, diag);
      if (r) return c0 + r;
      tile_trsm(ctx, rest, kb, diag, below);
      tile_update(ctx, rest, rest, kb, below, below, a.shifted(c0 + kb, c0 + kb), true);
    } else if constexpr (A == Algo::TiledLeft) {
      // Pull the updates from every finished panel into this column panel, then factor it.
      tile_update(ctx, n - c0, kb, c0, a.shifted(c0, 0), a.shifted(c0, 0), diag, true);
      const int r = tile_potrf(ctx, kb, diag);
      if (r) return c0 + r;
      tile_trsm(ctx, rest, kb, diag, below);
    } else {
      // Row panel: solve it against the finished rows above, then its diagonal tile.
      const auto row = a.shifted(c0, 0);
      tile_trsm(ctx, kb, c0, a, row);
      tile_update(ctx, kb, kb, c0, row, row, diag, true);
      const int r = tile_potrf(ctx, kb, diag);
      if (r) return c0 + r;
    }
  }
  return 0;
}

template <Algo A>
struct SerialTiledPotrf {
  template <class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const int n, const Strided<T> a,
                                           const int nb = kDefaultTile) {
    return tiled_potrf<A>(SerialCtx{}, n, a, nb);
  }
};
template <Algo A, Par P>
struct TeamTiledPotrf {
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const int n, const Strided<T> a,
                                           const int nb = kDefaultTile) {
    return tiled_potrf<A>(TeamCtx<Member, P>{member}, n, a, nb);
  }
};

template <>
struct SerialPotrfInternal<Algo::TiledRight> : SerialTiledPotrf<Algo::TiledRight> {};
template <>
struct SerialPotrfInternal<Algo::TiledLeft> : SerialTiledPotrf<Algo::TiledLeft> {};
template <>
struct SerialPotrfInternal<Algo::TiledTop> : SerialTiledPotrf<Algo::TiledTop> {};
template <Par P>
struct TeamPotrfInternal<Algo::TiledRight, P> : TeamTiledPotrf<Algo::TiledRight, P> {};
template <Par P>
struct TeamPotrfInternal<Algo::TiledLeft, P> : TeamTiledPotrf<Algo::TiledLeft, P> {};
template <Par P>
struct TeamPotrfInternal<Algo::TiledTop, P> : TeamTiledPotrf<Algo::TiledTop, P> {};

// Any variant through one call; nb matters only to the tiled ones.
template <Algo A, class T>
KOKKOS_INLINE_FUNCTION int run_serial_potrf(const int n, const Strided<T> a, const int nb) {
  if constexpr (is_host_level(A))
    return SerialPotrfInternal<device_algo(A)>::invoke(n, a);
  else if constexpr (is_tiled(A))
    return SerialPotrfInternal<A>::invoke(n, a, nb);
  else
    return (void)nb, SerialPotrfInternal<A>::invoke(n, a);
}
template <Algo A, Par P = Par::Team, class Member, class T>
KOKKOS_INLINE_FUNCTION int run_team_potrf(const Member& member, const int n, const Strided<T> a,
                                      const int nb) {
  if constexpr (is_host_level(A))
    return TeamPotrfInternal<device_algo(A), P>::invoke(member, n, a);
  else if constexpr (is_tiled(A))
    return TeamPotrfInternal<A, P>::invoke(member, n, a, nb);
  else
    return (void)nb, TeamPotrfInternal<A, P>::invoke(member, n, a);
}

//---------------------------------------------------------------------------------------------
// Solves with the factor: L * L^T * X = B, B overwritten by X (n x nrhs, strided).
//---------------------------------------------------------------------------------------------
struct SerialPotrsInternal {
  template <class T>
  KOKKOS_INLINE_FUNCTION static void invoke(const int n, const int nrhs, const Strided<const T> l,
                                            const Strided<T> b) {
    for (int r = 0; r < nrhs; ++r) {
      for (int j = 0; j < n; ++j) {  // L y = b, column-oriented
        const T y = b(j, r) / l(j, j);
        b(j, r) = y;
        for (int i = j + 1; i < n; ++i) b(i, r) -= l(i, j) * y;
      }
      for (int j = n - 1; j >= 0; --j) {  // L^T x = y, row-oriented (reads column j of L)
        T x = b(j, r);
        for (int i = j + 1; i < n; ++i) x -= l(i, j) * b(i, r);
        b(j, r) = x / l(j, j);
      }
    }
  }
};

template <Par P = Par::Team>
struct TeamPotrsInternal {
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static void invoke(const Member& member, const int n, const int nrhs,
                                            const Strided<const T> l, const Strided<T> b) {
    if (nrhs >= member.team_size()) {  // enough columns: one thread per right-hand side
      Kokkos::parallel_for(team_range<P>(member, nrhs), [&](const int r) {
        SerialPotrsInternal::invoke(n, 1, l, b.shifted(0, r));
      });
      member.team_barrier();
      return;
    }
    // Few columns: parallel over rows, column-oriented in both sweeps.
    for (int j = 0; j < n; ++j) {
      const T ljj = l(j, j);
      const int m = n - j;
      Kokkos::parallel_for(team_range<P>(member, m * nrhs), [&](const int t) {
        const int i = j + t % m, r = t / m;
        // b(j, r) is read by all rows; compute y from the unmodified value.
        const T y = b(j, r) / ljj;
        if (i > j) b(i, r) -= l(i, j) * y;
      });
      member.team_barrier();
      Kokkos::parallel_for(team_range<P>(member, nrhs),
                           [&](const int r) { b(j, r) /= ljj; });
      member.team_barrier();
    }
    for (int j = n - 1; j >= 0; --j) {
      const T ljj = l(j, j);
      Kokkos::parallel_for(team_range<P>(member, nrhs),
                           [&](const int r) { b(j, r) /= ljj; });
      member.team_barrier();
      Kokkos::parallel_for(team_range<P>(member, j * nrhs), [&](const int t) {
        const int i = t % j, r = t / j;
        b(i, r) -= l(j, i) * b(j, r);
      });
      member.team_barrier();
    }
  }
};

}  // namespace impl
}  // namespace kolesky
