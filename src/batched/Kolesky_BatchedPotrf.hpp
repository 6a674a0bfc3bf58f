// Batched Cholesky of many small SPD matrices: potrf, potrs, posv.
//
//   kolesky::batched::InterleavedBatch<double> a("A", batch, n, n);   // or Strided / Chunked
//   Kokkos::View<int*> info("info", batch);
//   kolesky::batched::potrf(exec, kolesky::Uplo::Lower, a, info);
//
// One info per matrix (LAPACK's meaning); a matrix that fails does not disturb the others,
// and on failure its contents are unspecified. Calls are asynchronous on `exec`: fence it
// before reading info or the factors on the host. A plain rank-3 View (batch, n, n) of any
// layout is accepted as a StridedBatch.
#pragma once
#include <Kokkos_Core.hpp>

#include <climits>

#include "batched/Kolesky_Batch.hpp"
#include "batched/Kolesky_BatchedPotrf_Impl.hpp"
#include "batched/Kolesky_BatchedTuning.hpp"
#include "batched/Kolesky_BatchedWarpStaged.hpp"
#include "batched/tuned/Kolesky_TunedDevice.hpp"
#include "batched/tuned/Kolesky_TunedHost.hpp"
#include "common/Kolesky_Error.hpp"
#include "common/Kolesky_Profiling.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"
#include "dense/Kolesky_PotrsWarp.hpp"

