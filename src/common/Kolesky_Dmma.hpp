// Products on the FP64 tensor cores (mma.sync, sm_80 and later), shared by the dataflow and
// batched kernels. Device code only; both compile to nothing elsewhere (callers check the
// device's architecture before taking these paths).
#pragma once
#include <Kokkos_Core.hpp>

namespace kolesky {
namespace impl {

// D(8 x 8) += A(8 x 4) B(4 x 8): lane (g, tq) = (lane / 4, lane % 4) gives A(g, tq) and
// B(tq, g) and holds D(g, 2 tq + e) in d0 / d1. On sm_90 it runs at half the flop rate of
// dmma_16x8x4: use it only where one 8-row fragment is all there is.
KOKKOS_FORCEINLINE_FUNCTION void dmma_8x8x4(double& d0, double& d1, const double a, const double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
#else
  (void)d0, (void)d1, (void)a, (void)b;
#endif
}

// D(16 x 8) += A(16 x 4) B(4 x 8) in double on the FP64 tensor cores. Lane (g, tq) =
// (lane / 4, lane % 4) gives A(g, tq), A(g + 8, tq) and B(tq, g), and holds D(g, 2 tq + e) in
// d0 / d1 and D(g + 8, 2 tq + e) in d2 / d3. One m16n8k4 on sm_90, where it runs at twice the
// flop rate of m8n8k4 (H100: 255 against 127 flops per clock per SM, docs/performance_log.md);
// two m8n8k4 (the same arithmetic) on sm_80-89.
KOKKOS_FORCEINLINE_FUNCTION void dmma_16x8x4(double& d0, double& d1, double& d2, double& d3,
                                             const double a0, const double a1, const double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
      : "d"(a0), "d"(a1), "d"(b));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  dmma_8x8x4(d0, d1, a0, b);
  dmma_8x8x4(d2, d3, a1, b);
#else
  (void)d0, (void)d1, (void)d2, (void)d3, (void)a0, (void)a1, (void)b;
#endif
}

}  // namespace impl
}  // namespace kolesky
