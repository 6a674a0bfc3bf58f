// LAPACK's potrf/potrs on the host, for tests (the oracle) and benchmarks (the baseline).
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

}  // namespace baselines
}  // namespace kolesky
#endif
