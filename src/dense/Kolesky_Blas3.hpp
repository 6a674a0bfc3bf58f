// The three level-3 operations the blocked factorizations and solves are built from, on
// strided operands (any layout), each with two implementations:
//
//   native : Kokkos kernels (register-tiled GEMM/SYRK staged through scratch, row-parallel
//            TRSM); every backend, every layout.
//   vendor : cuBLAS on the execution space's stream (CUDA), or the Fortran BLAS the library
//            was configured with (host). Only for operands with one unit stride.
//
//   gemm_nt : C(m x n) -= A(m x k) * B(n x k)^T       (lower_only: only i >= j of C, for SYRK)
//   trsm_r  : B(m x k) <- B * op(L)^{-1}, L k x k lower (optionally unit), op = T (trans) or N
//
// Everything else (left solves, the upper triangle) is one of these on transposed views.
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "Kolesky_Config.hpp"
#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_CudaCache.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

#ifdef KOLESKY_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

#ifdef KOLESKY_HAVE_BLAS
extern "C" {
void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*,
            const float*, const int*, const float*, const int*, const float*, float*, const int*,
            std::size_t, std::size_t);
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
            const double*, const int*, const double*, const int*, const double*, double*,
            const int*, std::size_t, std::size_t);
void ssyrk_(const char*, const char*, const int*, const int*, const float*, const float*,
            const int*, const float*, float*, const int*, std::size_t, std::size_t);
void dsyrk_(const char*, const char*, const int*, const int*, const double*, const double*,
            const int*, const double*, double*, const int*, std::size_t, std::size_t);
void strsm_(const char*, const char*, const char*, const char*, const int*, const int*,
            const float*, const float*, const int*, float*, const int*, std::size_t, std::size_t,
            std::size_t, std::size_t);
void dtrsm_(const char*, const char*, const char*, const char*, const int*, const int*,
            const double*, const double*, const int*, double*, const int*, std::size_t,
            std::size_t, std::size_t, std::size_t);
void ssymm_(const char*, const char*, const int*, const int*, const float*, const float*,
            const int*, const float*, const int*, const float*, float*, const int*, std::size_t,
            std::size_t);
void dsymm_(const char*, const char*, const int*, const int*, const double*, const double*,
            const int*, const double*, const int*, const double*, double*, const int*,
            std::size_t, std::size_t);
}
#endif

#if defined(KOLESKY_HAVE_BLAS) && defined(__GNUC__)
// OpenBLAS tells how it was built (0 sequential, 1 pthreads, 2 OpenMP); weak, so another BLAS
// links too.
extern "C" int openblas_get_parallel(void) __attribute__((weak));
#endif

