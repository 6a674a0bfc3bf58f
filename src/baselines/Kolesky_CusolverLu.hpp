// cuSOLVER's dense getrf (partial pivoting) as a baseline: handle, workspace, pivots and info
// made once, outside timing.
#pragma once
#ifdef KOLESKY_HAVE_CUSOLVER
#include <Kokkos_Core.hpp>
#include <cusolverDn.h>

#include "Kolesky_Cusolver.hpp"

namespace kolesky {
namespace baselines {

template <class T>
class CusolverGetrf {
 public:
  // Column-major n x n with leading dimension lda, in device memory.
  CusolverGetrf(const Kokkos::Cuda& exec, int n, T* a, int lda)
      : n_(n), lda_(lda), ipiv_("cusolver_ipiv", n > 0 ? n : 1), info_("cusolver_info", 1) {
    cusolver_check(cusolverDnCreate(&h_), "cusolverDnCreate");
    cusolver_check(cusolverDnSetStream(h_, exec.cuda_stream()), "cusolverDnSetStream");
    int lwork = 0;
    if constexpr (std::is_same<T, double>::value)
      cusolver_check(cusolverDnDgetrf_bufferSize(h_, n_, n_, a, lda_, &lwork), "bufferSize");
    else
      cusolver_check(cusolverDnSgetrf_bufferSize(h_, n_, n_, a, lda_, &lwork), "bufferSize");
    work_ = Kokkos::View<T*, Kokkos::CudaSpace>("cusolver_work", lwork > 0 ? lwork : 1);
  }
  ~CusolverGetrf() { cusolverDnDestroy(h_); }
  CusolverGetrf(const CusolverGetrf&) = delete;
  CusolverGetrf& operator=(const CusolverGetrf&) = delete;

  void run(T* a) {
    if constexpr (std::is_same<T, double>::value)
      cusolver_check(cusolverDnDgetrf(h_, n_, n_, a, lda_, work_.data(), ipiv_.data(),
                                      info_.data()),
                     "getrf");
    else
      cusolver_check(cusolverDnSgetrf(h_, n_, n_, a, lda_, work_.data(), ipiv_.data(),
                                      info_.data()),
                     "getrf");
  }
  int info() const {
    int h = 0;
    Kokkos::deep_copy(Kokkos::View<int, Kokkos::HostSpace>(&h), Kokkos::subview(info_, 0));
    return h;
  }
  const Kokkos::View<int*, Kokkos::CudaSpace>& ipiv() const { return ipiv_; }

 private:
  cusolverDnHandle_t h_{};
  int n_, lda_;
  Kokkos::View<int*, Kokkos::CudaSpace> ipiv_;
  Kokkos::View<int*, Kokkos::CudaSpace> info_;
  Kokkos::View<T*, Kokkos::CudaSpace> work_;
};

}  // namespace baselines
}  // namespace kolesky
#endif
