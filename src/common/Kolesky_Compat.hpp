// Version differences between Kokkos 3.4 and Kokkos 4.x, kept in one place.
#pragma once
#include <Kokkos_Core.hpp>

#include <cfloat>

namespace kolesky {
namespace impl {

// Kokkos 3.x puts the math functions in Kokkos::Experimental; 4.x moved them to Kokkos.
#if KOKKOS_VERSION >= 30700
using Kokkos::sqrt;
#else
using Kokkos::Experimental::sqrt;
#endif

// Kokkos::initialize on one GPU (kolesky::mpi::initialize_kokkos passes each rank's): Kokkos
// 3.4 takes it in InitArguments::device_id, 3.7 and later in
// InitializationSettings::set_device_id. Host-only builds have no device to choose.
inline void initialize_on_device(const int device_id) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL)
#if KOKKOS_VERSION >= 30700
  Kokkos::initialize(Kokkos::InitializationSettings().set_device_id(device_id));
#else
  Kokkos::InitArguments args;
  args.device_id = device_id;
  Kokkos::initialize(args);
#endif
#else
  (void)device_id;
  Kokkos::initialize();
#endif
}

template <class T>
struct FloatLimits;
template <>
struct FloatLimits<float> {
  static constexpr float max = FLT_MAX;
  static constexpr float eps = FLT_EPSILON;
};
template <>
struct FloatLimits<double> {
  static constexpr double max = DBL_MAX;
  static constexpr double eps = DBL_EPSILON;
};

// 1 / sqrt(d): on NVIDIA GPUs the hardware-seeded rsqrt (1 ulp in double, 2 in float) in a
// fraction of the instructions of sqrt followed by a division; elsewhere exactly that.
KOKKOS_INLINE_FUNCTION double rsqrt(const double d) {
#ifdef __CUDA_ARCH__
  return ::rsqrt(d);
#else
  return 1.0 / sqrt(d);
#endif
}
KOKKOS_INLINE_FUNCTION float rsqrt(const float d) {
#ifdef __CUDA_ARCH__
  return ::rsqrtf(d);
#else
  return 1.0f / sqrt(d);
#endif
}

#ifdef __CUDA_ARCH__
// The hardware's approximation of 1 / sqrt(d) (|1 - d r0^2| < 2^-19 in double, 2^-21.9 in
// float, measured on the H200), denormals flushed to zero: no range check, no branch.
__device__ inline double rsqrt_seed(const double d) {
  double r;
  asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(d));
  return r;
}
__device__ inline float rsqrt_seed(const float d) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
}
#endif

KOKKOS_INLINE_FUNCTION int imin(const int a, const int b) { return a < b ? a : b; }

// A pivot is usable when it is positive and finite; written so that NaN fails too.
template <class T>
KOKKOS_INLINE_FUNCTION bool usable_pivot(const T d) {
  return d > T(0) && d <= FloatLimits<T>::max;
}

}  // namespace impl
}  // namespace kolesky
