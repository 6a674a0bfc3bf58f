// Kernels behind the host-level entry points. Templated on the execution space and the
// scalar only: every layout reaches them as a pointer and two strides.
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <string>
#include <type_traits>

#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Blas3.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace impl {

// Threads per team: the whole host thread pool, or a few warps on a GPU.
template <class Exec, class Policy, class Functor>
int pick_team_size(const Exec& exec, const Policy& policy, const Functor& f, int wanted) {
  if (wanted <= 0) wanted = is_host_exec<Exec>() ? int(exec.concurrency()) : 256;
  return std::max(1, std::min(wanted, policy.team_size_max(f, Kokkos::ParallelForTag())));
}

template <class Exec>
using InfoView = Kokkos::View<int*, typename Exec::memory_space>;

// One team factors an n x n matrix (staged in scratch memory when it fits). A non-zero
// info already in `info` means an earlier step failed: the kernel then does nothing.
template <Algo A, class Exec, class T>
void team_potrf(const Exec& exec, const int n, const Strided<T> a, const InfoView<Exec>& info,
                const int info_offset, const int team_size, const int nb = kDefaultTile) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  if (n == 0) return;
  const std::size_t bytes = Scratch<Exec, T>::shmem_size(std::size_t(n) * n);
  const bool staged = bytes <= std::size_t(Policy::scratch_size_max(0));
  auto body = KOKKOS_LAMBDA(const Member& member) {
    if (info(0) != 0) return;
    int r;
    if (staged) {
      Scratch<Exec, T> buf(member.team_scratch(0), std::size_t(n) * n);
      const Strided<T> s{buf.data(), 1, n};
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n * n), [&](const int t) {
        const int i = t % n, j = t / n;
        if (i >= j) s(i, j) = a(i, j);
      });
      member.team_barrier();
      r = run_team_potrf<A>(member, n, s, nb);
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n * n), [&](const int t) {
        const int i = t % n, j = t / n;
        if (i >= j) a(i, j) = s(i, j);
      });
    } else {
      r = run_team_potrf<A>(member, n, a, nb);
    }
    if (r != 0) Kokkos::single(Kokkos::PerTeam(member), [&]() { info(0) = info_offset + r; });
  };
  Policy probe(exec, 1, 1);
  if (staged) probe.set_scratch_size(0, Kokkos::PerTeam(bytes));
  Policy policy(exec, 1, pick_team_size(exec, probe, body, team_size));
  if (staged) policy.set_scratch_size(0, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kolesky::potrf_team", policy, body);
}

#ifdef KOKKOS_ENABLE_CUDA
// One device info word and one pinned host word per CUDA stream, kept for the process: a
// cudaMalloc/cudaFree pair per call cost ~80 us on the H100, more than factoring n = 64.
// Calls on one stream are ordered by the stream, so they may share its words (calls on one
// execution-space instance from several host threads at once are not supported, as in Kokkos).
struct CudaInfoWords {
  InfoView<Kokkos::Cuda> d;
  Kokkos::View<int*, Kokkos::CudaHostPinnedSpace> h;
  // d is zero in the stream's order without a memset: the last work queued on it was a
  // dataflow kernel that handed info back through h and zeroed d (FlowPotrf::host_info).
  bool zero = false;
  // The stream's words (a PotrfPlan owns its own: allocate()).
  static CudaInfoWords& get(const Kokkos::Cuda& exec) {
    auto& w = per_stream<CudaInfoWords>(exec);
    if (w.d.extent(0) == 0) w.allocate("kolesky::info", "kolesky::info_host");
    return w;
  }
  void allocate(const std::string& device_label, const std::string& host_label) {
    d = InfoView<Kokkos::Cuda>(Kokkos::view_alloc(Kokkos::WithoutInitializing, device_label), 1);
    h = decltype(h)(Kokkos::view_alloc(Kokkos::WithoutInitializing, host_label), 1);
    zero = false;
  }
  // d, zeroed on `s` unless it is known zero; whoever takes it may leave a failure in it.
  const InfoView<Kokkos::Cuda>& take(const cudaStream_t s) {
    if (!zero) cudaMemsetAsync(d.data(), 0, sizeof(int), s);
    zero = false;
    return d;
  }
  // After the work that took d, queued on `s`: info into h. `handed`: that work's last kernel
  // wrote h itself and zeroed d (flow_potrf's host_info), so there is nothing to copy.
  void settle(const bool handed, const cudaStream_t s) {
    if (handed)
      zero = true;
    else
      cudaMemcpyAsync(h.data(), d.data(), sizeof(int), cudaMemcpyDeviceToHost, s);
  }
};
#endif

// A zeroed info word, ordered on `exec`.
template <class Exec>
InfoView<Exec> make_info(const Exec& exec) {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    return CudaInfoWords::get(exec).take(exec.cuda_stream());
  }
#endif
  if constexpr (is_host_exec<Exec>()) {
    // A word of the calling thread, set directly: no allocation, and no parallel region that
    // would wake the OpenMP pool (its spinning threads slow the host BLAS that follows).
    static thread_local int word = 0;
    exec.fence();
    word = 0;
    return InfoView<Exec>(&word, 1);
  } else {
    InfoView<Exec> info(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::info"), 1);
    Kokkos::deep_copy(exec, info, 0);
    return info;
  }
}

// Host-visible info after the work queued on `exec`. `handed` (CUDA, the stream's word): the
// last kernel wrote the pinned word itself (CudaInfoWords::settle).
template <class Exec>
int fetch_info(const Exec& exec, const InfoView<Exec>& info, const bool handed = false) {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    auto& w = CudaInfoWords::get(exec);
    if (w.d.data() == info.data()) {
      w.settle(handed, exec.cuda_stream());
      exec.fence();
      return w.h(0);
    }
  }
#endif
  (void)handed;
  if constexpr (is_host_exec<Exec>()) {
    exec.fence();
    return info(0);
  } else {
    auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), info);
    Kokkos::deep_copy(exec, h, info);
    exec.fence();
    return h(0);
  }
}

// L * L^T * X = B. Few right-hand sides: one team, parallel over rows; many: one thread per
// right-hand side, a team's worth of columns per team.
template <class Exec, class T>
struct PotrsFunctor {
  int n, nrhs, per_team;
  Strided<const T> l;
  Strided<T> b;
  KOKKOS_INLINE_FUNCTION void operator()(const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    const int r0 = m.league_rank() * per_team;
    TeamPotrsInternal<>::invoke(m, n, imin(per_team, nrhs - r0), l, b.shifted(0, r0));
  }
};

template <class Exec, class T>
void potrs_team(const Exec& exec, const int n, const int nrhs, const Strided<const T> l,
                   const Strided<T> b) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  if (n == 0 || nrhs == 0) return;
  PotrsFunctor<Exec, T> f{n, nrhs, 1, l, b};
  const int team = pick_team_size(exec, Policy(exec, 1, 1), f, 0);
  f.per_team = imin(nrhs, team);
  Kokkos::parallel_for("kolesky::potrs", Policy(exec, (nrhs + f.per_team - 1) / f.per_team, team), f);
}

}  // namespace impl
}  // namespace kolesky