namespace kolesky {

// How the host BLAS that this program loaded runs its threads. With Kokkos' OpenMP backend
// the OpenMP build of OpenBLAS shares Kokkos' thread pool (Kolesky's CMake picks it when it is
// installed); a pthreads build runs a second pool on the same cores, which is much slower for
// small and medium matrices unless OMP_WAIT_POLICY=passive (see README, "Host BLAS").
enum class BlasThreading { Unknown, Sequential, Pthreads, OpenMP };

inline BlasThreading host_blas_threading() {
#if defined(KOLESKY_HAVE_BLAS) && defined(__GNUC__)
  // A program that calls no host BLAS routine (a CUDA-only one) would lose the BLAS library
  // to --as-needed and answer Unknown; naming dgemm_ here keeps the one Kolesky would use.
  static void (*volatile const keep)(const char*, const char*, const int*, const int*,
                                     const int*, const double*, const double*, const int*,
                                     const double*, const int*, const double*, double*,
                                     const int*, std::size_t, std::size_t) = &dgemm_;
  (void)keep;
  if (&openblas_get_parallel != nullptr) {
    switch (openblas_get_parallel()) {
      case 0: return BlasThreading::Sequential;
      case 1: return BlasThreading::Pthreads;
      case 2: return BlasThreading::OpenMP;
      default: break;
    }
  }
#endif
  return BlasThreading::Unknown;
}

inline const char* name(BlasThreading t) {
  switch (t) {
    case BlasThreading::Sequential: return "sequential";
    case BlasThreading::Pthreads: return "pthreads";
    case BlasThreading::OpenMP: return "OpenMP";
    default: return "unknown";
  }
}

// Which implementation of the level-3 building blocks a blocked routine uses.
enum class Blas {
  Auto,    // vendor where available and the layout allows it, else native
  Native,  // Kokkos kernels only
  Vendor   // cuBLAS / BLAS; falls back to native for layouts they cannot take
};

namespace impl {

template <class Exec>
KOKKOS_INLINE_FUNCTION constexpr bool is_host_exec() {
  return Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
}

//---------------------------------------------------------------------------------------------
// Vendor: a strided matrix as a column-major (pointer, ld) of itself or of its transpose.
//---------------------------------------------------------------------------------------------
template <class T>
struct ColMajor {
  T* p = nullptr;
  int ld = 0;
  bool trans = false;  // the column-major array holds the transpose
  bool ok = false;
};

template <class T>
ColMajor<T> col_major(const Strided<T>& s, const int rows, const int cols) {
  ColMajor<T> c;
  c.p = s.p;
  if (s.rs == 1 && (cols <= 1 || s.cs >= rows)) {
    c.ld = int(cols <= 1 ? (rows > 0 ? rows : 1) : s.cs);
    c.ok = s.cs <= std::ptrdiff_t(0x7fffffff);
  } else if (s.cs == 1 && (rows <= 1 || s.rs >= cols)) {
    c.ld = int(rows <= 1 ? (cols > 0 ? cols : 1) : s.rs);
    c.trans = true;
    c.ok = s.rs <= std::ptrdiff_t(0x7fffffff);
  }
  return c;
}

template <class Exec>
constexpr bool has_vendor_blas() {
#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) return true;
#endif
#ifdef KOLESKY_HAVE_BLAS
  if constexpr (is_host_exec<Exec>()) return true;
#endif
  return false;
}

#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("kolesky: cuBLAS ") + what + " failed with status " +
                             std::to_string(int(s)));
}

// One cuBLAS handle for the process, made on first use, destroyed at Kokkos::finalize.
inline cublasHandle_t cublas_handle(const Kokkos::Cuda& exec) {
  static cublasHandle_t h = nullptr;
  if (h == nullptr) {
    cublas_check(cublasCreate(&h), "cublasCreate");
    Kokkos::push_finalize_hook([]() {
      cublasDestroy(h);
      h = nullptr;
    });
  }
  cublas_check(cublasSetStream(h, exec.cuda_stream()), "cublasSetStream");
  return h;
}

inline cublasOperation_t cu_op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }
#endif

