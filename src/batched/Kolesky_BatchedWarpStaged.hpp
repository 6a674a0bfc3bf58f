// CUDA batched Cholesky for n <= 128 (Kernel::WarpStaged; the tuned default for strided
// batches of n = 16-128): one warp per matrix and two warps per block up to n = 64, a block of
// n / 32 warps per matrix above (block_staged_kernel; in double on sm_80 and later
// split_staged_kernel with a thread per row); plain CUDA kernels on the execution space
// instance's stream.
//
// The warp copies the lower triangle of its matrix into a packed buffer in shared memory with
// asynchronous copies (cp.async on sm_80 and later: every load in flight at once, no register
// held for it), coalesced along whichever matrix stride is 1. It then factors left-looking:
// lane r keeps row r of L in registers (and row r + 32 when n > 32); at step k each lane forms
// a(r, k) - L(r, 0:k) . L(k, 0:k), reading row k from shared memory as 16-byte broadcasts; the
// pivot reaches every lane with one shuffle, and L(r, k) goes back to the buffer for the rows
// below to read at their step. The triangle is stored back coalesced; the strict upper
// triangle keeps its values (the 16-byte path rewrites the part of a diagonal chunk right of
// the diagonal with what it read there).
//
// Why (docs/performance_log.md, issue 16): RowRegisters has each lane read its own row
// straight from device memory (32 sectors per warp-wide load, 64 % of stalls on L1TEX, DRAM
// at 20 %); staging through shared memory with ordinary loads cost as many instructions as it
// saved. The asynchronous copy moves the matrix without those instructions.
//
// A matrix that fails carries on with a unit pivot (every step stays uniform over the warp);
// its info is the first failing column and its contents are unspecified.
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "batched/Kolesky_BatchedPotrf_Impl.hpp"
#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Dmma.hpp"
#include "common/Kolesky_Types.hpp"

namespace kolesky {
namespace batched {
namespace impl {

constexpr int kMaxWarpStagedN = 128;

// Whether the kernel exists for this execution space (it is written for CUDA warps).
template <class Exec>
constexpr bool warp_staged_available() {
#if defined(KOKKOS_ENABLE_CUDA)
  return std::is_same<Exec, Kokkos::Cuda>::value;
#else
  return false;
#endif
}

// The packed buffer: row r starts on a 16-byte boundary and holds entries 0..r, rounded up to
// whole 16-byte chunks of E entries (so a row is read as 16-byte vectors).
template <class T>
struct WarpPacked {
  static constexpr int E = 16 / int(sizeof(T));
  // Entries before row r: E times the chunks of rows 0..r-1 (row q has q / E + 1).
  KOKKOS_INLINE_FUNCTION static constexpr int off(const int r) {
    return E * (r + E * ((r / E) * (r / E - 1) / 2) + (r % E) * (r / E));
  }
};

#if defined(KOKKOS_ENABLE_CUDA)

using kolesky::impl::check_launch;
using kolesky::impl::opt_in_shared;

template <class T>
struct WarpVec;
template <>
struct WarpVec<float> {
  using type = float4;
  KOKKOS_FORCEINLINE_FUNCTION static float get(const float4& v, const int e) {
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
  }
};
template <>
struct WarpVec<double> {
  using type = double2;
  KOKKOS_FORCEINLINE_FUNCTION static double get(const double2& v, const int e) {
    return e == 0 ? v.x : v.y;
  }
};

#if defined(__CUDA_ARCH__)
// One entry from device memory into shared memory, asynchronously where the chip can.
template <class T>
__device__ __forceinline__ void warp_copy_in(T* const s, const T* const g) {
#if __CUDA_ARCH__ >= 800
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(sa), "l"(g),
               "n"(int(sizeof(T)))
               : "memory");
#else
  *s = *g;
#endif
}

// 16 bytes (both addresses 16-byte aligned).
template <class T>
__device__ __forceinline__ void warp_copy_in16(T* const s, const T* const g) {
#if __CUDA_ARCH__ >= 800
  const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(g) : "memory");
#else
  using V = typename WarpVec<T>::type;
  *reinterpret_cast<V*>(s) = *reinterpret_cast<const V*>(g);
#endif
}

// Every copy of this lane landed, and the warp sees every lane's.
__device__ __forceinline__ void warp_copy_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
  __syncwarp();
}

// Left-looking factorization of the packed lower triangle s (order n <= N) by one warp.
// Returns the first failing column (1-based) or 0.
// Precise: the diagonal entries by a correctly rounded sqrt (the one-matrix potrf, whose exact
// cases must come out exact; rsqrt(d) * d can miss by an ulp). The chain keeps rsqrt: the raw
// pivot is stored on the diagonal and its sqrt taken after the last column, off the chain (a
// sqrt and a division per column on it cost ~15 % at n = 32-100 in double).
template <int N, bool Exact, bool Precise, class T>
__device__ __forceinline__ int warp_staged_factor(T* const s, const int n_in, const int lane) {
  const int n = Exact ? N : n_in;  // a constant for the exact kernels: no bound checks
  using P = WarpPacked<T>;
  using W = WarpVec<T>;
  using V = typename W::type;
  constexpr int E = P::E, NB = (N + 31) / 32;
  T l[NB][N];    // the lane's row(s) of L; entries right of the diagonal are never used
  V chunk[NB];   // the 16-byte chunk of the lane's row(s) holding column k
  int row[NB];   // where the lane's row(s) start in s
#pragma unroll
  for (int b = 0; b < NB; ++b) {
    const int r = 32 * b + lane;
    row[b] = P::off(r < n ? r : 0);
    chunk[b] = V{};
  }
  int fail = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    if (!Exact && k >= n) break;  // uniform over the warp
    if (k % E == 0) {
      // Only rows k..n-1 read their chunk: for a finished row (or a lane past n) the chunk at
      // column k lies beyond the row, in rows that other lanes write in this step (a benign
      // race, the values unused, that racecheck reports all the same). Their values stay
      // unused.
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const int r = 32 * b + lane;
        if (32 * b + 31 >= k && r >= k && r < n)
          chunk[b] = *reinterpret_cast<const V*>(s + row[b] + k);
      }
    }
    T v[NB], acc[NB][4];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      v[b] = W::get(chunk[b], k % E);
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[b][q] = T(0);
    }
    const T* const lk = s + P::off(k);  // row k of L, finished up to column k - 1
