// b16: standalone experiment for a batched small-n Cholesky (potrf, lower, row-major 'strided').
// Each matrix: n x n row-major, contiguous, matrices back to back. Factor the lower triangle in
// place (A = L L^T, j <= i entries replaced by L), leave the strict upper triangle untouched,
// info per matrix: 0 ok, k > 0 first non-positive / NaN pivot (1-based).
//
// Designs (all: one warp per matrix, lane owns row 'lane' (+32 for n > 32), left-looking /
// Crout ordering with the L row in registers, row k of L broadcast from shared memory):
//   copy   : cudaMemcpyAsync D2D of the whole batch (roofline)
//   stage  : non-persistent grid, lower-triangle 16-byte chunks loaded with LDG.128 (coalesced)
//            into a packed lower-triangle shared buffer, factor, coalesced STG.128 of lower chunks
//   stageA : same, but the load is cp.async.cg 16 B (no register staging)
//   pipeA  : persistent grid, 2 shared buffers per warp, cp.async prefetch of the next matrix
//   pipeT  : persistent grid, 2 buffers per warp, Hopper bulk copies (cp.async.bulk, one per row,
//            issued by the owning lane) on an mbarrier; result stored by bulk copies per row
//   right  : (d) right-looking variant (trailing rows in registers, column k broadcast through
//            shared memory), staged like 'stage' -- for register/instruction comparison
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <algorithm>
#include <string>
#include <random>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

template <typename T> struct Vec;
template <> struct Vec<float> { using type = float4; static constexpr int E = 4; };
template <> struct Vec<double> { using type = double2; static constexpr int E = 2; };

template <typename T> __device__ __forceinline__ T vget(const typename Vec<T>::type& v, int e);
template <> __device__ __forceinline__ float vget<float>(const float4& v, int e) {
  return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; }
template <> __device__ __forceinline__ double vget<double>(const double2& v, int e) {
  return e == 0 ? v.x : v.y; }

__device__ __forceinline__ float my_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double my_rsqrt(double x) { return rsqrt(x); }

// Packed lower-triangle layout in 16-byte chunks: row r holds chunks 0..r/E (covers cols 0..r).
template <typename T, int N>
struct Tri {
  static constexpr int E = Vec<T>::E;
  static constexpr int NB = (N + 31) / 32;   // row blocks per lane
  static constexpr int CPR = N / E;          // chunks per full row
  static constexpr int NCH = N * CPR;        // chunks per full matrix
  static_assert(N % E == 0, "N must be a multiple of the vector width");
  __host__ __device__ static constexpr int off(int r) {  // chunk offset of row r
    return r + E * ((r / E) * (r / E - 1) / 2) + (r % E) * (r / E);
  }
  static constexpr int TOT = off(N);          // chunks in the packed buffer
  static constexpr int BUFB = TOT * 16;       // bytes of one packed buffer
  static constexpr int LOWB = BUFB;           // lower-triangle bytes moved per direction
};

// ----------------------------------------------------------------------------------------------
// The factorization of one matrix held in a packed shared buffer S (as T*), by one warp.
// Left-looking: at step k every lane forms v = A[r][k] - sum_{p<k} L[r][p] L[k][p]
// (row k of L read from shared memory, broadcast), the pivot v of lane k is shuffled to all,
// L[r][k] = v * rsqrt(pivot) is kept in registers and written to S.
template <typename T, int N>
__device__ __forceinline__ int factor_left(T* S, int lane) {
  using C = Tri<T, N>;
  using V = typename Vec<T>::type;
  constexpr int E = C::E, NB = C::NB;
  T L[NB][N];
  V Ach[NB];
  int rowoff[NB];
  bool valid[NB];
#pragma unroll
  for (int b = 0; b < NB; ++b) {
    int r = 32 * b + lane;
    valid[b] = r < N;
    r = r < N ? r : N - 1;
    rowoff[b] = C::off(r) * E;
  }
  int info = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    if (k % E == 0) {
#pragma unroll
      for (int b = 0; b < NB; ++b)
        if (32 * b + 31 >= k) Ach[b] = *reinterpret_cast<const V*>(S + rowoff[b] + k);
    }
    T v[NB];
    constexpr int NA = 4;
    T acc[NB][NA];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      v[b] = vget<T>(Ach[b], k % E);
#pragma unroll
      for (int a = 0; a < NA; ++a) acc[b][a] = T(0);
    }
    const T* Lk = S + C::off(k) * E;
