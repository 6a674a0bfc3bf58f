// Blocked Cholesky of one large matrix and the blocked triangular solves, built from the
// level-3 operations of dense/Kolesky_Blas3.hpp (native Kokkos kernels or vendor BLAS).
//
// All on the lower triangle of a strided matrix (Upper reaches here transposed). `info` is a
// one-element device View: the first failing minor, 1-based; kernels that see it non-zero do
// nothing, so the first failure is the one reported.
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Blas3.hpp"
#include "dense/Kolesky_PotrfDataflow.hpp"
#include "dense/Kolesky_PotrfTrace.hpp"
#include "dense/Kolesky_PotrsFlow.hpp"
#include "dense/Kolesky_PotrsInverse.hpp"
#include "dense/Kolesky_PotrsWarp.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"
#include "host/Kolesky_HostRankUpdate.hpp"
#include "host/Kolesky_Potrf_Impl.hpp"

namespace kolesky {
namespace impl {

// Host diagonal blocks: copied into a column-major buffer on the stack so that every inner
// loop runs at unit stride whatever A's layout (Upper arrives transposed, i.e. row-major) and
// the compiler vectorizes it. No BLAS call and no thread-pool hand-off: with sleeping idle
// threads (OMP_WAIT_POLICY=passive) every BLAS call on a small block paid a wake-up. Up to
// kHostDiag columns (128 KB of stack in double).
constexpr int kHostDiag = 128;
// Which kernel factors a block of order n (AVX-512 core, measured against each other at
// 12-128: docs/performance_log.md, issue 17, thirteenth session): four-column groups below
// kHostChunksMin, column chunks of 32 bytes up to kHostChunks32Max (less padding), above it
// the chunk that pads n less; the chunks are 5-50 % faster than the groups from there to 128.
template <class T>
constexpr int kHostChunksMin = sizeof(T) == 4 ? 24 : 20;
template <class T>
constexpr int kHostChunks32Max = sizeof(T) == 4 ? 40 : 28;

// 1 / s for s = sqrt(d): s * (1 / d) when 1 / d is a normal number, so that the division runs
// beside the square root instead of after it (every column waits for both); within 1.5 ulp.
template <class T>
inline T host_rsqrt(const T d, const T s) {
  return d >= std::numeric_limits<T>::min() && d <= std::numeric_limits<T>::max() / 4
             ? s * (T(1) / d)
             : T(1) / s;
}

// Small blocks: columns factored four at a time (left-looking inside the group), then the
// trailing block takes the group's rank-4 update in one pass: a quarter of the loads and
// stores of column-by-column elimination.
template <class T>
int host_potrf_groups(const int n, const Strided<T> a) {
  constexpr int M = kHostDiag;
  alignas(64) T w[M * M];
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) w[j * M + i] = a(i, j);
  int info = 0;
  for (int k = 0; k < n; k += 4) {  // leaves early on a failed pivot
    const int kb = n - k < 4 ? n - k : 4;
    for (int c = k; c < k + kb; ++c) {
      T* cc = w + c * M;
      for (int p = k; p < c; ++p) {  // the group's earlier columns
        const T* cp = w + p * M;
        const T l = cp[c];
        for (int i = c; i < n; ++i) cc[i] -= cp[i] * l;
      }
      const T d = cc[c];
      if (!usable_pivot(d)) {
        info = c + 1;
        break;
      }
      const T s = std::sqrt(d), r = host_rsqrt(d, s);
      cc[c] = s;
      for (int i = c + 1; i < n; ++i) cc[i] *= r;
    }
    if (info != 0 || kb < 4) break;
    const T *c0 = w + k * M, *c1 = c0 + M, *c2 = c1 + M, *c3 = c2 + M;
    for (int j = k + 4; j < n; ++j) {
      T* cj = w + j * M;
      const T l0 = c0[j], l1 = c1[j], l2 = c2[j], l3 = c3[j];
      for (int i = j; i < n; ++i) cj[i] -= (c0[i] * l0 + c1[i] * l1) + (c2[i] * l2 + c3[i] * l3);
    }
  }
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) a(i, j) = w[j * M + i];
  return info;
}

