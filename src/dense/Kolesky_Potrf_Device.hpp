// Device-callable Cholesky on one matrix, for use inside a user's own kernels.
//
//   int info = kolesky::SerialPotrf<Uplo::Lower, Algo::Crout>::invoke(A);
//   int info = kolesky::TeamPotrf<Member, Uplo::Lower>::invoke(member, A);
//   int info = kolesky::TeamVectorPotrf<Member, Uplo::Lower, Algo::TiledLeft>::invoke(member, A, 16);
//   kolesky::SerialPotrs<Uplo::Lower>::invoke(A, B);        // B rank 1 or 2
//   int info = kolesky::team_potrf(member, uplo, A);        // free-function forms, below
//
// Serial: the calling thread alone. Team: the team's threads (TeamThreadRange) share the
// matrix. TeamVector: the team's threads and their vector lanes (TeamVectorRange). Team and
// TeamVector calls must be made by every thread of the team; all of them get the same info.
// The optional last argument of potrf is the tile order of the tiled variants.
//
// A is any rank-2 View (LayoutLeft, LayoutRight, LayoutStride, subviews, scratch views).
#pragma once
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <type_traits>

#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace impl {

// The factor as a lower-triangular strided matrix (Upper: the transpose).
template <Uplo U, class View>
KOKKOS_INLINE_FUNCTION auto lower_of(const View& a) {
  static_assert(View::rank == 2, "kolesky: the matrix must be a rank-2 View");
  using T = typename View::value_type;
  const Strided<T> s{a.data(), std::ptrdiff_t(a.stride(0)), std::ptrdiff_t(a.stride(1))};
  return U == Uplo::Lower ? s : s.transposed();
}

// Right-hand sides as an n x nrhs strided matrix; a rank-1 View is one column.
template <class View>
KOKKOS_INLINE_FUNCTION Strided<typename View::value_type> rhs_of(const View& b) {
  static_assert(View::rank == 1 || View::rank == 2, "kolesky: B must be a rank-1 or rank-2 View");
  if constexpr (View::rank == 1) {
    return {b.data(), std::ptrdiff_t(b.stride(0)), std::ptrdiff_t(b.stride(0) * b.extent(0))};
  } else {
    return {b.data(), std::ptrdiff_t(b.stride(0)), std::ptrdiff_t(b.stride(1))};
  }
}
template <class View>
KOKKOS_INLINE_FUNCTION int nrhs_of(const View& b) {
  if constexpr (View::rank == 1) {
    return 1;
  } else {
    return int(b.extent(1));
  }
}

}  // namespace impl

template <Uplo U, Algo A = Algo::Default>
struct SerialPotrf {
  template <class AView>
  KOKKOS_INLINE_FUNCTION static int invoke(const AView& a, const int nb = kDefaultTile) {
    return impl::run_serial_potrf<A>(int(a.extent(0)), impl::lower_of<U>(a), nb);
  }
};

template <class Member, Uplo U, Algo A = Algo::Default>
struct TeamPotrf {
  template <class AView>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const AView& a,
                                           const int nb = kDefaultTile) {
    return impl::run_team_potrf<A, impl::Par::Team>(member, int(a.extent(0)), impl::lower_of<U>(a),
                                                nb);
  }
};

template <class Member, Uplo U, Algo A = Algo::Default>
struct TeamVectorPotrf {
  template <class AView>
  KOKKOS_INLINE_FUNCTION static int invoke(const Member& member, const AView& a,
                                           const int nb = kDefaultTile) {
    return impl::run_team_potrf<A, impl::Par::TeamVector>(member, int(a.extent(0)),
                                                      impl::lower_of<U>(a), nb);
  }
};

template <Uplo U>
struct SerialPotrs {
  template <class AView, class BView>
  KOKKOS_INLINE_FUNCTION static void invoke(const AView& a, const BView& b) {
    using T = typename BView::non_const_value_type;
    const auto l = impl::lower_of<U>(a);
    impl::SerialPotrsInternal::invoke(int(a.extent(0)), impl::nrhs_of(b),
                                      impl::Strided<const T>{l.p, l.rs, l.cs}, impl::rhs_of(b));
  }
};

template <class Member, Uplo U>
struct TeamPotrs {
  template <class AView, class BView>
  KOKKOS_INLINE_FUNCTION static void invoke(const Member& member, const AView& a,
                                            const BView& b) {
    using T = typename BView::non_const_value_type;
    const auto l = impl::lower_of<U>(a);
    impl::TeamPotrsInternal<impl::Par::Team>::invoke(
        member, int(a.extent(0)), impl::nrhs_of(b), impl::Strided<const T>{l.p, l.rs, l.cs},
        impl::rhs_of(b));
  }
};

