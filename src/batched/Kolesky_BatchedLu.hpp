// Batched LU with partial pivoting of many small matrices: getrf, getrs, gesv.
//
//   kolesky::batched::InterleavedBatch<double> a("A", batch, n, n);  // or Strided / Chunked
//   Kokkos::View<int**> ipiv("ipiv", batch, n);
//   Kokkos::View<int*> info("info", batch);
//   kolesky::batched::getrf(exec, a, ipiv, info);
//   kolesky::batched::getrs(exec, kolesky::Trans::No, a, ipiv, b, info);  // skips info != 0
//
// One thread per matrix (the pivot search makes every matrix's control flow its own); with
// the interleaved layouts and LayoutLeft ipiv (the default on GPUs) neighbouring threads
// touch neighbouring addresses. One info per matrix, LAPACK's meaning; a failing matrix does
// not disturb the others. Asynchronous on `exec`.
#pragma once
#include <Kokkos_Core.hpp>

#include "batched/Kolesky_Batch.hpp"
#include "batched/Kolesky_BatchedPotrf.hpp"
#include "common/Kolesky_Error.hpp"
#include "dense/Kolesky_Lu_Internal.hpp"

namespace kolesky {
namespace batched {
namespace impl {

template <class Exec, class Batch, class Piv>
void check_pivots(const char* routine, const Batch& a, const Piv& ipiv) {
  static_assert(Kokkos::is_view<Piv>::value && Piv::rank == 2 &&
                    std::is_same<typename Piv::value_type, int>::value,
                "kolesky::batched: ipiv must be a rank-2 View of int (batch, n)");
  if (!Kokkos::SpaceAccessibility<Exec, typename Piv::memory_space>::accessible)
    kolesky::impl::throw_invalid(routine, "ipiv lives in memory space ",
                                 Piv::memory_space::name(), ", which execution space ",
                                 Exec::name(), " cannot access");
  if (ipiv.extent(0) < std::size_t(a.size()) || ipiv.extent(1) < std::size_t(a.rows()))
    kolesky::impl::throw_invalid(routine, "ipiv is ", ipiv.extent(0), " x ", ipiv.extent(1),
                                 " but must be at least ", a.size(), " x ", a.rows());
}

}  // namespace impl

template <class ExecSpace, class ABatch, class Piv, class Info>
std::enable_if_t<is_batch_like<ABatch>::value> getrf(const ExecSpace& exec, const ABatch& a_,
                                                      const Piv& ipiv, const Info& info) {
  const kolesky::impl::Region region("kolesky::batched::getrf");
  const auto& a = as_batch(a_);
  using Batch = batch_t<ABatch>;
  impl::check_batch<ExecSpace>("batched::getrf", "A", a, true);
  impl::check_pivots<ExecSpace>("batched::getrf", a, ipiv);
  impl::check_info<ExecSpace>("batched::getrf", info, a.size());
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename Batch::memory_space>::accessible) {
    const int n = a.rows();
    Kokkos::parallel_for(
        "kolesky::batched::getrf", Kokkos::RangePolicy<ExecSpace>(exec, 0, a.size()),
        KOKKOS_LAMBDA(const int p) {
          int* piv = &ipiv(p, 0);
          const std::ptrdiff_t ps = n > 1 ? &ipiv(p, 1) - piv : 1;
          info(p) = kolesky::impl::serial_getrf(n, n, a.matrix(p), piv, ps);
        });
  }
}

// B <- op(A)^{-1} B for every matrix whose info is 0 (pass an empty info View to solve all).
template <class ExecSpace, class ABatch_, class Piv, class BBatch_, class Info>
std::enable_if_t<is_batch_like<ABatch_>::value && is_rhs_like<BBatch_>::value> getrs(
    const ExecSpace& exec, const Trans trans, const ABatch_& a_, const Piv& ipiv,
    const BBatch_& b_, const Info& info) {
  const kolesky::impl::Region region("kolesky::batched::getrs");
  const auto& a = as_batch(a_);
  const auto b = as_rhs(b_);
  using ABatch = batch_t<ABatch_>;
  using BBatch = rhs_t<BBatch_>;
  impl::check_solve<ExecSpace>("batched::getrs", a, b);
  impl::check_pivots<ExecSpace>("batched::getrs", a, ipiv);
  const bool skip = info.extent(0) > 0;
  if (skip) impl::check_info<ExecSpace>("batched::getrs", info, a.size());
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, typename ABatch::memory_space>::accessible &&
                Kokkos::SpaceAccessibility<ExecSpace, typename BBatch::memory_space>::accessible) {
    using T = typename BBatch::value_type;
    const int n = a.rows(), nrhs = b.cols();
    if (n == 0 || nrhs == 0) return;
    Kokkos::parallel_for(
        "kolesky::batched::getrs", Kokkos::RangePolicy<ExecSpace>(exec, 0, a.size()),
        KOKKOS_LAMBDA(const int p) {
          if (skip && info(p) != 0) return;
          const int* piv = &ipiv(p, 0);
          const std::ptrdiff_t ps = n > 1 ? &ipiv(p, 1) - piv : 1;
          const auto m = a.matrix(p);
          kolesky::impl::serial_getrs(trans, n, nrhs, kolesky::impl::Strided<const T>{m.p, m.rs, m.cs},
                                      piv, ps, b.matrix(p));
        });
  }
}

// Factor and solve; matrices that fail keep their right-hand sides unchanged.
template <class ExecSpace, class ABatch, class Piv, class BBatch, class Info>
std::enable_if_t<is_batch_like<ABatch>::value && is_rhs_like<BBatch>::value> gesv(
    const ExecSpace& exec, const ABatch& a_, const Piv& ipiv, const BBatch& b_, const Info& info) {
  const kolesky::impl::Region region("kolesky::batched::gesv");
  const auto& a = as_batch(a_);
  const auto b = as_rhs(b_);
  impl::check_solve<ExecSpace>("batched::gesv", a, b);
  getrf(exec, a, ipiv, info);
  getrs(exec, Trans::No, a, ipiv, b, info);
}

}  // namespace batched
}  // namespace kolesky