// Rows [c, c + NC * V) of column j (NC chunks of one VB-byte vector, V entries), left-looking
// in one pass over the earlier columns k: each L(j, k) is loaded once for the NC chunks, and
// each chunk has two accumulators (even and odd k) so that the last columns' one-chunk sums
// are not one FMA latency chain. One pass per chunk instead (the kernel before) loaded
// L(j, k) once per FMA and was load-bound: float n = 113, one chunk more per column than 112,
// took 1.4x as long.
template <int NC, int VB, class T>
inline void host_chunk_rows(T* const w, const int ld, const int j, const int c) {
  using Vec = HostVec<T, VB>;
  constexpr int V = Vec::V;
  T* const cj = w + j * ld + c;
  typename Vec::type s0[NC], s1[NC], x;
  KOLESKY_UNROLL
  for (int q = 0; q < NC; ++q) Vec::load(s0[q], cj + q * V), Vec::zero(s1[q]);
  int k = 0;
  for (; k + 1 < j; k += 2) {
    const T* const p0 = w + k * ld;
    const T* const p1 = p0 + ld;
    const T l0 = p0[j], l1 = p1[j];
    KOLESKY_UNROLL
    for (int q = 0; q < NC; ++q) {
      Vec::load(x, p0 + c + q * V);
      Vec::sub_mul(s0[q], x, l0);
      Vec::load(x, p1 + c + q * V);
      Vec::sub_mul(s1[q], x, l1);
    }
  }
  if (k < j) {
    const T* const p0 = w + k * ld;
    const T l0 = p0[j];
    KOLESKY_UNROLL
    for (int q = 0; q < NC; ++q) {
      Vec::load(x, p0 + c + q * V);
      Vec::sub_mul(s0[q], x, l0);
    }
  }
  KOLESKY_UNROLL
  for (int q = 0; q < NC; ++q) {
    Vec::add(s0[q], s1[q]);
    Vec::store(cj + q * V, s0[q]);
  }
}

// Chunks per pass: float 2, double 4 (one core with AVX-512, n = 32-128: more were up to 1.4x
// slower in float, fewer up to 1.2x in double), and never more accumulators than half the
// vector registers (32 with AVX-512, else 16).
template <int VB, class T>
constexpr int host_chunks_per_pass() {
  constexpr int regs = kHostVecBytes == 64 ? 32 : 16;
  constexpr int per = VB > kHostVecBytes ? VB / kHostVecBytes : 1;  // registers per vector
  constexpr int cap = regs / 2 / (2 * per) > 0 ? regs / 2 / (2 * per) : 1;
  constexpr int want = sizeof(T) == 4 ? 2 : 4;
  return want < cap ? want : cap;
}

// The last pass's m < P chunks.
template <int NC, int VB, class T>
inline void host_chunk_rows_upto(const int m, T* const w, const int ld, const int j,
                                 const int c) {
  if (m == NC)
    host_chunk_rows<NC, VB>(w, ld, j, c);
  else if constexpr (NC > 1)
    host_chunk_rows_upto<NC - 1, VB>(m, w, ld, j, c);
}

// Left-looking by chunks of V rows: column j's rows from the chunk holding row j down to mr
// (n rounded up to a whole chunk) in passes of host_chunks_per_pass chunks, whole-vector FMAs
// with no trip count that depends on j inside a pass. The padding (rows above j in j's first
// chunk, rows n to mr) holds zeros, which stay finite and never reach the lower triangle. On
// a failed pivot the columns after it are left as they came in.
template <int VB, class T>
int host_potrf_chunks(const int n, const Strided<T> a) {
  constexpr int V = VB / int(sizeof(T)), M = kHostDiag, P = host_chunks_per_pass<VB, T>();
  const int mr = (n + V - 1) / V * V;
  // Columns an odd number of 64-byte lines apart, so that one chunk's rows of the earlier
  // columns spread over all L1 sets: 512 bytes apart (float 113-128) they met in 8 sets and
  // float 113 took 1.6x the time of 112; 1 KB apart (double 128), 1.5x.
  const int ld = mr * sizeof(T) % 128 == 0 ? mr + V : mr;
  alignas(64) T w[(M + V) * M];
  for (int j = 0; j < n; ++j) {
    T* cj = w + j * ld;
    for (int i = j / V * V; i < j; ++i) cj[i] = T(0);
    for (int i = j; i < n; ++i) cj[i] = a(i, j);
    for (int i = n; i < mr; ++i) cj[i] = T(0);
  }
  int info = 0;
  for (int j = 0; j < n; ++j) {
    T* cj = w + j * ld;
    const int i0 = j / V * V;
    int c = i0;
    for (; c + P * V <= mr; c += P * V) host_chunk_rows<P, VB>(w, ld, j, c);
    if (P > 1 && c < mr) host_chunk_rows_upto<(P > 1 ? P - 1 : 1), VB>((mr - c) / V, w, ld, j, c);
    const T d = cj[j];
    if (!usable_pivot(d)) {
      info = j + 1;
      break;
    }
    const T s = std::sqrt(d), r = host_rsqrt(d, s);
    for (int i = i0; i < mr; ++i) cj[i] *= r;
    cj[j] = s;
  }
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) a(i, j) = w[j * ld + i];
  return info;
}

