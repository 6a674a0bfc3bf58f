// potrs with many right-hand sides at large orders on CUDA: both sweeps as GEMMs only.
//
// There cuBLAS's TRSM (and so cuSOLVER's potrs) runs at ~1.3 TFLOP/s on the H200: 2.5 ms for
// both sweeps at n = 4096 with 100 right-hand sides in double. Cutting it into TRSMs on the
// diagonal blocks and GEMMs was slower still (one TRSM on a 256 triangle with 100 right-hand
// sides costs ~0.1 ms; issue 15 session 36). Here the NB x NB diagonal blocks' inverses are
// formed once per call in one launch, so that each sweep is 2 n / NB GEMMs:
//   forward   W_k = inv(L_kk) B_k,    B_j -= L_jk W_k for the rows j below;
//   backward  B_k = inv(L_kk)^T W_k,  W_j -= L_kj^T B_k for the rows j above.
// The explicit inverses bound the backward error by cond(L_kk) u rather than u (MAGMA's TRSM
// makes the same trade); the tests check it on ill-conditioned factors.
#pragma once
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Blas3.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace impl {

// Measurement knobs (perf_test, tests): `inv` 0 never takes this solve, 2 wherever the vendor
// TRSM would run, 1 (default) picks; `nb` the diagonal block (a multiple of 32; 0: by size);
// `max_w` the forward result's workspace in values (0: kPotrsInvMaxW; more right-hand sides
// than fit go through in groups of columns).
struct PotrsInvKnobs : Knobs<PotrsInvKnobs> {
  int inv = 1;
  int nb = 0;
  int max_w = 0;
  int staged = 1;  // the inverse kernel: 1 stages L's row panels in shared memory, 0 reads L
  int cpt = 2;     // the staged kernel's columns a thread: 8, 4 or 2
};

// The default workspace bound: 64 MB in double.
constexpr std::size_t kPotrsInvMaxW = std::size_t(1) << 23;

// Where it beats the team per right-hand side and the vendor TRSM (H200, session 37, rounds
// 157-158): from n = 512 above 16 right-hand sides (fewer: the one-launch block-row solve).
// potrs_strided asks the warp per right-hand side (n <= 256) first.
template <class T>
bool potrs_inv_wins(const int n, const int nrhs) {
  const int knob = PotrsInvKnobs::get().inv;
  if (knob != 1) return knob == 2;
  return n >= 512 && nrhs > 16;
}

inline int potrs_inv_nb(const int n) {
  const int knob = PotrsInvKnobs::get().nb;
  if (knob > 0) return (knob + 31) / 32 * 32;
  return n < 8192 ? 256 : 512;
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOLESKY_HAVE_CUBLAS)

template <class T>
struct PotrsInvArgs {
  const T* l;
  std::ptrdiff_t rs, cs;
  T* inv;  // the blocks' inverses, NB x NB each, column-major
  int n, nb, strips;
};

constexpr int kPotrsInvThreads = 128;
constexpr int kPotrsInvLd = 33;  // a strip row in shared memory (odd: the row stores spread)

// L_ii X = S for this warp's Q columns of a 32-row block: lane r holds row r of L_ii (lrow,
// zero above the diagonal) and of S (acc); 32 steps of a shuffle and a multiply-add. The
// solved rows go to the strip in shared memory (xs, Q consecutive) and to the inverse (inv,
// column stride ld).
template <class T, int Q>
__device__ __forceinline__ void potrs_inv_substitute(const int r, const T (&lrow)[32],
                                                     T (&acc)[Q], T* const xs, T* const inv,
                                                     const int ld) {
#if defined(__CUDA_ARCH__)
  T d = lrow[0];
#pragma unroll
  for (int t = 1; t < 32; ++t)
    if (t == r) d = lrow[t];
  const T rd = T(1) / d;
#pragma unroll
  for (int t = 0; t < 32; ++t) {
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      if (r == t) acc[q] *= rd;
      const T xt = __shfl_sync(0xffffffffu, acc[q], t);
      if (r > t) acc[q] -= lrow[t] * xt;
    }
  }
#pragma unroll
  for (int q = 0; q < Q; ++q) {
    xs[q] = acc[q];
    inv[std::size_t(q) * ld] = acc[q];
  }
#else
  (void)r, (void)lrow, (void)acc, (void)xs, (void)inv, (void)ld;
#endif
}

