// potrs at small and middle orders on CUDA, for more right-hand sides than PotrsFlow takes: a
// warp or a team per right-hand side, one launch.
//
// At these orders the blocked TRSM (Kolesky's on cuBLAS, and cuSOLVER's potrs alike) is a
// chain of small launches: 0.12 ms at n = 128 for 100 right-hand sides on the H200, for 3.3
// MFLOP. Here a warp keeps its column in registers (row lane + 32 m in element m) and sweeps
// 32-row blocks: a block's 32 dependent steps touch only its diagonal tile, loaded before
// them (a multiply, a shuffle and a multiply-add a step); then, forward, the rows below take
// the block's 32 solved values at once, and backward, the block's rows take the solved rows
// below as 32 dot products summed across the warp in 31 shuffles. L is read down its columns,
// two 32 x 32 tiles' loads in flight at once. A warp's time grows as n^2 (its own chain of
// tiles), so above n = 256 a team of eight warps takes each right-hand side (PotrsTeam: the
// blocks spread over the warps, each block solved by its precomputed inverse), to n = 2048
// (docs/performance_log.md, issue 15).
#pragma once
#include <Kokkos_Core.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"
#include "dense/Kolesky_PotrsFlow.hpp"

namespace kolesky {
namespace impl {

// Rows a warp keeps: 8 a lane (one more 32-row block doubles a warp's chain of tiles).
constexpr int kPotrsWarpMaxN = 256;

// Above it, a team of warps per right-hand side (PotrsTeam): 8 warps, 8 rows a lane.
constexpr int kPotrsTeamWarps = 8;
constexpr int kPotrsTeamMaxN = 32 * 8 * kPotrsTeamWarps;

// Measurement knobs (perf_test, tests): `warp` for the warp per right-hand side, `team` for
// the team per right-hand side; 0 never takes that solve, 2 wherever it applies
// (n <= kPotrsWarpMaxN, kPotrsWarpMaxN < n <= kPotrsTeamMaxN), 1 (default) picks.
// `batched` for batched::potrs (a warp per matrix, orders 17-256): 0 never, 1 (default) where
// the factor has a unit stride.
struct PotrsWarpKnobs : Knobs<PotrsWarpKnobs> {
  int warp = 1;
  int team = 1;
  int batched = 1;
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

// Where the team per right-hand side beats PotrsFlow (four right-hand sides a launch) and
// the blocked TRSM (H200, 132 SMs, rounds 144 and 146, n = 300-2048 x nrhs = 1-1000). A team
// holds an SM, so its time is flat up to `sms` right-hand sides and grows by that much with
// each wave. To n = 1024 (0.28 ms at 1000, where PotrsFlow takes 0.12 a launch): above 8
// right-hand sides, to three waves in double and two in float (with 100, 3.0-4.1x cuSOLVER's
// potrs in double, 1.7-2.3x in float; four waves lose in double, three in float). Above, to
// 2048: from 17 (PotrsFlow's four launches win below) to one wave (with 100, 1.95x / 1.27x
// at 1500, 1.02x / 1.17x at 2048; two waves lose).
template <class T>
bool potrs_team_per_rhs_wins(const int n, const int nrhs, const int sms) {
  const int knob = PotrsWarpKnobs::get().team;
  if (n <= kPotrsWarpMaxN || n > kPotrsTeamMaxN || knob == 0) return false;
  if (knob == 2) return true;
  if (n <= 1024) return nrhs > 8 && nrhs <= (sizeof(T) == 8 ? 3 : 2) * sms;
  return nrhs > kPotrsFlowMaxRhs && nrhs <= sms;
}

#ifdef KOKKOS_ENABLE_CUDA

#ifdef __CUDA_ARCH__
// Lane q's p[0] becomes the warp's sum of p[q]: after the step of width s a lane keeps the
// half of its sums whose index has the lane's bit s, added to its partner's (31 shuffles).
template <class T>
__forceinline__ __device__ void warp_reduce_scatter(T (&p)[32], const int lane) {
#pragma unroll
  for (int h = 0; h < 5; ++h) {
    const int s = 16 >> h;
    const bool up = (lane & s) != 0;
#pragma unroll
    for (int q = 0; q < 16; ++q) {  // a constant bound: unrolled before s is known
      if (q < s) {
        const T send = up ? p[q] : p[q + s];
        const T keep = up ? p[q + s] : p[q];
        p[q] = keep + __shfl_xor_sync(0xffffffffu, send, s);
      }
    }
  }
}
#endif

// One right-hand side's solve by one warp, the column in registers (row lane + 32 m in
// element m). Staged: L is row-major (unit column stride: an Upper factor of a column-major
// matrix, a Lower one of a row-major batch), so lane-per-row reads would touch 32 lines each;
// a tile is then read along its rows into the warp's shared buffer (`stage`, TB x 32 x 33)
// and taken out by rows. One block (M = 1, orders to 32) with a `stage`: the diagonal tile
// stays there from the forward sweep to the backward one, so L is read once, not twice.
// Otherwise `stage` may be null.
template <class T, int M, bool Staged = false>
struct PotrsWarpColumn {
  static constexpr int TB = 2;  // tiles whose loads are in flight together
  static constexpr int kStage = (M == 1 ? 1 : TB) * 32 * 33;  // elements of `stage`

#ifdef __CUDA_ARCH__
  __device__ static void solve(const int lane, const int n, const Strided<const T> l,
                               const Strided<T> b, T* const stage) {
    constexpr unsigned kAll = 0xffffffffu;
    T y[M];
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = lane + 32 * m;
      y[m] = i < n ? b(i, 0) : T(0);
    }
    const int nb = (n + 31) / 32;
    // Forward, L Y = B.
#pragma unroll 1
    for (int kb = 0; kb < nb; ++kb) {
      const int k0 = 32 * kb, kn = imin(32, n - k0), row = k0 + lane;
      // The diagonal tile's row, loaded before the chain (a load per step inside it waited
      // out the L2 latency 32 times a block).
      T lq[32];
      load_diagonal(lq, l, n, lane, k0, stage);
      if constexpr (M == 1 && !Staged) {
        if (stage != nullptr) {
          __syncwarp();  // the last right-hand side's backward reads of it are done
#pragma unroll
          for (int q = 0; q < 32; ++q) stage[33 * lane + q] = lq[q];  // as Staged leaves it
        }
      }
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
        load_tiles(lv, l, n, lane, m0, kb, k0, stage);
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
        load_tiles(lv, l, n, lane, m0, kb, k0, stage);
#pragma unroll
        for (int t = 0; t < TB; ++t)
          if (m0 + t < M)
#pragma unroll
            for (int q = 0; q < 32; ++q) p[q] += lv[t][q] * y[m0 + t];
      }
      warp_reduce_scatter(p, lane);
      // The diagonal tile's column (lane = column: along rows, so coalesced when Staged),
      // from the forward sweep's copy where there is one (zero at and above the diagonal).
      T lq[32];
      if (M == 1 && stage != nullptr) {
        __syncwarp();
#pragma unroll
        for (int q = 0; q < 32; ++q) lq[q] = stage[33 * q + lane];
      } else {
#pragma unroll
        for (int q = 0; q < 32; ++q) lq[q] = q > lane && q < kn ? l(k0 + q, row) : T(0);
      }
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
      if (i < n) b(i, 0) = y[m];
    }
  }