#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
// The handle's math mode for one float call (restored by the caller's next call).
inline void cublas_float_mode(cublasHandle_t h) {
  cublasSetMathMode(h, fast_float_flag() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}
#endif

// Fortran BLAS character arguments.
inline const char* f_op(bool t) { return t ? "T" : "N"; }

// C = alpha op(A) op(B) + beta C on column-major operands (the vendor calls); by default
// C -= op(A) op(B).
template <class Exec, class T>
void vendor_gemm(const Exec& exec, bool ta, bool tb, int m, int n, int k, const T* a, int lda,
                 const T* b, int ldb, T* c, int ldc, const T alpha = T(-1),
                 const T beta = T(1)) {
#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    auto h = cublas_handle(exec);
    if constexpr (std::is_same<T, double>::value)
      cublas_check(cublasDgemm(h, cu_op(ta), cu_op(tb), m, n, k, &alpha, a, lda, b, ldb, &beta,
                               c, ldc), "dgemm");
    else {
      cublas_float_mode(h);
      cublas_check(cublasSgemm(h, cu_op(ta), cu_op(tb), m, n, k, &alpha, a, lda, b, ldb, &beta,
                               c, ldc), "sgemm");
    }
    return;
  }
#endif
#ifdef KOLESKY_HAVE_BLAS
  if constexpr (is_host_exec<Exec>()) {
    exec.fence();
    if constexpr (std::is_same<T, double>::value)
      dgemm_(f_op(ta), f_op(tb), &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
    else
      sgemm_(f_op(ta), f_op(tb), &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
    return;
  }
#endif
  (void)exec, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b,
      (void)ldb, (void)c, (void)ldc, (void)alpha, (void)beta;
  throw std::logic_error("kolesky: no vendor BLAS for this execution space");
}

// C = alpha A B + beta C by the vendor GEMM, A m x k, B k x n and C each column-major or
// stored transposed (C transposed: C^T = B^T A^T). False, nothing queued, when one is neither.
template <class Exec, class T>
bool vendor_gemm_strided(const Exec& exec, const int m, const int n, const int k,
                         const Strided<const T> a, const Strided<const T> b, const Strided<T> c,
                         const T alpha = T(-1), const T beta = T(1)) {
  const auto ca = col_major(a, m, k), cb = col_major(b, k, n);
  const auto cc = col_major(c, m, n);
  if (!(ca.ok && cb.ok && cc.ok)) return false;
  if (!cc.trans)
    vendor_gemm(exec, ca.trans, cb.trans, m, n, k, ca.p, ca.ld, cb.p, cb.ld, cc.p, cc.ld, alpha,
                beta);
  else
    vendor_gemm(exec, !cb.trans, !ca.trans, n, m, k, cb.p, cb.ld, ca.p, ca.ld, cc.p, cc.ld,
                alpha, beta);
  return true;
}

// C (n x n, triangle `lower`) -= op(A) op(A)^T.
template <class Exec, class T>
void vendor_syrk(const Exec& exec, bool lower, bool ta, int n, int k, const T* a, int lda, T* c,
                 int ldc) {
  const T alpha = -1, beta = 1;
#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    auto h = cublas_handle(exec);
    const auto fill = lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    if constexpr (std::is_same<T, double>::value)
      cublas_check(cublasDsyrk(h, fill, cu_op(ta), n, k, &alpha, a, lda, &beta, c, ldc), "dsyrk");
    else {
      cublas_float_mode(h);
      cublas_check(cublasSsyrk(h, fill, cu_op(ta), n, k, &alpha, a, lda, &beta, c, ldc), "ssyrk");
    }
    return;
  }
#endif
#ifdef KOLESKY_HAVE_BLAS
  if constexpr (is_host_exec<Exec>()) {
    exec.fence();
    const char* ul = lower ? "L" : "U";
    if constexpr (std::is_same<T, double>::value)
      dsyrk_(ul, f_op(ta), &n, &k, &alpha, a, &lda, &beta, c, &ldc, 1, 1);
    else
      ssyrk_(ul, f_op(ta), &n, &k, &alpha, a, &lda, &beta, c, &ldc, 1, 1);
    return;
  }
#endif
  (void)exec, (void)lower, (void)ta, (void)n, (void)k, (void)a, (void)lda, (void)c, (void)ldc,
      (void)alpha, (void)beta;
  throw std::logic_error("kolesky: no vendor BLAS for this execution space");
}

// B (m x n) <- op(A)^{-1} B (left) or B op(A)^{-1} (right), A triangular (unit diagonal
// when `unit`: not read).
template <class Exec, class T>
void vendor_trsm(const Exec& exec, bool left, bool lower, bool ta, int m, int n, const T* a,
                 int lda, T* b, int ldb, bool unit = false) {
  const T one = 1;
#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    auto h = cublas_handle(exec);
    const auto side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    const auto fill = lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    const auto diag = unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    if constexpr (std::is_same<T, double>::value)
      cublas_check(cublasDtrsm(h, side, fill, cu_op(ta), diag, m, n, &one, a, lda, b, ldb),
                   "dtrsm");
    else
      cublas_check(cublasStrsm(h, side, fill, cu_op(ta), diag, m, n, &one, a, lda, b, ldb),
                   "strsm");
    return;
  }
#endif
#ifdef KOLESKY_HAVE_BLAS
  if constexpr (is_host_exec<Exec>()) {
    exec.fence();
    const char* sd = left ? "L" : "R";
    const char* ul = lower ? "L" : "U";
    const char* dg = unit ? "U" : "N";
    if constexpr (std::is_same<T, double>::value)
      dtrsm_(sd, ul, f_op(ta), dg, &m, &n, &one, a, &lda, b, &ldb, 1, 1, 1, 1);
    else
      strsm_(sd, ul, f_op(ta), dg, &m, &n, &one, a, &lda, b, &ldb, 1, 1, 1, 1);
    return;
  }
#endif
  (void)exec, (void)left, (void)lower, (void)ta, (void)m, (void)n, (void)a, (void)lda, (void)b,
      (void)ldb, (void)one, (void)unit;
  throw std::logic_error("kolesky: no vendor BLAS for this execution space");
}