// One block of order n <= kHostDiag on the calling thread; LAPACK's info.
template <class T>
int host_potrf_block(const int n, const Strided<T> a) {
  if (n < kHostChunksMin<T>) return host_potrf_groups(n, a);
  // Above kHostChunks32Max, the chunk that pads n less (64 bytes on a tie): 64-byte chunks
  // were 5-15 % slower where n is up to half a chunk past a multiple of 64 bytes.
  constexpr int V = 64 / int(sizeof(T));
  const int r = n % V;
  return n <= kHostChunks32Max<T> || (r != 0 && r <= V / 2) ? host_potrf_chunks<32>(n, a)
                                                            : host_potrf_chunks<64>(n, a);
}

// Largest diagonal block factored by one kernel. GPU: one warp, the block in registers (a
// latency chain per column, so small blocks; the batched register kernel measured ~180 us
// for one 128 x 128 matrix). Host: the calling thread's vectorized block above (no
// thread-pool hand-off between the BLAS calls); larger ones recurse into the host BLAS.
template <class Exec>
constexpr int diag_block() {
  return is_host_exec<Exec>() ? kHostDiag : 64;
}

#ifdef KOKKOS_ENABLE_CUDA
// CUDA diagonal block (n <= 64) by one warp, no barrier at all: lane l holds rows l and 32 + l
// of columns 0..31 in registers and factors them right-looking, each column's entries reaching
// the other lanes by shuffles; then rows 32..63 of columns 32..63 take the SYRK update from
// the first block (through shared memory, read as broadcasts) and are factored the same way.
// Rows and columns past n are padded with the identity, which leaves the factor unchanged.
// The per-column chain is shuffle, sqrt, reciprocal, scale (~200 cycles); the 16 x 16 team
// kernel it replaced (one barrier per column) needed ~1,900 cycles per column.
template <int W, bool Two, class T>
KOKKOS_INLINE_FUNCTION int warp_potrf_columns(const int lane, T (&x0)[W], T (&x1)[W]) {
#ifdef __CUDA_ARCH__
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const T d = __shfl_sync(0xffffffffu, x0[k], k);
    if (!usable_pivot(d)) return k + 1;  // d is the same in every lane
    const T s = sqrt(d), r = T(1) / s;
    x0[k] = lane == k ? s : x0[k] * r;
    if (Two) x1[k] *= r;
#pragma unroll
    for (int j = 0; j < W; ++j)
      if (j > k) {
        const T lj = __shfl_sync(0xffffffffu, x0[k], j);
        x0[j] -= x0[k] * lj;
        if (Two) x1[j] -= x1[k] * lj;
      }
  }
#else
  (void)lane, (void)x0, (void)x1;
#endif
  return 0;
}