#pragma unroll
    for (int c = 0; c * E < k; ++c) {
      const V w = *reinterpret_cast<const V*>(lk + c * E);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int p = c * E + e;
        if (p < k) {
#pragma unroll
          for (int b = 0; b < NB; ++b)
            if (32 * b + 31 >= k) acc[b][p % 4] = fma(l[b][p], W::get(w, e), acc[b][p % 4]);
        }
      }
    }
#pragma unroll
    for (int b = 0; b < NB; ++b)
      if (32 * b + 31 >= k) v[b] -= (acc[b][0] + acc[b][1]) + (acc[b][2] + acc[b][3]);
    const T d = __shfl_sync(0xffffffffu, v[k / 32], k % 32);
    const bool ok = kolesky::impl::usable_pivot(d);
    fail = (fail == 0 && !ok) ? k + 1 : fail;
    const T inv = ok ? kolesky::impl::rsqrt(d) : T(1);
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      if (32 * b + 31 >= k) {
        l[b][k] = v[b] * inv;  // row k: d * rsqrt(d), the diagonal entry
        const int r = 32 * b + lane;
        if (r > k && r < n) s[row[b] + k] = l[b][k];
      }
    }
    __syncwarp();
    // The diagonal entry d * inv (what lane k holds) only after every lane's reads of row k,
    // 16-byte reads that cover it. Written by lane 0 from the shuffled pivot: a store of
    // l[b][k] by lane k is merged by the compiler into one store of l[b][lane], a dynamic
    // index that puts l on the stack.
    if (lane == 0) s[P::off(k) + k] = Precise ? d : d * inv;
  }
  __syncwarp();
  if (Precise) {
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      const int r = 32 * b + lane;
      if (r < n) {
        T& x = s[P::off(r) + r];
        if (kolesky::impl::usable_pivot(x)) x = kolesky::impl::sqrt(x);
      }
    }
    __syncwarp();
  }
  return fail;
}
#endif  // __CUDA_ARCH__

// Registers per thread each kernel may take, as the minimum number of 64-thread blocks an SM
// must hold (65536 / (64 * blocks)). The Kokkos team launch of the first version took 122-255
// registers with stack frames for the same code (its league loop and closure kept state live
// across the factorization; docs/performance_log.md): this launch is a plain kernel, and the
// cap keeps the occupancy the standalone prototype measured best with no spills.
template <class T, int N>
constexpr int warp_staged_min_blocks() {
  return sizeof(T) == 8 ? (N <= 20 ? 14 : N <= 32 ? 9 : 4)
                        : (N <= 24 ? 14 : N <= 32 ? 10 : 8);
}

