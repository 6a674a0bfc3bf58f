// Host-level Cholesky of one matrix: potrf, potrs, posv.
//
//   int info = kolesky::potrf(exec, kolesky::Uplo::Lower, A);        // A = L L^T in place
//   kolesky::potrs(exec, kolesky::Uplo::Lower, A, B);                 // B <- A^{-1} B
//   int info = kolesky::posv(exec, kolesky::Uplo::Lower, A, B);
//
// A: rank-2 View of float or double, any layout, accessible from `exec`. B: rank 1 or 2.
// info follows LAPACK: 0, or k > 0 when the leading minor of order k is not positive
// definite (a NaN or an infinite pivot counts as not positive definite). Calls are
// synchronous: info is on the host when they return.
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Profiling.hpp"

#include <climits>
#include <memory>
#include <type_traits>

#include "batched/Kolesky_BatchedWarpStaged.hpp"
#include "common/Kolesky_Error.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Device.hpp"
#include "dense/Kolesky_Blas3.hpp"
#include "host/Kolesky_PotrfBlocked.hpp"
#include "host/Kolesky_PotrfColumns.hpp"
#include "host/Kolesky_PotrfHost.hpp"
#include "host/Kolesky_Potrf_Impl.hpp"

namespace kolesky {

struct PotrfOptions {
  Algo algo = Algo::Default;
  int block_size = 0;  // Blocked*: columns per panel; tiled variants: tile order (0: default)
  int team_size = 0;   // unblocked variants: threads of the one team (0: the library's choice)
  Blas blas = Blas::Auto;  // blocked variants: vendor BLAS (cuBLAS / BLAS) or Kokkos kernels
  bool lookahead = true;   // Blocked on CUDA: factor the next panel on a second stream
  int tail_cutoff = 128;   // CroutCutoff: columns finished by one thread
  Panel panel = Panel::Auto;  // Blocked / BlockedLeft: how panels are factored
};

namespace impl {

template <class Exec, class View>
void check_matrix(const char* routine, const View& a) {
  static_assert(Kokkos::is_view<View>::value, "kolesky: A must be a Kokkos::View");
  static_assert(View::rank == 2, "kolesky: A must be a rank-2 View");
  using T = typename View::non_const_value_type;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kolesky: the scalar type must be float or double");
  if (!Kokkos::SpaceAccessibility<Exec, typename View::memory_space>::accessible)
    throw_invalid(routine, "A (label '", a.label(), "') lives in memory space ",
                  View::memory_space::name(), ", which execution space ", Exec::name(),
                  " cannot access");
  if (a.extent(0) != a.extent(1))
    throw_invalid(routine, "A must be square, but its extents are ", a.extent(0), " x ",
                  a.extent(1));
  if (a.extent(0) > std::size_t(INT_MAX))
    throw_invalid(routine, "A's order ", a.extent(0), " exceeds ", INT_MAX);
}

template <class Exec, class AView, class BView>
void check_rhs(const char* routine, const AView& a, const BView& b) {
  static_assert(Kokkos::is_view<BView>::value, "kolesky: B must be a Kokkos::View");
  static_assert(BView::rank == 1 || BView::rank == 2, "kolesky: B must be a rank-1 or rank-2 View");
  static_assert(std::is_same<typename AView::non_const_value_type,
                             typename BView::non_const_value_type>::value,
                "kolesky: A and B must have the same scalar type");
  if (!Kokkos::SpaceAccessibility<Exec, typename BView::memory_space>::accessible)
    throw_invalid(routine, "B (label '", b.label(), "') lives in memory space ",
                  BView::memory_space::name(), ", which execution space ", Exec::name(),
                  " cannot access");
  if (b.extent(0) != a.extent(0))
    throw_invalid(routine, "B has ", b.extent(0), " rows but A is ", a.extent(0), " x ",
                  a.extent(1));
  if (BView::rank == 2 && b.extent(1) > std::size_t(INT_MAX))
    throw_invalid(routine, "B has ", b.extent(1), " columns, more than ", INT_MAX);
}

// Host, Algo::Default: the orders factored by host_potrf_threads, from kHostDiag + 1 (2 cores,
// measured: at 65-128 the calling thread's block, host_potrf_block, beats the pool's two
// threads by 1.05-1.5x in float and 0.9-1.4x in double, and the pool's kernel on one thread
// (the slow VM state's way) by more; above 640 the rank-8 updates stream the matrix from
// beyond L2 and the BLAS panels win).
constexpr int kHostCholThreads = 640;

// Blocked panels' width when the caller gives none. With the host's vendor BLAS (OpenBLAS
// 0.3.21, 2 cores) float's trailing updates run best at k = 384 (0-7 % faster than 256 at
// n = 700-4096), double's at 256 (384 is 3-4 % slower at 2048-4096): docs/performance_log.md,
// issue 17, thirteenth session. (CUDA's Default sets its own in default_options.)
template <class Exec, class T>
constexpr int default_block_size() {
  return !has_vendor_blas<Exec>() ? 128 : is_host_exec<Exec>() && sizeof(T) == 4 ? 384 : 256;
}

// Host, Algo::Default: whether order n goes to the pool's one-region kernel (column-major
// lower triangles of mid-size orders; measured against the BLAS panels in
// docs/performance_log.md, issue 17).
template <class Exec, class T>
bool host_pool_order(const Exec& exec, const int n, const Strided<T> a, const PotrfOptions& opt) {
  return opt.algo == Algo::Default && opt.block_size <= 0 && a.rs == 1 &&
         n > kHostDiag && n <= kHostCholThreads &&
         exec.concurrency() > 1;
}

// What Algo::Default means for (backend, scalar, n): measured on the H100 and the 2-core
// OpenMP machine (docs/performance_log.md, "Dense potrf").
template <class Exec, class T>
PotrfOptions default_options(const int n, PotrfOptions opt) {
  if (is_host_exec<Exec>()) {
    opt.algo = Algo::Blocked;
    if (opt.block_size <= 0) opt.block_size = default_block_size<Exec, T>();
  } else {
    // Float in its own precision (not under a FastFloatScope's TF32 tile updates).
    const bool full_float = sizeof(T) == 4 && !fast_float_flag();
    const int whole =
        sizeof(T) == 4 ? (full_float ? kFlowWholeMaxFloat : kFlowWholeMaxTf32) : kFlowWholeMax;
    opt.algo = n <= whole ? Algo::Dataflow : Algo::Blocked;
    // Panel width (H100, issue 15 session 16, nb 512-2048 at n = 3072-16384, float's tile
    // updates then on FFMA): float's panels lose 5-14 % at 512 against 1024 from n = 7168 up;
    // double's are within 1-2 % from 512 to 1024 above 4096, 768 the best of them. Float under
    // a FastFloatScope (TF32 tile updates and GEMMs) is like double: 768 is 2-3 % faster than
    // 1024 at 6144-16384 (session 21).
    if (opt.block_size <= 0) opt.block_size = full_float || n <= 4096 ? 1024 : 768;
  }
  return opt;
}

#ifdef KOKKOS_ENABLE_CUDA
// CUDA, Algo::Default, small orders: the matrix staged in shared memory and factored there in
// one launch that writes the info word itself (no memset, no copy). Up to 16 columns one warp
// (the batched WarpStaged kernel); above, up to the measured crossovers with the dataflow
// kernel and what the device's shared memory holds (239 in double, 256 in float on the H100),
// the split kernel: a block of 8-16 warps, several threads per row, the next panel's dot
// products computed while the diagonal block is factored. The dataflow kernel costs a flat
// ~30 us up to 64, ~55 us at 65-128, ~87 us at 129-192 and ~112 us at 193-256 (its 64-column
// chains); the split kernel grows with n and crosses it at ~180 and ~210 in double, ~240 in
// float (docs/performance_log.md, issue 15, sessions 11 and 12). Precise: the diagonal by a
// correctly rounded sqrt (off-diagonals multiply by rsqrt).
constexpr int kCudaStagedWarpMax = 48;
constexpr int kCudaStagedBlockMin = 65;
constexpr int kCudaSplitMin = 17;
constexpr int kCudaSplitMaxN = 256;
template <class T>
constexpr int cuda_staged_block_max() {
  return sizeof(T) == 8 ? 112 : 128;
}
// Whether the split kernel beats the dataflow kernel at order n (measured, H100; in double
// with its tensor-core dot products from session 14 on, equal at 192 and 239).
template <class T>
constexpr bool cuda_split_wins(const int n) {
  return sizeof(T) == 8 ? n <= 232 : n <= 240;
}

// Measurement knobs (perf_test --staged-split-min=N / --staged-split-max=N, tests): the split
// kernel from order N up, and up to N (0: where it wins); a split_min past the largest order
// gives session 11's dispatch (a warp to 48, one block per matrix at 65-112 / 65-128).
struct StagedKnobs : Knobs<StagedKnobs> {
  int split_min = kCudaSplitMin;
  int split_max = 0;
  long long* split_trace = nullptr;  // device buffer for the split kernel's clock64 trace
  int split_mma = 1;  // 1 the split kernel's dot products on the tensor cores, 0 by FFMA
  // Whether the split kernel takes the tensor-core dot products (float widened to double):
  // at every order since the 256-row block's fragments are paired into m16n8k4. With m8n8k4
  // double was 2-9 % slower at n = 129-160 (a panel is the factor warp's chain, and the other
  // warps' DMMAs delayed its FP64 instructions); paired it is 1-6 % faster there, and float
  // gains 0-16 % (issue 15, sessions 14 and 19, performance_log).
  bool mma() const { return split_mma != 0; }
};

// Whether order n goes to the split kernel: the knobs' range, where it wins (split_max 0), and
// what the device's shared memory holds (opt-in size).
template <class T>
bool cuda_split(const Kokkos::Cuda& exec, const int n) {
  const StagedKnobs& k = StagedKnobs::get();
  if (n < k.split_min || n > kCudaSplitMaxN || (k.split_max > 0 && n > k.split_max) ||
      (k.split_max <= 0 && !cuda_split_wins<T>(n)))
    return false;
  return batched::impl::split_staged_bytes<T>(n) <=
         std::size_t(exec.cuda_device_prop().sharedMemPerBlockOptin);
}

template <class T>
struct OneMatrixSource {  // the batched kernels' view of a batch: here, one matrix
  Strided<T> a;
  int n;
  KOKKOS_INLINE_FUNCTION int id(const int) const { return 0; }
  KOKKOS_INLINE_FUNCTION int order_of(const int) const { return n; }
  KOKKOS_INLINE_FUNCTION Strided<T> matrix_of(const int) const { return a; }
};

struct InfoWord {  // info(0) = k: a device word, or a pinned host word (mapped under UVA)
  int* p;
  KOKKOS_INLINE_FUNCTION int& operator()(const int) const { return *p; }
};

enum class Staged { None, Warp, Block, Split };

template <class T>
Staged cuda_staged(const Kokkos::Cuda& exec, const int n, const PotrfOptions& opt) {
  if (opt.algo != Algo::Default || n <= 0) return Staged::None;
  if (cuda_split<T>(exec, n)) return Staged::Split;
  if (n <= kCudaStagedWarpMax) return Staged::Warp;
  if (n >= kCudaStagedBlockMin && n <= cuda_staged_block_max<T>()) return Staged::Block;
  return Staged::None;
}

// The lower triangle of `a` by the kernel `kind` (from cuda_staged) on exec's stream; *info = 0
// or the first failing minor. The warp and block part is a reduced copy of
// batched::impl::launch_warp_staged's size dispatch (fewer instantiations), with Precise set.
template <class T>
void staged_potrf(const Kokkos::Cuda& exec, const Staged kind, const int n, const Strided<T> a,
                  int* info) {
  namespace bi = batched::impl;
  using S = OneMatrixSource<T>;
  const S src{a, n};
  const InfoWord w{info};
  const Uplo lo = Uplo::Lower;
  if (kind == Staged::Split) {
    long long* const tr = StagedKnobs::get().split_trace;
    const bool mma = StagedKnobs::get().mma();
    if (n <= 64)
      return bi::launch_split_staged_on<64, 4, S, InfoWord, true>(exec, lo, src, 1, n, w, tr, mma);
    if (n <= 128)
      return bi::launch_split_staged_on<128, 4, S, InfoWord, true>(exec, lo, src, 1, n, w, tr,
                                                                    mma);
    return bi::launch_split_staged_on<256, 2, S, InfoWord, true>(exec, lo, src, 1, n, w, tr, mma);
  }
  if (n <= 24) return bi::launch_warp_staged_on<24, false, S, InfoWord, true>(exec, lo, src, 1, w);
  if (n == 32) return bi::launch_warp_staged_on<32, true, S, InfoWord, true>(exec, lo, src, 1, w);
  if (n <= 32) return bi::launch_warp_staged_on<32, false, S, InfoWord, true>(exec, lo, src, 1, w);
  if (n <= 48) return bi::launch_warp_staged_on<48, false, S, InfoWord, true>(exec, lo, src, 1, w);
  if (n <= 96)
    return bi::launch_block_staged_on<96, false, S, InfoWord, true>(exec, lo, src, 1, n, w);
  bi::launch_block_staged_on<128, false, S, InfoWord, true>(exec, lo, src, 1, n, w);
}
#endif

template <class Exec>
constexpr bool flow_panels_by_default() {
#ifdef KOKKOS_ENABLE_CUDA
  return std::is_same<Exec, Kokkos::Cuda>::value;
#else
  return false;
#endif
}

// What a factorization needs besides the matrix: the info word, the dataflow workspace and
// (CUDA) the lookahead stream. A plain call takes the per-stream cached ones; a PotrfPlan
// owns its own.
template <class Exec>
struct PotrfContext {
  InfoView<Exec> info;
  FlowWorkOf<Exec>* work = nullptr;
  void* side = nullptr;
  // CUDA, a synchronous call's pinned host word: an Algo::Dataflow launch of one kernel may
  // hand info back through it (flow_potrf).
  int* host_info = nullptr;
};

// Queue the factorization on `exec` (info must be zero on entry, or the call is a no-op).
// True when its last kernel wrote info to ctx.host_info itself and left ctx.info zero.
template <class Exec, class T>
bool potrf_enqueue(const Exec& exec, const int n, const Strided<T> a, PotrfOptions opt,
                   const PotrfContext<Exec>& ctx) {
  if (n == 0) return false;
  const InfoView<Exec>& info = ctx.info;
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    const Staged kind = cuda_staged<T>(exec, n, opt);
    if (kind != Staged::None) {
      staged_potrf(exec, kind, n, a, info.data());
      return false;
    }
  }
#endif
  if constexpr (is_host_exec<Exec>()) {
    // Mid-size column-major lower triangles: the pool in one parallel region, no BLAS call.
    if (host_pool_order(exec, n, a, opt)) {
      exec.fence();
      if (info(0) == 0)
        info(0) = host_team_run<T>(HostRoutine::Potrf, n, host_team(exec), [&](const int team) {
          return host_potrf_threads<Exec, 8>(exec, n, a.p, a.cs, team);
        });
      return false;
    }
  }
  if (opt.algo == Algo::Default) opt = default_options<Exec, T>(n, opt);
  BlockedConfig cfg;
  cfg.blas = opt.blas;
  cfg.nb = opt.block_size > 0 ? opt.block_size : default_block_size<Exec, T>();
  cfg.lookahead = opt.lookahead;
  const bool flow = opt.panel == Panel::Dataflow ||
                    (opt.panel == Panel::Auto && flow_panels_by_default<Exec>());
  cfg.flow_panels = flow && cfg.nb % kFlowTile == 0 && ctx.work != nullptr;
  cfg.flow_work = ctx.work;
  cfg.side = ctx.side;
  switch (opt.algo) {
    case Algo::Dataflow: {
      MaybeTrace<Exec> tr(exec, "whole/flow", 0, n);
      return flow_potrf(exec, n, a, info.data(), 0, flow_tiles(n), *ctx.work,
                        tr.flow(flow_trace_records(flow_tiles(n), 0, flow_tiles(n))), 0, false,
                        false, ctx.host_info);
    }
    case Algo::Crout:
      team_potrf<Algo::Crout>(exec, n, a, info, 0, opt.team_size);
      break;
    case Algo::Banachiewicz:
      team_potrf<Algo::Banachiewicz>(exec, n, a, info, 0, opt.team_size);
      break;
    case Algo::RightLooking:
      team_potrf<Algo::RightLooking>(exec, n, a, info, 0, opt.team_size);
      break;
    case Algo::TiledRight:
      team_potrf<Algo::TiledRight>(exec, n, a, info, 0, opt.team_size, opt.block_size);
      break;
    case Algo::TiledLeft:
      team_potrf<Algo::TiledLeft>(exec, n, a, info, 0, opt.team_size, opt.block_size);
      break;
    case Algo::TiledTop:
      team_potrf<Algo::TiledTop>(exec, n, a, info, 0, opt.team_size, opt.block_size);
      break;
    case Algo::ColumnKernels:
      column_kernels_potrf(exec, n, a, info);
      break;
    case Algo::RightLookingKernels:
      right_looking_kernels_potrf(exec, n, a, info);
      break;
    case Algo::CroutCutoff:
      crout_cutoff_potrf(exec, n, a, info, opt.tail_cutoff);
      break;
    case Algo::Recursive:
      recursive_potrf(exec, opt.blas, n, a, info, 0);
      break;
    case Algo::BlockedLeft:
      blocked_left_potrf(exec, cfg, n, a, info);
      break;
    case Algo::Default:
    case Algo::Blocked:
      blocked_right_potrf(exec, cfg, n, a, info);
      break;
  }
  return false;
}

// Whether a call of these options needs a dataflow workspace.
template <class Exec, class T>
bool potrf_uses_flow(const int n, PotrfOptions opt) {
  if (opt.algo == Algo::Default) opt = default_options<Exec, T>(n, opt);
  const bool flow = opt.panel == Panel::Dataflow ||
                    (opt.panel == Panel::Auto && flow_panels_by_default<Exec>());
  return opt.algo == Algo::Dataflow ||
         (flow && (opt.algo == Algo::Blocked || opt.algo == Algo::BlockedLeft));
}

template <class Exec, class T>
int potrf_strided(const Exec& exec, const int n, const Strided<T> a, PotrfOptions opt) {
  if (n == 0) return 0;
  if constexpr (is_host_exec<Exec>()) {
    // The default's orders of one block (its panels are never narrower than kHostDiag; the
    // pool takes only larger ones): the block on the calling thread, as the blocked driver
    // would factor it, without the driver's info word, fences and empty BLAS calls (~60 ns of
    // a ~200 ns call at n = 8).
    if (opt.algo == Algo::Default && opt.block_size <= 0 && opt.panel != Panel::Dataflow &&
        n <= kHostDiag) {
      exec.fence();
      return host_potrf_block(n, a);
    }
  }
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    const Staged kind = cuda_staged<T>(exec, n, opt);
    if (kind != Staged::None) {  // the kernel writes the pinned host word: launch, then wait
      auto& w = CudaInfoWords::get(exec);
      staged_potrf(exec, kind, n, a, w.h.data());
      exec.fence();
      return w.h(0);
    }
  }
#endif
  PotrfContext<Exec> ctx;
  ctx.info = make_info(exec);
  FlowWorkOf<Exec> local;  // host backends: a workspace for this call
  if (potrf_uses_flow<Exec, T>(n, opt)) {
    ctx.work = &local;
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) ctx.work = &cuda_flow_work(exec);
#endif
  }