template <class T>
void diag_potrf_warp(const Kokkos::Cuda& exec, const int n, const Strided<T> a, int* info,
                     const int offset) {
  using Policy = Kokkos::TeamPolicy<Kokkos::Cuda>;
  constexpr int W = 32, LD = W + 1;
  Policy policy(exec, 1, W);
  policy.set_scratch_size(0, Kokkos::PerTeam(Scratch<Kokkos::Cuda, T>::shmem_size(W * LD)));
  Kokkos::parallel_for(
      "kolesky::potrf_diag_warp", policy,
      KOKKOS_LAMBDA(const typename Policy::member_type& mb) {
        if (*info != 0) return;
        const int l = mb.team_rank();
        // Lower triangle of rows i, columns j0..j0+31, identity outside n.
        const auto load = [&](T(&x)[W], const int i, const int j0) {
#pragma unroll
          for (int c = 0; c < W; ++c) {
            const int j = j0 + c;
            x[c] = (i < n && j <= i) ? a(i, j) : (i == j ? T(1) : T(0));
          }
        };
        const auto store = [&](const T(&x)[W], const int i, const int j0, const int done) {
#pragma unroll
          for (int c = 0; c < W; ++c) {
            const int j = j0 + c;
            if (i < n && j <= i && j < done) a(i, j) = x[c];
          }
        };
        T x0[W], x1[W];
        load(x0, l, 0);
        load(x1, W + l, 0);
        int fail = warp_potrf_columns<W, true>(l, x0, x1);
        store(x0, l, 0, fail ? fail - 1 : n);
        store(x1, W + l, 0, fail ? fail - 1 : n);
        if (fail == 0 && n > W) {
          Scratch<Kokkos::Cuda, T> s(mb.team_scratch(0), W * LD);
#pragma unroll
          for (int k = 0; k < W; ++k) s(k * LD + l) = x1[k];  // L(32 + l, k)
#ifdef __CUDA_ARCH__
          __syncwarp();
#endif
          load(x0, W + l, W);
#pragma unroll
          for (int k = 0; k < W; ++k) {
            const T lk = x1[k];
#pragma unroll
            for (int c = 0; c < W; ++c) x0[c] -= lk * s(k * LD + c);
          }
          fail = warp_potrf_columns<W, false>(l, x0, x1);
          if (fail != 0) fail += W;
          store(x0, W + l, W, fail ? fail - 1 : n);
        }
        if (fail != 0 && l == 0) *info = offset + fail;
      });
}
#endif

template <class Exec, class T>
void diag_potrf(const Exec& exec, const int n, const Strided<T> a, const InfoView<Exec>& info,
                const int offset) {
  if (n == 0) return;
  if constexpr (is_host_exec<Exec>()) {
    exec.fence();
    if (info(0) != 0) return;
    const int r = host_potrf_block(n, a);
    if (r != 0) info(0) = offset + r;
  } else {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      diag_potrf_warp(exec, n, a, info.data(), offset);
      return;
    }
#endif
    // Other device backends: the portable one-team kernel.
    team_potrf<Algo::RightLooking>(exec, n, a, info, offset, 0);
  }
}