// Warp w of block t factors matrix src.id(2 t + w).
template <int N, bool Exact, int MinBlocks, class T, class Source, class Info, bool Precise = false>
__global__ void __launch_bounds__(64, MinBlocks)
    warp_staged_kernel(const Source src, const int count, const bool lower, const Info info) {
#if defined(__CUDA_ARCH__)
  using P = WarpPacked<T>;
  constexpr int per = P::off(N);  // entries of one warp's buffer, a whole number of chunks
  extern __shared__ __align__(16) unsigned char kolesky_warp_staged_smem[];
  const int t = int(blockIdx.x) * 2 + int(threadIdx.y);
  if (t >= count) return;  // the whole warp: nothing below synchronizes the block
  const int lane = int(threadIdx.x);
  T* const s = reinterpret_cast<T*>(kolesky_warp_staged_smem) + int(threadIdx.y) * per;
  const int b = src.id(t);
  const int n = Exact ? N : src.order_of(b);
  const auto m0 = src.matrix_of(b);
  const auto m = lower ? m0 : m0.transposed();  // the lower triangle of m is what is factored
  // A contiguous row-major matrix (Lower of a LayoutRight batch) moves in 16-byte chunks:
  // the chunks holding lower entries, each lane a chunk, consecutive lanes consecutive chunks.
  // The part of a diagonal chunk right of the diagonal goes back unchanged.
  constexpr int E = P::E, CPR = N / E, NCH = N * CPR;
  const bool chunks = Exact && N % E == 0 && m.cs == 1 && m.rs == N &&
                      reinterpret_cast<std::uintptr_t>(m.p) % 16 == 0;
  // Columns contiguous (rs == 1): a column's rows across the lanes; otherwise a row's columns.
  const bool by_column = m.rs == 1 && m.cs != 1;
  if (chunks) {
#pragma unroll 4
    for (int q = lane; q < NCH; q += 32) {
      const int r = q / CPR, c = q - r * CPR;
      if (c * E <= r) warp_copy_in16(s + P::off(r) + c * E, m.p + std::size_t(q) * E);
    }
  } else if (by_column) {
    for (int c = 0; c < n; ++c) {
      const T* const g = m.p + c * m.cs;
      for (int r = c + lane; r < n; r += 32) warp_copy_in(s + P::off(r) + c, g + r);
    }
  } else {
    for (int r = 0; r < n; ++r) {
      const T* const g = m.p + r * m.rs;
      T* const d = s + P::off(r);
      for (int c = lane; c <= r; c += 32) warp_copy_in(d + c, g + c * m.cs);
    }
  }
  warp_copy_wait();
  const int fail = warp_staged_factor<N, Exact, Precise>(s, n, lane);
  if (chunks) {
    using V = typename WarpVec<T>::type;
#pragma unroll 4
    for (int q = lane; q < NCH; q += 32) {
      const int r = q / CPR, c = q - r * CPR;
      if (c * E <= r)
        *reinterpret_cast<V*>(m.p + std::size_t(q) * E) =
            *reinterpret_cast<const V*>(s + P::off(r) + c * E);
    }
  } else if (by_column) {
    for (int c = 0; c < n; ++c) {
      T* const g = m.p + c * m.cs;
      for (int r = c + lane; r < n; r += 32) g[r] = s[P::off(r) + c];
    }
  } else {
    for (int r = 0; r < n; ++r) {
      T* const g = m.p + r * m.rs;
      const T* const d = s + P::off(r);
      for (int c = lane; c <= r; c += 32) g[c * m.cs] = d[c];
    }
  }
  if (lane == 0) info(b) = fail;
#else
  (void)src, (void)count, (void)lower, (void)info;
#endif
}

// Orders 65-128: the same staging with a block of N / 32 warps per matrix (a lane's row of 128
// does not fit in registers), factored left-looking by panels of kStagedPanel columns. For a
// panel at k0 every row r >= k0 forms its panel entries a(r, k0 + j) - L(r, 0:k0) L(k0 + j, 0:k0)
// from shared memory (its own row and the panel's rows as 16-byte chunks, a chunk of each panel
// row used for the whole panel); the panel's diagonal block goes to a small buffer, every lane
// factors that block itself (no exchange between warps per column) and solves its own row
// against it. Two block barriers per panel. Warp w holds rows 32w .. 32w + 31, so the warps of
// the first rows leave early and the matrices beside them on the SM take their place.
constexpr int kStagedPanel = 8;

#if defined(__CUDA_ARCH__)
// The lower triangle of m (order n) into the packed buffer s by the NW warps of a block,
// coalesced along whichever stride is 1; and back.
template <int NW, class T, class M>
__device__ __forceinline__ void block_stage_in(T* const s, const M& m, const int n,
                                               const bool by_column, const int w, const int lane) {
  using P = WarpPacked<T>;
  if (by_column) {  // a warp per column, its rows across the lanes
    for (int c = w; c < n; c += NW) {
      const T* const g = m.p + c * m.cs;
      for (int r = c + lane; r < n; r += 32) warp_copy_in(s + P::off(r) + c, g + r);
    }
  } else {  // a warp per row, its columns across the lanes
    for (int r = w; r < n; r += NW) {
      const T* const g = m.p + r * m.rs;
      for (int c = lane; c <= r; c += 32) warp_copy_in(s + P::off(r) + c, g + c * m.cs);
    }
  }
}

template <int NW, class T, class M>
__device__ __forceinline__ void block_stage_out(const T* const s, const M& m, const int n,
                                                const bool by_column, const int w, const int lane) {
  using P = WarpPacked<T>;
  if (by_column) {
    for (int c = w; c < n; c += NW) {
      T* const g = m.p + c * m.cs;
      for (int q = c + lane; q < n; q += 32) g[q] = s[P::off(q) + c];
    }
  } else {
    for (int q = w; q < n; q += NW) {
      T* const g = m.p + q * m.rs;
      const T* const d = s + P::off(q);
      for (int c = lane; c <= q; c += 32) g[c * m.cs] = d[c];
    }
  }
}

// sum_a / sum_b[j] -= L(r, c) L(k + j, c) over this part's 16-byte chunks of columns [c0, c1)
// (c0 and c1 multiples of E; the chunks are dealt to the S parts of the row in turn).
template <int B, int S, int E, class T>
__device__ __forceinline__ void staged_dot(T (&sum_a)[B], T (&sum_b)[B], const T* const row,
                                           const T* const s, const int k, const int n,
                                           const int c0, const int c1, const int part) {
  using P = WarpPacked<T>;
  using W = WarpVec<T>;
  using V = typename W::type;
  int offk[B];
#pragma unroll
  for (int j = 0; j < B; ++j) offk[j] = P::off(k + j < n ? k + j : 0);
#pragma unroll 2
  for (int c = c0 + part * E; c < c1; c += S * E) {
    const V mine = *reinterpret_cast<const V*>(row + c);
#pragma unroll
    for (int j = 0; j < B; ++j) {
      const V lk = *reinterpret_cast<const V*>(s + offk[j] + c);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if (e % 2 == 0)
          sum_a[j] = fma(-W::get(mine, e), W::get(lk, e), sum_a[j]);
        else
          sum_b[j] = fma(-W::get(mine, e), W::get(lk, e), sum_b[j]);
      }
    }
  }
}

