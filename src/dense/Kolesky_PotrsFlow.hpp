// potrs for a few right-hand sides on CUDA in one launch: L Y = B and L^T X = Y.
//
// With one right-hand side the solve reads the factor twice and does 2 flops per element it
// reads: it is bandwidth-bound, and the blocked TRSM chain (cuBLAS or cuSOLVER: ~2 x n / 64
// dependent launches) runs it 3.5-15x slower than the matrix can be read. Here each thread
// block takes one block row of 64 rows of one sweep: it reads its row of 64 x 64 tiles
// (prefetched one tile ahead, none of them depends on the solution), applies each solved
// block of the solution as soon as it is published, and solves its diagonal block by the
// block's inverse, computed on chip while it waits. Only the last tile of each row and the
// inverse's product are on the chain between two block rows.
//
// Block rows are taken by ticket in launch order (forward rows 0, 1, ..., then backward rows
// last to first), and every block waits only on rows with smaller tickets, held by blocks that
// are already running: no occupancy assumption, no deadlock. A solved block is published as its
// values: the blocks that need it poll the values themselves in a workspace that holds a
// signalling NaN until they are written (arithmetic never produces one), so one trip to L2
// carries both the "ready" and the data. The workspace is reset to that pattern by the blocks
// that read it last, and the ticket counter by the last block out: a launch needs no memset,
// and a replayed CUDA graph starts from the same state.
#pragma once
#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace impl {

// Right-hand sides up to which CUDA's potrs takes this path (four per launch); above it the
// blocked TRSM, which has the flops to fill the device.
constexpr int kPotrsFlowMaxRhs = 16;

// Measurement knob (perf_test): 0 sends CUDA's potrs to the blocked TRSM at every nrhs, 2 to
// this solve wherever it applies (nrhs <= kPotrsFlowMaxRhs), 1 (default) picks.
struct PotrsKnobs : Knobs<PotrsKnobs> {
  int flow = 1;
};

// Where the one-launch solve wins (H100, round 37, double, n = 128-1000 x nrhs = 1-16): at
// every point but 13-16 right-hand sides at n < 256 (four launches of ~25 us: 0.0964 against
// the TRSM's 0.0814 ms at n = 128, nrhs = 16); 1.1-5.2x cuSOLVER where it is taken.
// potrs_strided asks the warp and team solves (Kolesky_PotrsWarp.hpp) first.
inline bool potrs_flow_wins(const int n, const int nrhs) {
  const int knob = PotrsKnobs::get().flow;
  if (knob != 1) return knob == 2 && nrhs <= kPotrsFlowMaxRhs;
  return nrhs <= 12 || (nrhs <= kPotrsFlowMaxRhs && n >= 256);
}

#ifdef KOKKOS_ENABLE_CUDA

constexpr int kPotrsFlowTile = 64;
constexpr int kPotrsFlowThreads = 4 * kPotrsFlowTile;

template <class T>
struct PotrsFlowArgs {
  const T* l;
  std::ptrdiff_t lrs, lcs;
  T* b;  // first right-hand side of this launch
  std::ptrdiff_t brs, bcs;
  int n, nr, nt;  // order, right-hand sides in this launch (<= NR), block rows
  T* y;           // forward sweep's solution, y[k * ldw + i]; "not yet" until written
  T* x;           // backward sweep's solution, the same
  int ldw;
  unsigned* ctr;  // ticket, blocks done
  // When set (perf_test --potrs-trace): per ticket, global-timer ns at its start, its inverse
  // done, its last tile's solution block arrived, its own block published.
  unsigned long long* trace;
};

// "Not written yet": a signalling NaN, which no arithmetic result is.
template <class T>
struct PotrsFlowEmpty;
template <>
struct PotrsFlowEmpty<double> {
  using Bits = unsigned long long;
  static constexpr Bits kBits = 0x7ff4a5a5a5a5a5a5ull;
};
template <>
struct PotrsFlowEmpty<float> {
  using Bits = unsigned;
  static constexpr Bits kBits = 0x7fa5a5a5u;
};

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ unsigned long long potrs_flow_clock() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(c));
  return c;
}

// Spin on a published value until it is written (volatile: from L2, never a stale L1 line).
template <class T>
__device__ __forceinline__ T potrs_flow_poll(const T* p) {
  using E = PotrsFlowEmpty<T>;
  const volatile typename E::Bits* q = reinterpret_cast<const volatile typename E::Bits*>(p);
  typename E::Bits v = *q;
  while (v == E::kBits) {
    __nanosleep(20);
    v = *q;
  }
  T r;
  memcpy(&r, &v, sizeof(T));
  return r;
}
template <class T>
__device__ __forceinline__ void potrs_flow_clear(T* p) {
  using E = PotrsFlowEmpty<T>;
  *reinterpret_cast<volatile typename E::Bits*>(p) = E::kBits;
}
#endif