// C (m x n) -= A B, A m x m symmetric with only triangle `lower` referenced.
template <class Exec, class T>
void vendor_symm(const Exec& exec, bool lower, int m, int n, const T* a, int lda, const T* b,
                 int ldb, T* c, int ldc) {
  const T alpha = -1, beta = 1;
#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    auto h = cublas_handle(exec);
    const auto fill = lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    // A few columns: one SYMV each, which streams the triangle. cuBLAS's SYMM is GEMM-shaped:
    // posv_mixed (three residuals) took as long with 1 right-hand side as with 4 at
    // n = 16384, and 6.5 ms less with this and the one-launch potrs (round 34).
    if (n <= 4) {
      for (int j = 0; j < n; ++j) {
        if constexpr (std::is_same<T, double>::value)
          cublas_check(cublasDsymv(h, fill, m, &alpha, a, lda, b + std::size_t(j) * ldb, 1, &beta,
                                   c + std::size_t(j) * ldc, 1), "dsymv");
        else
          cublas_check(cublasSsymv(h, fill, m, &alpha, a, lda, b + std::size_t(j) * ldb, 1, &beta,
                                   c + std::size_t(j) * ldc, 1), "ssymv");
      }
      return;
    }
    if constexpr (std::is_same<T, double>::value)
      cublas_check(cublasDsymm(h, CUBLAS_SIDE_LEFT, fill, m, n, &alpha, a, lda, b, ldb, &beta, c,
                               ldc), "dsymm");
    else
      cublas_check(cublasSsymm(h, CUBLAS_SIDE_LEFT, fill, m, n, &alpha, a, lda, b, ldb, &beta, c,
                               ldc), "ssymm");
    return;
  }
#endif
#ifdef KOLESKY_HAVE_BLAS
  if constexpr (is_host_exec<Exec>()) {
    exec.fence();
    const char* ul = lower ? "L" : "U";
    if constexpr (std::is_same<T, double>::value)
      dsymm_("L", ul, &m, &n, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
    else
      ssymm_("L", ul, &m, &n, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
    return;
  }
#endif
  (void)exec, (void)lower, (void)m, (void)n, (void)a, (void)lda, (void)b, (void)ldb, (void)c,
      (void)ldc, (void)alpha, (void)beta;
  throw std::logic_error("kolesky: no vendor BLAS for this execution space");
}

//---------------------------------------------------------------------------------------------
// Native kernels.
//---------------------------------------------------------------------------------------------
template <class Exec, class T>
using Scratch =
    Kokkos::View<T*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Tile pair (ti >= tj) numbered row by row through the lower triangle of tiles.
KOKKOS_INLINE_FUNCTION void lower_tile(const int t, int& ti, int& tj) {
  ti = int((sqrt(8.0 * t + 1.0) - 1.0) / 2.0);
  while (ti * (ti + 1) / 2 > t) --ti;
  while ((ti + 1) * (ti + 2) / 2 <= t) ++ti;
  tj = t - ti * (ti + 1) / 2;
}

// GPU GEMM-NT: a team of (TM/R) x (TN/R) threads computes a TM x TN tile of C, each thread an
// R x R block in registers (rows ty + (TM/R) * r, so the scratch reads are conflict-free);
// K is staged through scratch KB columns at a time.
template <class Exec, class T, int TM, int KB, int R>
struct GemmNtTeam {
  static constexpr int TD = TM / R;  // threads per dimension
  static constexpr int kThreads = TD * TD;
  int m, n, k, tiles_n;
  bool lower_only;
  Strided<const T> a, b;
  Strided<T> c;
  const int* skip;  // non-null: do nothing when *skip != 0 (a failed factorization)

  KOKKOS_INLINE_FUNCTION void operator()(const typename Kokkos::TeamPolicy<Exec>::member_type& mb) const {
    if (skip != nullptr && *skip != 0) return;
    int ti, tj;
    if (lower_only) {
      lower_tile(mb.league_rank(), ti, tj);
    } else {
      ti = mb.league_rank() / tiles_n;
      tj = mb.league_rank() % tiles_n;
    }
    const int i0 = ti * TM, j0 = tj * TM;
    Scratch<Exec, T> sa(mb.team_scratch(0), KB * TM), sb(mb.team_scratch(0), KB * TM);
    const int t = mb.team_rank(), tx = t % TD, ty = t / TD;
    T acc[R][R];
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) acc[r][s] = 0;
    for (int k0 = 0; k0 < k; k0 += KB) {
      for (int e = t; e < KB * TM; e += kThreads) {
        const int i = e % TM, kk = e / TM;
        const bool kin = k0 + kk < k;
        sa(kk * TM + i) = (kin && i0 + i < m) ? a(i0 + i, k0 + kk) : T(0);
        sb(kk * TM + i) = (kin && j0 + i < n) ? b(j0 + i, k0 + kk) : T(0);
      }
      mb.team_barrier();
      for (int kk = 0; kk < KB; ++kk) {
        T av[R], bv[R];
        for (int r = 0; r < R; ++r) av[r] = sa(kk * TM + ty + TD * r);
        for (int s = 0; s < R; ++s) bv[s] = sb(kk * TM + tx + TD * s);
        for (int r = 0; r < R; ++r)
          for (int s = 0; s < R; ++s) acc[r][s] += av[r] * bv[s];
      }
      mb.team_barrier();
    }
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) {
        const int i = i0 + ty + TD * r, j = j0 + tx + TD * s;
        if (i < m && j < n && (!lower_only || i >= j)) c(i, j) -= acc[r][s];
      }
  }
};