// Every calling lane factors the panel's B x B diagonal block from dbuf (rows as formed, only
// the lower triangle read) into ld, with the inverse pivots in rinv: the same arithmetic in
// each lane, so the same result and the same failing column (fail = k0 + j + 1, kept if set);
// a unit pivot past a failure. ld[j][j] stays the raw pivot.
template <int B, class T>
__device__ __forceinline__ void staged_block_factor(const T* const dbuf, const int k0,
                                                    T (&ld)[B][B], T (&rinv)[B], int& fail) {
#pragma unroll
  for (int a = 0; a < B; ++a)
#pragma unroll
    for (int c = 0; c <= a; ++c) ld[a][c] = dbuf[a * B + c];
#pragma unroll
  for (int j = 0; j < B; ++j) {
    const T d = ld[j][j];
    const bool ok = kolesky::impl::usable_pivot(d);
    if (!ok && fail == 0) fail = k0 + j + 1;
    rinv[j] = ok ? kolesky::impl::rsqrt(d) : T(1);
#pragma unroll
    for (int a = j + 1; a < B; ++a) ld[a][j] *= rinv[j];
#pragma unroll
    for (int a = j + 1; a < B; ++a)
#pragma unroll
      for (int c = j + 1; c <= a; ++c) ld[a][c] -= ld[a][j] * ld[c][j];
  }
}

// Row r against the factored diagonal block: acc becomes L(r, k0 + j), j <= r - k0, stored into
// the row's packed entries `out` (Precise: the raw pivot on the diagonal, its sqrt taken later).
template <bool Precise, int B, class T>
__device__ __forceinline__ void staged_row_solve(T (&acc)[B], const T (&ld)[B][B],
                                                 const T (&rinv)[B], const int k0, const int r,
                                                 T* const out) {
#pragma unroll
  for (int j = 0; j < B; ++j) {
#pragma unroll
    for (int c = 0; c < j; ++c) acc[j] -= acc[c] * ld[j][c];
    acc[j] = Precise && k0 + j == r ? ld[j][j] : acc[j] * rinv[j];
  }
#pragma unroll
  for (int j = 0; j < B; ++j)
    if (k0 + j <= r) out[k0 + j] = acc[j];
}
#endif

template <int N, bool Exact, class T, class Source, class Info, bool Precise = false>
__global__ void __launch_bounds__(N, 1)
    block_staged_kernel(const Source src, const int max_n, const bool lower, const Info info) {
#if defined(__CUDA_ARCH__)
  using P = WarpPacked<T>;
  constexpr int B = kStagedPanel, E = P::E, NW = N / 32;
  extern __shared__ __align__(16) unsigned char kolesky_block_staged_smem[];
  T* const s = reinterpret_cast<T*>(kolesky_block_staged_smem);
  T* const dbuf = s + P::off(Exact ? N : max_n);  // the panel's B x B diagonal block
  const int lane = int(threadIdx.x), w = int(threadIdx.y), tid = 32 * w + lane;
  const int b = src.id(int(blockIdx.x));
  const int n = Exact ? N : src.order_of(b);
  const auto m0 = src.matrix_of(b);
  const auto m = lower ? m0 : m0.transposed();
  const bool by_column = m.rs == 1 && m.cs != 1;
  block_stage_in<NW>(s, m, n, by_column, w, lane);
  warp_copy_wait();
  __syncthreads();
  const int r = tid;  // this thread's row
  const bool live = r < n;
  const T* const row = s + P::off(live ? r : 0);
  int fail = 0;
  for (int k0 = 0; k0 < n; k0 += B) {
    T acc[B];
    const bool active = live && r >= k0;
    if (32 * w + 31 >= k0) {  // warps of finished rows only wait at the barriers
      if (active) {
        T acc2[B];  // a second chain per column, halving the dependent FMAs
#pragma unroll
        for (int j = 0; j < B; ++j) {
          acc[j] = k0 + j < n ? row[k0 + j] : T(0);
          acc2[j] = T(0);
        }
        staged_dot<B, 1, E>(acc, acc2, row, s, k0, n, 0, k0, 0);
#pragma unroll
        for (int j = 0; j < B; ++j) acc[j] += acc2[j];
      }
      const int i = r - k0;  // the diagonal block's rows; past n an identity row
      if (i >= 0 && i < B && r < N) {
#pragma unroll
        for (int j = 0; j < B; ++j) dbuf[i * B + j] = live ? acc[j] : T(i == j ? 1 : 0);
      }
    }
    __syncthreads();
    if (32 * w + 31 >= k0) {
      T ld[B][B], rinv[B];  // every lane factors the diagonal block (no exchange per column)
      staged_block_factor(dbuf, k0, ld, rinv, fail);
      if (active) staged_row_solve<Precise>(acc, ld, rinv, k0, r, s + P::off(r));
    }
    __syncthreads();
  }
  if (Precise) {  // the raw pivots on the diagonal become their square roots
    if (live) {
      T& x = s[P::off(r) + r];
      if (kolesky::impl::usable_pivot(x)) x = kolesky::impl::sqrt(x);
    }
    __syncthreads();
  }
  block_stage_out<NW>(s, m, n, by_column, w, lane);
  if (tid == 32 * (NW - 1)) info(b) = fail;  // a lane of the last warp saw every panel
#else
  (void)src, (void)max_n, (void)lower, (void)info;
#endif
}