#pragma unroll
    for (int c = 0; c * E < k; ++c) {
      V w = *reinterpret_cast<const V*>(Lk + c * E);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int p = c * E + e;
        if (p < k) {
#pragma unroll
          for (int b = 0; b < NB; ++b)
            if (32 * b + 31 >= k) acc[b][p % NA] = fma(L[b][p], vget<T>(w, e), acc[b][p % NA]);
        }
      }
    }
#pragma unroll
    for (int b = 0; b < NB; ++b)
      if (32 * b + 31 >= k) v[b] -= (acc[b][0] + acc[b][1]) + (acc[b][2] + acc[b][3]);
    const T akk = __shfl_sync(0xffffffffu, v[k / 32], k % 32);
    if (!(akk > T(0)) && info == 0) info = k + 1;
    const T inv = my_rsqrt(akk);
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      if (32 * b + 31 >= k) {
        L[b][k] = v[b] * inv;
        if (valid[b] && 32 * b + lane >= k) S[rowoff[b] + k] = L[b][k];
      }
    }
    __syncwarp();
  }
  return info;
}

// (d) right-looking: lane keeps row r (cols 0..lim of its block) as the trailing matrix;
// at step k column k (raw values a[.][k]) goes through a small shared column buffer.
template <typename T, int N>
__device__ __forceinline__ int factor_right(T* S, T* colbuf /* 2 * 32*NB */, int lane) {
  using C = Tri<T, N>;
  using V = typename Vec<T>::type;
  constexpr int E = C::E, NB = C::NB;
  constexpr int CB = 32 * NB;
  T a[NB][N];
  int rowoff[NB];
  bool valid[NB];
#pragma unroll
  for (int b = 0; b < NB; ++b) {
    int r = 32 * b + lane;
    valid[b] = r < N;
    r = r < N ? r : N - 1;
    rowoff[b] = C::off(r) * E;
    constexpr int dummy = 0; (void)dummy;
#pragma unroll
    for (int c = 0; c < C::CPR; ++c) {
      if (c * E <= (32 * b + 31 < N - 1 ? 32 * b + 31 : N - 1)) {
        V w = *reinterpret_cast<const V*>(S + rowoff[b] + c * E);  // may read past the row: in buffer
#pragma unroll
        for (int e = 0; e < E; ++e) a[b][c * E + e] = vget<T>(w, e);
      }
    }
  }
  int info = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    T* cb = colbuf + (k & 1) * CB;
#pragma unroll
    for (int b = 0; b < NB; ++b)
      if (32 * b + 31 >= k) cb[32 * b + lane] = a[b][k];
    __syncwarp();
    const T akk = cb[k];
    if (!(akk > T(0)) && info == 0) info = k + 1;
    const T inv = my_rsqrt(akk);
    T s[NB];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      if (32 * b + 31 >= k) {
        a[b][k] = a[b][k] * inv;
        s[b] = a[b][k] * inv;
        if (valid[b] && 32 * b + lane >= k) S[rowoff[b] + k] = a[b][k];
      }
    }
#pragma unroll
    for (int c = (k + 1) / E; c * E < N; ++c) {
      if (c * E <= N - 1) {
        V w = *reinterpret_cast<const V*>(cb + c * E);
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const int j = c * E + e;
          if (j > k && j < N) {
#pragma unroll
            for (int b = 0; b < NB; ++b) {
              constexpr int dummy2 = 0; (void)dummy2;
              const int lim = 32 * b + 31 < N - 1 ? 32 * b + 31 : N - 1;
              if (32 * b + 31 >= k && j <= lim) a[b][j] = fma(-s[b], vget<T>(w, e), a[b][j]);
            }
          }
        }
      }
    }
  }
  return info;
}

