// r = b - A x for a symmetric A given by its lower triangle, a few right-hand sides, on CUDA:
// posv_mixed's residual, which reads A (double) once per refinement step.
//
// cuBLAS's DSYMV (one call per right-hand side, after a copy b -> r) read the triangle at
// 1.46 TB/s on the H100 at n = 16384 (0.74 ms a step). Here A is read once for up to four
// right-hand sides, in units of 256 rows x 128 columns of the triangle (a thread per row,
// coalesced down the columns): each unit multiplies its block by x on both sides, A_ij x_j
// for its rows and A_ij x_i for its columns (a warp shuffle sum per column, then the warps'
// sums in shared memory), and writes the two partial vectors to a workspace; a second launch
// adds each row's partials in a fixed order and subtracts from b. No atomics: the result is
// the same bits every call, as LAPACK's and cuBLAS's default (atomics-free) SYMV.
#pragma once
#include <Kokkos_Core.hpp>

#include <cstddef>

#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Types.hpp"

namespace kolesky {
namespace impl {

// Right-hand sides up to which posv_mixed's residual takes this path on CUDA (four a launch);
// above, cuBLAS's SYMM, whose GEMM shape has the flops to fill the device.
constexpr int kResidualMaxRhs = 8;

// Measurement knob (perf_test --residual=): 0 sends the residual to cuBLAS, 1 (default) here.
struct ResidualKnobs : Knobs<ResidualKnobs> {
  int fused = 1;
};

#ifdef KOKKOS_ENABLE_CUDA

constexpr int kResRows = 256;  // rows of a unit: one per thread
constexpr int kResCols = 128;  // columns of a unit (a column block)

struct ResidualArgs {
  const double* l;
  std::ptrdiff_t lcs;  // column stride (row stride 1)
  const double* x;
  std::ptrdiff_t xrs, xcs;
  const double* b;
  std::ptrdiff_t brs, bcs;
  double* r;
  std::ptrdiff_t rrs, rcs;
  int n, nr;   // order, right-hand sides in this launch
  int ncb;     // column blocks
  int nru;     // units of column block 0 (the most of any block)
  double* rowp;  // [rhs][ncb][n]: A_ij x_j summed over a unit's columns, per row i
  double* colp;  // [rhs][nru][n]: A_ij x_i summed over a unit's rows, per column j
};

__host__ __device__ inline int residual_units(const int n, const int jb) {
  return (n - jb * kResCols + kResRows - 1) / kResRows;
}

template <int R>
__global__ void __launch_bounds__(kResRows) residual_units_kernel(const ResidualArgs a) {
  __shared__ double xs[R][kResCols];
  __shared__ double zs[kResRows / 32][R][kResCols];
  // This block's unit: column block jb, its unit c (rows from jb * kResCols + c * kResRows).
  int c = int(blockIdx.x), jb = 0;
  for (int u = residual_units(a.n, 0); c >= u; u = residual_units(a.n, ++jb)) c -= u;
  const int j0 = jb * kResCols, i = j0 + c * kResRows + int(threadIdx.x);
  const int t = int(threadIdx.x), lane = t & 31, warp = t >> 5;
  const int jn = a.n - j0 < kResCols ? a.n - j0 : kResCols;
  for (int q = t; q < R * kResCols; q += kResRows) {
    const int rr = q / kResCols, jj = q % kResCols;
    xs[rr][jj] = rr < a.nr && jj < jn ? a.x[(j0 + jj) * a.xrs + rr * a.xcs] : 0.0;
  }
  const bool row = i < a.n;
  double xi[R], y[R];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    xi[rr] = row && rr < a.nr ? a.x[i * a.xrs + rr * a.xcs] : 0.0;
    y[rr] = 0;
  }
  __syncthreads();
  const bool diag = c == 0;  // the unit starts with the diagonal block: row t, column t
  const double* const col = a.l + std::ptrdiff_t(j0) * a.lcs + i;
  for (int j8 = 0; j8 < kResCols; j8 += 8) {
    double v[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) {  // eight loads in flight before any use
      const int jj = j8 + q;
      v[q] = row && jj < jn && (!diag || t >= jj) ? __ldg(col + std::ptrdiff_t(jj) * a.lcs) : 0.0;
    }
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const int jj = j8 + q;
      const double vz = diag && t == jj ? 0.0 : v[q];  // the diagonal counts once, in y
      double z[R];
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
        y[rr] += v[q] * xs[rr][jj];
        z[rr] = vz * xi[rr];
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int rr = 0; rr < R; ++rr) z[rr] += __shfl_xor_sync(0xffffffffu, z[rr], o);
      if (lane == 0)
#pragma unroll
        for (int rr = 0; rr < R; ++rr) zs[warp][rr][jj] = z[rr];
    }
  }
  if (row)
