// LU of one matrix by one thread, on a pointer and two strides (every layout, every backend).
//
//   serial_crout   A = L U without pivoting, Crout's convention: L lower with its diagonal,
//                  U unit upper; both packed in A (U's unit diagonal not stored).
//   serial_getrf   P A = L U with partial pivoting, LAPACK's convention: L unit lower, U upper;
//                  ipiv 1-based (row j was interchanged with row ipiv[j] - 1).
//   serial_getrs   op(A) X = B with the factor of serial_getrf.
//
// info: 0, or the 1-based index of the first pivot that is zero or not finite. Crout stops
// there (no division by it); getrf goes on as LAPACK does, leaving that column unscaled.
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Compat.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {

// Which system a solve with an LU factor answers: A X = B or A^T X = B.
enum class Trans { No, Yes };

namespace impl {

template <class T>
KOKKOS_INLINE_FUNCTION bool usable_lu_pivot(const T d) {
  const T m = d < T(0) ? -d : d;
  return m > T(0) && m <= FloatLimits<T>::max;
}

// Pivot search key: |x|, with NaN ranked above everything so that a NaN reaching a column is
// chosen as its pivot and reported, rather than passed over and spread into L.
template <class T>
KOKKOS_INLINE_FUNCTION T pivot_key(const T x) {
  const T m = x < T(0) ? -x : x;
  return m == m ? m : FloatLimits<T>::max;  // only an infinity ranks higher
}

template <class T>
KOKKOS_INLINE_FUNCTION int serial_crout(const int n, const Strided<T> a, const int first = 0) {
  for (int j = first; j < n; ++j) {
    for (int i = j; i < n; ++i) {  // column j of L
      T s = a(i, j);
      for (int k = 0; k < j; ++k) s -= a(i, k) * a(k, j);
      a(i, j) = s;
    }
    const T d = a(j, j);
    if (!usable_lu_pivot(d)) return j + 1;
    for (int c = j + 1; c < n; ++c) {  // row j of U
      T s = a(j, c);
      for (int k = 0; k < j; ++k) s -= a(j, k) * a(k, c);
      a(j, c) = s / d;
    }
  }
  return 0;
}

// m x n (m >= n) right-looking with partial pivoting. Pivots are written as
// ipiv[j * ps] = row_offset + p + 1, so a panel of a larger matrix records global rows.
template <class T>
KOKKOS_INLINE_FUNCTION int serial_getrf(const int m, const int n, const Strided<T> a, int* ipiv,
                                        const std::ptrdiff_t ps, const int row_offset = 0) {
  int info = 0;
  const int kn = m < n ? m : n;
  for (int j = 0; j < kn; ++j) {
    int p = j;
    T best = pivot_key(a(j, j));
    for (int i = j + 1; i < m; ++i) {
      const T v = pivot_key(a(i, j));
      if (v > best) best = v, p = i;
    }
    ipiv[j * ps] = row_offset + p + 1;
    if (p != j)
      for (int c = 0; c < n; ++c) {
        const T t = a(j, c);
        a(j, c) = a(p, c);
        a(p, c) = t;
      }
    const T d = a(j, j);
    if (!usable_lu_pivot(d)) {
      if (info == 0) info = j + 1;
      continue;
    }
    for (int i = j + 1; i < m; ++i) a(i, j) /= d;
    for (int c = j + 1; c < n; ++c) {
      const T u = a(j, c);
      for (int i = j + 1; i < m; ++i) a(i, c) -= a(i, j) * u;
    }
  }
  return info;
}

// Row interchanges k0..k1-1 of ipiv (1-based rows, relative to a) on ncols columns; forward
// as getrf made them, backward to undo them.
template <class T>
KOKKOS_INLINE_FUNCTION void serial_laswp(const int ncols, const Strided<T> a, const int* ipiv,
                                         const std::ptrdiff_t ps, const int k0, const int k1,
                                         const bool forward) {
  for (int t = 0; t < k1 - k0; ++t) {
    const int k = forward ? k0 + t : k1 - 1 - t;
    const int p = ipiv[k * ps] - 1;
    if (p == k) continue;
    for (int c = 0; c < ncols; ++c) {
      const T x = a(k, c);
      a(k, c) = a(p, c);
      a(p, c) = x;
    }
  }
}

// B (n x nrhs) <- op(A)^{-1} B with A = P^T L U from serial_getrf.
template <class T>
KOKKOS_INLINE_FUNCTION void serial_getrs(const Trans trans, const int n, const int nrhs,
                                         const Strided<const T> a, const int* ipiv,
                                         const std::ptrdiff_t ps, const Strided<T> b) {
  if (trans == Trans::No) {
    serial_laswp(nrhs, b, ipiv, ps, 0, n, true);
    for (int c = 0; c < nrhs; ++c) {
      for (int i = 0; i < n; ++i) {  // L y = b, unit diagonal
        T s = b(i, c);
        for (int k = 0; k < i; ++k) s -= a(i, k) * b(k, c);
        b(i, c) = s;
      }
      for (int i = n - 1; i >= 0; --i) {  // U x = y
        T s = b(i, c);
        for (int k = i + 1; k < n; ++k) s -= a(i, k) * b(k, c);
        b(i, c) = s / a(i, i);
      }
    }
  } else {
    for (int c = 0; c < nrhs; ++c) {
      for (int i = 0; i < n; ++i) {  // U^T y = b
        T s = b(i, c);
        for (int k = 0; k < i; ++k) s -= a(k, i) * b(k, c);
        b(i, c) = s / a(i, i);
      }
      for (int i = n - 1; i >= 0; --i) {  // L^T z = y
        T s = b(i, c);
        for (int k = i + 1; k < n; ++k) s -= a(k, i) * b(k, c);
        b(i, c) = s;
      }
    }
    serial_laswp(nrhs, b, ipiv, ps, 0, n, false);
  }
}

// B <- A^{-1} B with Crout's packed factor (L with diagonal, U unit upper).
template <class T>
KOKKOS_INLINE_FUNCTION void serial_crout_solve(const int n, const int nrhs,
                                               const Strided<const T> a, const Strided<T> b) {
  for (int c = 0; c < nrhs; ++c) {
    for (int i = 0; i < n; ++i) {
      T s = b(i, c);
      for (int k = 0; k < i; ++k) s -= a(i, k) * b(k, c);
      b(i, c) = s / a(i, i);
    }
    for (int i = n - 1; i >= 0; --i) {
      T s = b(i, c);
      for (int k = i + 1; k < n; ++k) s -= a(i, k) * b(k, c);
      b(i, c) = s;
    }
  }
}

}  // namespace impl
}  // namespace kolesky