// ---------------------------------- global <-> packed shared ----------------------------------
template <typename T, int N>
__device__ __forceinline__ void load_ldg(T* S, const T* __restrict__ g, int lane) {
  using C = Tri<T, N>;
  using V = typename Vec<T>::type;
  constexpr int IT = (C::NCH + 31) / 32;
  constexpr int BATCH = 8;
  const V* gv = reinterpret_cast<const V*>(g);
  V* sv = reinterpret_cast<V*>(S);
#pragma unroll
  for (int t0 = 0; t0 < IT; t0 += BATCH) {
    V x[BATCH];
    int d[BATCH];
#pragma unroll
    for (int u = 0; u < BATCH; ++u) {
      d[u] = -1;
      const int q = (t0 + u) * 32 + lane;
      if (t0 + u < IT && q < C::NCH) {
        const int row = q / C::CPR, c = q - row * C::CPR;
        if (c * C::E <= row) { d[u] = C::off(row) + c; x[u] = __ldg(gv + q); }
      }
    }
#pragma unroll
    for (int u = 0; u < BATCH; ++u) if (d[u] >= 0) sv[d[u]] = x[u];
  }
}

template <typename T, int N>
__device__ __forceinline__ void store_stg(const T* S, T* __restrict__ g, int lane) {
  using C = Tri<T, N>;
  using V = typename Vec<T>::type;
  constexpr int IT = (C::NCH + 31) / 32;
  V* gv = reinterpret_cast<V*>(g);
  const V* sv = reinterpret_cast<const V*>(S);
#pragma unroll 8
  for (int t = 0; t < IT; ++t) {
    const int q = t * 32 + lane;
    if (q < C::NCH) {
      const int row = q / C::CPR, c = q - row * C::CPR;
      if (c * C::E <= row) gv[q] = sv[C::off(row) + c];
    }
  }
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

template <typename T, int N>
__device__ __forceinline__ void load_cpasync(T* S, const T* g, int lane) {
  using C = Tri<T, N>;
  constexpr int IT = (C::NCH + 31) / 32;
  const uint32_t s0 = smem_u32(S);
  const char* gb = reinterpret_cast<const char*>(g);
#pragma unroll 8
  for (int t = 0; t < IT; ++t) {
    const int q = t * 32 + lane;
    if (q < C::NCH) {
      const int row = q / C::CPR, c = q - row * C::CPR;
      if (c * C::E <= row) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s0 + 16u * (C::off(row) + c)),
                     "l"(gb + 16 * q) : "memory");
      }
    }
  }
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int K> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(K) : "memory"); }

