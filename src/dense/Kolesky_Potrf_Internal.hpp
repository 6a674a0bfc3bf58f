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

//---------------------------------------------------------------------------------------------
// Serial: one thread factors the whole matrix.
//---------------------------------------------------------------------------------------------
template <Algo A>
struct SerialPotrfInternal;

template <>
struct SerialPotrfInternal<Algo::Crout> {
  template <class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const int n, const Strided<T> a) {
    for (int j = 0; j < n; ++j) {
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
//---------------------------------------------------------------------------------------------
template <Algo A>
struct TeamPotrfInternal;

template <>
struct TeamPotrfInternal<Algo::RightLooking> {
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const int n,
                                           const Strided<T> a) {
    // Flatten the trailing square so consecutive threads touch the unit-stride index.
    const bool row_fast = a.rs <= a.cs;
    for (int k = 0; k < n; ++k) {
      const T d = a(k, k);  // read by all before anyone writes it (after the next barrier)
      if (!usable_pivot(d)) return k + 1;
      const T s = sqrt(d);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k + 1, n),
                           [&](const int i) { a(i, k) /= s; });
      member.team_barrier();
      const int m = n - k - 1;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, m * m + 1), [&](const int t) {
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

template <>
struct TeamPotrfInternal<Algo::Crout> {
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const int n,
                                           const Strided<T> a) {
    for (int j = 0; j < n; ++j) {
      const T ajj = a(j, j);
      T sum = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, j),
          [&](const int k, T& acc) { acc += a(j, k) * a(j, k); }, sum);
      member.team_barrier();  // every read of a(j, j) is done
      const T d = ajj - sum;
      if (!usable_pivot(d)) return j + 1;
      const T s = sqrt(d);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, j, n), [&](const int i) {
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

template <>
struct TeamPotrfInternal<Algo::Banachiewicz> {
  // Row i is a forward substitution with the finished rows above it, then a dot product.
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const int n,
                                           const Strided<T> a) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j) {
        const T aij = a(i, j);
        T sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, j),
            [&](const int k, T& acc) { acc += a(i, k) * a(j, k); }, sum);
        member.team_barrier();  // every read of a(i, j) is done
        Kokkos::single(Kokkos::PerTeam(member), [&]() { a(i, j) = (aij - sum) / a(j, j); });
        member.team_barrier();
      }
      const T aii = a(i, i);
      T sum = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, i),
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

template <>
struct TeamPotrfInternal<Algo::Default> : TeamPotrfInternal<Algo::RightLooking> {};
template <>
struct TeamPotrfInternal<Algo::Blocked> : TeamPotrfInternal<Algo::RightLooking> {};

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

struct TeamPotrsInternal {
  template <class Member, class T>
  KOKKOS_INLINE_FUNCTION static void invoke(const Member& member, const int n, const int nrhs,
                                            const Strided<const T> l, const Strided<T> b) {
    if (nrhs >= member.team_size()) {  // enough columns: one thread per right-hand side
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nrhs), [&](const int r) {
        SerialPotrsInternal::invoke(n, 1, l, b.shifted(0, r));
      });
      member.team_barrier();
      return;
    }
    // Few columns: parallel over rows, column-oriented in both sweeps.
    for (int j = 0; j < n; ++j) {
      const T ljj = l(j, j);
      const int m = n - j;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, m * nrhs), [&](const int t) {
        const int i = j + t % m, r = t / m;
        // b(j, r) is read by all rows; compute y from the unmodified value.
        const T y = b(j, r) / ljj;
        if (i > j) b(i, r) -= l(i, j) * y;
      });
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nrhs),
                           [&](const int r) { b(j, r) /= ljj; });
      member.team_barrier();
    }
    for (int j = n - 1; j >= 0; --j) {
      const T ljj = l(j, j);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nrhs),
                           [&](const int r) { b(j, r) /= ljj; });
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, j * nrhs), [&](const int t) {
        const int i = t % j, r = t / j;
        b(i, r) -= l(j, i) * b(j, r);
      });
      member.team_barrier();
    }
  }
};

}  // namespace impl
}  // namespace kolesky
