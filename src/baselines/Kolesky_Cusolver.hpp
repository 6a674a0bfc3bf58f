// cuSOLVER's dense potrf as a baseline: handle and workspace are made once, outside timing.
#pragma once
#ifdef KOLESKY_HAVE_CUSOLVER
#include <Kokkos_Core.hpp>
#include <cusolverDn.h>

#include <stdexcept>
#include <string>

#include "common/Kolesky_Types.hpp"

namespace kolesky {
namespace baselines {

inline void cusolver_check(cusolverStatus_t s, const char* what) {
  if (s != CUSOLVER_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuSOLVER: ") + what + " failed with status " +
                             std::to_string(int(s)));
}

template <class T>
class CusolverPotrf {
 public:
  // Column-major n x n with leading dimension lda, in device memory.
  CusolverPotrf(const Kokkos::Cuda& exec, Uplo uplo, int n, T* a, int lda)
      : uplo_(uplo == Uplo::Lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER),
        n_(n), lda_(lda), info_("cusolver_info", 1) {
    cusolver_check(cusolverDnCreate(&h_), "cusolverDnCreate");
    cusolver_check(cusolverDnSetStream(h_, exec.cuda_stream()), "cusolverDnSetStream");
    int lwork = 0;
    if constexpr (std::is_same<T, double>::value)
      cusolver_check(cusolverDnDpotrf_bufferSize(h_, uplo_, n_, a, lda_, &lwork), "bufferSize");
    else
      cusolver_check(cusolverDnSpotrf_bufferSize(h_, uplo_, n_, a, lda_, &lwork), "bufferSize");
    work_ = Kokkos::View<T*, Kokkos::CudaSpace>("cusolver_work", lwork > 0 ? lwork : 1);
  }
  ~CusolverPotrf() { cusolverDnDestroy(h_); }
  CusolverPotrf(const CusolverPotrf&) = delete;
  CusolverPotrf& operator=(const CusolverPotrf&) = delete;

  // Enqueues the factorization; info stays on the device until info() is called.
  void run(T* a) {
    if constexpr (std::is_same<T, double>::value)
      cusolver_check(cusolverDnDpotrf(h_, uplo_, n_, a, lda_, work_.data(), int(work_.extent(0)),
                                      info_.data()),
                     "potrf");
    else
      cusolver_check(cusolverDnSpotrf(h_, uplo_, n_, a, lda_, work_.data(), int(work_.extent(0)),
                                      info_.data()),
                     "potrf");
  }
  // Enqueues the solve with the factor in a for nrhs columns of b (column-major, ldb).
  void solve(const T* a, T* b, int nrhs, int ldb) {
    if constexpr (std::is_same<T, double>::value)
      cusolver_check(cusolverDnDpotrs(h_, uplo_, n_, nrhs, a, lda_, b, ldb, info_.data()), "potrs");
    else
      cusolver_check(cusolverDnSpotrs(h_, uplo_, n_, nrhs, a, lda_, b, ldb, info_.data()), "potrs");
  }
  int info() const {
    int h = 0;
    Kokkos::deep_copy(Kokkos::View<int, Kokkos::HostSpace>(&h), Kokkos::subview(info_, 0));
    return h;
  }

 private:
  cusolverDnHandle_t h_{};
  cublasFillMode_t uplo_;
  int n_, lda_;
  Kokkos::View<int*, Kokkos::CudaSpace> info_;
  Kokkos::View<T*, Kokkos::CudaSpace> work_;
};

}  // namespace baselines
}  // namespace kolesky
#endif