// Shared memory for the largest order in the batch, not N: more matrices per SM (n = 100 in
// double: 41 KB, five blocks, instead of 66 KB and three).
template <int N, bool Exact, class Source, class Info, bool Precise = false>
void launch_block_staged_on(const Kokkos::Cuda& exec, const Uplo uplo, const Source& src,
                            const int count, const int max_n, const Info& info) {
  using T = source_scalar_t<Source>;
  if (count <= 0) return;
  const std::size_t bytes =
      (std::size_t(WarpPacked<T>::off(Exact ? N : max_n)) + kStagedPanel * kStagedPanel) *
      sizeof(T);
  auto kernel = block_staged_kernel<N, Exact, T, Source, Info, Precise>;
  static std::atomic<unsigned long long> opted{0};  // above 48 KB: 66 KB at N = 128 in double
  opt_in_shared(opted, reinterpret_cast<const void*>(kernel), exec, bytes,
                "kolesky::batched::potrf: the WarpStaged kernel for n > 64");
  kernel<<<unsigned(count), dim3(32, N / 32), bytes, exec.cuda_stream()>>>(
      src, max_n, uplo == Uplo::Lower, info);
  check_launch("kolesky::batched::potrf: the WarpStaged kernel");
}

#if defined(__CUDA_ARCH__)
// d += a b on the FP64 tensor cores: one 8 x 8 x 4 product per warp. Lane l holds a = A(l / 4,
// l % 4), b = B(l % 4, l / 4) and d = D(l / 4, 2 (l % 4) + {0, 1}). sm_80 and later only
// (kSplitDmma); never called otherwise.
__device__ __forceinline__ void split_dmma(double (&d)[2], const double a, const double b) {
  kolesky::impl::dmma_8x8x4(d[0], d[1], a, b);
}
constexpr bool kSplitDmma = __CUDA_ARCH__ >= 800;
#endif

// split_staged_kernel's trace points per panel: its start; the panel's sums reduced (busy
// warps); the diagonal block factored and published (its warp); the look-ahead done; past the
// first barrier; the rows solved. The reads past a barrier (point 4, and point 0 after the
// first panel) are written but not used by the report: ptxas can issue them early.
constexpr int kSplitTracePoints = 6;

// Written for one matrix as fast as possible (the one-matrix potrf of issue 15, orders 17-256,
// S = 2-4); with S = 1 and Mma it is also the batched kernel for n = 65-128 (see
// launch_warp_staged). The block kernel's panels with S threads per row, so that a block of
// N * S threads (8-16 warps) hides the shared-memory and FMA latency that 4 warps leave
// exposed. A row's dot products are split over its S threads by 16-byte chunks and summed by
// shuffles; the panel's diagonal block is factored by the one warp that holds its rows
// (B * S <= 32), which publishes the factor for the other warps' solves. While it does, the
// other warps form their rows' sums for the next panel over the columns already finished
// (a look-ahead: only the last panel's B columns are left for after the barrier). Two block
// barriers per panel. Shared memory: the packed triangle of max_n (227 KB hold n = 239 in
// double, 256 in float on sm_90).
// trace (null but for `kolesky_perf_dense --trace`): lane 0 of every warp stamps clock64() at
// the kSplitTracePoints of every panel into trace[(panel * 32 + warp) * kSplitTracePoints + point].
// Mma (sm_80 and later): the dot products on the FP64 tensor cores instead, float operands
// widened to double (a warp's RW rows x the panel's 8 rows, 4 columns per DMMA; two 8-row
// fragments as one m16n8k4 where the warp has an even number of them, twice m8n8k4's rate on
// sm_90). The FFMA loop loads 9 16-byte chunks per 16 FMAs per thread and runs at the shared
// memory's rate, ~40 % of the FP64 rate at n = 239 with its FMAs queued beside the factor
// warp's (performance_log, issue 15 session 14).
template <int N, int S, class T, class Source, class Info, bool Precise = false, bool Mma = false,
          int MinBlocks = 1>