// A traced step when a StepTrace is installed (CUDA), nothing otherwise.
template <class Exec>
struct MaybeTrace {
  MaybeTrace(const Exec&, const char*, int, int = 0) {}
  FlowTraceRec* flow(int) { return nullptr; }
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct MaybeTrace<Kokkos::Cuda> {
  std::unique_ptr<TraceStep> s;
  MaybeTrace(const Kokkos::Cuda& exec, const char* what, int k0, int len = 0) {
    if (StepTrace::current())
      s.reset(new TraceStep(exec, std::string(what) + " k0=" + std::to_string(k0) +
                                      (len ? " w=" + std::to_string(len) : std::string())));
  }
  FlowTraceRec* flow(int tasks) { return s ? s->flow(tasks) : nullptr; }
};
#endif

struct BlockedConfig {
  Blas blas = Blas::Auto;
  int nb = 0;             // panel width (0: by size)
  bool lookahead = true;  // factor the next panel on a second stream (CUDA)
  bool flow_panels = false;  // panels by the tile-dataflow kernel (needs nb % kFlowTile == 0)
  void* flow_work = nullptr;  // its workspace (FlowWorkOf<Exec>*), one per call's stream
  void* side = nullptr;       // CUDA lookahead stream (CudaSide*; nullptr: the process's)
};

// Solves with the factor: B(m x k) <- B op(L)^{-1}, blocked so that the native path stages
// only nb x nb of L at a time and does the rest as GEMM.
template <class Exec, class T>
void blocked_trsm_r(const Exec& exec, const Blas blas, const int m, const int k, const bool trans,
                    const Strided<const T> l, const Strided<T> b, int nb,
                    const int* skip = nullptr, const bool unit = false) {
  if (m == 0 || k == 0) return;
  if (use_vendor<Exec>(blas) && col_major(l, k, k).ok && col_major(b, m, k).ok)
    return trsm_r(exec, blas, m, k, trans, l, b, skip, unit);
  if (nb <= 0) nb = 64;
  const auto cb = [](const Strided<T>& s) { return Strided<const T>{s.p, s.rs, s.cs}; };
  if (trans) {  // forward over column blocks
    for (int j0 = 0; j0 < k; j0 += nb) {
      const int jb = std::min(nb, k - j0), j1 = j0 + jb;
      native_trsm_r(exec, m, jb, true, l.shifted(j0, j0), b.shifted(0, j0), skip, unit);
      native_gemm_nt(exec, m, k - j1, jb, cb(b.shifted(0, j0)), l.shifted(j1, j0),
                     b.shifted(0, j1), false, skip);
    }
  } else {  // X L = B: backward
    for (int j1 = k; j1 > 0; j1 -= nb) {
      const int jb = std::min(nb, j1), j0 = j1 - jb;
      native_trsm_r(exec, m, jb, false, l.shifted(j0, j0), b.shifted(0, j0), skip, unit);
      native_gemm_nt(exec, m, j0, jb, cb(b.shifted(0, j0)), l.shifted(j0, 0).transposed(),
                     b, false, skip);
    }
  }
}

// Recursive: halve, factor, solve, update, factor. Level-3 work in few, large calls.
template <class Exec, class T>
void recursive_potrf(const Exec& exec, const Blas blas, const int n, const Strided<T> a,
                     const InfoView<Exec>& info, const int offset) {
  if (n <= diag_block<Exec>()) return diag_potrf(exec, n, a, info, offset);
  const int n1 = (n / 2 + 15) / 16 * 16, n2 = n - n1;
  const int* skip = info.data();
  recursive_potrf(exec, blas, n1, a, info, offset);
  const Strided<const T> l11{a.p, a.rs, a.cs}, l21{a.shifted(n1, 0).p, a.rs, a.cs};
  blocked_trsm_r(exec, blas, n2, n1, true, l11, a.shifted(n1, 0), 64, skip);
  gemm_nt(exec, blas, n2, n2, n1, l21, l21, a.shifted(n1, n1), true, skip);
  recursive_potrf(exec, blas, n2, a.shifted(n1, n1), info, offset + n1);
}


#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
// Panel [k0, k0 + kb) of a column-major (or transposed) matrix, split: its diagonal block by
// the dataflow kernel (the chain, on the block's few tiles), the rows below it by cuBLAS's
// TRSM. The dataflow kernel on the whole panel overlaps those rows with the chain but solves
// them at a few TFLOP/s while holding every SM it has, which at large n the concurrent
// trailing update needs.
//
// The rows below go either after the diagonal block (one TRSM) or, with
// FlowKnobs::below_cols = w, on the side's third stream in blocks of w columns, each started
// as soon as the chain has factored its last tile column (a one-thread waiter kernel ahead of
// it): the left-looking GEMM of the block's earlier columns, then TRSM on its w x w triangle.
// A column of B L^-T reads the factor's columns up to its own: those before a failing minor
// stay exact either way.
template <class T>
void split_panel(const Kokkos::Cuda& exec, const BlockedConfig& cfg, const int n, const int k0,
                 const int kb, const Strided<T> a, int* info, const int teams) {
  const int j0 = k0 / kFlowTile, j1 = flow_tiles(k0 + kb);
  const int m = n - k0 - kb, w = FlowKnobs::get().below_cols;
  // The waiter spins on a kernel of another stream, so both must be able to run at once: not
  // in a graph being recorded (its replay may order the two nodes either way, and CUDA does
  // not promise that independent nodes run concurrently), nor on a device so small that the
  // waiter's SM would leave the dataflow launch a single resident team. In stream order the
  // dataflow launch is always queued first.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(exec.cuda_stream(), &capture);
  const bool overlap = m > 0 && w > 0 && w % kFlowTile == 0 && w < kb &&
                       capture == cudaStreamCaptureStatusNone &&
                       exec.cuda_device_prop().multiProcessorCount >= 4;
  auto& work = *static_cast<FlowWorkOf<Kokkos::Cuda>*>(cfg.flow_work);
  CudaSide& side = cfg.side ? *static_cast<CudaSide*>(cfg.side) : CudaSide::get();
  const Kokkos::Cuda& eb = *side.below;
  if (overlap) stream_wait(eb, exec, side.to_below);  // the panel's columns updated
  {
    MaybeTrace<Kokkos::Cuda> tr(exec, "panel/diag", k0, kb);
    flow_potrf(exec, k0 + kb, a, info, j0, j1, work, tr.flow(flow_trace_records(j1, j0, j1)),
               teams, overlap);
  }
  if (m == 0) return;
  const auto d = a.shifted(k0, k0);
  const Strided<const T> l{d.p, d.rs, d.cs};
  const auto x = a.shifted(k0 + kb, k0);
  if (!overlap) {
    MaybeTrace<Kokkos::Cuda> tr(exec, "panel/below", k0, m);
    trsm_r(exec, cfg.blas, m, kb, true, l, x);
    return;
  }
  {
    MaybeTrace<Kokkos::Cuda> tr(eb, "panel/below_overlap", k0, m);
    for (int c0 = 0; c0 < kb; c0 += w) {
      const int cb = std::min(w, kb - c0);
      flow_column_wait(eb, work, (k0 + c0) / kFlowTile, flow_tiles(k0 + c0 + cb) - 1, info);
      if (c0 > 0)
        gemm_nt(eb, cfg.blas, m, cb, c0, Strided<const T>{x.p, x.rs, x.cs}, l.shifted(c0, 0),
                x.shifted(0, c0), false);
      trsm_r(eb, cfg.blas, m, cb, true, l.shifted(c0, c0), x.shifted(0, c0));
    }
  }
  stream_wait(exec, eb, side.from_below);
}
#endif

// The panel [k0, k0 + kb): factor its diagonal block, then solve the rows below it (one
// dataflow launch when cfg.flow_panels).
template <class Exec, class T>
void factor_panel(const Exec& exec, const BlockedConfig& cfg, const int n, const int k0,
                  const int kb, const Strided<T> a, const InfoView<Exec>& info,
                  const bool beside_update = false) {
  if (cfg.flow_panels && cfg.flow_work != nullptr && k0 % kFlowTile == 0) {
#if defined(KOLESKY_HAVE_CUBLAS) && defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
      if (split_here<T>(n, k0, kb, cfg.nb, beside_update) && col_major(a, n, n).ok &&
          use_vendor<Exec>(cfg.blas))
        return split_panel(exec, cfg, n, k0, kb, a, info.data(),
                           beside_update ? FlowKnobs::get().panel_teams : 0);
    }
#endif
    const int j0 = k0 / kFlowTile;
    const int j1 = (k0 + kb) % kFlowTile == 0 ? (k0 + kb) / kFlowTile : flow_tiles(n);
    MaybeTrace<Exec> tr(exec, "panel/flow", k0, kb);
    // Vendor updates beside the panel do not read info (native ones test it to skip).
    const bool vendor_updates = use_vendor<Exec>(cfg.blas) && col_major(a, n, n).ok;
    flow_potrf(exec, n, a, info.data(), j0, j1, *static_cast<FlowWorkOf<Exec>*>(cfg.flow_work),
               tr.flow(flow_trace_records(flow_tiles(n), j0, j1)),
               beside_update ? FlowKnobs::get().panel_teams : 0, false, vendor_updates);
    return;
  }
  MaybeTrace<Exec> tr(exec, "panel/recursive", k0, kb);
  const Blas blas = cfg.blas;
  recursive_potrf(exec, blas, kb, a.shifted(k0, k0), info, k0);
  const auto d = a.shifted(k0, k0);
  blocked_trsm_r(exec, blas, n - k0 - kb, kb, true, Strided<const T>{d.p, d.rs, d.cs},
                 a.shifted(k0 + kb, k0), 64, info.data());
}