// Shared memory: the diagonal tile (then the reduction buffer), its inverse, the block's
// right-hand side, four partial sums per row, the inverse's products.
template <class T, int NR>
constexpr std::size_t potrs_flow_smem() {
  return (2 * kPotrsFlowTile * (kPotrsFlowTile + 1) + 5 * NR * kPotrsFlowTile +
          kPotrsFlowTile * kPotrsFlowTile / 4) *
         sizeof(T);
}

#if defined(__CUDA_ARCH__)
// One level of the diagonal block's inverse: pairs of H x H inverses on xi's diagonal into
// 2H x 2H ones, tmp = L21 X11, then X21 = -X22 tmp. A thread takes R outputs of one column,
// R independent chains; the k loops run over whole blocks (X11 and X22 are triangular with
// their zeros stored, so the terms past the triangle add nothing).
template <int TS, int LD, int H, int NT, class T>
__device__ __forceinline__ void potrs_flow_inv_level(const T* ld, T* xi, T* tmp, const int t) {
  constexpr int R = (TS / (2 * H)) * H * H / NT;
  static_assert(R >= 1 && NT % H == 0, "a whole column per thread");
  const int j = t % H;
  int base[R], row[R], slot[R];
#pragma unroll
  for (int w = 0; w < R; ++w) {
    const int e = t + NT * w, p = e / (H * H);
    base[w] = p * 2 * H;
    row[w] = (e / H) % H;
    slot[w] = p * H;
  }
  T s[R];
#pragma unroll
  for (int w = 0; w < R; ++w) s[w] = 0;
#pragma unroll
  for (int k = 0; k < H; ++k)
#pragma unroll
    for (int w = 0; w < R; ++w)
      s[w] += ld[(base[w] + H + row[w]) * LD + base[w] + k] * xi[(base[w] + k) * LD + base[w] + j];
#pragma unroll
  for (int w = 0; w < R; ++w) tmp[(slot[w] + row[w]) * H + j] = s[w];
  __syncthreads();
#pragma unroll
  for (int w = 0; w < R; ++w) s[w] = 0;
#pragma unroll
  for (int k = 0; k < H; ++k)
#pragma unroll
    for (int w = 0; w < R; ++w)
      s[w] += xi[(base[w] + H + row[w]) * LD + base[w] + H + k] * tmp[(slot[w] + k) * H + j];
#pragma unroll
  for (int w = 0; w < R; ++w) xi[(base[w] + H + row[w]) * LD + base[w] + j] = -s[w];
  __syncthreads();
}
#endif