// ---------------------------------------- kernels ---------------------------------------------
template <typename T, int N, int WPB, bool ASYNC>
__device__ __forceinline__ void stage_body(T* __restrict__ A, int* __restrict__ info, int B) {
  using C = Tri<T, N>;
  extern __shared__ __align__(16) unsigned char smraw[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int m = blockIdx.x * WPB + w;
  if (m >= B) return;
  T* S = reinterpret_cast<T*>(smraw + w * C::BUFB);
  T* g = A + (size_t)m * N * N;
  if (ASYNC) { load_cpasync<T, N>(S, g, lane); cp_commit(); cp_wait<0>(); }
  else load_ldg<T, N>(S, g, lane);
  __syncwarp();
  const int inf = factor_left<T, N>(S, lane);
  __syncwarp();
  store_stg<T, N>(S, g, lane);
  if (lane == 0) info[m] = inf;
}
template <typename T, int N, int WPB, bool ASYNC>
__global__ void __launch_bounds__(32 * WPB) k_stage(T* __restrict__ A, int* __restrict__ info, int B) {
  stage_body<T, N, WPB, ASYNC>(A, info, B);
}
template <typename T, int N, int WPB, bool ASYNC, int MINB>
__global__ void __launch_bounds__(32 * WPB, MINB) k_stageM(T* __restrict__ A, int* __restrict__ info, int B) {
  stage_body<T, N, WPB, ASYNC>(A, info, B);
}

template <typename T, int N, int WPB>
__global__ void __launch_bounds__(32 * WPB) k_right(T* __restrict__ A, int* __restrict__ info, int B) {
  using C = Tri<T, N>;
  constexpr int PER = C::BUFB + 2 * 32 * C::NB * (int)sizeof(T);
  extern __shared__ __align__(16) unsigned char smraw[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int m = blockIdx.x * WPB + w;
  if (m >= B) return;
  T* S = reinterpret_cast<T*>(smraw + w * PER);
  T* cb = reinterpret_cast<T*>(smraw + w * PER + C::BUFB);
  T* g = A + (size_t)m * N * N;
  load_ldg<T, N>(S, g, lane);
  __syncwarp();
  const int inf = factor_right<T, N>(S, cb, lane);
  __syncwarp();
  store_stg<T, N>(S, g, lane);
  if (lane == 0) info[m] = inf;
}

// persistent, double buffered, cp.async prefetch
template <typename T, int N, int WPB>
__global__ void __launch_bounds__(32 * WPB) k_pipeA(T* __restrict__ A, int* __restrict__ info, int B) {
  using C = Tri<T, N>;
  extern __shared__ __align__(16) unsigned char smraw[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  unsigned char* wb = smraw + (2 * w) * C::BUFB;
  const int stride = gridDim.x * WPB;
  int m = blockIdx.x * WPB + w;
  if (m >= B) return;
  load_cpasync<T, N>(reinterpret_cast<T*>(wb), A + (size_t)m * N * N, lane);
  cp_commit();
  for (int it = 0; m < B; ++it, m += stride) {
    const int cur = it & 1;
    const int nx = m + stride;
    T* Sc = reinterpret_cast<T*>(wb + cur * C::BUFB);
    T* Sn = reinterpret_cast<T*>(wb + (cur ^ 1) * C::BUFB);
    if (nx < B) load_cpasync<T, N>(Sn, A + (size_t)nx * N * N, lane);
    cp_commit();
    cp_wait<1>();
    __syncwarp();
    const int inf = factor_left<T, N>(Sc, lane);
    __syncwarp();
    store_stg<T, N>(Sc, A + (size_t)m * N * N, lane);
    if (lane == 0) info[m] = inf;
    __syncwarp();
  }
  cp_wait<0>();
}

// persistent, double buffered, Hopper bulk copies per row on an mbarrier
__device__ __forceinline__ void mbar_init(uint32_t a, uint32_t cnt) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(a), "r"(cnt) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t a, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(a), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t a, uint32_t phase) {
  uint32_t done;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(a), "r"(phase) : "memory");
  } while (!done);
}
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t mbar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(mbar) : "memory");
}
__device__ __forceinline__ void bulk_s2g(void* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
               ::"l"(__cvta_generic_to_global(dst)), "r"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

template <typename T, int N>
__device__ __forceinline__ void tma_load_rows(T* S, const T* g, uint32_t mbar, int lane) {
  using C = Tri<T, N>;
  if (lane == 0) mbar_expect(mbar, C::BUFB);
  __syncwarp();
  const uint32_t s0 = smem_u32(S);
#pragma unroll
  for (int b = 0; b < C::NB; ++b) {
    const int r = 32 * b + lane;
    if (r < N) bulk_g2s(s0 + 16u * C::off(r), g + (size_t)r * N, 16u * (r / C::E + 1), mbar);
  }
}
template <typename T, int N>
__device__ __forceinline__ void tma_store_rows(const T* S, T* g, int lane) {
  using C = Tri<T, N>;
  const uint32_t s0 = smem_u32(S);
#pragma unroll
  for (int b = 0; b < C::NB; ++b) {
    const int r = 32 * b + lane;
    if (r < N) bulk_s2g(g + (size_t)r * N, s0 + 16u * C::off(r), 16u * (r / C::E + 1));
  }
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

template <typename T, int N, int WPB>
__global__ void __launch_bounds__(32 * WPB) k_pipeT(T* __restrict__ A, int* __restrict__ info, int B) {
  using C = Tri<T, N>;
  extern __shared__ __align__(16) unsigned char smraw[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smraw);  // 2 per warp, first 16*WPB bytes (pad to 128)
  unsigned char* base = smraw + 128;
  unsigned char* wb = base + (2 * w) * C::BUFB;
  const uint32_t mb0 = smem_u32(bars + 2 * w);
  if (lane == 0) {
    mbar_init(mb0, 1);
    mbar_init(mb0 + 8, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncwarp();
  const int stride = gridDim.x * WPB;
  int m = blockIdx.x * WPB + w;
  if (m >= B) return;
  uint32_t phbits = 0u;  // bit b: parity of buffer b
  tma_load_rows<T, N>(reinterpret_cast<T*>(wb), A + (size_t)m * N * N, mb0, lane);
  for (int it = 0; m < B; ++it, m += stride) {
    const int cur = it & 1;
    const int nx = m + stride;
    T* Sc = reinterpret_cast<T*>(wb + cur * C::BUFB);
    T* Sn = reinterpret_cast<T*>(wb + (cur ^ 1) * C::BUFB);
    if (nx < B) {
      asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");  // previous store has left Sn
      __syncwarp();
      tma_load_rows<T, N>(Sn, A + (size_t)nx * N * N, mb0 + 8u * (cur ^ 1), lane);
    }
    mbar_wait(mb0 + 8u * cur, (phbits >> cur) & 1u);
    phbits ^= 1u << cur;
    const int inf = factor_left<T, N>(Sc, lane);
    fence_async_smem();
    __syncwarp();
    tma_store_rows<T, N>(Sc, A + (size_t)m * N * N, lane);
    if (lane == 0) info[m] = inf;
  }
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// ---------------------------------------- host ------------------------------------------------
static void gen_spd(int n, std::mt19937_64& rng, std::vector<double>& A) {
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  std::vector<double> M(n * n);
  for (auto& x : M) x = U(rng);
  A.assign(n * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int p = 0; p < n; ++p) s += M[i * n + p] * M[j * n + p];
      s /= n;
      if (i == j) s += 1.0;
      A[i * n + j] = s;
      A[j * n + i] = s;
    }
}
// naive left-looking Cholesky in double on the lower triangle (row-major); returns info
static int ref_chol(int n, std::vector<double>& a) {
  for (int j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int p = 0; p < j; ++p) d -= a[j * n + p] * a[j * n + p];
    if (!(d > 0.0)) return j + 1;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (int p = 0; p < j; ++p) s -= a[i * n + p] * a[j * n + p];
      a[i * n + j] = s / d;
    }
  }
  return 0;
}

struct KInfo { int regs = 0; int local = 0; int smem_per_warp = 0; int warps_per_sm = 0; };

template <typename T, int N> struct Design {
  std::string name;
  void (*launch)(T*, int*, int, cudaStream_t);
  KInfo ki;
};

static int g_sms = 0;

template <typename K>
static KInfo setup(K kern, int threads, size_t smem, int wpb, int smem_per_warp) {
  if (smem > 48 * 1024) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, kern));
  int nb = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kern, threads, smem));
  KInfo ki;
  ki.regs = fa.numRegs; ki.local = (int)fa.localSizeBytes; ki.smem_per_warp = smem_per_warp; ki.warps_per_sm = nb * wpb;
  return ki;
}

