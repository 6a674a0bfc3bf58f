// Cluster probe (issue 15): what a hand-off between two SMs costs, through distributed shared
// memory (one cluster of 2 CTAs) and through global memory (the flow kernel's way today).
// 160 KB of dynamic shared memory per CTA puts the two CTAs on separate SMs.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdint>
namespace cg = cooperative_groups;

__device__ __forceinline__ unsigned ld_acq_cluster(const unsigned* p) {
  unsigned v; asm volatile("ld.acquire.cluster.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ void st_rel_cluster(unsigned* p, unsigned v) {
  asm volatile("st.release.cluster.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }
__device__ __forceinline__ void st_rlx_cluster(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.cluster.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }
__device__ __forceinline__ unsigned ld_acq_gpu(const unsigned* p) {
  unsigned v; asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ void st_rel_gpu(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }
__device__ __forceinline__ void st_rlx_gpu(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ unsigned smid() { unsigned s; asm("mov.u32 %0, %%smid;" : "=r"(s)); return s; }
__device__ __forceinline__ void fence_acqrel_cluster() { asm volatile("fence.acq_rel.cluster;" ::: "memory"); }

enum Mode { kFlagDsmem, kFlagGlobal, kFlagGlobalSc, kClusterSync, kTileDsmem, kTileGlobal, kTileGlobalSc,
            kTileDsmemBar, kSyncthreads };
const char* names[] = {
  "flag round trip, DSMEM (st.release / ld.acquire .cluster)",
  "flag round trip, global (st.release / ld.acquire .gpu)",
  "flag round trip, global (fence.sc + relaxed store, acquire load)",
  "cluster barrier (barrier.cluster arrive.release + wait.acquire)",
  "tile hand-off, DSMEM (remote st.shared::cluster, bar, fence.acq_rel.cluster, flag)",
  "tile hand-off, global (st.cg, bar, st.release.gpu flag, ld.acquire, bar, ld.cg)",
  "tile hand-off, global (st.cg, bar, fence.sc, relaxed flag, ld.acquire, bar, ld.cg)",
  "tile hand-off, DSMEM by cluster barrier (remote stores, cluster.sync, local loads)",
  "__syncthreads (one CTA, reference)"};

struct Result { unsigned long long cycles, ns; unsigned sm0, sm1; double sink; };

// One ping-pong: rank 0 sends to rank 1, rank 1 answers; `iters` round trips, timed on rank 0.
__global__ void __cluster_dims__(2, 1, 1) probe(int mode, int iters, int tile_bytes, unsigned* gflags,
                                               double* gbuf, Result* res) {
  extern __shared__ __align__(16) unsigned char smem[];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), peer = rank ^ 1u;
  unsigned* my_flag = reinterpret_cast<unsigned*>(smem);
  double* my_tile = reinterpret_cast<double*>(smem + 128);
  unsigned* peer_flag = cluster.map_shared_rank(my_flag, peer);
  double* peer_tile = cluster.map_shared_rank(my_tile, peer);
  unsigned* g_my = gflags + 32 * rank;       // separate 128-byte lines
  unsigned* g_peer = gflags + 32 * peer;
  double* g_tile_to_peer = gbuf + (size_t)rank * (tile_bytes / 8);
  double* g_tile_from_peer = gbuf + (size_t)peer * (tile_bytes / 8);
  const int nt = blockDim.x, t = threadIdx.x, n2 = tile_bytes / 16;
  if (t == 0) { *my_flag = 0; }
  for (int i = t; i < tile_bytes / 8; i += nt) my_tile[i] = rank + i;
  cluster.sync();
  double acc = 0;
  unsigned long long c0 = clock64(), g0 = gtimer();
  for (int it = 1; it <= iters; ++it) {
    const bool sender_first = rank == 0;
    for (int half = 0; half < 2; ++half) {
      const bool sending = (half == 0) == sender_first;
      const unsigned val = 2u * it + half;
      switch (mode) {
        case kFlagDsmem:
          if (t == 0) { if (sending) st_rel_cluster(peer_flag, val); else while (ld_acq_cluster(my_flag) != val) {} }
          break;
        case kFlagGlobal:
          if (t == 0) { if (sending) st_rel_gpu(g_peer, val); else while (ld_acq_gpu(g_my) != val) {} }
          break;
        case kFlagGlobalSc:
          if (t == 0) { if (sending) { __threadfence(); st_rlx_gpu(g_peer, val); } else while (ld_acq_gpu(g_my) != val) {} }
          break;
        case kClusterSync:
          cluster.sync();
          break;
        case kTileDsmem:
          if (sending) {
            const double2* src = reinterpret_cast<const double2*>(my_tile);
            double2* dst = reinterpret_cast<double2*>(peer_tile);
            for (int i = t; i < n2; i += nt) dst[i] = src[i];
            __syncthreads();
            if (t == 0) { fence_acqrel_cluster(); st_rlx_cluster(peer_flag, val); }
          } else {
            if (t == 0) while (ld_acq_cluster(my_flag) != val) {}
            __syncthreads();
            const double2* src = reinterpret_cast<const double2*>(my_tile);
            for (int i = t; i < n2; i += nt) { double2 v = src[i]; acc += v.x + v.y; }
          }
          break;
        case kTileGlobal:
        case kTileGlobalSc:
          if (sending) {
            const double2* src = reinterpret_cast<const double2*>(my_tile);
            double2* dst = reinterpret_cast<double2*>(g_tile_to_peer);
            for (int i = t; i < n2; i += nt) __stcg(dst + i, src[i]);
            __syncthreads();
            if (t == 0) {
              if (mode == kTileGlobal) st_rel_gpu(g_peer, val); else { __threadfence(); st_rlx_gpu(g_peer, val); }
            }
          } else {
            if (t == 0) while (ld_acq_gpu(g_my) != val) {}
            __syncthreads();
            const double2* src = reinterpret_cast<const double2*>(g_tile_from_peer);
            double2* dst = reinterpret_cast<double2*>(my_tile);
            for (int i = t; i < n2; i += nt) { double2 v = __ldcg(src + i); dst[i] = v; }
            __syncthreads();
          }
          break;
        case kTileDsmemBar:
          if (sending) {
            const double2* src = reinterpret_cast<const double2*>(my_tile);
            double2* dst = reinterpret_cast<double2*>(peer_tile);
            for (int i = t; i < n2; i += nt) dst[i] = src[i];
          }
          cluster.sync();
          if (!sending) {
            const double2* src = reinterpret_cast<const double2*>(my_tile);
            for (int i = t; i < n2; i += nt) { double2 v = src[i]; acc += v.x + v.y; }
          }
          break;
        case kSyncthreads:
          __syncthreads();
          break;
      }
    }
  }
  __syncthreads();
  unsigned long long c1 = clock64(), g1 = gtimer();
  cluster.sync();
  if (t == 0) {
    if (rank == 0) { res->cycles = c1 - c0; res->ns = g1 - g0; res->sm0 = smid(); }
    else res->sm1 = smid();
  }
  if (acc == 12345.678) res->sink = acc;
}

int main() {
  const int smem = 160 * 1024, threads = 256, iters = 2000;
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  unsigned* gflags; double* gbuf; Result* res;
  cudaMalloc(&gflags, 4096); cudaMalloc(&gbuf, 2 << 20); cudaMallocManaged(&res, sizeof(Result));
  int clk = 0; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  printf("%s, %d SMs, clock attribute %d kHz; 2 CTAs of %d threads, %d KB dynamic smem each, %d round trips\n",
         p.name, p.multiProcessorCount, clk, threads, smem / 1024, iters);
  struct Case { int mode, bytes; } cases[] = {
    {kSyncthreads, 0}, {kFlagDsmem, 0}, {kFlagGlobal, 0}, {kFlagGlobalSc, 0}, {kClusterSync, 0},
    {kTileDsmem, 8192}, {kTileGlobal, 8192}, {kTileGlobalSc, 8192}, {kTileDsmemBar, 8192},
    {kTileDsmem, 32768}, {kTileGlobal, 32768}, {kTileGlobalSc, 32768}, {kTileDsmemBar, 32768},
    {kTileDsmem, 65536}, {kTileGlobal, 65536}, {kTileGlobalSc, 65536}};
  for (auto c : cases) {
    for (int rep = 0; rep < 3; ++rep) {
      cudaMemset(gflags, 0, 4096);
      probe<<<2, threads, smem>>>(c.mode, iters, c.bytes > 0 ? c.bytes : 1024, gflags, gbuf, res);
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
      if (rep < 2) continue;  // the first two warm up
      const double per = 1.0 / (2.0 * iters);  // one hand-off = half a round trip
      printf("%-88s %6d B  SMs %3u/%3u  %8.0f cycles  %7.3f us per hand-off\n", names[c.mode], c.bytes,
             res->sm0, res->sm1, res->cycles * per, res->ns * per * 1e-3);
    }
  }
  return 0;
}
