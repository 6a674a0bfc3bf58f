// Operation counts (one multiply or add = one flop), as LAPACK's timing suite counts them.
#pragma once

namespace kolesky {
namespace flops {

// n^3/3 + n^2/2 + n/6 for potrf; benchmarks quote n^3/3, the leading term.
inline double potrf(double n) { return n * n * n / 3.0 + n * n / 2.0 + n / 6.0; }
// Two triangular solves per right-hand side.
inline double potrs(double n, double nrhs) { return 2.0 * n * n * nrhs; }

}  // namespace flops
}  // namespace kolesky