template <typename T, int N> struct Launchers {
  using C = Tri<T, N>;
  static constexpr int WS = 2;  // warps per block, non-persistent
  static constexpr int WP = 2;  // warps per block, persistent
  static int grid_pipeA, grid_pipeT;
  static void stage(T* A, int* info, int B, cudaStream_t s) {
    k_stage<T, N, WS, false><<<(B + WS - 1) / WS, 32 * WS, WS * C::BUFB, s>>>(A, info, B); }
  static void stageA(T* A, int* info, int B, cudaStream_t s) {
    k_stage<T, N, WS, true><<<(B + WS - 1) / WS, 32 * WS, WS * C::BUFB, s>>>(A, info, B); }
  static void stageA6(T* A, int* info, int B, cudaStream_t s) {
    k_stageM<T, N, WS, true, 6><<<(B + WS - 1) / WS, 32 * WS, WS * C::BUFB, s>>>(A, info, B); }
  static void stageA8(T* A, int* info, int B, cudaStream_t s) {
    k_stageM<T, N, WS, true, 8><<<(B + WS - 1) / WS, 32 * WS, WS * C::BUFB, s>>>(A, info, B); }
  static constexpr int RPER = C::BUFB + 2 * 32 * C::NB * (int)sizeof(T);
  static void right(T* A, int* info, int B, cudaStream_t s) {
    k_right<T, N, WS><<<(B + WS - 1) / WS, 32 * WS, WS * RPER, s>>>(A, info, B); }
  static void pipeA(T* A, int* info, int B, cudaStream_t s) {
    k_pipeA<T, N, WP><<<grid_pipeA, 32 * WP, WP * 2 * C::BUFB, s>>>(A, info, B); }
  static void pipeT(T* A, int* info, int B, cudaStream_t s) {
    k_pipeT<T, N, WP><<<grid_pipeT, 32 * WP, 128 + WP * 2 * C::BUFB, s>>>(A, info, B); }
};
template <typename T, int N> int Launchers<T, N>::grid_pipeA = 0;
template <typename T, int N> int Launchers<T, N>::grid_pipeT = 0;