#ifdef KOKKOS_ENABLE_CUDA
  // The one dataflow kernel ends the call's stream work: it may hand info back through the
  // stream's pinned word and zero the device word, so this call skips its copy and the next
  // its memset (~4-8 us a call; docs/performance_log.md, issue 15 sessions 53-55).
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value)
    ctx.host_info = CudaInfoWords::get(exec).h.data();
#endif
  const bool handed = potrf_enqueue(exec, n, a, opt, ctx);
  if (handed) flow_mapped_calls().fetch_add(1, std::memory_order_relaxed);
  return fetch_info(exec, ctx.info, handed);
}

}  // namespace impl

template <class ExecSpace, class AView>
int potrf(const ExecSpace& exec, const Uplo uplo, const AView& a, const PotrfOptions& opt = {}) {
  const impl::Region region("kolesky::potrf");
  impl::check_matrix<ExecSpace>("potrf", a);
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible) {
    const auto l = uplo == Uplo::Lower ? impl::lower_of<Uplo::Lower>(a)
                                       : impl::lower_of<Uplo::Upper>(a);
    return impl::potrf_strided(exec, int(a.extent(0)), l, opt);
  }
  return -1;  // unreachable: check_matrix threw
}

template <class ExecSpace, class AView>
int potrf(const ExecSpace& exec, const Uplo uplo, const AView& a, const Algo algo) {
  PotrfOptions opt;
  opt.algo = algo;
  return potrf(exec, uplo, a, opt);
}