namespace kolesky {
namespace batched {

struct Options {
  Kernel kernel = Kernel::Auto;
  // Variant for the ThreadDirect and TeamScratch kernels (Default: right-looking).
  Algo algo = Algo::Default;
  int tile = 0;  // tiled variants: tile order (0: kDefaultTile); RowRegisters: panel, 16 or 32
  int team_size = 0;  // TeamScratch: threads per matrix; TeamRows: threads per team (0: auto)
};

namespace impl {

template <class Exec, class Batch>
void check_batch(const char* routine, const char* what, const Batch& a, bool square) {
  static_assert(is_batch<Batch>::value, "kolesky::batched: expected a batch container");
  using T = std::remove_const_t<typename Batch::value_type>;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kolesky::batched: the scalar type must be float or double");
  if (!Kokkos::SpaceAccessibility<Exec, typename Batch::memory_space>::accessible)
    kolesky::impl::throw_invalid(routine, what, " lives in memory space ",
                                 Batch::memory_space::name(), ", which execution space ",
                                 Exec::name(), " cannot access");
  // Orders and counts are ints inside the kernels: refuse what does not fit up front.
  const char* dims[3] = {"matrices", "rows", "columns"};
  for (int d = 0; d < 3; ++d)
    if (a.extent_of(d) > std::size_t(INT_MAX))
      kolesky::impl::throw_invalid(routine, what, " has ", a.extent_of(d), " ", dims[d],
                                   ", more than ", INT_MAX);
  if (square && a.rows() != a.cols())
    kolesky::impl::throw_invalid(routine, what, " must hold square matrices, but they are ",
                                 a.rows(), " x ", a.cols());
}

template <class Exec, class Info>
void check_info(const char* routine, const Info& info, int count) {
  static_assert(Kokkos::is_view<Info>::value && Info::rank == 1 &&
                    std::is_same<typename Info::value_type, int>::value,
                "kolesky::batched: info must be a rank-1 View of int");
  if (!Kokkos::SpaceAccessibility<Exec, typename Info::memory_space>::accessible)
    kolesky::impl::throw_invalid(routine, "info lives in memory space ",
                                 Info::memory_space::name(), ", which execution space ",
                                 Exec::name(), " cannot access");
  if (info.extent(0) < std::size_t(count))
    kolesky::impl::throw_invalid(routine, "info has ", info.extent(0), " entries for ", count,
                                 " matrices");
}

template <class Batch>
constexpr bool is_chunked() {
  return std::is_same<Batch, ChunkedBatch<typename Batch::value_type,
                                          typename Batch::memory_space>>::value;
}
template <class Batch>
constexpr bool is_interleaved() {
  return std::is_same<Batch, InterleavedBatch<typename Batch::value_type,
                                              typename Batch::memory_space>>::value;
}

// SimdLanes factors C consecutive matrices together: they must sit at batch stride 1 and never
// straddle a chunk boundary.
template <class Exec, class Batch>
bool lanes_fit(const Batch& a) {
  constexpr int C = default_chunk<Exec, typename Batch::value_type>();
  return is_interleaved<Batch>() || (is_chunked<Batch>() && a.chunk() % C == 0);
}

template <class Batch>
constexpr tuning::Layout layout_family() {
  return is_interleaved<Batch>() || is_chunked<Batch>() ? tuning::Layout::BatchFastest
                                                        : tuning::Layout::Strided;
}

// What Auto runs: the tuned table's entry for the backend, scalar, layout and n (see
// batched/tuned/), made valid for this batch (SimdLanes needs lanes that fit).
template <class Exec, class Batch>
Options choose(const Batch& a) {
  using T = typename Batch::value_type;
  constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  const tuning::Entry* e = host ? tuning::lookup(tuning::kTunedHost, int(sizeof(T)),
                                                 layout_family<Batch>(), a.rows())
                                : tuning::lookup(tuning::kTunedDevice, int(sizeof(T)),
                                                 layout_family<Batch>(), a.rows());
  Options o;
  if (e) {
    o.kernel = e->kernel;
    o.algo = e->algo;
    o.tile = e->tile;
    o.team_size = e->team_size;
  } else {
    o.kernel = host ? Kernel::ThreadDirect : Kernel::TeamRows;
  }
  // WarpStaged reads along a unit stride inside the matrix; without one (a LayoutLeft View:
  // the batch index fastest) its loads would not coalesce.
  if (o.kernel == Kernel::WarpStaged) {
    const auto m = a.matrix(0);
    if (!(m.rs == 1 || m.cs == 1)) o.kernel = Kernel::RowRegisters, o.tile = 16;
  }
  if (o.kernel == Kernel::SimdLanes &&
      !(lanes_fit<Exec>(a) && a.size() >= default_chunk<Exec, T>())) {
    o.kernel = Kernel::ThreadDirect;
    o.algo = Algo::RightLooking;
  }
  return o;
}

template <Algo A, class Exec, class Batch, class Info>
void run_algo(const Exec& exec, Uplo uplo, const Batch& a, const Info& info, Kernel k,
              const Options& opt) {
  const int nb = opt.tile > 0 ? opt.tile : kDefaultTile;
  if (k == Kernel::ThreadDirect)
    launch_thread_direct<A>(exec, uplo, a, info, nb);
  else
    launch_team_scratch<A>(exec, uplo, a, info, opt.team_size, nb);
}

}  // namespace impl

template <class ExecSpace, class Batch, class Info>
std::enable_if_t<is_batch<Batch>::value> potrf(const ExecSpace& exec, const Uplo uplo,
                                              const Batch& a, const Info& info,
                                              const Options& opt = {}) {
  const kolesky::impl::Region region("kolesky::batched::potrf");
  impl::check_batch<ExecSpace>("batched::potrf", "A", a, true);
  impl::check_info<ExecSpace>("batched::potrf", info, a.size());
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename Batch::memory_space>::accessible &&
                Kokkos::SpaceAccessibility<ExecSpace, typename Info::memory_space>::accessible) {
    if (a.size() == 0) return;
    if (a.rows() == 0) {
      Kokkos::deep_copy(exec, Kokkos::subview(info, Kokkos::make_pair(0, a.size())), 0);
      return;
    }
    using T = typename Batch::value_type;
    if (opt.kernel == Kernel::Auto) {
      potrf(exec, uplo, a, info, impl::choose<ExecSpace>(a));
      return;
    }
    Kernel k = opt.kernel;
    if (k == Kernel::Registers && a.rows() > impl::kMaxRegisterN) k = Kernel::TeamScratch;
    if (k == Kernel::SimdLanes) {
      constexpr int C = default_chunk<ExecSpace, T>();
      if (!impl::lanes_fit<ExecSpace>(a))
        kolesky::impl::throw_invalid("batched::potrf", "Kernel::SimdLanes needs an interleaved "
                                     "batch or a chunked one whose chunk is a multiple of ", C);
      impl::launch_simd_lanes<C>(exec, uplo, a, info);
      return;
    }
    if (k == Kernel::Registers) {
      impl::dispatch_registers<1>(exec, uplo, a, info, a.rows());
      return;
    }
    if (k == Kernel::WarpStaged) {
#if defined(KOKKOS_ENABLE_CUDA)
      if constexpr (impl::warp_staged_available<ExecSpace>()) {
        if (a.rows() <= impl::kMaxWarpStagedN) {
          impl::launch_warp_staged(exec, uplo, impl::UniformSource<Batch>{a, a.rows()}, a.size(),
                                   a.rows(), info, true);
          return;
        }
      }
#endif
      k = Kernel::RowRegisters;  // elsewhere, or beyond its orders
    }
    constexpr bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
    if (k == Kernel::RowRegisters && (host || a.rows() > impl::kMaxRowRegistersN))
      k = Kernel::TeamRows;
    if (k == Kernel::RowRegisters) {
      if constexpr (!host) {
        if (opt.tile > 0 && opt.tile <= 16)
          impl::launch_row_registers<16>(exec, uplo, a, info);
        else
          impl::launch_row_registers<32>(exec, uplo, a, info);
      }
      return;
    }
    if (k == Kernel::TeamRows) {
      impl::launch_team_rows(exec, uplo, a, info, opt.team_size);
      return;
    }
    switch (opt.algo) {
      case Algo::Crout:
        impl::run_algo<Algo::Crout>(exec, uplo, a, info, k, opt);
        break;
      case Algo::Banachiewicz:
        impl::run_algo<Algo::Banachiewicz>(exec, uplo, a, info, k, opt);
        break;
      case Algo::TiledRight:
        impl::run_algo<Algo::TiledRight>(exec, uplo, a, info, k, opt);
        break;
      case Algo::TiledLeft:
        impl::run_algo<Algo::TiledLeft>(exec, uplo, a, info, k, opt);
        break;
      case Algo::TiledTop:
        impl::run_algo<Algo::TiledTop>(exec, uplo, a, info, k, opt);
        break;
      default:
        impl::run_algo<Algo::RightLooking>(exec, uplo, a, info, k, opt);
        break;
    }
  }
}

// A rank-3 View (batch, n, n) of any layout, as a StridedBatch.
template <class ExecSpace, class T, class... P, class Info>
void potrf(const ExecSpace& exec, const Uplo uplo, const Kokkos::View<T***, P...>& a,
           const Info& info, const Options& opt = {}) {
  using V = Kokkos::View<T***, P...>;
  potrf(exec, uplo,
        StridedBatch<T, typename V::array_layout, typename V::memory_space>(
            typename StridedBatch<T, typename V::array_layout, typename V::memory_space>::view_type(a)),
        info, opt);
}

namespace impl {

// batched_potrs_warp's source for a uniform batch: matrix p, unless its info says it failed.
template <class ABatch, class BBatch, class Info>
struct UniformSolveSource {
  using T = typename BBatch::value_type;
  ABatch a;
  BBatch b;
  Info info;
  bool skip, lower;
  KOKKOS_INLINE_FUNCTION bool operator()(const int p, int& n, int& nrhs,
                                         kolesky::impl::Strided<const T>& l,
                                         kolesky::impl::Strided<T>& bp) const {
    if (skip && info(p) != 0) return false;
    const auto m0 = a.matrix(p);
    const auto m = lower ? m0 : m0.transposed();
    l = {m.p, m.rs, m.cs};
    bp = b.matrix(p);
    n = a.rows();
    nrhs = b.cols();
    return true;
  }
};

// B <- A^{-1} B for every matrix whose info is 0 (info == nullptr-like: a View of extent 0
// means all).
template <class Exec, class ABatch, class BBatch, class Info>
void potrs_launch(const Exec& exec, const Uplo uplo, const ABatch& a, const BBatch& b,
                  const Info& info) {
  using T = typename BBatch::value_type;
  using kolesky::impl::Strided;
  const bool lower = uplo == Uplo::Lower;
  const bool skip = info.extent(0) > 0;
  const int n = a.rows(), nrhs = b.cols();
  constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  if (host || n <= 16) {
    Kokkos::parallel_for(
        "kolesky::batched::potrs_thread", Kokkos::RangePolicy<Exec>(exec, 0, a.size()),
        KOKKOS_LAMBDA(const int p) {
          if (skip && info(p) != 0) return;
          const auto m0 = a.matrix(p);
          const auto m = lower ? m0 : m0.transposed();
          kolesky::impl::SerialPotrsInternal::invoke(n, nrhs, Strided<const T>{m.p, m.rs, m.cs},
                                                     b.matrix(p));
        });
  } else {
#if defined(KOKKOS_ENABLE_CUDA)
    // Orders 17-256 with a unit stride in the factor: a warp per matrix, B in registers
    // (the dense solve's warp kernel; row-major factors staged through shared memory). 3-9x
    // the team solve below (docs/performance_log.md, issue 15 session 62).
    if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
      const auto m0 = a.matrix(0);
      const std::ptrdiff_t rs = lower ? m0.rs : m0.cs, cs = lower ? m0.cs : m0.rs;
      if (n <= kolesky::impl::kPotrsWarpMaxN && (rs == 1 || cs == 1) &&
          kolesky::impl::PotrsWarpKnobs::get().batched != 0) {
        kolesky::impl::batched_potrs_warp<T>(
            exec, "kolesky::batched::potrs_warp", a.size(), n, rs != 1,
            UniformSolveSource<ABatch, BBatch, Info>{a, b, info, skip, lower});
        return;
      }
    }
#endif
    using Policy = Kokkos::TeamPolicy<Exec>;
    using Member = typename Policy::member_type;
    Kokkos::parallel_for(
        "kolesky::batched::potrs_team", Policy(exec, a.size(), n <= 64 ? 32 : 64),
        KOKKOS_LAMBDA(const Member& member) {
          const int p = member.league_rank();
          if (skip && info(p) != 0) return;
          const auto m0 = a.matrix(p);
          const auto m = lower ? m0 : m0.transposed();
          kolesky::impl::TeamPotrsInternal<>::invoke(member, n, nrhs,
                                                   Strided<const T>{m.p, m.rs, m.cs}, b.matrix(p));
        });
  }
}

template <class Exec, class ABatch, class BBatch>
void check_solve(const char* routine, const ABatch& a, const BBatch& b) {
  check_batch<Exec>(routine, "A", a, true);
  check_batch<Exec>(routine, "B", b, false);
  static_assert(std::is_same<std::remove_const_t<typename ABatch::value_type>,
                             typename BBatch::value_type>::value,
                "kolesky::batched: A and B must have the same scalar type (B not const)");
  if (b.size() != a.size())
    kolesky::impl::throw_invalid(routine, "B holds ", b.size(), " matrices but A holds ",
                                 a.size());
  if (b.rows() != a.rows())
    kolesky::impl::throw_invalid(routine, "B's matrices have ", b.rows(),
                                 " rows but A's are ", a.rows(), " x ", a.cols());
}

}  // namespace impl