static void flush_l2(void* scratch, size_t bytes) { CK(cudaMemsetAsync(scratch, (int)(rand() & 0xff), bytes)); }

template <typename T, int N>
static void run_config(int B, void* scratch, size_t scratch_bytes, int reps) {
  using C = Tri<T, N>;
  using LN = Launchers<T, N>;
  const char* tn = sizeof(T) == 4 ? "float" : "double";
  const size_t NN = (size_t)N * N;
  const size_t bytes = (size_t)B * NN * sizeof(T);
  // distinct SPD matrices, tiled across the batch
  const int NBASE = 509;
  std::mt19937_64 rng(1234 + N * 7 + sizeof(T));
  std::vector<std::vector<double>> base(NBASE);
  for (int i = 0; i < NBASE; ++i) gen_spd(N, rng, base[i]);
  std::vector<T> hA(B * NN);
  for (int m = 0; m < B; ++m) {
    const auto& s = base[m % NBASE];
    for (size_t e = 0; e < NN; ++e) hA[m * NN + e] = (T)s[e];
  }
  // references (from T-rounded inputs)
  std::vector<std::vector<double>> refL(NBASE);
  for (int i = 0; i < NBASE; ++i) {
    refL[i].resize(NN);
    for (size_t e = 0; e < NN; ++e) refL[i][e] = (double)(T)base[i][e];
    if (ref_chol(N, refL[i]) != 0) { printf("reference failed?!\n"); exit(1); }
  }
  // info batch: copies with planted failures
  const int BI = 2048;
  std::vector<T> hI(BI * NN);
  for (int m = 0; m < BI; ++m) for (size_t e = 0; e < NN; ++e) hI[m * NN + e] = (T)base[m % NBASE][e];
  auto setsym = [&](int m, int i, int j, T v) { hI[m * NN + i * N + j] = v; hI[m * NN + j * N + i] = v; };
  setsym(3, 5, 5, T(-1));
  setsym(10, N - 1, N - 1, T(-1));
  setsym(17, 0, 0, T(-1));
  setsym(40, 7, 3, T(NAN));
  setsym(41, 12, 12, T(NAN));
  setsym(BI - 1, N / 2, N / 2, T(0));
  setsym(999, 19, 19, T(-1));
  setsym(1000, 1, 0, T(1e3));  // |a10| too big -> pivot 2 fails
  std::vector<int> infoRef(BI);
  for (int m = 0; m < BI; ++m) {
    std::vector<double> a(NN);
    for (size_t e = 0; e < NN; ++e) a[e] = (double)hI[m * NN + e];
    infoRef[m] = ref_chol(N, a);
  }

  T *dP, *dW, *dW2, *dI;
  int* dInfo;
  CK(cudaMalloc(&dP, bytes)); CK(cudaMalloc(&dW, bytes)); CK(cudaMalloc(&dW2, bytes));
  CK(cudaMalloc(&dI, BI * NN * sizeof(T))); CK(cudaMalloc(&dInfo, sizeof(int) * std::max(B, BI)));
  CK(cudaMemcpy(dP, hA.data(), bytes, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));

  // copy baseline
  std::vector<float> tc;
  for (int r = 0; r < reps + 1; ++r) {
    flush_l2(scratch, scratch_bytes);
    CK(cudaEventRecord(e0));
    CK(cudaMemcpyAsync(dW2, dP, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r) tc.push_back(ms);
  }
  std::sort(tc.begin(), tc.end());
  const double copy_ms = tc[tc.size() / 2];
  const double flops = (double)N * N * N / 3.0 + (double)N * N / 2.0;
  printf("\n=== %s N=%d batch=%d: bytes/matrix %zu (lower chunks %d), flops/matrix %.0f, copy %.4f ms (%.0f GB/s r+w), "
         "copy spread [%.4f, %.4f]\n", tn, N, B, NN * sizeof(T), C::LOWB, flops, copy_ms, 2.0 * bytes / copy_ms * 1e-6,
         tc.front(), tc.back());
  printf("%-7s %9s %8s %7s %7s %10s %9s %5s %6s %8s %6s %s\n", "design", "ms", "%copy", "min", "max", "maxrelerr",
         "upperOK", "info", "regs", "smem/wp", "wp/SM", "local");

  std::vector<Design<T, N>> ds;
  {
    Design<T, N> d; d.name = "stage"; d.launch = &LN::stage;
    d.ki = setup(k_stage<T, N, LN::WS, false>, 32 * LN::WS, LN::WS * C::BUFB, LN::WS, C::BUFB); ds.push_back(d);
    d.name = "stageA"; d.launch = &LN::stageA;
    d.ki = setup(k_stage<T, N, LN::WS, true>, 32 * LN::WS, LN::WS * C::BUFB, LN::WS, C::BUFB); ds.push_back(d);
    if (N >= 40) {
      d.name = "stA6"; d.launch = &LN::stageA6;
      d.ki = setup(k_stageM<T, N, LN::WS, true, 6>, 32 * LN::WS, LN::WS * C::BUFB, LN::WS, C::BUFB); ds.push_back(d);
      d.name = "stA8"; d.launch = &LN::stageA8;
      d.ki = setup(k_stageM<T, N, LN::WS, true, 8>, 32 * LN::WS, LN::WS * C::BUFB, LN::WS, C::BUFB); ds.push_back(d);
    }
    d.name = "pipeA"; d.launch = &LN::pipeA;
    d.ki = setup(k_pipeA<T, N, LN::WP>, 32 * LN::WP, LN::WP * 2 * C::BUFB, LN::WP, 2 * C::BUFB);
    LN::grid_pipeA = d.ki.warps_per_sm / LN::WP * g_sms; ds.push_back(d);
    d.name = "pipeT"; d.launch = &LN::pipeT;
    d.ki = setup(k_pipeT<T, N, LN::WP>, 32 * LN::WP, 128 + LN::WP * 2 * C::BUFB, LN::WP, 2 * C::BUFB);
    LN::grid_pipeT = d.ki.warps_per_sm / LN::WP * g_sms; ds.push_back(d);
    d.name = "right"; d.launch = &LN::right;
    d.ki = setup(k_right<T, N, LN::WS>, 32 * LN::WS, LN::WS * LN::RPER, LN::WS, LN::RPER); ds.push_back(d);
  }
  std::vector<T> hW(B * NN);
  std::vector<int> hInfo(std::max(B, BI));
  for (auto& d : ds) {
    if (d.ki.warps_per_sm == 0) { printf("%-7s does not fit\n", d.name.c_str()); continue; }
    std::vector<float> tk;
    for (int r = 0; r < reps + 1; ++r) {
      CK(cudaMemcpyAsync(dW, dP, bytes, cudaMemcpyDeviceToDevice));
      CK(cudaMemsetAsync(dInfo, 0x7f, sizeof(int) * B));
      flush_l2(scratch, scratch_bytes);
      CK(cudaEventRecord(e0));
      d.launch(dW, dInfo, B, 0);
      CK(cudaEventRecord(e1));
      CK(cudaGetLastError());
      CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r) tk.push_back(ms);
    }
    std::sort(tk.begin(), tk.end());
    const double med = tk[tk.size() / 2];
    // correctness on ~300 matrices spread over the batch (+ first/last), all infos == 0
    CK(cudaMemcpy(hW.data(), dW, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hInfo.data(), dInfo, sizeof(int) * B, cudaMemcpyDeviceToHost));
    double maxrel = 0.0;
    bool upperOK = true, infoOK = true;
    for (int m = 0; m < B; ++m) if (hInfo[m] != 0) { infoOK = false; break; }
    for (int t = 0; t < 300; ++t) {
      int m = (int)((long long)t * (B - 1) / 299) + (t % 7);
      if (m >= B) m = B - 1;
      const auto& R = refL[m % NBASE];
      double num = 0, den = 0;
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
          const double g = (double)hW[m * NN + i * N + j];
          if (j <= i) { num = (g == g) ? std::max(num, std::fabs(g - R[i * N + j])) : INFINITY; den = std::max(den, std::fabs(R[i * N + j])); }
          else if (hW[m * NN + i * N + j] != hA[m * NN + i * N + j]) upperOK = false;
        }
      maxrel = std::max(maxrel, num / den);
    }
    // info batch
    CK(cudaMemcpy(dI, hI.data(), BI * NN * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemsetAsync(dInfo, 0x7f, sizeof(int) * BI));
    d.launch(dI, dInfo, BI, 0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hInfo.data(), dInfo, sizeof(int) * BI, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int m = 0; m < BI; ++m) if (hInfo[m] != infoRef[m]) { if (bad < 3) printf("  info mismatch m=%d got %d want %d\n", m, hInfo[m], infoRef[m]); ++bad; }
    printf("%-7s %9.4f %7.1f%% %7.4f %7.4f %10.2e %9s %5s %6d %8d %6d %d\n", d.name.c_str(), med, 100.0 * copy_ms / med,
           tk.front(), tk.back(), maxrel, upperOK ? "yes" : "NO", (bad == 0 && infoOK) ? "pass" : "FAIL", d.ki.regs,
           d.ki.smem_per_warp, d.ki.warps_per_sm, d.ki.local);
  }
  printf("  expected infos: m3=%d m10=%d m17=%d m40(NaN 7,3)=%d m41(NaN diag12)=%d m%d=%d m999=%d m1000=%d\n", infoRef[3], infoRef[10],
         infoRef[17], infoRef[40], infoRef[41], BI - 1, infoRef[BI - 1], infoRef[999], infoRef[1000]);
  fflush(stdout);
  CK(cudaFree(dP)); CK(cudaFree(dW)); CK(cudaFree(dW2)); CK(cudaFree(dI)); CK(cudaFree(dInfo));
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 15;
  std::string only = argc > 2 ? argv[2] : "";
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  g_sms = p.multiProcessorCount;
  printf("device %s, %d SMs, L2 %d MB, smem/SM %zu KB, reps %d (median reported)\n", p.name, g_sms, p.l2CacheSize >> 20,
         p.sharedMemPerMultiprocessor >> 10, reps);
  const size_t scratch_bytes = 256u << 20;
  void* scratch;
  CK(cudaMalloc(&scratch, scratch_bytes));
  auto want = [&](const char* s) { return only.empty() || only == s; };
  if (want("d20")) run_config<double, 20>(131072, scratch, scratch_bytes, reps);
  if (want("d32")) run_config<double, 32>(131072, scratch, scratch_bytes, reps);
  if (want("d40")) run_config<double, 40>(131072, scratch, scratch_bytes, reps);
  if (want("d64")) run_config<double, 64>(65536, scratch, scratch_bytes, reps);
  if (want("f20")) run_config<float, 20>(131072, scratch, scratch_bytes, reps);
  if (want("f32")) run_config<float, 32>(131072, scratch, scratch_bytes, reps);
  if (want("f40")) run_config<float, 40>(131072, scratch, scratch_bytes, reps);
  if (want("f64")) run_config<float, 64>(131072, scratch, scratch_bytes, reps);
  CK(cudaFree(scratch));
  printf("\ndone\n");
  return 0;
}