__global__ void __launch_bounds__(N * S, MinBlocks)
    split_staged_kernel(const Source src, const int max_n, const bool lower, const Info info,
                        long long* const trace) {
#if defined(__CUDA_ARCH__)
  using P = WarpPacked<T>;
  constexpr int B = kStagedPanel, E = P::E, NW = N * S / 32, RW = 32 / S;  // RW: rows per warp
  static_assert(32 % S == 0 && RW % B == 0 && N % RW == 0, "a panel's rows in one warp");
  // Float takes the tensor-core path too, its operands widened to double (sums in double).
  constexpr bool M = Mma && kSplitDmma;
  constexpr int F = RW / 8;  // M: the warp's 8-row fragments (S F = 4)
  extern __shared__ __align__(16) unsigned char kolesky_split_staged_smem[];
  T* const s = reinterpret_cast<T*>(kolesky_split_staged_smem);
  T* const dbuf = s + P::off(max_n);  // the panel's diagonal block, as the rows formed it
  T* const fbuf = dbuf + B * B;       // its factor (B x B) and the inverse pivots (B)
  int* const sfail = reinterpret_cast<int*>(fbuf + B * B + B);
  const int lane = int(threadIdx.x), w = int(threadIdx.y), tid = 32 * w + lane;
  const int b = src.id(int(blockIdx.x));
  const int n = src.order_of(b);
  const auto m0 = src.matrix_of(b);
  const auto m = lower ? m0 : m0.transposed();
  const bool by_column = m.rs == 1 && m.cs != 1;
  block_stage_in<NW>(s, m, n, by_column, w, lane);
  if (tid == 0) *sfail = 0;
  warp_copy_wait();
  __syncthreads();
  const int r = tid / S, part = tid % S;  // this thread's row, and its share of the row
  const bool live = r < n;
  const T* const row = s + P::off(live ? r : 0);
  // This thread's share of its row's sums for the coming panel, two chains per entry, summed
  // over the row's threads only once the panel's last B columns are in.
  T sum_a[B], sum_b[B];
#pragma unroll
  for (int j = 0; j < B; ++j) {
    sum_a[j] = !M && part == 0 && live && j <= r ? row[j] : T(0);
    sum_b[j] = T(0);
  }
  // M: lane (g, q) = (lane / 4, lane % 4) holds D(i, 2 q + e) of fragment f, i = F g + f the
  // warp's row (its lanes in the row layout above are 4 g .. 4 g + 3 too), as the negated
  // sums (the DMMA adds): -a(r, k + c) + L(r, 0:k0) L(k + c, 0:k0). One chain per fragment
  // (two spilled at 512 threads, 128 registers).
  const int g = lane >> 2, q = lane & 3;
  double cf[F][2];
  const auto mma_init = [&](const int k) {  // the rows' entries in the panel at column k
#pragma unroll
    for (int f = 0; f < F; ++f) {
      const int rf = RW * w + F * g + f;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = k + 2 * q + e;
        cf[f][e] = rf < n && c <= rf ? -double(s[P::off(rf) + c]) : 0.0;
      }
    }
  };
  // Rows past n, and columns past a row's end, read other entries (in the buffer) into sums
  // that are never used; nothing writes the buffer between the barriers these run between.
  const auto mma_dot = [&](const int k, const int c0, const int c1) {  // columns [c0, c1)
    int oa[F];  // 32-bit offsets into s: registers are short at 512 threads
#pragma unroll
    for (int f = 0; f < F; ++f) {
      const int rf = RW * w + F * g + f;
      oa[f] = P::off(rf < n ? rf : 0) + q;
    }
    const int ob = P::off(k + g < n ? k + g : 0) + q;
#pragma unroll 2
    for (int c = c0; c < c1; c += 4) {
      const T bv = s[ob + c];
      if constexpr (M && F % 2 == 0) {  // fragments f, f + 1 as one 16-row DMMA (see above)
#pragma unroll
        for (int f = 0; f < F; f += 2)
          kolesky::impl::dmma_16x8x4(cf[f][0], cf[f][1], cf[f + 1][0], cf[f + 1][1],
                                     double(s[oa[f] + c]), double(s[oa[f + 1] + c]), double(bv));
      } else {
#pragma unroll
        for (int f = 0; f < F; ++f) split_dmma(cf[f], double(s[oa[f] + c]), double(bv));
      }
    }
  };
  const auto mma_gather = [&](T (&acc)[B]) {  // the row's B sums into each of its lanes
    const int fr = q / S;  // this lane's row is fragment fr's
#pragma unroll
    for (int c = 0; c < B; ++c) {  // column c from lane (g, c / 2): no index into an array
      T v = T(0);
#pragma unroll
      for (int f = 0; f < F; ++f) {
        const T x = __shfl_sync(0xffffffffu, T(cf[f][c & 1]), (lane & ~3) | (c >> 1));
        v = f == fr ? x : v;
      }
      acc[c] = -v;
    }
  };
  if (M) mma_init(0);
  // The trace's clock reads around a barrier share one asm statement with it; the read after
  // it can still come out before other warps' arrivals (ptxas moves it), so the report
  // (kolesky_perf_dense --trace) uses the reads before the barriers only.
  const auto at = [&](const int k0, const int point) -> long long& {
    return trace[((k0 / B) * 32 + w) * kSplitTracePoints + point];
  };
  const auto stamp = [&](const int k0, const int point) {
    if (trace == nullptr) return;
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
    if (lane == 0) at(k0, point) = c;
  };
  const auto barrier = [&](const int k0, const int before, const int after) {
    if (trace == nullptr) return __syncthreads();
    long long c0, c1;
    asm volatile("mov.u64 %0, %%clock64;\n\tbar.sync 0;\n\tmov.u64 %1, %%clock64;"
                 : "=l"(c0), "=l"(c1)::"memory");
    if (lane == 0) {
      at(k0, before) = c0;
      if (k0 + (after == 0 ? B : 0) < n) at(k0 + (after == 0 ? B : 0), after) = c1;
    }
  };
  stamp(0, 0);
  for (int k0 = 0; k0 < n; k0 += B) {
    const bool active = live && r >= k0;
    const bool busy = RW * w + RW - 1 >= k0;  // the warp has rows left (uniform over it)
    T acc[B];
    if (busy) {
      // The previous panel's columns [k0 - B, k0), finished at the last barrier.
      if (M) {
        mma_dot(k0, k0 > 0 ? k0 - B : k0, k0);
        mma_gather(acc);
      } else {
        staged_dot<B, S, E>(sum_a, sum_b, row, s, k0, n, active && k0 > 0 ? k0 - B : k0, k0,
                            part);
#pragma unroll
        for (int j = 0; j < B; ++j) {
          acc[j] = sum_a[j] + sum_b[j];
#pragma unroll
          for (int o = S / 2; o > 0; o /= 2) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
        }
      }
      const int i = r - k0;  // the diagonal block's rows (in warp k0 / RW); past n an identity row
      if (part == 0 && i >= 0 && i < B) {
#pragma unroll
        for (int j = 0; j < B; ++j) dbuf[i * B + j] = live ? acc[j] : T(i == j ? 1 : 0);
      }
      stamp(k0, 1);
      if (w == k0 / RW) {
        __syncwarp();
        T ld[B][B], rinv[B];
        int fail = 0;
        staged_block_factor(dbuf, k0, ld, rinv, fail);
        if (lane == 0) {  // every lane holds the same factor
#pragma unroll
          for (int a = 0; a < B; ++a) {
            fbuf[B * B + a] = rinv[a];
#pragma unroll
            for (int c = 0; c <= a; ++c) fbuf[a * B + c] = ld[a][c];
          }
          if (fail != 0 && *sfail == 0) *sfail = fail;
        }
        stamp(k0, 2);
      }
      // Look-ahead: the next panel's sums over the finished columns [0, k0), while the
      // diagonal block is factored.
      const int k1 = k0 + B;
      if (M) {
        if (RW * w + RW - 1 >= k1 && k1 < n) {  // the warp has rows in the next panel
          mma_init(k1);
          mma_dot(k1, 0, k0);
        }
      } else {
        const bool next = live && r >= k1;
#pragma unroll
        for (int j = 0; j < B; ++j) {
          sum_a[j] = part == 0 && next && k1 + j <= r ? row[k1 + j] : T(0);
          sum_b[j] = T(0);
        }
        staged_dot<B, S, E>(sum_a, sum_b, row, s, k1, n, 0, next ? k0 : 0, part);
      }
    }
    barrier(k0, 3, 4);
    if (busy && active && part == 0) {  // the published factor, then this row against it
      T ld[B][B], rinv[B];
#pragma unroll
      for (int a = 0; a < B; ++a) {
        rinv[a] = fbuf[B * B + a];
#pragma unroll
        for (int c = 0; c <= a; ++c) ld[a][c] = fbuf[a * B + c];
      }
      staged_row_solve<Precise>(acc, ld, rinv, k0, r, s + P::off(r));
    }
    barrier(k0, 5, 0);  // the next panel starts
  }
  if (Precise) {  // the raw pivots on the diagonal become their square roots
    if (live && part == 0) {
      T& x = s[P::off(r) + r];
      if (kolesky::impl::usable_pivot(x)) x = kolesky::impl::sqrt(x);
    }
    __syncthreads();
  }
  block_stage_out<NW>(s, m, n, by_column, w, lane);
  if (tid == 0) info(b) = *sfail;