// Host GEMM-NT: one thread per TM x TM tile, R x R register blocks read straight from memory
// (the caches do the staging).
template <class Exec, class T, int TM, int R>
struct GemmNtHost {
  int m, n, k, tiles_n;
  bool lower_only;
  Strided<const T> a, b;
  Strided<T> c;
  const int* skip;

  KOKKOS_INLINE_FUNCTION void operator()(const int tile) const {
    if (skip != nullptr && *skip != 0) return;
    int ti, tj;
    if (lower_only) {
      lower_tile(tile, ti, tj);
    } else {
      ti = tile / tiles_n;
      tj = tile % tiles_n;
    }
    const int iend = imin(m, (ti + 1) * TM), jend = imin(n, (tj + 1) * TM);
    for (int j0 = tj * TM; j0 < jend; j0 += R)
      for (int i0 = ti * TM; i0 < iend; i0 += R) {
        if (lower_only && i0 + R - 1 < j0) continue;
        T acc[R][R] = {};
        if (i0 + R <= m && j0 + R <= n) {
          for (int p = 0; p < k; ++p) {
            T av[R], bv[R];
            for (int r = 0; r < R; ++r) av[r] = a(i0 + r, p);
            for (int s = 0; s < R; ++s) bv[s] = b(j0 + s, p);
            for (int s = 0; s < R; ++s)
              for (int r = 0; r < R; ++r) acc[s][r] += av[r] * bv[s];
          }
        } else {
          for (int p = 0; p < k; ++p)
            for (int s = 0; s < R && j0 + s < n; ++s)
              for (int r = 0; r < R && i0 + r < m; ++r) acc[s][r] += a(i0 + r, p) * b(j0 + s, p);
        }
        for (int s = 0; s < R && j0 + s < jend; ++s)
          for (int r = 0; r < R && i0 + r < iend; ++r)
            if (!lower_only || i0 + r >= j0 + s) c(i0 + r, j0 + s) -= acc[s][r];
      }
  }
};

template <class Exec, class T>
void native_gemm_nt(const Exec& exec, const int m, const int n, const int k, const Strided<const T> a,
                    const Strided<const T> b, const Strided<T> c, const bool lower_only,
                    const int* skip) {
  if (m == 0 || n == 0 || k == 0) return;
  if constexpr (is_host_exec<Exec>()) {
    constexpr int TM = 64, R = 4;
    const int tm = (m + TM - 1) / TM, tn = (n + TM - 1) / TM;
    const int tiles = lower_only ? tm * (tm + 1) / 2 : tm * tn;
    GemmNtHost<Exec, T, TM, R> f{m, n, k, tn, lower_only, a, b, c, skip};
    Kokkos::parallel_for("kolesky::gemm_nt", Kokkos::RangePolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>(exec, 0, tiles), f);
  } else {
    constexpr int TM = 64, KB = std::is_same<T, double>::value ? 16 : 32, R = 4;
    using F = GemmNtTeam<Exec, T, TM, KB, R>;
    const int tm = (m + TM - 1) / TM, tn = (n + TM - 1) / TM;
    const int tiles = lower_only ? tm * (tm + 1) / 2 : tm * tn;
    F f{m, n, k, tn, lower_only, a, b, c, skip};
    Kokkos::TeamPolicy<Exec> policy(exec, tiles, F::kThreads);
    policy.set_scratch_size(0, Kokkos::PerTeam(2 * Scratch<Exec, T>::shmem_size(KB * TM)));
    Kokkos::parallel_for("kolesky::gemm_nt", policy, f);
  }
}