// Solve with factors from batched::potrf: B <- A^{-1} B for every matrix whose info is 0;
// failed matrices keep their B. A may be const; B: a batch, a rank-3 View or a rank-2 View
// (batch, n) for one right-hand side per matrix.
template <class ExecSpace, class ABatch, class BBatch, class Info>
std::enable_if_t<is_batch_like<ABatch>::value && is_rhs_like<BBatch>::value &&
                 Kokkos::is_view<Info>::value>
potrs(const ExecSpace& exec, const Uplo uplo, const ABatch& a_, const BBatch& b_,
      const Info& info) {
  const kolesky::impl::Region region("kolesky::batched::potrs");
  const auto& a = as_batch(a_);
  const auto b = as_rhs(b_);
  impl::check_solve<ExecSpace>("batched::potrs", a, b);
  impl::check_info<ExecSpace>("batched::potrs", info, a.size());
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename batch_t<ABatch>::memory_space>::accessible &&
                Kokkos::SpaceAccessibility<ExecSpace, typename rhs_t<BBatch>::memory_space>::accessible) {
    if (a.size() == 0 || a.rows() == 0 || b.cols() == 0) return;
    impl::potrs_launch(exec, uplo, a, b, info);
  }
}

// Every matrix, whatever its factorization gave (prefer the form with info).
template <class ExecSpace, class ABatch, class BBatch>
std::enable_if_t<is_batch_like<ABatch>::value && is_rhs_like<BBatch>::value> potrs(
    const ExecSpace& exec, const Uplo uplo, const ABatch& a_, const BBatch& b_) {
  const kolesky::impl::Region region("kolesky::batched::potrs");
  const auto& a = as_batch(a_);
  const auto b = as_rhs(b_);
  impl::check_solve<ExecSpace>("batched::potrs", a, b);
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename batch_t<ABatch>::memory_space>::accessible &&
                Kokkos::SpaceAccessibility<ExecSpace, typename rhs_t<BBatch>::memory_space>::accessible) {
    if (a.size() == 0 || a.rows() == 0 || b.cols() == 0) return;
    impl::potrs_launch(exec, uplo, a, b, Kokkos::View<int*, typename ExecSpace::memory_space>());
  }
}

// Factor and solve; matrices that fail keep their right-hand sides unchanged.
template <class ExecSpace, class ABatch, class BBatch, class Info>
std::enable_if_t<is_batch_like<ABatch>::value && is_rhs_like<BBatch>::value &&
                 Kokkos::is_view<Info>::value>
posv(const ExecSpace& exec, const Uplo uplo, const ABatch& a_, const BBatch& b_,
     const Info& info, const Options& opt = {}) {
  const kolesky::impl::Region region("kolesky::batched::posv");
  const auto& a = as_batch(a_);
  const auto b = as_rhs(b_);
  impl::check_solve<ExecSpace>("batched::posv", a, b);
  potrf(exec, uplo, a, info, opt);
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename batch_t<ABatch>::memory_space>::accessible &&
                Kokkos::SpaceAccessibility<ExecSpace, typename rhs_t<BBatch>::memory_space>::accessible) {
    if (a.size() == 0 || a.rows() == 0 || b.cols() == 0) return;
    impl::potrs_launch(exec, uplo, a, b, info);
  }
}

}  // namespace batched
}  // namespace kolesky
