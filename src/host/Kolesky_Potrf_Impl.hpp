// Kernels behind the host-level entry points. Templated on the execution space and the
// scalar only: every layout reaches them as a pointer and two strides.
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>

#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace impl {

template <class Exec>
constexpr bool is_host_space() {
  return Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
}

// Threads per team: the whole host thread pool, or a few warps on a GPU.
template <class Exec, class Policy, class Functor>
int pick_team_size(const Exec& exec, const Policy& policy, const Functor& f, int wanted) {
  if (wanted <= 0) wanted = is_host_space<Exec>() ? int(exec.concurrency()) : 256;
  return std::max(1, std::min(wanted, policy.team_size_max(f, Kokkos::ParallelForTag())));
}

// Level-0 scratch (on-chip on GPUs) when it fits, else level 1 (device memory): a large
// block size must still work, only slower.
template <class Policy>
int scratch_level(const std::size_t bytes) {
  return bytes <= std::size_t(Policy::scratch_size_max(0)) ? 0 : 1;
}

template <class Exec>
using InfoView = Kokkos::View<int*, typename Exec::memory_space>;

template <class Exec, class T>
using ScratchVec =
    Kokkos::View<T*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// One team factors an n x n matrix (staged in scratch memory when it fits). A non-zero
// info already in `info` means an earlier step failed: the kernel then does nothing.
template <Algo A, class Exec, class T>
void team_potrf(const Exec& exec, const int n, const Strided<T> a, const InfoView<Exec>& info,
                const int info_offset, const int team_size, const int nb = kDefaultTile) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  if (n == 0) return;
  const std::size_t bytes = ScratchVec<Exec, T>::shmem_size(std::size_t(n) * n);
  const bool staged = bytes <= std::size_t(Policy::scratch_size_max(0));
  auto body = KOKKOS_LAMBDA(const Member& member) {
    if (info(0) != 0) return;
    int r;
    if (staged) {
      ScratchVec<Exec, T> buf(member.team_scratch(0), std::size_t(n) * n);
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

// Blocked right-looking, step 2: A21 <- A21 * L11^{-T}, one row per thread, L11 in scratch.
template <class Exec, class T>
void panel_trsm(const Exec& exec, const int m, const int kb, const Strided<T> l11,
                const Strided<T> a21, const InfoView<Exec>& info) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  constexpr int rows = is_host_space<Exec>() ? 64 : 128;
  const std::size_t bytes = ScratchVec<Exec, T>::shmem_size(std::size_t(kb) * kb);
  const int level = scratch_level<Policy>(bytes);
  auto body = KOKKOS_LAMBDA(const Member& member) {
    if (info(0) != 0) return;
    ScratchVec<Exec, T> buf(member.team_scratch(level), std::size_t(kb) * kb);
    const Strided<T> l{buf.data(), 1, kb};
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, kb * kb), [&](const int t) {
      const int i = t % kb, j = t / kb;
      if (i >= j) l(i, j) = l11(i, j);
    });
    member.team_barrier();
    const int r0 = member.league_rank() * rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, imin(rows, m - r0)),
                         [&](const int t) {
                           const int i = r0 + t;
                           for (int j = 0; j < kb; ++j) {
                             T x = a21(i, j);
                             for (int p = 0; p < j; ++p) x -= a21(i, p) * l(j, p);
                             a21(i, j) = x / l(j, j);
                           }
                         });
  };
  const int league = (m + rows - 1) / rows;
  Policy probe(exec, league, 1);
  probe.set_scratch_size(level, Kokkos::PerTeam(bytes));
  Policy policy(exec, league, pick_team_size(exec, probe, body, is_host_space<Exec>() ? 1 : rows));
  policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kolesky::potrf_panel_trsm", policy, body);
}

// Blocked right-looking, step 3: A22 <- A22 - A21 * A21^T on the lower triangle only, in
// TB x TB tiles. Each thread owns one column of a tile and accumulates it in registers.
template <int TB, class Exec, class T>
void trailing_syrk(const Exec& exec, const int m, const int kb, const Strided<T> a21,
                   const Strided<T> a22, const InfoView<Exec>& info) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  const int tiles = (m + TB - 1) / TB;
  const std::size_t bytes = 2 * ScratchVec<Exec, T>::shmem_size(std::size_t(kb) * TB);
  const int level = scratch_level<Policy>(bytes);
  auto body = KOKKOS_LAMBDA(const Member& member) {
    if (info(0) != 0) return;
    // Tile pair (ti >= tj) from the league rank.
    const int t = member.league_rank();
    int ti = int((impl::sqrt(8.0 * t + 1.0) - 1.0) / 2.0);
    while (ti * (ti + 1) / 2 > t) --ti;
    while ((ti + 1) * (ti + 2) / 2 <= t) ++ti;
    const int tj = t - ti * (ti + 1) / 2;
    ScratchVec<Exec, T> pi(member.team_scratch(level), std::size_t(kb) * TB);
    ScratchVec<Exec, T> pj(member.team_scratch(level), std::size_t(kb) * TB);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, kb * TB), [&](const int u) {
      const int r = u % TB, k = u / TB;
      const int i = ti * TB + r, j = tj * TB + r;
      pi(k * TB + r) = i < m ? a21(i, k) : T(0);
      pj(k * TB + r) = j < m ? a21(j, k) : T(0);
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, TB), [&](const int c) {
      const int j = tj * TB + c;
      if (j >= m) return;
      T acc[TB];
      for (int r = 0; r < TB; ++r) acc[r] = 0;
      for (int k = 0; k < kb; ++k) {
        const T b = pj(k * TB + c);
        for (int r = 0; r < TB; ++r) acc[r] += pi(k * TB + r) * b;
      }
      for (int r = 0; r < TB; ++r) {
        const int i = ti * TB + r;
        if (i < m && i >= j) a22(i, j) -= acc[r];
      }
    });
  };
  const int league = tiles * (tiles + 1) / 2;
  Policy probe(exec, league, 1);
  probe.set_scratch_size(level, Kokkos::PerTeam(bytes));
  Policy policy(exec, league, pick_team_size(exec, probe, body, is_host_space<Exec>() ? 1 : TB));
  policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kolesky::potrf_trailing_syrk", policy, body);
}

template <class Exec, class T>
void blocked_potrf(const Exec& exec, const int n, const Strided<T> a, const InfoView<Exec>& info,
                   int nb) {
  if (nb <= 0) nb = 64;
  for (int k0 = 0; k0 < n; k0 += nb) {
    const int kb = std::min(nb, n - k0);
    team_potrf<Algo::RightLooking>(exec, kb, a.shifted(k0, k0), info, k0, 0);
    const int m = n - k0 - kb;
    if (m == 0) break;
    panel_trsm(exec, m, kb, a.shifted(k0, k0), a.shifted(k0 + kb, k0), info);
    if constexpr (is_host_space<Exec>()) {
      trailing_syrk<64>(exec, m, kb, a.shifted(k0 + kb, k0), a.shifted(k0 + kb, k0 + kb), info);
    } else {
      trailing_syrk<32>(exec, m, kb, a.shifted(k0 + kb, k0), a.shifted(k0 + kb, k0 + kb), info);
    }
  }
}

// Host-visible info after the work queued on `exec`.
template <class Exec>
int fetch_info(const Exec& exec, const InfoView<Exec>& info) {
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), info);
  Kokkos::deep_copy(exec, h, info);
  exec.fence();
  return h(0);
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
void potrs_strided(const Exec& exec, const int n, const int nrhs, const Strided<const T> l,
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