// Two blocks per SM where the registers allow (one right-hand side in double, up to two in
// float); the wider ones keep their 16 x NR partial sums in registers with one.
template <class T, int NR>
__global__ void __launch_bounds__(kPotrsFlowThreads, NR * sizeof(T) <= 8 ? 2 : 1)
    potrs_flow_kernel(const PotrsFlowArgs<T> a) {
#if defined(__CUDA_ARCH__)
  constexpr int TS = kPotrsFlowTile, LD = TS + 1, Q = TS / 4;
  extern __shared__ __align__(16) unsigned char potrs_flow_raw[];
  T* const ld = reinterpret_cast<T*>(potrs_flow_raw);  // TS x LD: L's diagonal tile, then sums
  T* const xi = ld + TS * LD;                           // TS x LD: its inverse (lower)
  T* const v = xi + TS * LD;                            // NR x TS: the right-hand side
  T* const part = v + NR * TS;                          // 4 x NR x TS: partial sums
  T* const tmp = part + 4 * NR * TS;                    // TS * TS / 4: the inverse's products
  __shared__ int s_ticket;

  const int t = int(threadIdx.x), lane = t & 31;
  const int nt = a.nt;
  if (t == 0) s_ticket = int(atomicAdd(&a.ctr[0], 1u));
  __syncthreads();
  const int ticket = s_ticket;
  unsigned long long* const trace = a.trace != nullptr && t == 0 ? a.trace + 4 * ticket : nullptr;
  if (trace) trace[0] = potrs_flow_clock();
  const bool fwd = ticket < nt;
  const int bi = fwd ? ticket : 2 * nt - 1 - ticket;
  const int r0 = bi * TS, m = min(TS, a.n - r0);
  const T* const src = fwd ? a.y : a.x;  // where this sweep's solved blocks appear

  // The sweep's matrix M: L (forward) or L^T (backward), M(i, j) = mp[i * mrs + j * mcs].
  const std::ptrdiff_t mrs = fwd ? a.lrs : a.lcs, mcs = fwd ? a.lcs : a.lrs;
  const T* const mp = a.l;
  const auto xat = [&](const int i, const int k) -> T* { return a.b + i * a.brs + k * a.bcs; };

  // This block's right-hand side, off the chain: the forward sweep's from B now.
  T rhs[NR];
#pragma unroll
  for (int k = 0; k < NR; ++k) rhs[k] = fwd && t < m && k < a.nr ? *xat(r0 + t, k) : T(0);

  // L's diagonal tile in shared memory (identity beyond the order), read along its
  // contiguous direction.
  {
    const bool along_rows = a.lrs == 1;
    for (int e = t; e < TS * TS; e += kPotrsFlowThreads) {
      const int r = along_rows ? e % TS : e / TS, c = along_rows ? e / TS : e % TS;
      T val = r == c ? T(1) : T(0);
      if (r < m && c < m && c <= r) val = a.l[(r0 + r) * a.lrs + (r0 + c) * a.lcs];
      ld[r * LD + c] = val;
      // The inverse's blocks above its 8 x 8 diagonal blocks are zero.
      if (c / 8 > r / 8) xi[r * LD + c] = T(0);
    }
    __syncthreads();
  }
  // Its inverse (LAPACK trtri's recursion, every thread): the eight 8 x 8 diagonal blocks by
  // substitution, then pairs of h x h inverses into 2h x 2h ones, X21 = -X22 (L21 X11).
  // Called after the first tile's loads are issued, so that they arrive meanwhile; then the
  // backward sweep's right-hand side (the forward solution block: polled only now, so that
  // waiting for it does not hold the inverse back).
  const auto invert = [&]() {
    if (t < TS) {
      const int b0 = (t / 8) * 8, c = t % 8;
      T x[8];
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        T s = r == c ? T(1) : T(0);
#pragma unroll
        for (int k = 0; k < r; ++k) s -= ld[(b0 + r) * LD + b0 + k] * x[k];
        x[r] = r < c ? T(0) : s / ld[(b0 + r) * LD + b0 + r];
      }
#pragma unroll
      for (int r = 0; r < 8; ++r) xi[(b0 + r) * LD + b0 + c] = x[r];
    }
    __syncthreads();
    static_assert(TS == 64, "three levels: 8 -> 16 -> 32 -> 64");
    potrs_flow_inv_level<TS, LD, 8, kPotrsFlowThreads>(ld, xi, tmp, t);
    potrs_flow_inv_level<TS, LD, 16, kPotrsFlowThreads>(ld, xi, tmp, t);
    potrs_flow_inv_level<TS, LD, 32, kPotrsFlowThreads>(ld, xi, tmp, t);
    if (trace) trace[1] = potrs_flow_clock();
    if (!fwd && t < m)
#pragma unroll
      for (int k = 0; k < NR; ++k)
        if (k < a.nr) rhs[k] = potrs_flow_poll(a.y + k * a.ldw + r0 + t);
  };

  // Tiles of this row in the order their solution blocks appear.
  const int ntiles = fwd ? bi : nt - 1 - bi;
  const auto tile_of = [&](const int s) { return fwd ? s : nt - 1 - s; };

  const int g = t / TS;  // quarter of the tile's columns (A) or rows (B)
  const int tr = t % TS;
  // A: the tile's rows are contiguous (or neither direction is): thread = row tr, columns
  // g*Q .. g*Q+Q-1, a partial sum per right-hand side. B: its columns are contiguous: thread
  // = column tr, rows g*Q .. g*Q+Q-1, a partial sum per row, reduced at the end.
  const bool case_b = mrs != 1 && mcs == 1;
  if (!case_b) {
    T acc[2][NR];  // two chains (even and odd columns): half the FMA latency per tile
#pragma unroll
    for (int k = 0; k < NR; ++k) acc[0][k] = acc[1][k] = 0;
    if (ntiles == 0) invert();
    if (ntiles > 0) {
      T cur[Q], nxt[Q];
      const auto load = [&](const int j, T* dst) {
        const int c0 = j * TS + g * Q;
        const T* base = mp + (r0 + tr) * mrs + std::ptrdiff_t(c0) * mcs;
#pragma unroll
        for (int q = 0; q < Q; ++q) dst[q] = tr < m && c0 + q < a.n ? base[q * mcs] : T(0);
      };
      load(tile_of(0), cur);
      invert();
      for (int s = 0; s < ntiles; ++s) {
        const int j = tile_of(s);
        if (s + 1 < ntiles) load(tile_of(s + 1), nxt);
        const int xi0 = j * TS + g * Q + (lane & (Q - 1));
        T xl[NR];
#pragma unroll
        for (int k = 0; k < NR; ++k)
          xl[k] = k < a.nr && xi0 < a.n ? potrs_flow_poll(src + k * a.ldw + xi0) : T(0);
        if (trace && s == ntiles - 1) trace[2] = potrs_flow_clock();
#pragma unroll
        for (int q = 0; q < Q; ++q)
#pragma unroll
          for (int k = 0; k < NR; ++k) acc[q & 1][k] += cur[q] * __shfl_sync(0xffffffffu, xl[k], q);
        if (s + 1 < ntiles)
#pragma unroll
          for (int q = 0; q < Q; ++q) cur[q] = nxt[q];
      }
    }
#pragma unroll
    for (int k = 0; k < NR; ++k) part[(g * NR + k) * TS + tr] = acc[0][k] + acc[1][k];
  } else {
    T acc[Q][NR];
#pragma unroll
    for (int q = 0; q < Q; ++q)
#pragma unroll
      for (int k = 0; k < NR; ++k) acc[q][k] = 0;
    if (ntiles == 0) invert();
    if (ntiles > 0) {
      T cur[Q], nxt[Q];
      const auto load = [&](const int j, T* dst) {
        const int c = j * TS + tr;
        const T* base = mp + std::ptrdiff_t(r0 + g * Q) * mrs + c;
#pragma unroll
        for (int q = 0; q < Q; ++q) dst[q] = g * Q + q < m && c < a.n ? base[q * mrs] : T(0);
      };
      load(tile_of(0), cur);
      invert();
      for (int s = 0; s < ntiles; ++s) {
        const int j = tile_of(s);
        if (s + 1 < ntiles) load(tile_of(s + 1), nxt);
        const int xr = j * TS + tr;
        T xv[NR];
#pragma unroll
        for (int k = 0; k < NR; ++k)
          xv[k] = k < a.nr && xr < a.n ? potrs_flow_poll(src + k * a.ldw + xr) : T(0);
        if (trace && s == ntiles - 1) trace[2] = potrs_flow_clock();
#pragma unroll
        for (int q = 0; q < Q; ++q)
#pragma unroll
          for (int k = 0; k < NR; ++k) acc[q][k] += cur[q] * xv[k];
        if (s + 1 < ntiles)
#pragma unroll
          for (int q = 0; q < Q; ++q) cur[q] = nxt[q];
      }
    }
    // Sum over the tile's columns: through shared memory (ld is free after the inverse), one
    // right-hand side at a time.
#pragma unroll
    for (int k = 0; k < NR; ++k) {
      __syncthreads();
#pragma unroll
      for (int q = 0; q < Q; ++q) ld[(g * Q + q) * LD + tr] = acc[q][k];
      __syncthreads();
      T s = 0;
#pragma unroll
      for (int q = 0; q < Q; ++q) s += ld[tr * LD + g * Q + q];
      part[(g * NR + k) * TS + tr] = s;
    }
  }

  // The block's right-hand side less the applied tiles. The backward sweep's is the forward
  // sweep's solution block, not needed any more (every forward block that applied it has
  // finished: this block's last tile came after the whole forward sweep): clear it.
  __syncthreads();
  if (t < TS) {
#pragma unroll
    for (int k = 0; k < NR; ++k) {
      T s = rhs[k];
      if (!fwd && t < m && k < a.nr) potrs_flow_clear(a.y + k * a.ldw + r0 + t);
      s -= part[(0 * NR + k) * TS + t] + part[(1 * NR + k) * TS + t] +
           part[(2 * NR + k) * TS + t] + part[(3 * NR + k) * TS + t];
      v[k * TS + t] = s;
    }
  }
  __syncthreads();
  // Solution block = inverse (forward) or its transpose (backward) times the right-hand side.
