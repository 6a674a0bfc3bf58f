// The Kokkos Kernels way to factor one SPD matrix: Kokkos Kernels 3.4 has no potrf, so this is
// LAPACK's left-looking blocked algorithm composed from KokkosBlas::gemm and KokkosBlas::trsm
// (cuBLAS or the BLAS TPL for LayoutLeft), with Kolesky's one-team kernel for the diagonal
// block. Lower only, LayoutLeft. The gemm also writes the strict upper triangle of the
// diagonal blocks (a baseline, not a library routine).
#pragma once
#ifdef KOLESKY_HAVE_KOKKOSKERNELS
#include <KokkosBlas3_gemm.hpp>
#include <KokkosBlas3_trsm.hpp>
#include <Kokkos_Core.hpp>

#include <algorithm>

#include "host/Kolesky_Potrf_Impl.hpp"

namespace kolesky {
namespace baselines {

template <class Exec, class View>
int kk_blocked_potrf(const Exec& exec, const View& a, int nb = 128) {
  static_assert(std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value,
                "kk_blocked_potrf: LayoutLeft only");
  using T = typename View::non_const_value_type;
  const int n = int(a.extent(0));
  if (n == 0) return 0;
  impl::InfoView<Exec> info("kk_info", 1);
  Kokkos::deep_copy(exec, info, 0);
  using Kokkos::make_pair;
  using Kokkos::subview;
  for (int k0 = 0; k0 < n; k0 += nb) {
    const int kb = std::min(nb, n - k0);
    if (k0 > 0) {  // A(k0:n, k0:k0+kb) -= A(k0:n, 0:k0) * A(k0:k0+kb, 0:k0)^T
      auto c = subview(a, make_pair(k0, n), make_pair(k0, k0 + kb));
      auto p = subview(a, make_pair(k0, n), make_pair(0, k0));
      auto q = subview(a, make_pair(k0, k0 + kb), make_pair(0, k0));
      KokkosBlas::gemm("N", "T", T(-1), p, q, T(1), c);
    }
    const impl::Strided<T> d{a.data() + k0 + std::ptrdiff_t(k0) * a.stride(1), 1,
                             std::ptrdiff_t(a.stride(1))};
    impl::team_potrf<Algo::RightLooking>(exec, kb, d, info, k0, 0);
    if (k0 + kb < n) {
      auto l11 = subview(a, make_pair(k0, k0 + kb), make_pair(k0, k0 + kb));
      auto a21 = subview(a, make_pair(k0 + kb, n), make_pair(k0, k0 + kb));
      KokkosBlas::trsm("R", "L", "T", "N", T(1), l11, a21);
    }
  }
  return impl::fetch_info(exec, info);
}

}  // namespace baselines
}  // namespace kolesky
#endif