// A block of 128 threads per 32-column strip j of one diagonal block's inverse X = inv(L_kk):
// down its 32-row blocks i >= j, S = [i == j] I - sum_{j <= m < i} L_im X_mj (the strip's
// solved blocks kept in shared memory), then L_ii X_ij = S by substitution, a warp per eight
// columns (lane r keeps row r of L_ii and of S; 32 steps of a shuffle and a multiply-add).
// Rows and columns past the matrix act as the identity; the strip's part above the diagonal
// is written as zeros (the GEMMs read the whole block).
template <class T>
__global__ void __launch_bounds__(kPotrsInvThreads) potrs_inv_kernel(const PotrsInvArgs<T> a) {
#if defined(__CUDA_ARCH__)
  extern __shared__ __align__(16) unsigned char potrs_inv_smem[];
  T* const xs = reinterpret_cast<T*>(potrs_inv_smem);
  const int k = blockIdx.x / a.strips, j = blockIdx.x % a.strips;
  const int k0 = k * a.nb, kb = min(a.nb, a.n - k0), nbb = (kb + 31) / 32;
  if (j >= nbb) return;
  const int r = threadIdx.x & 31, c0 = 8 * (threadIdx.x >> 5);
  T* const inv = a.inv + std::size_t(k) * a.nb * a.nb + std::size_t(32 * j + c0) * a.nb;
  const T* const lk = a.l + std::ptrdiff_t(k0) * (a.rs + a.cs);
  for (int i = 0; i < j; ++i)
#pragma unroll
    for (int q = 0; q < 8; ++q) inv[std::size_t(q) * a.nb + 32 * i + r] = T(0);
  for (int i = j; i < nbb; ++i) {
    const int row = 32 * i + r;
    const bool in = row < kb;
    T acc[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) acc[q] = T(i == j && r == c0 + q);
    for (int m = j; m < i; ++m) {  // columns 32 m + t < 32 i < kb
      const T* const lm = lk + std::ptrdiff_t(row) * a.rs + std::ptrdiff_t(32 * m) * a.cs;
#pragma unroll 8
      for (int t = 0; t < 32; ++t) {
        const T v = in ? lm[t * a.cs] : T(0);
        const T* const x = xs + (32 * m + t) * kPotrsInvLd + c0;
#pragma unroll
        for (int q = 0; q < 8; ++q) acc[q] -= v * x[q];
      }
    }
    T lrow[32];
    const T* const li = lk + std::ptrdiff_t(row) * a.rs + std::ptrdiff_t(32 * i) * a.cs;
#pragma unroll
    for (int t = 0; t < 32; ++t) lrow[t] = t <= r ? (in ? li[t * a.cs] : T(r == t)) : T(0);
    potrs_inv_substitute(r, lrow, acc, xs + row * kPotrsInvLd + c0, inv + row, a.nb);
    __syncthreads();
  }
#else
  (void)a;
#endif
}