  // Row lane of NT tiles (i0 + 32 t, k0) into v: v[t][q] = L(i0 + 32 t + lane, k0 + q) where
  // `in(t, r, c)` holds for element (r, c) of tile t, else 0. Staged: every tile's loads are
  // issued along its rows (lane = column) first, then go through the buffer.
  template <int NT, class In>
  __device__ static void rows_of_tiles(T (&v)[NT][32], const Strided<const T> l, const int lane,
                                       const int i0, const int k0, T* const buf, const In& in) {
    if constexpr (Staged) {
      __syncwarp();  // the buffer's last reads are done
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int r = 0; r < 32; ++r)
          v[t][r] = in(t, r, lane) ? l(i0 + 32 * t + r, k0 + lane) : T(0);
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int r = 0; r < 32; ++r) buf[32 * 33 * t + 33 * r + lane] = v[t][r];
      __syncwarp();
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int q = 0; q < 32; ++q) v[t][q] = buf[32 * 33 * t + 33 * lane + q];
    } else {
      (void)buf;
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int q = 0; q < 32; ++q)
          v[t][q] = in(t, lane, q) ? l(i0 + 32 * t + lane, k0 + q) : T(0);
    }
  }

  // The diagonal tile's strictly lower rows (lane's row), before the forward chain.
  __device__ static void load_diagonal(T (&lq)[32], const Strided<const T> l, const int n,
                                       const int lane, const int k0, T* const stage) {
    T v[1][32];
    rows_of_tiles(v, l, lane, k0, k0, stage,
                  [&](int, const int r, const int c) { return c < r && k0 + r < n; });
#pragma unroll
    for (int q = 0; q < 32; ++q) lq[q] = v[0][q];
  }

  // Tiles m0 .. m0 + TB - 1 of block column kb, this lane's row of each; zero for tiles at or
  // above the diagonal (m <= kb) and rows past n. Predicated loads, no branch: all in flight.
  __device__ static void load_tiles(T (&lv)[TB][32], const Strided<const T> l, const int n,
                                    const int lane, const int m0, const int kb, const int k0,
                                    T* const stage) {
    const int i0 = 32 * m0;
    rows_of_tiles(lv, l, lane, i0, k0, stage, [&](const int t, const int r, int) {
      return m0 + t < M && m0 + t > kb && i0 + 32 * t + r < n;
    });
  }