// B(m x k) <- B op(L)^{-1}: rows of B are independent; a thread per row, L staged in scratch
// (level 1, device memory, when it does not fit on chip). op = T: forward over columns;
// op = N: X L = B, backward.
template <class Exec, class T>
void native_trsm_r(const Exec& exec, const int m, const int k, const bool trans,
                   const Strided<const T> l, const Strided<T> b, const int* skip,
                   const bool unit = false) {
  if (m == 0 || k == 0) return;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  constexpr int rows = is_host_exec<Exec>() ? 64 : 128;
  const std::size_t bytes = Scratch<Exec, T>::shmem_size(std::size_t(k) * k);
  const int level = bytes <= std::size_t(Policy::scratch_size_max(0)) ? 0 : 1;
  auto body = KOKKOS_LAMBDA(const Member& mb) {
    if (skip != nullptr && *skip != 0) return;
    Scratch<Exec, T> buf(mb.team_scratch(level), std::size_t(k) * k);
    const Strided<T> s{buf.data(), 1, k};
    Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, k * k), [&](const int e) {
      const int i = e % k, j = e / k;
      if (i > j || (i == j && !unit)) s(i, j) = l(i, j);
      if (i == j && unit) s(i, j) = T(1);
    });
    mb.team_barrier();
    const int r0 = mb.league_rank() * rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, imin(rows, m - r0)), [&](const int t) {
      const int i = r0 + t;
      if (trans) {
        for (int j = 0; j < k; ++j) {
          T x = b(i, j);
          for (int p = 0; p < j; ++p) x -= b(i, p) * s(j, p);
          b(i, j) = x / s(j, j);
        }
      } else {
        for (int j = k - 1; j >= 0; --j) {
          T x = b(i, j);
          for (int p = j + 1; p < k; ++p) x -= b(i, p) * s(p, j);
          b(i, j) = x / s(j, j);
        }
      }
    });
  };
  const int league = (m + rows - 1) / rows;
  Policy policy(exec, league, is_host_exec<Exec>() ? 1 : rows);
  policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kolesky::trsm", policy, body);
}

//---------------------------------------------------------------------------------------------
// Dispatch.
//---------------------------------------------------------------------------------------------
// GPU SYRK: diagonal blocks larger than this are split into GEMMs (perf_test may set it;
// 2048 measured best on the H100 with the forked streams, docs/performance_log.md).
inline int& syrk_block() {
  static int b = 2048;
  if (b < 32) b = 32;
  return b;
}

template <class Exec>
bool use_vendor(const Blas b) {
  return b != Blas::Native && has_vendor_blas<Exec>();
}

// C(m x m) lower (stored transposed: upper) -= A A^T on the vendor BLAS, A m x k. Under a
// FastFloatScope on a GPU, float, the whole square as one GEMM instead: on the H100 cuBLAS's
// SYRK runs on FFMA (~10 TFLOP/s at 1024) while the GEMM takes the TF32 tensor cores, and the
// scope is opened only on workspaces whose other triangle is scratch (posv_mixed's float copy).
template <class Exec, class T>
void syrk_leaf(const Exec& exec, const int m, const int k, const T* a, const int lda,
               const bool atrans, T* c, const int ldc, const bool ctrans) {
  if (!is_host_exec<Exec>() && std::is_same<T, float>::value && fast_float_flag()) {
    (void)ctrans;  // A A^T is symmetric: the same call either way
    vendor_gemm(exec, atrans, !atrans, m, m, k, a, lda, a, lda, c, ldc);
    return;
  }
  vendor_syrk(exec, !ctrans, atrans, m, k, a, lda, c, ldc);
}

