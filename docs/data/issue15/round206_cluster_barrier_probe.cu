#include <cstdio>
#include <cuda_runtime.h>
__device__ unsigned rank_() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ void arrive_() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ void wait_() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
__device__ void sync_() { asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory"); }
template <class P> __device__ P* map_(P* p, unsigned r) { unsigned long long q; asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(r)); return reinterpret_cast<P*>(q); }
__global__ void __launch_bounds__(256,1) k(volatile int* g, int* out, int S, int mode) {
  extern __shared__ int dyn[];
  int (*buf)[256] = reinterpret_cast<int(*)[256]>(dyn);
  const unsigned r = rank_();
  const int cl = blockIdx.x / 2;
  sync_();
  if (threadIdx.x == 0) atomicAdd(out + 300 + r, 1);
  if (cl == 0) {
    if (r == 0) {
      int s = 0;
      arrive_();
      for (int p = 1; p <= S; ++p) {
        wait_();
        s += buf[p & 1][threadIdx.x];
        __syncthreads();
        if (p < S) arrive_();
      }
      out[threadIdx.x] = s;
    } else {
      int* rb = map_(&buf[0][0], 0);
      for (int p = 1; p <= S; ++p) {
        if (p > 1) wait_();
        if (mode && threadIdx.x == 0) { while (g[0] < p) __nanosleep(20); }
        __syncthreads();
        rb[(p & 1) * 256 + threadIdx.x] = p;
        arrive_();
      }
      wait_();
    }
  } else if (r == 0 && threadIdx.x == 0) {
    for (int p = 1; p <= S; ++p) { __nanosleep(1000); atomicAdd((int*)g, 1); __threadfence(); }
  }
  sync_();
}
int main(int argc, char** argv) {
  int mode = argc > 1 ? atoi(argv[1]) : 1, S = 6;
  int *g, *out; cudaMalloc(&g, 4); cudaMalloc(&out, 2048); cudaMemset(g, 0, 4);
  cudaMemset(out, 0, 2048);
  size_t sm = 171 * 1024;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm));
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = 4; cfg.blockDim = 256; cfg.dynamicSmemBytes = sm;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  int nc = -1; cudaOccupancyMaxActiveClusters(&nc, (void*)k, &cfg);
  cudaError_t le = cudaLaunchKernelEx(&cfg, k, (volatile int*)g, out, S, mode);
  printf("clusters fit %d launch %s\n", nc, cudaGetErrorString(le));
  cudaError_t e = cudaDeviceSynchronize();
  int h[512]; cudaMemcpy(h, out, 2048, cudaMemcpyDeviceToHost);
  printf("mode %d err %s out[0]=%d (want %d) ranks0=%d ranks1=%d\n", mode, cudaGetErrorString(e), h[0], S * (S + 1) / 2, h[300], h[301]);
}