#endif

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

// The dense solve: a warp per right-hand side.
template <class T, int M>
struct PotrsWarp {
  Strided<const T> l;
  Strided<T> b;
  int n;

  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Kokkos::Cuda>::member_type& member) const {
#ifdef __CUDA_ARCH__
    // The team is one warp; its league rank the right-hand side.
    PotrsWarpColumn<T, M>::solve(member.team_rank(), n, l, b.shifted(0, member.league_rank()),
                                 nullptr);
#else
    (void)member;
#endif
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

// batched::potrs: a warp per matrix, each right-hand side in turn. Src(t, n, nrhs, l, b)
// gives league member t's matrix (order, columns of B, factor as L, B) or false to skip it
// (a failed factorization).
template <class Src, class T, int M, bool Staged>
struct BatchedPotrsWarp {
  using Shared = Kokkos::View<T*, Kokkos::Cuda::scratch_memory_space,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Src src;

  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Kokkos::Cuda>::member_type& member) const {
#ifdef __CUDA_ARCH__
    using W = PotrsWarpColumn<T, M, Staged>;
    T* stage = nullptr;
    if constexpr (Staged || M == 1) stage = Shared(member.team_scratch(0), W::kStage).data();
    int n = 0, nrhs = 0;
    Strided<const T> l{};
    Strided<T> b{};
    if (!src(member.league_rank(), n, nrhs, l, b)) return;
    for (int r = 0; r < nrhs; ++r) W::solve(member.team_rank(), n, l, b.shifted(0, r), stage);
#else
    (void)member;
#endif
  }
};

template <class T, int M, bool Staged, class Src>
void launch_batched_potrs_warp(const Kokkos::Cuda& exec, const char* label, const int count,
                               const Src& src) {
  Kokkos::TeamPolicy<Kokkos::Cuda> policy(exec, count, 32);
  if (Staged || M == 1)
    policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(T) * PotrsWarpColumn<T, M, Staged>::kStage));
  Kokkos::parallel_for(label, policy, BatchedPotrsWarp<Src, T, M, Staged>{src});
}

// `count` matrices of orders up to max_n <= kPotrsWarpMaxN; staged: the factors are row-major.
template <class T, class Src>
void batched_potrs_warp(const Kokkos::Cuda& exec, const char* label, const int count,
                        const int max_n, const bool staged, const Src& src) {
  if (count <= 0) return;
  const int m = (max_n + 31) / 32;
  auto go = [&](auto mc) {
    constexpr int Mc = decltype(mc)::value;
    if (staged)
      launch_batched_potrs_warp<T, Mc, true>(exec, label, count, src);
    else
      launch_batched_potrs_warp<T, Mc, false>(exec, label, count, src);
  };
  if (m <= 1) return go(std::integral_constant<int, 1>());
  if (m <= 2) return go(std::integral_constant<int, 2>());
  if (m <= 4) return go(std::integral_constant<int, 4>());
  go(std::integral_constant<int, 8>());
}