#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
// Streams that the pieces of a large SYRK fan out to: the pieces (diagonal-block SYRKs and the
// GEMMs between them) are independent, and most are too small to fill the GPU alone. One set
// for the process, made on first use, released at finalize.
struct CudaForks {
  static constexpr int kStreams = 3;
  cudaStream_t s[kStreams];
  cudaEvent_t fork, join[kStreams];
  std::unique_ptr<Kokkos::Cuda> exec[kStreams];
  CudaForks() {
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    for (int i = 0; i < kStreams; ++i) {
      cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking);
      cudaEventCreateWithFlags(&join[i], cudaEventDisableTiming);
      exec[i].reset(new Kokkos::Cuda(s[i]));
    }
  }
  ~CudaForks() {
    for (int i = 0; i < kStreams; ++i) {
      exec[i].reset();
      cudaEventDestroy(join[i]);
      cudaStreamDestroy(s[i]);
    }
    cudaEventDestroy(fork);
  }
  static CudaForks& get() { return per_process<CudaForks>(); }
};

// GPU SYRK C(m x m) lower -= A A^T split into diagonal blocks of at most syrk_block() (SYRK)
// and the GEMMs between them, largest first, each on the least loaded of the caller's stream
// and the fork streams; the caller's stream waits for all of them.
template <class T>
void forked_syrk(const Kokkos::Cuda& exec, const int m, const int k, const ColMajor<const T>& ca,
                 const ColMajor<T>& cc) {
  struct Op {
    bool gemm;
    int r0, c0, rows, cols;
    double flops;
  };
  std::vector<Op> ops;
  const int blk = syrk_block();
  const std::function<void(int, int)> split = [&](int off, int len) {
    if (len <= blk) {
      ops.push_back({false, off, off, len, len, double(len) * len * k});
      return;
    }
    int l1 = (len / 2 + 127) / 128 * 128;
    if (l1 >= len || l1 <= 0) l1 = len / 2;
    split(off, l1);
    ops.push_back({true, off + l1, off, len - l1, l1, 2.0 * (len - l1) * l1 * k});
    split(off + l1, len - l1);
  };
  split(0, m);
  std::stable_sort(ops.begin(), ops.end(), [](const Op& x, const Op& y) { return x.flops > y.flops; });
  auto& f = CudaForks::get();
  constexpr int S = CudaForks::kStreams + 1;
  double load[S] = {0};
  bool used[S] = {false};
  cudaEventRecord(f.fork, exec.cuda_stream());
  for (const Op& op : ops) {
    int best = 0;
    for (int i = 1; i < S; ++i)
      if (load[i] < load[best]) best = i;
    load[best] += op.flops;
    const Kokkos::Cuda& e = best == 0 ? exec : *f.exec[best - 1];
    if (best > 0 && !used[best]) cudaStreamWaitEvent(f.s[best - 1], f.fork, 0);
    used[best] = true;
    // Element (i, j) of A: ca.p[i + j * ld] (column-major) or ca.p[j + i * ld] (transposed).
    const auto arow = [&](int r) { return ca.trans ? ca.p + r * std::size_t(ca.ld) : ca.p + r; };
    const auto cel = [&](int r, int c) {
      return cc.trans ? cc.p + c + r * std::size_t(cc.ld) : cc.p + r + c * std::size_t(cc.ld);
    };
    if (op.gemm) {
      if (!cc.trans)  // C(r0.., c0..) -= A(r0..) A(c0..)^T
        vendor_gemm(e, ca.trans, !ca.trans, op.rows, op.cols, k, arow(op.r0), ca.ld, arow(op.c0),
                    ca.ld, cel(op.r0, op.c0), cc.ld);
      else  // stored transposed: C^T(c0.., r0..) -= A(c0..) A(r0..)^T
        vendor_gemm(e, ca.trans, !ca.trans, op.cols, op.rows, k, arow(op.c0), ca.ld, arow(op.r0),
                    ca.ld, cel(op.r0, op.c0), cc.ld);
    } else {
      syrk_leaf(e, op.rows, k, arow(op.r0), ca.ld, ca.trans, cel(op.r0, op.c0), cc.ld, cc.trans);
    }
  }
  for (int i = 1; i < S; ++i)
    if (used[i]) {
      cudaEventRecord(f.join[i - 1], f.s[i - 1]);
      cudaStreamWaitEvent(exec.cuda_stream(), f.join[i - 1], 0);
    }
}
#endif