template <class Member, Uplo U>
struct TeamVectorPotrs {
  template <class AView, class BView>
  KOKKOS_INLINE_FUNCTION static void invoke(const Member& member, const AView& a,
                                            const BView& b) {
    using T = typename BView::non_const_value_type;
    const auto l = impl::lower_of<U>(a);
    impl::TeamPotrsInternal<impl::Par::TeamVector>::invoke(
        member, int(a.extent(0)), impl::nrhs_of(b), impl::Strided<const T>{l.p, l.rs, l.cs},
        impl::rhs_of(b));
  }
};

//---------------------------------------------------------------------------------------------
// The same as free functions, the member type and triangle deduced / given at run time:
//
//   int info = kolesky::team_potrf(member, kolesky::Uplo::Lower, A);
//   int info = kolesky::team_potrf<kolesky::Algo::TiledLeft>(member, uplo, A, 16);
//   kolesky::team_potrs(member, uplo, A, b);
//
// Scratch: none of these allocate team scratch; they work on A where it is. To stage a matrix
// in scratch first (faster on GPUs for n up to ~64 in double), ask team_scratch_size<T>(n)
// bytes of level 0 per team and make an n x n View in member.team_scratch(0).
//---------------------------------------------------------------------------------------------
template <Algo A = Algo::Default, class AView>
KOKKOS_INLINE_FUNCTION int serial_potrf(const Uplo uplo, const AView& a,
                                        const int nb = kDefaultTile) {
  return uplo == Uplo::Lower ? SerialPotrf<Uplo::Lower, A>::invoke(a, nb)
                             : SerialPotrf<Uplo::Upper, A>::invoke(a, nb);
}
template <Algo A = Algo::Default, class Member, class AView>
KOKKOS_INLINE_FUNCTION int team_potrf(const Member& member, const Uplo uplo, const AView& a,
                                      const int nb = kDefaultTile) {
  return uplo == Uplo::Lower ? TeamPotrf<Member, Uplo::Lower, A>::invoke(member, a, nb)
                             : TeamPotrf<Member, Uplo::Upper, A>::invoke(member, a, nb);
}
template <Algo A = Algo::Default, class Member, class AView>
KOKKOS_INLINE_FUNCTION int team_vector_potrf(const Member& member, const Uplo uplo,
                                             const AView& a, const int nb = kDefaultTile) {
  return uplo == Uplo::Lower ? TeamVectorPotrf<Member, Uplo::Lower, A>::invoke(member, a, nb)
                             : TeamVectorPotrf<Member, Uplo::Upper, A>::invoke(member, a, nb);
}
template <class AView, class BView>
KOKKOS_INLINE_FUNCTION void serial_potrs(const Uplo uplo, const AView& a, const BView& b) {
  if (uplo == Uplo::Lower)
    SerialPotrs<Uplo::Lower>::invoke(a, b);
  else
    SerialPotrs<Uplo::Upper>::invoke(a, b);
}
template <class Member, class AView, class BView>
KOKKOS_INLINE_FUNCTION void team_potrs(const Member& member, const Uplo uplo, const AView& a,
                                       const BView& b) {
  if (uplo == Uplo::Lower)
    TeamPotrs<Member, Uplo::Lower>::invoke(member, a, b);
  else
    TeamPotrs<Member, Uplo::Upper>::invoke(member, a, b);
}
template <class Member, class AView, class BView>
KOKKOS_INLINE_FUNCTION void team_vector_potrs(const Member& member, const Uplo uplo,
                                              const AView& a, const BView& b) {
  if (uplo == Uplo::Lower)
    TeamVectorPotrs<Member, Uplo::Lower>::invoke(member, a, b);
  else
    TeamVectorPotrs<Member, Uplo::Upper>::invoke(member, a, b);
}

// Bytes of team scratch (level 0) that stage one n x n matrix of T.
template <class T, class ExecSpace = Kokkos::DefaultExecutionSpace>
std::size_t team_scratch_size(const int n) {
  using S = Kokkos::View<T**, typename ExecSpace::scratch_memory_space,
                         Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  return S::shmem_size(n, n);
}

// Threads per team for a team-level call on one n x n matrix (measured; docs/performance_log.md):
// host backends 1 (one matrix per thread is far faster than sharing a small matrix: team size
// 2 on OpenMP was 10-100x slower for 6 x 6), GPUs a warp up to n = 32, then a warp per 32 rows
// up to 256 threads. Use it in TeamPolicy(league, recommended_team_size<Exec>(n)).
template <class ExecSpace>
int recommended_team_size(const int n) {
  if (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) return 1;
  const int warps = (n + 31) / 32;
  return 32 * (warps < 1 ? 1 : (warps > 8 ? 8 : warps));
}

}  // namespace kolesky