#else
  (void)src, (void)max_n, (void)lower, (void)info, (void)trace;
#endif
}

// Blocks per SM the batched split kernel's registers must allow (one thread per row, N rows).
// The kernel is latency-bound, so matrices in flight set its rate: float asks for 7 at N = 96
// (ptxas: 80 registers, a 24-byte spill, so 8 fit against 6 uncapped) and 5 at N = 128 (93
// registers, no spill, against 4), 9-17 % faster on the H100; double (160 registers) spills
// 104-112 bytes at 128 and is 1-16 % slower, so it stays uncapped (docs/performance_log.md,
// issue 16, tenth session).
template <class T, int N>
constexpr int split_staged_min_blocks() {
  return std::is_same<T, float>::value ? (N <= 96 ? 7 : 5) : 1;
}

// Dynamic shared memory of split_staged_kernel for orders up to max_n.
template <class T>
constexpr std::size_t split_staged_bytes(const int max_n) {
  return (std::size_t(WarpPacked<T>::off(max_n)) + 2 * kStagedPanel * kStagedPanel +
          kStagedPanel) * sizeof(T) + sizeof(int);
}

template <int N, int S, bool Mma, class Source, class Info, bool Precise, int MinBlocks>
void launch_split_staged_kernel(const Kokkos::Cuda& exec, const Uplo uplo, const Source& src,
                                const int count, const int max_n, const Info& info,
                                long long* const trace) {
  using T = source_scalar_t<Source>;
  const std::size_t bytes = split_staged_bytes<T>(max_n);
  auto kernel = split_staged_kernel<N, S, T, Source, Info, Precise, Mma, MinBlocks>;
  static std::atomic<unsigned long long> opted{0};  // per kernel: the devices it is set on
  opt_in_shared(opted, reinterpret_cast<const void*>(kernel), exec, bytes,
                "kolesky::potrf: the split staged kernel");
  kernel<<<unsigned(count), dim3(32, N * S / 32), bytes, exec.cuda_stream()>>>(
      src, max_n, uplo == Uplo::Lower, info, trace);
  check_launch("kolesky::potrf: the staged kernel");
}