// On the View's default execution space.
template <class AView>
int potrf(const Uplo uplo, const AView& a, const PotrfOptions& opt = {}) {
  return potrf(typename AView::execution_space(), uplo, a, opt);
}

// Solve with the factor from potrf. B is overwritten by the solution.
template <class ExecSpace, class AView, class BView>
void potrs(const ExecSpace& exec, const Uplo uplo, const AView& a, const BView& b,
           const Blas blas = Blas::Auto) {
  const impl::Region region("kolesky::potrs");
  impl::check_matrix<ExecSpace>("potrs", a);
  impl::check_rhs<ExecSpace>("potrs", a, b);
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible &&
                Kokkos::SpaceAccessibility<ExecSpace, typename BView::memory_space>::accessible) {
    using T = typename BView::non_const_value_type;
    const auto l = uplo == Uplo::Lower ? impl::lower_of<Uplo::Lower>(a)
                                       : impl::lower_of<Uplo::Upper>(a);
    impl::potrs_strided<ExecSpace, T>(exec, int(a.extent(0)), impl::nrhs_of(b),
                                      impl::Strided<const T>{l.p, l.rs, l.cs}, impl::rhs_of(b),
                                      blas);
    exec.fence();
  }
}

template <class AView, class BView>
void potrs(const Uplo uplo, const AView& a, const BView& b) {
  potrs(typename AView::execution_space(), uplo, a, b);
}

// Factor and solve. On info != 0, B is left unchanged.
template <class ExecSpace, class AView, class BView>
int posv(const ExecSpace& exec, const Uplo uplo, const AView& a, const BView& b,
         const PotrfOptions& opt = {}) {
  const impl::Region region("kolesky::posv");
  impl::check_matrix<ExecSpace>("posv", a);
  impl::check_rhs<ExecSpace>("posv", a, b);
  const int info = potrf(exec, uplo, a, opt);
  if (info == 0) potrs(exec, uplo, a, b, opt.blas);
  return info;
}

template <class AView, class BView>
int posv(const Uplo uplo, const AView& a, const BView& b, const PotrfOptions& opt = {}) {
  return posv(typename AView::execution_space(), uplo, a, b, opt);
}

}  // namespace kolesky