// The 32 x 32 diagonal blocks' inverses for PotrsTeam, a warp per block: lane j solves
// L(k, k) x = e_j by substitution from the staged block (rows and columns past n as the
// identity). Stored twice, each read coalesced: fwd[32 q + i] = inv(i, q) (row i of the
// inverse to lane i), bwd[32 q + j] = inv(q, j) (column j to lane j).
template <class T>
struct PotrsTeamInverse {
  using Shared = Kokkos::View<T*, Kokkos::Cuda::scratch_memory_space,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Strided<const T> l;
  T* inv;  // 2 x 1024 per block: fwd then bwd
  int n;

  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Kokkos::Cuda>::member_type& member) const {
#ifdef __CUDA_ARCH__
    Shared a(member.team_scratch(0), 32 * 33);
    const int j = member.team_rank(), kb = member.league_rank(), k0 = 32 * kb;
    const int kn = imin(32, n - k0);
#pragma unroll 4
    for (int c = 0; c < 32; ++c)  // lane j reads row j (coalesced down L's columns)
      a(j * 33 + c) = j < kn && c < kn ? (c <= j ? l(k0 + j, k0 + c) : T(0)) : T(j == c);
    __syncwarp();
    T x[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      T s = T(i == j);
#pragma unroll
      for (int k = 0; k < i; ++k) s -= a(i * 33 + k) * x[k];  // x[k] = 0 for k < j
      x[i] = s / a(i * 33 + i);
    }
    T* const fwd = inv + std::size_t(2048) * kb;
    T* const bwd = fwd + 1024;
#pragma unroll
    for (int q = 0; q < 32; ++q) {
      bwd[32 * q + j] = x[q];
      fwd[32 * j + q] = x[q];
    }
#else
    (void)member;
#endif
  }
};

// A team of W warps per right-hand side, for orders where one warp's chain of tiles is too
// long. 32-row block b belongs to warp b % W (row lane in its element b / W), so each step's
// updates spread over every warp. Step k, after a barrier: the owner of block k + 1 applies
// block k's solved values to it and solves it by its diagonal block's inverse (a product:
// 32 independent shuffles, where substitution was 32 dependent steps), publishing its values
// through shared memory (two buffers: the others still read block k's); then every warp
// applies block k to its blocks below k + 1. Backward alike with L^T: block k's values reach
// block j < k through tile (k, j) read down its columns (lane i multiplies its row by its own
// x_i), summed across the warp by the reduce-scatter.
template <class T, int W, int M>
struct PotrsTeam {
  using Shared = Kokkos::View<T*, Kokkos::Cuda::scratch_memory_space,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Strided<const T> l;
  Strided<T> b;
  const T* inv;  // PotrsTeamInverse's blocks
  int n;
  static constexpr int TB = 2;  // tiles whose loads are in flight together

  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Kokkos::Cuda>::member_type& member) const {
#ifdef __CUDA_ARCH__
    Shared xs(member.team_scratch(0), 64);  // block k's values in 32 (k % 2)
    const int tid = member.team_rank(), lane = tid & 31, w = tid >> 5;
    const int r = member.league_rank();
    const int nb = (n + 31) / 32;
    T y[M];
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = 32 * (w + W * m) + lane;
      y[m] = i < n ? b(i, r) : T(0);
    }
    // Forward, L Y = B.
    if (w == 0) {
      y[0] = apply_inverse(y[0], lane, 0, false);
      xs(lane) = y[0];
    }
    member.team_barrier();