// Columns [c0, c0 + nc) of the trailing matrix minus panel [k0, k0 + kb)'s contribution:
// SYRK on their diagonal block, GEMM below it.
template <class Exec, class T>
void update_columns(const Exec& exec, const Blas blas, const int n, const int k0, const int kb,
                    const int c0, const int nc, const Strided<T> a, const int* skip) {
  if (nc == 0) return;
  const auto p = a.shifted(c0, k0);
  const Strided<const T> pc{p.p, p.rs, p.cs};
  {
    MaybeTrace<Exec> tr(exec, "syrk", c0, nc);
    gemm_nt(exec, blas, nc, nc, kb, pc, pc, a.shifted(c0, c0), true, skip);
  }
  const int below = n - c0 - nc;
  if (below == 0) return;
  const auto q = a.shifted(c0 + nc, k0);
  MaybeTrace<Exec> tr(exec, "gemm", c0, below);
  gemm_nt(exec, blas, below, nc, kb, Strided<const T>{q.p, q.rs, q.cs}, pc,
          a.shifted(c0 + nc, c0), false, skip);
}


// Right-looking over panels of nb columns. With lookahead (CUDA), panel k + 1 is updated
// first and factored on a second stream while the rest of the trailing matrix is updated.
template <class Exec, class T>
void blocked_right_potrf(const Exec& exec, const BlockedConfig& cfg, const int n,
                         const Strided<T> a, const InfoView<Exec>& info) {
  const int nb = cfg.nb;
  const int* skip = info.data();
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    if (cfg.lookahead && n > nb) {
      auto& side = cfg.side ? *static_cast<CudaSide*>(cfg.side) : CudaSide::get();
      const Kokkos::Cuda& s1 = *side.exec;
      stream_wait(s1, exec, side.to_side);
      factor_panel(s1, cfg, n, 0, std::min(nb, n), a, info);
      const bool la_side = FlowKnobs::get().la_side != 0;
      for (int k0 = 0; k0 < n; k0 += nb) {
        const int kb = std::min(nb, n - k0), k1 = k0 + kb;
        stream_wait(exec, s1, side.to_main);  // panel k factored
        if (k1 >= n) break;
        const int kb1 = std::min(nb, n - k1);
        if (la_side) {
          // The next panel's columns updated on the lookahead stream itself, once the
          // previous trailing update (main) has reached them.
          stream_wait(s1, exec, side.to_side);
          update_columns(s1, cfg.blas, n, k0, kb, k1, kb1, a, skip);
        } else {
          update_columns(exec, cfg.blas, n, k0, kb, k1, kb1, a, skip);
          stream_wait(s1, exec, side.to_side);
        }
        factor_panel(s1, cfg, n, k1, kb1, a, info, true);
        update_columns(exec, cfg.blas, n, k0, kb, k1 + kb1, n - k1 - kb1, a, skip);
      }
      return;
    }
  }