#pragma unroll
    for (int rr = 0; rr < R; ++rr)
      if (rr < a.nr) a.rowp[(std::size_t(rr) * a.ncb + jb) * a.n + i] = y[rr];
  __syncthreads();
  for (int q = t; q < R * kResCols; q += kResRows) {
    const int rr = q / kResCols, jj = q % kResCols;
    if (rr < a.nr && jj < jn) {
      double s = 0;
#pragma unroll
      for (int w = 0; w < kResRows / 32; ++w) s += zs[w][rr][jj];
      a.colp[(std::size_t(rr) * a.nru + c) * a.n + j0 + jj] = s;
    }
  }
}

// r_i = b_i - (row i's partials of every column block up to its own, then the column
// partials of its own block's units), in that order. (A template, as every kernel of this
// header-only library: one definition across translation units.)
template <int R>
__global__ void residual_sum_kernel(const ResidualArgs a) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= a.n) return;
  const int ib = i / kResCols, units = residual_units(a.n, ib);
  for (int rr = 0; rr < R && rr < a.nr; ++rr) {
    const double* const rp = a.rowp + std::size_t(rr) * a.ncb * a.n + i;
    const double* const cp = a.colp + std::size_t(rr) * a.nru * a.n + i;
    double s = 0;
    for (int jb = 0; jb <= ib; ++jb) s += rp[std::size_t(jb) * a.n];
    for (int c = 0; c < units; ++c) s += cp[std::size_t(c) * a.n];
    a.r[i * a.rrs + rr * a.rcs] = a.b[i * a.brs + rr * a.bcs] - s;
  }
}

// The partials' workspace, per stream, grown when needed.
struct ResidualWork {
  Kokkos::View<double*, Kokkos::CudaSpace> part;
};

template <int R>
void launch_residual(const Kokkos::Cuda& exec, const int blocks, const ResidualArgs& a) {
  residual_units_kernel<R><<<unsigned(blocks), kResRows, 0, exec.cuda_stream()>>>(a);
  check_launch("kolesky::posv_mixed: the residual kernel");
  residual_sum_kernel<R><<<unsigned((a.n + 255) / 256), 256, 0, exec.cuda_stream()>>>(a);
  check_launch("kolesky::posv_mixed: the residual sum kernel");
}

// r = b - A x, nrhs <= kResidualMaxRhs, A's lower triangle in l with l.rs == 1.
inline void residual_cuda(const Kokkos::Cuda& exec, const int n, const int nrhs,
                          const Strided<const double> l, const Strided<const double> x,
                          const Strided<const double> b, const Strided<double> r) {
  if (n <= 0 || nrhs <= 0) return;
  const int ncb = (n + kResCols - 1) / kResCols, nru = residual_units(n, 0);
  const int per = nrhs < 4 ? nrhs : 4;
  const std::size_t need = std::size_t(ncb + nru) * n * per;
  auto& work = per_stream<ResidualWork>(exec);
  if (work.part.extent(0) < need)
    work.part = Kokkos::View<double*, Kokkos::CudaSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::residual_part"), need);
  int blocks = 0;
  for (int jb = 0; jb < ncb; ++jb) blocks += residual_units(n, jb);
  ResidualArgs a{l.p, l.cs, x.p, x.rs, x.cs, b.p, b.rs, b.cs, r.p, r.rs, r.cs, n, 0, ncb, nru,
                 work.part.data(), work.part.data() + std::size_t(ncb) * n * per};
  for (int k0 = 0; k0 < nrhs; k0 += 4) {
    a.nr = nrhs - k0 < 4 ? nrhs - k0 : 4;
    a.x = x.p + k0 * x.cs;
    a.b = b.p + k0 * b.cs;
    a.r = r.p + k0 * r.cs;
    if (a.nr == 1)
      launch_residual<1>(exec, blocks, a);
    else if (a.nr == 2)
      launch_residual<2>(exec, blocks, a);
    else
      launch_residual<4>(exec, blocks, a);
  }
}

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace impl
}  // namespace kolesky
