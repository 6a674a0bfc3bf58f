// Iterative (fixed-point) Crout LU, after the GPU method of reference 004:
//
//   auto r = kolesky::crout_iterative(exec, A);   // A <- packed Crout factor (as getrf_nopiv)
//   r.converged, r.sweeps, r.max_delta, r.info
//
// Z starts as A. A sweep recomputes every element of the active section from the previous
// iterate with Crout's formulas,
//   l_ij = a_ij - sum_{k<j} z_ik z_kj            (i >= j)
//   u_ij = (a_ij - sum_{k<i} z_ik z_kj) / z_ii   (i < j),
// a true Jacobi sweep (new values go to a second buffer; the iterate changes only between
// sweeps), until max |Z_new - Z| <= tolerance (0: until nothing changes) or the sweep cap.
// Sections: the diagonal section first, then the strip to its right (U) and the strip below
// it (L) together. The two strips do not read each other, so they share one launch per sweep
// (004 used two streams and one section pair at a time: same concurrency, more launches).
// Each element's k-sum runs in BS x BS tiles staged in scratch memory; BS = 8, 16 or 32.
//
// No pivoting: for matrices whose leading minors are non-zero. A fixed point is reached in at
// most (section order) sweeps in exact arithmetic; the cap reports non-convergence instead of
// looping forever (a diverging iterate, inf or NaN, also stops it).
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Profiling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Lu_Internal.hpp"
#include "host/Kolesky_Getrf.hpp"
#include "host/Kolesky_Potrf.hpp"

namespace kolesky {

struct IterativeCroutOptions {
  double tolerance = 0;  // per-section stop: max |dZ| <= tolerance (0: stationary)
  int max_sweeps = 0;    // per section (0: 2 x section order + 10)
  int block = 16;        // tile of the k-sum: 8, 16 or 32
  int section = 0;       // section order (0: clamp(n / 10, 256, 1024), rounded up to block)
};

struct IterativeCroutResult {
  int info = 0;            // first zero / non-finite L(i, i), 1-based (after convergence)
  bool converged = true;   // every section reached the tolerance within the cap
  int sweeps = 0;          // sweeps over all sections
  double max_delta = 0;    // the largest final max |dZ| of any section (inf: diverged)
};

namespace impl {

// One Jacobi sweep over up to two rectangles of tiles (rows [r0, r1) x cols [c0, c1) each):
// writes Zn and returns max |Zn - Z| through the reduction.
template <class Exec, class T, int BS>
struct CroutSweep {
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  Strided<const T> a0;  // the original matrix
  Strided<const T> z;   // current iterate
  Strided<T> zn;        // next iterate
  int r0[2], r1[2], c0[2], c1[2], tiles0;
  int tc[2];  // tiles per row of each rectangle

  KOKKOS_INLINE_FUNCTION void operator()(const Member& mb, T& dmax) const {
    const int t = mb.league_rank();
    const int s = t < tiles0 ? 0 : 1, tt = t < tiles0 ? t : t - tiles0;
    const int ib = r0[s] + (tt / tc[s]) * BS, jb = c0[s] + (tt % tc[s]) * BS;
    const int ie = imin(ib + BS, r1[s]), je = imin(jb + BS, c1[s]);
    Scratch<Exec, T> ls(mb.team_scratch(0), BS * BS), us(mb.team_scratch(0), BS * BS),
        acc(mb.team_scratch(0), BS * BS);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, BS * BS), [&](const int e) { acc(e) = 0; });
    // The k-sum of element (i, j) stops at min(i, j); the tile's largest is min(ie, je) - 1.
    const int kend = imin(ie, je);
    for (int k0 = 0; k0 < kend; k0 += BS) {
      mb.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, BS * BS), [&](const int e) {
        const int r = e / BS, c = e % BS;
        const int i = ib + r, k = k0 + c, kr = k0 + r, j = jb + c;
        ls(e) = (i < ie && k < kend) ? z(i, k) : T(0);
        us(e) = (kr < kend && j < je) ? z(kr, j) : T(0);
      });
      mb.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, BS * BS), [&](const int e) {
        const int r = e / BS, c = e % BS, i = ib + r, j = jb + c;
        const int lim = imin(imin(i, j) - k0, BS);
        T sum = 0;
        for (int q = 0; q < lim; ++q) sum += ls(r * BS + q) * us(q * BS + c);
        acc(e) += sum;
      });
    }
    mb.team_barrier();
    T local = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(mb, BS * BS),
        [&](const int e, T& v) {
          const int i = ib + e / BS, j = jb + e % BS;
          if (i >= ie || j >= je) return;
          T x = a0(i, j) - acc(e);
          if (i < j) x /= z(i, i);
          zn(i, j) = x;
          T d = x - z(i, j);
          d = d < T(0) ? -d : d;
          if (!(d <= FloatLimits<T>::max)) d = FloatLimits<T>::max;  // NaN, inf: diverged
          if (d > v) v = d;
        },
        Kokkos::Max<T>(local));
    Kokkos::single(Kokkos::PerTeam(mb), [&]() {
      if (local > dmax) dmax = local;
    });
  }
};