#endif
  for (int k0 = 0; k0 < n; k0 += nb) {
    const int kb = std::min(nb, n - k0);
    factor_panel(exec, cfg, n, k0, kb, a, info);
    update_columns(exec, cfg.blas, n, k0, kb, k0 + kb, n - k0 - kb, a, skip);
  }
}

// Left-looking over panels: each panel receives all earlier panels' updates just before it is
// factored (less write traffic to the trailing matrix, one large GEMM per panel).
template <class Exec, class T>
void blocked_left_potrf(const Exec& exec, const BlockedConfig& cfg, const int n,
                        const Strided<T> a, const InfoView<Exec>& info) {
  const int nb = cfg.nb;
  const int* skip = info.data();
  for (int k0 = 0; k0 < n; k0 += nb) {
    const int kb = std::min(nb, n - k0);
    if (k0 > 0) update_columns(exec, cfg.blas, n, 0, k0, k0, kb, a, skip);
    factor_panel(exec, cfg, n, k0, kb, a, info);
  }
}

// L L^T X = B for X: Y^T = B^T L^{-T}, then X^T = Y^T L^{-1}.
template <class Exec, class T>
void potrs_strided(const Exec& exec, const int n, const int nrhs, const Strided<const T> l,
                   const Strided<T> b, const Blas blas = Blas::Auto) {
  if (n == 0 || nrhs == 0) return;
  const auto bt = b.transposed();
  const bool vendor = use_vendor<Exec>(blas) && col_major(l, n, n).ok && col_major(bt, nrhs, n).ok;
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    if (potrs_warp_wins<T>(n, nrhs))
      return potrs_warp<T>(exec, n, nrhs, l, b);
#ifdef KOLESKY_HAVE_CUBLAS
    // Before the team per right-hand side, which it beats from n = 512 (H200, session 37),
    // unless a measurement knob forces another solve.
    const bool forced = PotrsWarpKnobs::get().team == 2 || PotrsKnobs::get().flow == 2;
    if (vendor && !forced && potrs_inv_wins<T>(n, nrhs))
      return potrs_inv<T>(exec, n, nrhs, l, b);
#endif
    if (potrs_team_per_rhs_wins<T>(n, nrhs, exec.cuda_device_prop().multiProcessorCount))
      return potrs_team_per_rhs<T>(exec, n, nrhs, l, b);
    if (potrs_flow_wins(n, nrhs))
      return potrs_flow<T>(exec, n, nrhs, l, b);
  }
#endif
  if (!vendor && nrhs < 32) return potrs_team(exec, n, nrhs, l, b);
  blocked_trsm_r(exec, blas, nrhs, n, true, l, bt, 0);
  blocked_trsm_r(exec, blas, nrhs, n, false, l, bt, 0);
}

}  // namespace impl
}  // namespace kolesky