#pragma unroll
  for (int k = 0; k < NR; ++k) {
    T s[2] = {0, 0};
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      const int c = g * Q + q;
      s[q & 1] += (fwd ? xi[tr * LD + c] : xi[c * LD + tr]) * v[k * TS + c];
    }
    part[(g * NR + k) * TS + tr] = s[0] + s[1];
  }
  __syncthreads();
  if (t < m) {
#pragma unroll
    for (int k = 0; k < NR; ++k)
      if (k < a.nr) {
        const T val = part[(0 * NR + k) * TS + t] + part[(1 * NR + k) * TS + t] +
                      part[(2 * NR + k) * TS + t] + part[(3 * NR + k) * TS + t];
        *(volatile T*)((fwd ? a.y : a.x) + k * a.ldw + r0 + t) = val;
        if (!fwd) *xat(r0 + t, k) = val;
      }
  }
  // The last block out clears the backward solution (its readers have all finished) and the
  // counters for the next launch.
  __syncthreads();
  if (trace) trace[3] = potrs_flow_clock();
  if (t == 0) {
    __threadfence();
    s_ticket = int(atomicAdd(&a.ctr[1], 1u)) == 2 * nt - 1;
  }
  __syncthreads();
  if (s_ticket) {
    for (int e = t; e < a.nr * a.ldw; e += kPotrsFlowThreads) potrs_flow_clear(a.x + e);
    if (t == 0) {
      a.ctr[0] = 0;
      a.ctr[1] = 0;
    }
    __threadfence();
  }
