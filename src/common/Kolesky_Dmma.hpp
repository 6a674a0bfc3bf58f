// Products on the tensor cores (mma.sync, sm_80 and later): FP64, shared by the dataflow and
// batched kernels, and TF32 for the float factor of posv_mixed's fast_factor. Device code
// only; they compile to nothing elsewhere (callers check the device's architecture before
// taking these paths).
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

// A float rounded to TF32 (10-bit mantissa, to nearest), as mma's operand register.
KOKKOS_FORCEINLINE_FUNCTION unsigned tf32_bits(const float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned u;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
  return u;
#else
  (void)x;
  return 0;
#endif
}

// D(16 x 8) += A(16 x 8) B(8 x 8) on the TF32 tensor cores, float sums. Lane (g, tq) =
// (lane / 4, lane % 4) gives A(g, tq), A(g + 8, tq), A(g, tq + 4), A(g + 8, tq + 4) in a[0-3]
// and B(tq, g), B(tq + 4, g) in b[0-1] (tf32_bits of each), and holds D(g, 2 tq + e) in d0 / d1
// and D(g + 8, 2 tq + e) in d2 / d3 (the layout of dmma_16x8x4's D).
KOKKOS_FORCEINLINE_FUNCTION void tf32mma_16x8x8(float& d0, float& d1, float& d2, float& d3,
                                                const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)d0, (void)d1, (void)d2, (void)d3, (void)a, (void)b;
#endif
}

}  // namespace impl
}  // namespace kolesky
