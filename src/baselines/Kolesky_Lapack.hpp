// LAPACK's potrf/potrs/getrf/getrs on the host, for tests (the oracle) and benchmarks (the baseline).
#pragma once
#ifdef KOLESKY_HAVE_LAPACK
#include <cstddef>

#include "common/Kolesky_Types.hpp"

extern "C" {
// Fortran interfaces; the trailing size_t is the hidden length of the character argument.
void spotrf_(const char*, const int*, float*, const int*, int*, std::size_t);
void dpotrf_(const char*, const int*, double*, const int*, int*, std::size_t);
void spotrs_(const char*, const int*, const int*, const float*, const int*, float*, const int*,
             int*, std::size_t);
void dpotrs_(const char*, const int*, const int*, const double*, const int*, double*,
             const int*, int*, std::size_t);
void sgetrf_(const int*, const int*, float*, const int*, int*, int*);
void dgetrf_(const int*, const int*, double*, const int*, int*, int*);
void sgetrs_(const char*, const int*, const int*, const float*, const int*, const int*, float*,
             const int*, int*, std::size_t);
void dgetrs_(const char*, const int*, const int*, const double*, const int*, const int*,
             double*, const int*, int*, std::size_t);
}

namespace kolesky {
namespace baselines {

// Column-major, leading dimension lda. Returns LAPACK's info.
inline int lapack_potrf(Uplo u, int n, float* a, int lda) {
  int info = 0;
  spotrf_(u == Uplo::Lower ? "L" : "U", &n, a, &lda, &info, 1);
  return info;
}
inline int lapack_potrf(Uplo u, int n, double* a, int lda) {
  int info = 0;
  dpotrf_(u == Uplo::Lower ? "L" : "U", &n, a, &lda, &info, 1);
  return info;
}
inline int lapack_potrs(Uplo u, int n, int nrhs, const float* a, int lda, float* b, int ldb) {
  int info = 0;
  spotrs_(u == Uplo::Lower ? "L" : "U", &n, &nrhs, a, &lda, b, &ldb, &info, 1);
  return info;
}
inline int lapack_potrs(Uplo u, int n, int nrhs, const double* a, int lda, double* b, int ldb) {
  int info = 0;
  dpotrs_(u == Uplo::Lower ? "L" : "U", &n, &nrhs, a, &lda, b, &ldb, &info, 1);
  return info;
}

// LU with partial pivoting, n x n column-major; ipiv 1-based.
inline int lapack_getrf(int n, float* a, int lda, int* ipiv) {
  int info = 0;
  sgetrf_(&n, &n, a, &lda, ipiv, &info);
  return info;
}
inline int lapack_getrf(int n, double* a, int lda, int* ipiv) {
  int info = 0;
  dgetrf_(&n, &n, a, &lda, ipiv, &info);
  return info;
}
inline int lapack_getrs(bool trans, int n, int nrhs, const float* a, int lda, const int* ipiv,
                        float* b, int ldb) {
  int info = 0;
  sgetrs_(trans ? "T" : "N", &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  return info;
}
inline int lapack_getrs(bool trans, int n, int nrhs, const double* a, int lda, const int* ipiv,
                        double* b, int ldb) {
  int info = 0;
  dgetrs_(trans ? "T" : "N", &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  return info;
}

}  // namespace baselines
}  // namespace kolesky
#endif