#else
  (void)a;
#endif
}

// Workspace per CUDA stream and scalar, kept for the process: the counters (zero) and the two
// solution buffers (all "not written"; every launch leaves them so), grown when needed.
template <class T>
struct PotrsFlowWork {
  Kokkos::View<unsigned*, Kokkos::CudaSpace> ctr;
  Kokkos::View<T*, Kokkos::CudaSpace> y, x;
  int ldw = 0;
  void reserve(const Kokkos::Cuda& exec, const int rows) {
    if (ctr.extent(0) == 0) ctr = Kokkos::View<unsigned*, Kokkos::CudaSpace>("kolesky::potrs_flow_ctr", 2);
    if (rows > ldw) {
      const std::size_t len = std::size_t(4) * rows;  // four right-hand sides a launch
      y = Kokkos::View<T*, Kokkos::CudaSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::potrs_flow_y"), len);
      x = Kokkos::View<T*, Kokkos::CudaSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::potrs_flow_x"), len);
      using Bits = typename PotrsFlowEmpty<T>::Bits;
      static_assert(sizeof(Bits) == sizeof(T), "one word per value");
      Bits* const py = reinterpret_cast<Bits*>(y.data());
      Bits* const px = reinterpret_cast<Bits*>(x.data());
      Kokkos::parallel_for(
          "kolesky::potrs_flow_clear", Kokkos::RangePolicy<Kokkos::Cuda>(exec, 0, len),
          KOKKOS_LAMBDA(const std::size_t i) {
            py[i] = PotrsFlowEmpty<T>::kBits;
            px[i] = PotrsFlowEmpty<T>::kBits;
          });
      ldw = rows;
    }
    Kokkos::fence();  // the counters were zeroed on the default instance
  }
};

template <class T, int NR>
void launch_potrs_flow(const Kokkos::Cuda& exec, const PotrsFlowArgs<T>& args) {
  constexpr std::size_t bytes = potrs_flow_smem<T, NR>();
  auto kernel = potrs_flow_kernel<T, NR>;
  static std::atomic<unsigned long long> opted{0};
  opt_in_shared(opted, reinterpret_cast<const void*>(kernel), exec, bytes,
                "kolesky::potrs: the solve kernel");
  kernel<<<unsigned(2 * args.nt), kPotrsFlowThreads, bytes, exec.cuda_stream()>>>(args);
  check_launch("kolesky::potrs: the solve kernel");
}

// L L^T X = B in place, nrhs <= kPotrsFlowMaxRhs (four per launch).
template <class T>
void potrs_flow(const Kokkos::Cuda& exec, const int n, const int nrhs, const Strided<const T> l,
                const Strided<T> b, unsigned long long* const trace = nullptr) {
  if (n <= 0 || nrhs <= 0) return;
  const int nt = (n + kPotrsFlowTile - 1) / kPotrsFlowTile;
  auto& work = per_stream<PotrsFlowWork<T>>(exec);
  if (work.ldw < nt * kPotrsFlowTile) work.reserve(exec, nt * kPotrsFlowTile);
  PotrsFlowArgs<T> args{l.p,    l.rs,   l.cs,          b.p,      b.rs,
                        b.cs,   n,      0,             nt,       work.y.data(),
                        work.x.data(), work.ldw, work.ctr.data(), trace};
  for (int k0 = 0; k0 < nrhs; k0 += 4) {
    args.b = b.p + k0 * b.cs;
    args.nr = nrhs - k0 < 4 ? nrhs - k0 : 4;
    if (args.nr == 1)
      launch_potrs_flow<T, 1>(exec, args);
    else if (args.nr == 2)
      launch_potrs_flow<T, 2>(exec, args);
    else
      launch_potrs_flow<T, 4>(exec, args);
  }
}

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace impl
}  // namespace kolesky
