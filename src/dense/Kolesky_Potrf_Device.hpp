// Device-callable Cholesky on one matrix, for use inside a user's own kernels.
//
//   int info = kolesky::SerialPotrf<Uplo::Lower, Algo::Crout>::invoke(A);
//   int info = kolesky::TeamPotrf<Member, Uplo::Lower>::invoke(member, A);
//   int info = kolesky::TeamVectorPotrf<Member, Uplo::Lower, Algo::TiledLeft>::invoke(member, A, 16);
//   kolesky::SerialPotrs<Uplo::Lower>::invoke(A, B);        // B rank 1 or 2
//
// Serial: the calling thread alone. Team: the team's threads (TeamThreadRange) share the
// matrix. TeamVector: the team's threads and their vector lanes (TeamVectorRange). Team and
// TeamVector calls must be made by every thread of the team; all of them get the same info.
// The optional last argument of potrf is the tile order of the tiled variants.
//
// A is any rank-2 View (LayoutLeft, LayoutRight, LayoutStride, subviews, scratch views).
#pragma once
#include <Kokkos_Core.hpp>

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

template <class Member, Uplo U, impl::Par P = impl::Par::Team>
struct TeamPotrs {
  template <class AView, class BView>
  KOKKOS_INLINE_FUNCTION static void invoke(const Member& member, const AView& a,
                                            const BView& b) {
    using T = typename BView::non_const_value_type;
    const auto l = impl::lower_of<U>(a);
    impl::TeamPotrsInternal<P>::invoke(member, int(a.extent(0)), impl::nrhs_of(b),
                                       impl::Strided<const T>{l.p, l.rs, l.cs}, impl::rhs_of(b));
  }
};

template <class Member, Uplo U>
struct TeamVectorPotrs : TeamPotrs<Member, U, impl::Par::TeamVector> {};

}  // namespace kolesky