template <class Exec, class T, int BS>
T crout_sweep(const Exec& exec, const Strided<const T> a0, const Strided<T> z,
              const Strided<T> zn, const int (&r0)[2], const int (&r1)[2], const int (&c0)[2],
              const int (&c1)[2], const int rects) {
  CroutSweep<Exec, T, BS> f{a0, as_const(z), zn, {r0[0], r0[1]}, {r1[0], r1[1]},
                            {c0[0], c0[1]}, {c1[0], c1[1]}, 0, {1, 1}};
  int tiles[2] = {0, 0};
  for (int s = 0; s < rects; ++s) {
    const int tr = (r1[s] - r0[s] + BS - 1) / BS;
    f.tc[s] = std::max(1, (c1[s] - c0[s] + BS - 1) / BS);
    tiles[s] = (r1[s] > r0[s] && c1[s] > c0[s]) ? tr * f.tc[s] : 0;
  }
  f.tiles0 = tiles[0];
  const int league = tiles[0] + tiles[1];
  if (league == 0) return T(0);
  Kokkos::TeamPolicy<Exec> policy(exec, league, is_host_exec<Exec>() ? 1 : BS * BS);
  policy.set_scratch_size(0, Kokkos::PerTeam(3 * Scratch<Exec, T>::shmem_size(BS * BS)));
  T dmax = 0;
  Kokkos::parallel_reduce("kolesky::crout_sweep", policy, f, Kokkos::Max<T>(dmax));
  // Jacobi: the new values replace the old only after the whole sweep.
  for (int s = 0; s < rects; ++s) {
    if (tiles[s] == 0) continue;
    const int rb = r0[s], cb = c0[s];
    Kokkos::parallel_for(
        "kolesky::crout_sweep_copy",
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>(exec, {rb, cb}, {r1[s], c1[s]}),
        KOKKOS_LAMBDA(const int i, const int j) { z(i, j) = zn(i, j); });
  }
  return dmax;
}

template <class Exec, class T, int BS>
IterativeCroutResult crout_iterative_bs(const Exec& exec, const int n, const Strided<T> z,
                                        const IterativeCroutOptions& opt) {
  IterativeCroutResult res;
  if (n == 0) return res;
  using Buf = Kokkos::View<T**, Kokkos::LayoutLeft, typename Exec::memory_space>;
  Buf a0(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::crout_a0"), n, n);
  Buf zn(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::crout_zn"), n, n);
  const Strided<T> sa0{a0.data(), 1, std::ptrdiff_t(a0.stride(1))};
  const Strided<T> szn{zn.data(), 1, std::ptrdiff_t(zn.stride(1))};
  Kokkos::parallel_for(
      "kolesky::crout_copy", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>(exec, {0, 0}, {n, n}),
      KOKKOS_LAMBDA(const int i, const int j) { sa0(i, j) = z(i, j); });
  int s = opt.section > 0 ? opt.section : std::min(std::max(n / 10, 256), 1024);
  s = (s + BS - 1) / BS * BS;
  const int cap = opt.max_sweeps > 0 ? opt.max_sweeps : 2 * s + 10;
  const T tol = T(opt.tolerance);
  const auto iterate = [&](const int (&r0)[2], const int (&r1)[2], const int (&c0)[2],
                           const int (&c1)[2], const int rects) {
    T d = 0;
    int k = 0;
    do {
      d = crout_sweep<Exec, T, BS>(exec, as_const(sa0), z, szn, r0, r1, c0, c1, rects);
      ++k;
    } while (d > tol && d < FloatLimits<T>::max && k < cap);
    res.sweeps += k;
    // A diverged iterate (inf or NaN somewhere) reports max_delta = inf.
    res.max_delta = std::max(res.max_delta, d < FloatLimits<T>::max
                                                ? double(d)
                                                : std::numeric_limits<double>::infinity());
    if (d > tol) res.converged = false;
  };
  for (int d0 = 0; d0 < n && res.converged; d0 += s) {
    const int d1 = std::min(d0 + s, n);
    iterate({d0, 0}, {d1, 0}, {d0, 0}, {d1, 0}, 1);
    if (!res.converged || d1 == n) continue;
    iterate({d0, d1}, {d1, n}, {d1, d0}, {n, d1}, 2);  // U strip right, L strip below
  }
  // First unusable L(i, i) (an atomic minimum: no reduction scratch, nothing for racecheck).
  const auto first = make_info(exec);
  int* fp = first.data();
  Kokkos::parallel_for(
      "kolesky::crout_pivots", Kokkos::RangePolicy<Exec>(exec, 0, n), KOKKOS_LAMBDA(const int i) {
        if (!usable_lu_pivot(z(i, i))) Kokkos::atomic_fetch_min(fp, -n + i);  // the word starts at 0
      });
  const int f = fetch_info(exec, first);
  if (f < 0) res.info = f + n + 1;
  return res;
}

}  // namespace impl

template <class ExecSpace, class AView>
IterativeCroutResult crout_iterative(const ExecSpace& exec, const AView& a,
                                     const IterativeCroutOptions& opt = {}) {
  const impl::Region region("kolesky::crout_iterative");
  impl::check_matrix<ExecSpace>("crout_iterative", a);
  if (opt.block != 8 && opt.block != 16 && opt.block != 32)
    impl::throw_invalid("crout_iterative", "block must be 8, 16 or 32, not ", opt.block);
  if (!(opt.tolerance >= 0))
    impl::throw_invalid("crout_iterative", "tolerance must be >= 0, not ", opt.tolerance);
  using T = typename AView::non_const_value_type;
  const int n = int(a.extent(0));
  IterativeCroutResult r;
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible) {
    const auto z = impl::full_of(a);
    if (opt.block == 8) r = impl::crout_iterative_bs<ExecSpace, T, 8>(exec, n, z, opt);
    if (opt.block == 16) r = impl::crout_iterative_bs<ExecSpace, T, 16>(exec, n, z, opt);
    if (opt.block == 32) r = impl::crout_iterative_bs<ExecSpace, T, 32>(exec, n, z, opt);
  }
  return r;
}

}  // namespace kolesky
