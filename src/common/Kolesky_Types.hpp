// Tags shared by every routine.
#pragma once
#include <Kokkos_Macros.hpp>

// Before a host loop whose iterations are independent but whose pointers the compiler cannot
// prove disjoint (several columns of one matrix): vectorize it without run-time alias checks.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define KOLESKY_IVDEP
#elif defined(__clang__)
#define KOLESKY_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define KOLESKY_IVDEP _Pragma("GCC ivdep")
#else
#define KOLESKY_IVDEP
#endif

// Before a short host loop over registers (arrays of vectors): unroll it whole, so the array
// stays in registers (GCC turned such a loop into a copy through the stack).
#if defined(__CUDACC__) || defined(__HIPCC__)
#define KOLESKY_UNROLL
#elif defined(__clang__)
#define KOLESKY_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define KOLESKY_UNROLL _Pragma("GCC unroll 16")
#else
#define KOLESKY_UNROLL
#endif

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
  Blocked,       // right-looking over panels of columns: panel, TRSM, SYRK/GEMM update
                 // (CUDA: the next panel is factored on a second stream during the update)
  BlockedLeft,   // left-looking over panels: a panel gets all its updates just before use
  Recursive,     // halve, factor, TRSM, SYRK, factor: few and large level-3 calls
  Dataflow,      // one launch: a persistent grid of teams takes 64 x 64 tiles in order and
                 // waits on per-tile flags (the GPU default for small n, and Blocked's GPU
                 // panel kernel)
  // Tiled forms on nb x nb tiles built from tile POTRF / TRSM / SYRK / GEMM (nb: a runtime
  // argument, kDefaultTile when omitted). They differ in when a tile receives its updates:
  TiledRight,    // as soon as its column panel is factored (eager)
  TiledLeft,     // just before its column panel is factored (lazy, by column panels)
  TiledTop,      // row panel by row panel: solve a row against the rows above it, then its diagonal
  // The schemes of the documents the project came from, kept for comparison (host-level
  // potrf only; one or more kernel launches per column, so slow for large n):
  ColumnKernels,        // 000: per column, a block-reduction kernel for the diagonal and a
                        // kernel with a thread per row, the pivot row tiled through scratch
  RightLookingKernels,  // 001: per column, sqrt / divide / eliminate kernels
  CroutCutoff           // 002: Crout, each column's rows in parallel, the last
                        // PotrfOptions::tail_cutoff columns sequentially
};

// How Algo::Blocked factors a panel (diagonal block and the rows below it).
enum class Panel {
  Auto,       // the library's choice per backend (measured: docs/performance_log.md)
  Dataflow,   // one tile-dataflow launch per panel (panel width a multiple of 64)
  Recursive   // recursive potrf of the diagonal block, then a blocked TRSM
};

// Tile order the tiled forms use unless told otherwise.
constexpr int kDefaultTile = 8;

KOKKOS_INLINE_FUNCTION constexpr bool is_tiled(Algo a) {
  return a == Algo::TiledRight || a == Algo::TiledLeft || a == Algo::TiledTop;
}

// The host-level schemes have no device-function form: there they mean the default.
KOKKOS_INLINE_FUNCTION constexpr bool is_host_level(Algo a) {
  return a == Algo::BlockedLeft || a == Algo::Recursive || a == Algo::Dataflow ||
         a == Algo::ColumnKernels ||
         a == Algo::RightLookingKernels || a == Algo::CroutCutoff;
}
KOKKOS_INLINE_FUNCTION constexpr Algo device_algo(Algo a) {
  return is_host_level(a) ? Algo::Default : a;
}

inline const char* name(Uplo u) { return u == Uplo::Lower ? "Lower" : "Upper"; }
inline const char* name(Algo a) {
  switch (a) {
    case Algo::Default: return "Default";
    case Algo::Crout: return "Crout";
    case Algo::Banachiewicz: return "Banachiewicz";
    case Algo::RightLooking: return "RightLooking";
    case Algo::Blocked: return "Blocked";
    case Algo::TiledRight: return "TiledRight";
    case Algo::TiledLeft: return "TiledLeft";
    case Algo::TiledTop: return "TiledTop";
    case Algo::BlockedLeft: return "BlockedLeft";
    case Algo::Recursive: return "Recursive";
    case Algo::Dataflow: return "Dataflow";
    case Algo::ColumnKernels: return "ColumnKernels";
    case Algo::RightLookingKernels: return "RightLookingKernels";
    case Algo::CroutCutoff: return "CroutCutoff";
  }
  return "?";
}

namespace impl {
// Process-wide knobs of a routine's internals (perf_test and the tests set them to measure or
// force a path; the defaults are the library's): K::get() is the one instance.
template <class K>
struct Knobs {
  static K& get() {
    static K k;
    return k;
  }
};
}  // namespace impl

}  // namespace kolesky