#pragma unroll 1
    for (int kb = 0; kb + 1 < nb; ++kb) {
      const int nx = kb + 1;
      const T xk = xs(32 * (kb & 1) + lane);
      if (nx % W == w) {
        const int i = 32 * nx + lane;
        T lv[32];
#pragma unroll
        for (int q = 0; q < 32; ++q) lv[q] = i < n ? l(i, 32 * kb + q) : T(0);
        prefetch_inverse(lane, nx, false);
        T z = PotrsWarpColumn<T, M>::take(y, nx / W) - dot_shuffled(lv, xk);
        z = apply_inverse(z, lane, nx, false);
        PotrsWarpColumn<T, M>::put(y, nx / W, z);
        xs(32 * (nx & 1) + lane) = z;
      }
      forward_tiles(y, lane, w, nx, kb, &xs(32 * (kb & 1)));
      member.team_barrier();
    }
    // Backward, L^T X = Y.
    if ((nb - 1) % W == w) {
      T z = PotrsWarpColumn<T, M>::take(y, (nb - 1) / W);
      z = apply_inverse(z, lane, nb - 1, true);
      PotrsWarpColumn<T, M>::put(y, (nb - 1) / W, z);
      xs(32 * ((nb - 1) & 1) + lane) = z;
    }
    member.team_barrier();
#pragma unroll 1
    for (int kb = nb - 1; kb > 0; --kb) {
      const int row = 32 * kb + lane, nx = kb - 1;
      const T xk = row < n ? xs(32 * (kb & 1) + lane) : T(0);
      if (nx % W == w) {
        T p[32];
#pragma unroll
        for (int q = 0; q < 32; ++q) p[q] = (row < n ? l(row, 32 * nx + q) : T(0)) * xk;
        prefetch_inverse(lane, nx, true);
        warp_reduce_scatter(p, lane);
        T z = PotrsWarpColumn<T, M>::take(y, nx / W) - p[0];
        z = apply_inverse(z, lane, nx, true);
        PotrsWarpColumn<T, M>::put(y, nx / W, z);
        xs(32 * (nx & 1) + lane) = z;
      }
      backward_tiles(y, lane, w, nx, kb, xk);
      member.team_barrier();
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = 32 * (w + W * m) + lane;
      if (i < n) b(i, r) = y[m];
    }
#else
    (void)member;
#endif
  }

#ifdef __CUDA_ARCH__
  // sum_q v[q] x_q, x_q in lane q: four partial sums (a quarter of the dependent adds).
  __forceinline__ __device__ static T dot_shuffled(const T (&v)[32], const T x) {
    T s[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll
    for (int q = 0; q < 32; ++q) s[q & 3] += v[q] * __shfl_sync(0xffffffffu, x, q);
    return (s[0] + s[1]) + (s[2] + s[3]);
  }
  // inv(kb) z (forward) or inv(kb)^T z (backward), z_q in lane q; rows past n come out 0.
  __forceinline__ __device__ T apply_inverse(const T z, const int lane, const int kb,
                                             const bool back) const {
    const T* const f = inv + std::size_t(2048) * kb + (back ? 1024 : 0);
    T v[32];
#pragma unroll
    for (int q = 0; q < 32; ++q) v[q] = f[32 * q + lane];
    return dot_shuffled(v, z);
  }
  // The inverse's lines this lane will read, into L1 while the tile's loads are out.
  __forceinline__ __device__ void prefetch_inverse(const int lane, const int kb,
                                                   const bool back) const {
    const T* const f = inv + std::size_t(2048) * kb + (back ? 1024 : 0);
    const char* const c = reinterpret_cast<const char*>(f + 32 * lane);  // 32 x 32 sizeof(T)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(c));
    if (sizeof(T) == 8) asm volatile("prefetch.global.L1 [%0];" ::"l"(c + 128));
  }
  // Forward: block column kc's solved values (x_q in xs[q], shared) to this warp's blocks
  // below block nx, TB tiles' loads in flight at once. The values are read from shared
  // memory at each use (volatile): shuffled once and kept across the tiles, they held 64
  // registers.
  __forceinline__ __device__ void forward_tiles(T (&y)[M], const int lane, const int w,
                                                const int nx, const int kc,
                                                const T* const xs) const {
    const volatile T* const xv = xs;
#pragma unroll
    for (int m0 = 0; m0 < M; m0 += TB) {
      if (w + W * (m0 + TB - 1) <= nx) continue;
      T lv[TB][32];
#pragma unroll
      for (int t = 0; t < TB; ++t) {
        const int i = 32 * (w + W * (m0 + t)) + lane;
        const bool in = m0 + t < M && w + W * (m0 + t) > nx && i < n;
#pragma unroll
        for (int q = 0; q < 32; ++q) lv[t][q] = in ? l(i, 32 * kc + q) : T(0);
      }
#pragma unroll
      for (int q = 0; q < 32; ++q) {
        const T x = xv[q];
#pragma unroll
        for (int t = 0; t < TB; ++t)
          if (m0 + t < M) y[m0 + t] -= lv[t][q] * x;
      }
    }
  }
  // Backward: block row kr's solved values (this lane's own x_i in xk) to this warp's blocks
  // above block nx: tile (kr, j) times x, summed down its rows by the reduce-scatter.
  __forceinline__ __device__ void backward_tiles(T (&y)[M], const int lane, const int w,
                                                 const int nx, const int kr, const T xk) const {
    const int row = 32 * kr + lane;
#pragma unroll
    for (int m0 = 0; m0 < M; m0 += TB) {
      if (w + W * m0 >= nx) continue;
      T p[TB][32];
#pragma unroll
      for (int t = 0; t < TB; ++t) {
        const int j0 = 32 * (w + W * (m0 + t));
        const bool in = m0 + t < M && w + W * (m0 + t) < nx && row < n;
#pragma unroll
        for (int q = 0; q < 32; ++q) p[t][q] = in ? l(row, j0 + q) : T(0);
      }
#pragma unroll
      for (int t = 0; t < TB; ++t) {
        if (m0 + t >= M) continue;
#pragma unroll
        for (int q = 0; q < 32; ++q) p[t][q] *= xk;
        warp_reduce_scatter(p[t], lane);
        y[m0 + t] -= p[t][0];
      }
    }
  }
#endif
};

