// Tags shared by every routine.
#pragma once

namespace kolesky {

// Which triangle holds the input and receives the factor.
//   Lower: A = L * L^T, L in the lower triangle.
//   Upper: A = U^T * U, U in the upper triangle.
// The other triangle is neither read nor written.
enum class Uplo { Lower, Upper };

// Cholesky variants. All give the same factor up to rounding.
enum class Algo {
  Default,       // the library's choice for the backend and size
  Crout,         // column by column, left-looking (dot products of finished columns)
  Banachiewicz,  // row by row
  RightLooking,  // kji: scale a column, then a rank-1 update of the trailing matrix
  Blocked        // right-looking over blocks of columns: panel, triangular solve, update
};

inline const char* name(Uplo u) { return u == Uplo::Lower ? "Lower" : "Upper"; }
inline const char* name(Algo a) {
  switch (a) {
    case Algo::Default: return "Default";
    case Algo::Crout: return "Crout";
    case Algo::Banachiewicz: return "Banachiewicz";
    case Algo::RightLooking: return "RightLooking";
    case Algo::Blocked: return "Blocked";
  }
  return "?";
}

}  // namespace kolesky