// C(m x n) -= A(m x k) B(n x k)^T; lower_only with m == n and A == B is a SYRK.
template <class Exec, class T>
void gemm_nt(const Exec& exec, const Blas blas, const int m, const int n, const int k,
             const Strided<const T> a, const Strided<const T> b, const Strided<T> c,
             const bool lower_only, const int* skip = nullptr) {
  if (m == 0 || n == 0 || k == 0) return;
  if (use_vendor<Exec>(blas)) {
    const auto ca = col_major(a, m, k), cb = col_major(b, n, k);
    const auto cc = col_major(c, m, n);
    if (ca.ok && cb.ok && cc.ok) {
      if (lower_only && a.p == b.p && a.rs == b.rs && a.cs == b.cs) {
        // cuBLAS's SYRK runs at a fraction of its GEMM rate: split off the off-diagonal
        // blocks as GEMMs, down to diagonal blocks of syrk_block(), fanned out over streams.
#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
        if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
          if (m > syrk_block()) {
            forked_syrk<T>(exec, m, k, ca, cc);
            return;
          }
        }
#endif
        // C lower (or, stored transposed, upper) -= A A^T.
        syrk_leaf(exec, m, k, ca.p, ca.ld, ca.trans, cc.p, cc.ld, cc.trans);
        return;
      }
      if (!lower_only && vendor_gemm_strided(exec, m, n, k, a, b.transposed(), c)) return;
    }
  }
  native_gemm_nt(exec, m, n, k, a, b, c, lower_only, skip);
}

// B(m x k) <- B op(L)^{-1}, L lower k x k, op = T when trans.
template <class Exec, class T>
void trsm_r(const Exec& exec, const Blas blas, const int m, const int k, const bool trans,
            const Strided<const T> l, const Strided<T> b, const int* skip = nullptr,
            const bool unit = false) {
  if (m == 0 || k == 0) return;
  if (use_vendor<Exec>(blas)) {
    const auto cl = col_major(l, k, k);
    const auto cb = col_major(b, m, k);
    if (cl.ok && cb.ok) {
      // L stored transposed is an upper matrix U = L^T: op(L) = op'(U) with the flag flipped.
      const bool lower = !cl.trans, ta = cl.trans ? !trans : trans;
      if (!cb.trans)
        vendor_trsm(exec, false, lower, ta, m, k, cl.p, cl.ld, cb.p, cb.ld, unit);
      else  // B^T <- op(L)^{-T} B^T
        vendor_trsm(exec, true, lower, !ta, k, m, cl.p, cl.ld, cb.p, cb.ld, unit);
      return;
    }
  }
  native_trsm_r(exec, m, k, trans, l, b, skip, unit);
}

// C(m x n) -= S B with S symmetric m x m given by its lower triangle l. Native: a team per
// row of C, the row of S assembled from the lower triangle on the fly.
template <class Exec, class T>
void symm_l(const Exec& exec, const Blas blas, const int m, const int n, const Strided<const T> l,
            const Strided<const T> b, const Strided<T> c) {
  if (m == 0 || n == 0) return;
  if (use_vendor<Exec>(blas)) {
    const auto cl = col_major(l, m, m), cb = col_major(b, m, n);
    const auto cc = col_major(c, m, n);
    if (cl.ok && cb.ok && cc.ok && !cb.trans && !cc.trans) {
      vendor_symm(exec, !cl.trans, m, n, cl.p, cl.ld, cb.p, cb.ld, cc.p, cc.ld);
      return;
    }
  }
  using Policy = Kokkos::TeamPolicy<Exec>;
  Kokkos::parallel_for(
      "kolesky::symm", Policy(exec, m, Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& mb) {
        const int i = mb.league_rank();
        for (int col = 0; col < n; ++col) {
          T s = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(mb, m),
              [&](const int j, T& acc) { acc += (j <= i ? l(i, j) : l(j, i)) * b(j, col); }, s);
          Kokkos::single(Kokkos::PerTeam(mb), [&]() { c(i, col) -= s; });
        }
      });
}

}  // namespace impl
}  // namespace kolesky