// mma: the dot products on the FP64 tensor cores (sm_80 and later; ignored otherwise).
// MinBlocks: blocks per SM the registers must allow (__launch_bounds__; 1 leaves ptxas free).
template <int N, int S, class Source, class Info, bool Precise = false, int MinBlocks = 1>
void launch_split_staged_on(const Kokkos::Cuda& exec, const Uplo uplo, const Source& src,
                            const int count, const int max_n, const Info& info,
                            long long* const trace = nullptr, const bool mma = true) {
  if (count <= 0) return;
  if (mma && exec.cuda_device_prop().major >= 8)
    return launch_split_staged_kernel<N, S, true, Source, Info, Precise, MinBlocks>(
        exec, uplo, src, count, max_n, info, trace);
  launch_split_staged_kernel<N, S, false, Source, Info, Precise, MinBlocks>(exec, uplo, src, count,
                                                                            max_n, info, trace);
}

// `count` matrices from `src` (orders up to N <= kMaxWarpStagedN), on exec's stream. A plain
// CUDA launch: the kernel is CUDA-only code, and the instance's stream keeps the ordering a
// Kokkos launch would have.
template <int N, bool Exact, class Source, class Info, bool Precise = false>
void launch_warp_staged_on(const Kokkos::Cuda& exec, const Uplo uplo, const Source& src,
                           const int count, const Info& info) {
  using T = source_scalar_t<Source>;
  static_assert(N <= 64, "at most two rows per lane");
  constexpr int kWarps = 2;  // per block: few, so that a block's warps need not end together
  if (count <= 0) return;
  const std::size_t bytes = std::size_t(kWarps) * WarpPacked<T>::off(N) * sizeof(T);
  const unsigned blocks = unsigned((count + kWarps - 1) / kWarps);
  warp_staged_kernel<N, Exact, warp_staged_min_blocks<T, N>(), T, Source, Info, Precise>
      <<<blocks, dim3(32, kWarps), bytes, exec.cuda_stream()>>>(src, count, uplo == Uplo::Lower,
                                                                 info);
  check_launch("kolesky::batched::potrf: the WarpStaged kernel");
}

// Compiled orders. A batch of one order among 20, 24, 32, 40, 48, 64 gets a kernel with n a
// constant (no bound checks, fewer registers, the 16-byte path); any other order, or a batch
// of mixed orders (`uniform` false), the next bound's kernel, whose loops stop at n.
template <class Source, class Info>
void launch_warp_staged(const Kokkos::Cuda& exec, const Uplo uplo, const Source& src, const int count,
                        const int max_n, const Info& info, const bool uniform) {
  if (uniform) {
    switch (max_n) {
      case 20: return launch_warp_staged_on<20, true>(exec, uplo, src, count, info);
      case 24: return launch_warp_staged_on<24, true>(exec, uplo, src, count, info);
      case 32: return launch_warp_staged_on<32, true>(exec, uplo, src, count, info);
      case 40: return launch_warp_staged_on<40, true>(exec, uplo, src, count, info);
      case 48: return launch_warp_staged_on<48, true>(exec, uplo, src, count, info);
      case 64: return launch_warp_staged_on<64, true>(exec, uplo, src, count, info);
      default: break;
    }
  }
  if (max_n > 64) {
    // On the FP64 tensor cores (sm_80 and later; float widened to double): the split kernel
    // with a thread per row, its dot products by DMMA (m16n8k4 on sm_90) and the next panel's
    // sums formed while the diagonal block is factored. On the H100, in double 10-26 % faster
    // than the block kernel with m8n8k4 and 5-11 % more with the m16n8k4 pairs, in float 5-12 %
    // faster than the block kernel at n = 65-128 (and 9-17 % more with more blocks per SM,
    // split_staged_min_blocks). Double's uniform n = 96 keeps the block kernel, whose exact
    // kernel is as fast (1.302 / 1.306 ms at batch 16384); float's is faster on the split
    // kernel (0.818 against 0.937). docs/performance_log.md, issue 16.
    using T = source_scalar_t<Source>;
    const bool block96 = uniform && max_n == 96 && std::is_same<T, double>::value;
    if (!block96 && exec.cuda_device_prop().major >= 8) {
      constexpr int kBlocks96 = split_staged_min_blocks<T, 96>();
      constexpr int kBlocks128 = split_staged_min_blocks<T, 128>();
      if (max_n <= 96)
        return launch_split_staged_on<96, 1, Source, Info, false, kBlocks96>(
            exec, uplo, src, count, max_n, info, nullptr, true);
      return launch_split_staged_on<128, 1, Source, Info, false, kBlocks128>(
          exec, uplo, src, count, max_n, info, nullptr, true);
    }
    if (uniform && max_n == 96)
      return launch_block_staged_on<96, true>(exec, uplo, src, count, max_n, info);
    if (uniform && max_n == 128)
      return launch_block_staged_on<128, true>(exec, uplo, src, count, max_n, info);
    if (max_n <= 96) return launch_block_staged_on<96, false>(exec, uplo, src, count, max_n, info);
    return launch_block_staged_on<128, false>(exec, uplo, src, count, max_n, info);
  }
  if (max_n <= 24)
    launch_warp_staged_on<24, false>(exec, uplo, src, count, info);
  else if (max_n <= 32)
    launch_warp_staged_on<32, false>(exec, uplo, src, count, info);
  else if (max_n <= 40)
    launch_warp_staged_on<40, false>(exec, uplo, src, count, info);
  else if (max_n <= 48)
    launch_warp_staged_on<48, false>(exec, uplo, src, count, info);
  else
    launch_warp_staged_on<64, false>(exec, uplo, src, count, info);
}

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace impl
}  // namespace batched
}  // namespace kolesky