// The same strip computed from shared memory, CPT columns a thread (32 / CPT warps): before
// row block i, the block's whole row panel L(i, j..i) is loaded at once.
template <class T, int CPT>
__global__ void __launch_bounds__(32 * (32 / CPT))
    potrs_inv_staged_kernel(const PotrsInvArgs<T> a) {
#if defined(__CUDA_ARCH__)
  extern __shared__ __align__(16) unsigned char potrs_inv_smem[];
  T* const xs = reinterpret_cast<T*>(potrs_inv_smem);  // nb x kPotrsInvLd: the strip
  T* const lp = xs + a.nb * kPotrsInvLd;                 // 32 x (nb + 1): a row panel
  const int ldp = a.nb + 1;
  const int k = blockIdx.x / a.strips, j = blockIdx.x % a.strips;
  const int k0 = k * a.nb, kb = min(a.nb, a.n - k0), nbb = (kb + 31) / 32;
  if (j >= nbb) return;
  const int r = threadIdx.x & 31, c0 = CPT * (threadIdx.x >> 5);
  T* const inv = a.inv + std::size_t(k) * a.nb * a.nb + std::size_t(32 * j + c0) * a.nb;
  const T* const lk = a.l + std::ptrdiff_t(k0) * (a.rs + a.cs);
  for (int i = 0; i < j; ++i)
#pragma unroll
    for (int q = 0; q < CPT; ++q) inv[std::size_t(q) * a.nb + 32 * i + r] = T(0);
  for (int i = j; i < nbb; ++i) {
    const int row = 32 * i + r, w = 32 * (i - j + 1);  // the panel's columns 32 j .. 32 i + 31
    for (int e = threadIdx.x; e < 32 * w; e += 32 * (32 / CPT)) {
      const int rr = e & 31, cc = e >> 5, gr = 32 * i + rr, gc = 32 * j + cc;
      T v;
      if (cc < w - 32)
        v = gr < kb ? lk[std::ptrdiff_t(gr) * a.rs + std::ptrdiff_t(gc) * a.cs] : T(0);
      else  // the diagonal block: its lower triangle, the identity past the matrix
        v = cc - (w - 32) <= rr ? (gr < kb ? lk[std::ptrdiff_t(gr) * a.rs + std::ptrdiff_t(gc) * a.cs]
                                           : T(cc - (w - 32) == rr))
                                : T(0);
      lp[rr * ldp + cc] = v;
    }
    __syncthreads();
    T acc[CPT];
#pragma unroll
    for (int q = 0; q < CPT; ++q) acc[q] = T(i == j && r == c0 + q);
    const T* const lr = lp + r * ldp;
    for (int m = 0; m < w - 32; m += 32) {
#pragma unroll 8
      for (int t = 0; t < 32; ++t) {
        const T v = lr[m + t];
        const T* const x = xs + (32 * j + m + t) * kPotrsInvLd + c0;
#pragma unroll
        for (int q = 0; q < CPT; ++q) acc[q] -= v * x[q];
      }
    }
    T lrow[32];
#pragma unroll
    for (int t = 0; t < 32; ++t) lrow[t] = lr[w - 32 + t];
    potrs_inv_substitute(r, lrow, acc, xs + row * kPotrsInvLd + c0, inv + row, a.nb);
    __syncthreads();
  }
#else
  (void)a;
#endif
}

// C = alpha A B + beta C, A m x k, B k x n, each column-major or its transpose.
template <class T>
void potrs_inv_gemm(const Kokkos::Cuda& exec, const int m, const int n, const int k,
                    const T alpha, const Strided<const T> a, const Strided<const T> b,
                    const T beta, const Strided<T> c) {
  if (m == 0 || n == 0 || k == 0) return;
  if (!vendor_gemm_strided(exec, m, n, k, a, b, c, alpha, beta))
    throw std::logic_error("kolesky: potrs_inv: an operand is not column-major");
}

// Per stream: the inverses and the forward sweep's result (n x at most `cols` columns).
template <class T>
struct PotrsInvWork {
  Kokkos::View<T*, Kokkos::CudaSpace> inv, w;
  void reserve(const std::size_t inv_len, const std::size_t w_len) {
    if (inv.extent(0) < inv_len)
      inv = Kokkos::View<T*, Kokkos::CudaSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::potrs_inv"), inv_len);
    if (w.extent(0) < w_len)
      w = Kokkos::View<T*, Kokkos::CudaSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::potrs_inv_w"), w_len);
  }
};