template <class T>
struct PotrsTeamWork {
  Kokkos::View<T*, Kokkos::CudaSpace> inv;
  void reserve(const int blocks) {
    const std::size_t len = std::size_t(2048) * blocks;
    if (inv.extent(0) < len)
      inv = Kokkos::View<T*, Kokkos::CudaSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::potrs_team_inv"), len);
  }
};

template <class T, int W, int M>
void launch_potrs_team_per_rhs(const Kokkos::Cuda& exec, const int n, const int nrhs,
                       const Strided<const T> l, const Strided<T> b, const T* inv) {
  using F = PotrsTeam<T, W, M>;
  Kokkos::TeamPolicy<Kokkos::Cuda> policy(exec, nrhs, 32 * W);
  policy.set_scratch_size(0, Kokkos::PerTeam(F::Shared::shmem_size(64)));
  Kokkos::parallel_for("kolesky::potrs_team_per_rhs", policy, F{l, b, inv, n});
}

// L L^T X = B in place, 0 < n <= kPotrsTeamMaxN (made for n > kPotrsWarpMaxN): the
// diagonal blocks' inverses (one launch), then a team per right-hand side.
template <class T>
void potrs_team_per_rhs(const Kokkos::Cuda& exec, const int n, const int nrhs,
                        const Strided<const T> l, const Strided<T> b) {
  if (n > kPotrsTeamMaxN)  // a team holds 8 rows a lane
    throw std::logic_error("kolesky: potrs_team_per_rhs: n = " + std::to_string(n) + " > " +
                           std::to_string(kPotrsTeamMaxN));
  if (n <= 0 || nrhs <= 0) return;
  const int nb = (n + 31) / 32;
  auto& work = per_stream<PotrsTeamWork<T>>(exec);
  work.reserve(nb);
  {
    using F = PotrsTeamInverse<T>;
    Kokkos::TeamPolicy<Kokkos::Cuda> policy(exec, nb, 32);
    policy.set_scratch_size(0, Kokkos::PerTeam(F::Shared::shmem_size(32 * 33)));
    Kokkos::parallel_for("kolesky::potrs_team_inverse", policy, F{l, work.inv.data(), n});
  }
  const T* const inv = work.inv.data();
  constexpr int W = kPotrsTeamWarps;
  const int m = (n + 32 * W - 1) / (32 * W);
  if (m <= 2) return launch_potrs_team_per_rhs<T, W, 2>(exec, n, nrhs, l, b, inv);
  if (m <= 4) return launch_potrs_team_per_rhs<T, W, 4>(exec, n, nrhs, l, b, inv);
  launch_potrs_team_per_rhs<T, W, 8>(exec, n, nrhs, l, b, inv);
}

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace impl
}  // namespace kolesky
