// potrs at small orders on CUDA, for more right-hand sides than PotrsFlow takes: a warp per
// right-hand side, one launch.
//
// At these orders the blocked TRSM (Kolesky's on cuBLAS, and cuSOLVER's potrs alike) is a
// chain of small launches: 0.12 ms at n = 128 for 100 right-hand sides on the H200, for 3.3
// MFLOP. Here a warp keeps its column in registers (row lane + 32 m in element m) and sweeps
// 32-row blocks: a block's 32 dependent steps touch only its diagonal tile, loaded before
// them (a multiply, a shuffle and a multiply-add a step); then, forward, the rows below take
// the block's 32 solved values at once, and backward, the block's rows take the solved rows
// below as 32 dot products summed across the warp in 31 shuffles. L is read down its columns,
// two 32 x 32 tiles' loads in flight at once. A warp's time grows as n^2 (its own chain of
// tiles), so the blocked TRSM wins again from n = 512 (docs/performance_log.md, issue 15).
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace impl {

// Rows a warp keeps: 8 a lane (one more 32-row block doubles a warp's chain of tiles).
constexpr int kPotrsWarpMaxN = 256;

// Measurement knob (perf_test, tests): 0 never takes this solve, 2 wherever it applies
// (n <= kPotrsWarpMaxN), 1 (default) picks.
struct PotrsWarpKnobs : Knobs<PotrsWarpKnobs> {
  int warp = 1;
};

// Where it beats both the one-launch block-row solve (PotrsFlow, one launch per four
// right-hand sides) and the blocked TRSM (H200, rounds 139-140, n = 32-1024 x nrhs = 1-1000):
// every nrhs at n <= 32; in double above 4 right-hand sides to n = 128 and above 12 to 256
// (1.2-2.8x the faster of the two); in float, whose TRSM is twice as fast, 13-511 right-hand
// sides to n = 128 (1.1-1.9x). At n = 512 a warp's chain of tiles loses to the TRSM.
template <class T>
bool potrs_warp_wins(const int n, const int nrhs) {
  const int knob = PotrsWarpKnobs::get().warp;
  if (n > kPotrsWarpMaxN || knob == 0) return false;
  if (knob == 2 || n <= 32) return true;
  if (sizeof(T) == 8) return nrhs > (n <= 128 ? 4 : 12);
  return n <= 128 && nrhs > 12 && nrhs < 512;
}

#ifdef KOKKOS_ENABLE_CUDA

template <class T, int M>
struct PotrsWarp {
  Strided<const T> l;
  Strided<T> b;
  int n;
  static constexpr int TB = 2;  // tiles whose loads are in flight together

  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Kokkos::Cuda>::member_type& member) const {
#ifdef __CUDA_ARCH__
    constexpr unsigned kAll = 0xffffffffu;
    const int lane = member.team_rank();  // the team is one warp
    const int r = member.league_rank();  // the right-hand side
    T y[M];
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = lane + 32 * m;
      y[m] = i < n ? b(i, r) : T(0);
    }
    const int nb = (n + 31) / 32;
    // Forward, L Y = B.
#pragma unroll 1
    for (int kb = 0; kb < nb; ++kb) {
      const int k0 = 32 * kb, kn = imin(32, n - k0), row = k0 + lane;
      // The diagonal tile's row, loaded before the chain (a load per step inside it waited
      // out the L2 latency 32 times a block).
      T lq[32];
#pragma unroll
      for (int q = 0; q < 32; ++q) lq[q] = q < lane && row < n ? l(row, k0 + q) : T(0);
      const T rd = row < n ? T(1) / l(row, row) : T(0);
      T z = take(y, kb);
#pragma unroll
      for (int q = 0; q < 32; ++q) {
        if (q < kn) {
          const T x = __shfl_sync(kAll, z * rd, q);
          z = lane == q ? x : (lane > q ? z - lq[q] * x : z);
        }
      }
      put(y, kb, z);
      // The rows below take the block's solved values, TB tiles' loads in flight at once.
#pragma unroll
      for (int m0 = 1; m0 < M; m0 += TB) {
        if (m0 + TB - 1 <= kb) continue;
        T lv[TB][32];
        load_tiles(lv, lane, m0, kb, k0);
#pragma unroll
        for (int q = 0; q < 32; ++q) {
          const T x = __shfl_sync(kAll, z, q);
#pragma unroll
          for (int t = 0; t < TB; ++t)
            if (m0 + t < M) y[m0 + t] -= lv[t][q] * x;
        }
      }
    }
    // Backward, L^T X = Y.
#pragma unroll 1
    for (int kb = nb - 1; kb >= 0; --kb) {
      const int k0 = 32 * kb, kn = imin(32, n - k0), row = k0 + lane;
      // s(q) = sum over solved rows i below the block of L(i, k0 + q) x(i): this lane's rows,
      // then summed across the warp so that lane q holds s(q).
      T p[32];
#pragma unroll
      for (int q = 0; q < 32; ++q) p[q] = T(0);
#pragma unroll
      for (int m0 = 1; m0 < M; m0 += TB) {
        if (m0 + TB - 1 <= kb) continue;
        T lv[TB][32];
        load_tiles(lv, lane, m0, kb, k0);
#pragma unroll
        for (int t = 0; t < TB; ++t)
          if (m0 + t < M)
#pragma unroll
            for (int q = 0; q < 32; ++q) p[q] += lv[t][q] * y[m0 + t];
      }
      // Reduce-scatter: after the step of width s a lane keeps the half of its sums whose
      // index has the lane's bit s, added to its partner's.
#pragma unroll
      for (int s = 16; s >= 1; s /= 2) {
        const bool up = (lane & s) != 0;
#pragma unroll
        for (int q = 0; q < s; ++q) {
          const T send = up ? p[q] : p[q + s];
          const T keep = up ? p[q + s] : p[q];
          p[q] = keep + __shfl_xor_sync(kAll, send, s);
        }
      }
      T lq[32];  // the diagonal tile's column, before the chain
#pragma unroll
      for (int q = 0; q < 32; ++q) lq[q] = q > lane && q < kn ? l(k0 + q, row) : T(0);
      const T rd = row < n ? T(1) / l(row, row) : T(0);
      T z = take(y, kb) - p[0];
#pragma unroll
      for (int q = 31; q >= 0; --q) {
        if (q < kn) {
          const T x = __shfl_sync(kAll, z * rd, q);
          z = lane == q ? x : (lane < q ? z - lq[q] * x : z);
        }
      }
      put(y, kb, z);
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = lane + 32 * m;
      if (i < n) b(i, r) = y[m];
    }
#else
    (void)member;
#endif
  }

  // Tiles m0 .. m0 + TB - 1 of block column kb, this lane's row of each; zero for tiles at or
  // above the diagonal (m <= kb) and rows past n. Predicated loads, no branch: all in flight.
  KOKKOS_FORCEINLINE_FUNCTION void load_tiles(T (&lv)[TB][32], const int lane, const int m0,
                                              const int kb, const int k0) const {
#pragma unroll
    for (int t = 0; t < TB; ++t) {
      const int i = lane + 32 * (m0 + t);
      const bool in = m0 + t < M && m0 + t > kb && i < n;
#pragma unroll
      for (int q = 0; q < 32; ++q) lv[t][q] = in ? l(i, k0 + q) : T(0);
    }
  }

  // Block kb of this lane's rows (kb is not a compile-time index: selects keep y in registers).
  KOKKOS_FORCEINLINE_FUNCTION static T take(const T (&y)[M], const int kb) {
    T z = y[0];
#pragma unroll
    for (int m = 1; m < M; ++m) z = m == kb ? y[m] : z;
    return z;
  }
  KOKKOS_FORCEINLINE_FUNCTION static void put(T (&y)[M], const int kb, const T z) {
#pragma unroll
    for (int m = 0; m < M; ++m) y[m] = m == kb ? z : y[m];
  }
};

template <class T, int M>
void launch_potrs_warp(const Kokkos::Cuda& exec, const int n, const int nrhs,
                       const Strided<const T> l, const Strided<T> b) {
  Kokkos::parallel_for("kolesky::potrs_warp", Kokkos::TeamPolicy<Kokkos::Cuda>(exec, nrhs, 32),
                       PotrsWarp<T, M>{l, b, n});
}

// L L^T X = B in place, 0 < n <= kPotrsWarpMaxN.
template <class T>
void potrs_warp(const Kokkos::Cuda& exec, const int n, const int nrhs, const Strided<const T> l,
                const Strided<T> b) {
  if (n <= 0 || nrhs <= 0) return;
  const int m = (n + 31) / 32;
  if (m <= 1) return launch_potrs_warp<T, 1>(exec, n, nrhs, l, b);
  if (m <= 2) return launch_potrs_warp<T, 2>(exec, n, nrhs, l, b);
  if (m <= 4) return launch_potrs_warp<T, 4>(exec, n, nrhs, l, b);
  launch_potrs_warp<T, 8>(exec, n, nrhs, l, b);
}

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace impl
}  // namespace kolesky