// The diagonal blocks' inverses into work.inv (nb x nb each, column-major), one launch.
template <class T>
void potrs_inv_invert(const Kokkos::Cuda& exec, const int n, const int nb,
                      const Strided<const T> l, PotrsInvWork<T>& work) {
  const int nk = (n + nb - 1) / nb, strips = nb / 32;
  const PotrsInvArgs<T> args{l.p, l.rs, l.cs, work.inv.data(), n, nb, strips};
  const std::size_t strip = std::size_t(nb) * kPotrsInvLd * sizeof(T);
  const std::size_t staged = strip + std::size_t(32) * (nb + 1) * sizeof(T);
  const int cpt = PotrsInvKnobs::get().cpt;
  if (PotrsInvKnobs::get().staged &&
      staged <= std::size_t(exec.cuda_device_prop().sharedMemPerBlockOptin)) {
    const auto launch = [&](auto kernel, const int threads) {
      static std::atomic<unsigned long long> opted{0};
      opt_in_shared(opted, reinterpret_cast<const void*>(kernel), exec, staged,
                    "kolesky::potrs: the inverse kernel");
      kernel<<<unsigned(nk * strips), threads, staged, exec.cuda_stream()>>>(args);
    };
    if (cpt == 8)
      launch(potrs_inv_staged_kernel<T, 8>, 128);
    else if (cpt == 4)
      launch(potrs_inv_staged_kernel<T, 4>, 256);
    else
      launch(potrs_inv_staged_kernel<T, 2>, 512);
  } else {
    auto kernel = potrs_inv_kernel<T>;
    static std::atomic<unsigned long long> opted{0};
    opt_in_shared(opted, reinterpret_cast<const void*>(kernel), exec, strip,
                  "kolesky::potrs: the inverse kernel");
    kernel<<<unsigned(nk * strips), kPotrsInvThreads, strip, exec.cuda_stream()>>>(args);
  }
  check_launch("kolesky::potrs: the inverse kernel");
}

// Both sweeps over nc right-hand sides by the inverses in work (w: n x nc).
template <class T>
void potrs_inv_sweeps(const Kokkos::Cuda& exec, const int n, const int nc, const int nb,
                      const Strided<const T> l, const Strided<T> b, const PotrsInvWork<T>& work) {
  const int nk = (n + nb - 1) / nb;
  const auto inv = [&](const int k) {
    return Strided<const T>{work.inv.data() + std::size_t(k) * nb * nb, 1, nb};
  };
  const auto cv = [](const Strided<T>& s) { return Strided<const T>{s.p, s.rs, s.cs}; };
  const Strided<T> w{work.w.data(), 1, n};
  for (int k = 0; k < nk; ++k) {
    const int k0 = k * nb, kb = std::min(nb, n - k0), k1 = k0 + kb;
    potrs_inv_gemm(exec, kb, nc, kb, T(1), inv(k), cv(b.shifted(k0, 0)), T(0), w.shifted(k0, 0));
    potrs_inv_gemm(exec, n - k1, nc, kb, T(-1), l.shifted(k1, k0), cv(w.shifted(k0, 0)), T(1),
                   b.shifted(k1, 0));
  }
  for (int k = nk - 1; k >= 0; --k) {
    const int k0 = k * nb, kb = std::min(nb, n - k0);
    potrs_inv_gemm(exec, kb, nc, kb, T(1), inv(k).transposed(), cv(w.shifted(k0, 0)), T(0),
                   b.shifted(k0, 0));
    potrs_inv_gemm(exec, k0, nc, kb, T(-1), l.shifted(k0, 0).transposed(), cv(b.shifted(k0, 0)),
                   T(1), w);
  }
}

// L L^T X = B in place; L (n x n lower) and B (n x nrhs) column-major or transposed.
template <class T>
void potrs_inv(const Kokkos::Cuda& exec, const int n, const int nrhs, const Strided<const T> l,
               const Strided<T> b) {
  if (n <= 0 || nrhs <= 0) return;
  const int nb = potrs_inv_nb(n), nk = (n + nb - 1) / nb;
  const int mw = PotrsInvKnobs::get().max_w;
  const std::size_t max_w = mw > 0 ? std::size_t(mw) : kPotrsInvMaxW;
  const int cols = int(std::min<std::size_t>(nrhs, std::max<std::size_t>(1, max_w / n)));
  auto& work = per_stream<PotrsInvWork<T>>(exec);
  work.reserve(std::size_t(nk) * nb * nb, std::size_t(n) * cols);
  potrs_inv_invert(exec, n, nb, l, work);
  for (int c0 = 0; c0 < nrhs; c0 += cols)
    potrs_inv_sweeps(exec, n, std::min(cols, nrhs - c0), nb, l, b.shifted(0, c0), work);
}

#endif  // KOKKOS_ENABLE_CUDA && KOLESKY_HAVE_CUBLAS

}  // namespace impl
}  // namespace kolesky
