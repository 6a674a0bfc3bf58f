// Kernels behind kolesky::batched::potrf / potrs. Each works on any batch layout through
// Batch::matrix(b) (a pointer and two strides); they differ in where a matrix lives while it
// is factored: registers, device memory, team scratch, or SIMD lanes across matrices.
#pragma once
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#if defined(__AVX__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace batched {

enum class Kernel {
  Auto,          // the tuned choice for the backend, n and scalar
  Registers,     // one thread per matrix, the triangle in registers (compile-time n <= 16)
  ThreadDirect,  // one thread per matrix, in place in device memory
  TeamScratch,   // one team per matrix, staged in team scratch memory
  TeamRows,      // several matrices per team, one thread per row, packed triangles in scratch
  RowRegisters,  // GPU, n <= 128: one team per matrix, each thread's row in registers
  WarpStaged,    // CUDA, n <= 128: a warp (n <= 64) or a block per matrix, staged in shared memory
  SimdLanes      // host: one thread per group of consecutive matrices, SIMD across them
};

inline const char* name(Kernel k) {
  switch (k) {
    case Kernel::Auto: return "Auto";
    case Kernel::Registers: return "Registers";
    case Kernel::ThreadDirect: return "ThreadDirect";
    case Kernel::TeamScratch: return "TeamScratch";
    case Kernel::TeamRows: return "TeamRows";
    case Kernel::RowRegisters: return "RowRegisters";
    case Kernel::WarpStaged: return "WarpStaged";
    case Kernel::SimdLanes: return "SimdLanes";
  }
  return "?";
}

namespace impl {
using kolesky::impl::Strided;
using kolesky::impl::usable_pivot;
using kolesky::impl::SerialPotrfInternal;
using kolesky::impl::TeamPotrfInternal;

// Largest n for which the register kernel is compiled (the packed triangle of 16 doubles
// would need 272 registers; the dispatcher keeps double at n <= 12).
constexpr int kMaxRegisterN = 16;

// Packed lower triangle, column by column: (i, j), i >= j.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION constexpr int packed(int i, int j) {
  return j * N - j * (j - 1) / 2 + (i - j);
}

// Right-looking Cholesky with the triangle in registers. On failure the matrix is left as it
// was (the loop runs to the end on a dummy pivot so that it stays fully unrolled).
template <int N, class T>
KOKKOS_INLINE_FUNCTION int potrf_registers(const Strided<T> a) {
  T l[N * (N + 1) / 2];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int j = 0; j < N; ++j)
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int i = j; i < N; ++i) l[packed<N>(i, j)] = a(i, j);
  int info = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int k = 0; k < N; ++k) {
    T d = l[packed<N>(k, k)];
    const bool ok = usable_pivot(d);
    info = (info == 0 && !ok) ? k + 1 : info;
    d = ok ? kolesky::impl::sqrt(d) : T(1);
    l[packed<N>(k, k)] = d;
    const T inv = T(1) / d;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int i = k + 1; i < N; ++i) l[packed<N>(i, k)] *= inv;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = k + 1; j < N; ++j)
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int i = j; i < N; ++i) l[packed<N>(i, j)] -= l[packed<N>(i, k)] * l[packed<N>(j, k)];
  }
  if (info == 0) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < N; ++j)
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int i = j; i < N; ++i) a(i, j) = l[packed<N>(i, j)];
  }
  return info;
}

template <int N, class Exec, class Batch, class Info>
void launch_registers(const Exec& exec, const Uplo uplo, const Batch& a, const Info& info) {
  const bool lower = uplo == Uplo::Lower;
  Kokkos::parallel_for(
      "kolesky::batched::potrf_registers", Kokkos::RangePolicy<Exec>(exec, 0, a.size()),
      KOKKOS_LAMBDA(const int b) {
        const auto m = a.matrix(b);
        info(b) = potrf_registers<N>(lower ? m : m.transposed());
      });
}

// Runtime n -> compile-time N.
template <int N, class Exec, class Batch, class Info>
void dispatch_registers(const Exec& exec, const Uplo uplo, const Batch& a, const Info& info,
                        const int n) {
  if constexpr (N > kMaxRegisterN) {
    (void)exec, (void)uplo, (void)a, (void)info, (void)n;
  } else {
    if (n == N)
      launch_registers<N>(exec, uplo, a, info);
    else
      dispatch_registers<N + 1>(exec, uplo, a, info, n);
  }
}

template <Algo A, class Exec, class Batch, class Info>
void launch_thread_direct(const Exec& exec, const Uplo uplo, const Batch& a, const Info& info,
                          const int nb) {
  const bool lower = uplo == Uplo::Lower;
  const int n = a.rows();
  Kokkos::parallel_for(
      "kolesky::batched::potrf_thread", Kokkos::RangePolicy<Exec>(exec, 0, a.size()),
      KOKKOS_LAMBDA(const int b) {
        const auto m = a.matrix(b);
        info(b) = kolesky::impl::run_serial_potrf<A>(n, lower ? m : m.transposed(), nb);
      });
}

// Copy the lower triangle between two strided matrices with the whole team, the index with
// the smaller source stride fastest (coalesced for contiguous matrices).
template <class Member, class T, class U>
KOKKOS_INLINE_FUNCTION void team_copy_lower(const Member& member, const int n,
                                            const Strided<T> src, const Strided<U> dst,
                                            const bool row_fast) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n * n), [&](const int t) {
    const int u = t % n, v = t / n;
    const int i = row_fast ? u : v, j = row_fast ? v : u;
    if (i >= j) dst(i, j) = src(i, j);
  });
}

template <class Exec, class T>
using Scratch =
    Kokkos::View<T*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <Algo A, class Exec, class Batch, class Info>
void launch_team_scratch(const Exec& exec, const Uplo uplo, const Batch& a, const Info& info,
                         int team_size, const int nb) {
  using T = typename Batch::value_type;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  const bool lower = uplo == Uplo::Lower;
  const int n = a.rows();
  // Odd leading dimension: column accesses of consecutive rows then spread over the banks.
  const int ld = n | 1;
  const std::size_t bytes = Scratch<Exec, T>::shmem_size(std::size_t(ld) * n);
  const int level = bytes <= std::size_t(Policy::scratch_size_max(0)) ? 0 : 1;
  auto body = KOKKOS_LAMBDA(const Member& member) {
    const int b = member.league_rank();
    const auto m0 = a.matrix(b);
    const auto m = lower ? m0 : m0.transposed();
    Scratch<Exec, T> buf(member.team_scratch(level), std::size_t(ld) * n);
    const Strided<T> s{buf.data(), 1, ld};
    const bool row_fast = (m.rs < 0 ? -m.rs : m.rs) <= (m.cs < 0 ? -m.cs : m.cs);
    team_copy_lower(member, n, m, s, row_fast);
    member.team_barrier();
    const int r = kolesky::impl::run_team_potrf<A>(member, n, s, nb);
    member.team_barrier();
    if (r == 0) team_copy_lower(member, n, s, m, row_fast);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { info(b) = r; });
  };
  if (team_size <= 0) {
    if (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible)
      team_size = 1;
    else
      team_size = n <= 16 ? 32 : n <= 64 ? 64 : 128;
  }
  Policy probe(exec, a.size(), 1);
  probe.set_scratch_size(level, Kokkos::PerTeam(bytes));
  team_size = team_size < probe.team_size_max(body, Kokkos::ParallelForTag())
                  ? team_size
                  : probe.team_size_max(body, Kokkos::ParallelForTag());
  Policy policy(exec, a.size(), team_size);
  policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kolesky::batched::potrf_team", policy, body);
}

// Several matrices per team, one thread per row of each; every matrix's lower triangle packed
// column by column in scratch (column j at j*n - j(j-1)/2). Right-looking with two barriers
// per column. A matrix that fails continues on a dummy pivot so that its threads keep
// meeting the team's barriers; its info records the failure and its data is not written back.
// Copy the lower triangles of `mats` consecutive matrices between a batch and packed scratch
// (matrix q at q*tri, column j at j*n - j(j-1)/2), in the source's unit-stride order so that
// global accesses coalesce. Eight elements per thread per round, loads issued together: with
// one load in flight the loop waited on memory latency (Nsight Compute: long-scoreboard
// stalls, 9 % of DRAM bandwidth).
template <bool ToScratch, class Member, class Batch, class T>
KOKKOS_INLINE_FUNCTION void staged_copy(const Member& member, const Batch& a, const bool lower,
                                        const int b0, const int mats, const int n, const int tri,
                                        T* buf, const int* skip) {
  constexpr int U = 8;
  const auto m0 = a.matrix(b0);
  const auto m = lower ? m0 : m0.transposed();
  const bool row_fast = (m.rs < 0 ? -m.rs : m.rs) <= (m.cs < 0 ? -m.cs : m.cs);
  const int nn = n * n, total = mats * nn, ts = member.team_size();
  for (int base = member.team_rank(); base < total; base += U * ts) {
    T* src[U];
    int dst[U];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int u = 0; u < U; ++u) {
      const int e = base + u * ts;
      dst[u] = -1;
      if (e < total) {
        const int q = e / nn, r = e - q * nn;
        const int x = r % n, y = r / n;
        const int i = row_fast ? x : y, j = row_fast ? y : x;
        if (i >= j && !(skip && skip[q] != 0)) {
          const auto mq0 = a.matrix(b0 + q);
          const auto mq = lower ? mq0 : mq0.transposed();
          src[u] = &mq(i, j);
          dst[u] = q * tri + j * n - j * (j - 1) / 2 + (i - j);
        }
      }
    }
    if (ToScratch) {
      T v[U];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int u = 0; u < U; ++u) v[u] = dst[u] >= 0 ? *src[u] : T(0);
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int u = 0; u < U; ++u)
        if (dst[u] >= 0) buf[dst[u]] = v[u];
    } else {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int u = 0; u < U; ++u)
        if (dst[u] >= 0) *src[u] = buf[dst[u]];
    }
  }
}

// GPU, n <= kMaxRowRegistersN: one team per matrix (n rounded up to a warp), thread i owning
// row i. Column panels of W columns (W compile-time, so a row's panel entries live in
// registers indexed by constants). For each panel, thread i loads its W entries, subtracts the
// finished panels' contribution (left-looking: its own finished row times the panel rows'
// finished entries, staged once in scratch and read as broadcasts), then factors the panel
// right-looking with one barrier per column: every row publishes its raw entry of column k in
// a double-buffered scratch column and each row i > k updates
//   a(i, j) -= (a(i, k) / a(k, k)) * a(j, k),   k < j, j in the panel,
// and scales its own a(i, k). Each element is read once and written once.
// The updates are not predicated on j <= i: entries right of a row's diagonal are scratch
// registers that are never published or stored, so computing garbage there is cheaper than
// a compare per FMA. A matrix that fails carries on with a dummy pivot (the barriers stay
// uniform); its info records the first failure and its contents are unspecified.
constexpr int kMaxRowRegistersN = 128;

// What a row-register launch factors: its t-th team takes matrix id(t), of order order_of(id)
// stored at matrix_of(id). A uniform batch maps t to itself; a batch of mixed orders maps it
// through the permutation that groups matrices by size (Kolesky_BatchedVar.hpp).
template <class Batch>
struct UniformSource {
  Batch a;
  int n;
  KOKKOS_INLINE_FUNCTION int id(const int t) const { return t; }
  KOKKOS_INLINE_FUNCTION int order_of(const int) const { return n; }
  KOKKOS_INLINE_FUNCTION auto matrix_of(const int b) const { return a.matrix(b); }
};

// The scalar type of a source's matrices.
template <class Source>
using source_scalar_t =
    std::remove_reference_t<decltype(*std::declval<const Source&>().matrix_of(0).p)>;

// `count` matrices of orders up to max_n (<= kMaxRowRegistersN) from `src`.
template <int W, class Exec, class Source, class Info>
void launch_row_registers_on(const Exec& exec, const Uplo uplo, const Source& src,
                             const int count, const int max_n, const Info& info) {
  using T = source_scalar_t<Source>;
  // At most 128 threads and at least 5 teams of them per SM: caps registers at ~100 so that
  // a double row of 32 does not take 150 (measured: 19 % occupancy at n = 32).
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<kMaxRowRegistersN, 5>>;
  using Member = typename Policy::member_type;
  const bool lower = uplo == Uplo::Lower;
  const int team = (max_n + 31) / 32 * 32;
  const int prev = max_n > W ? (max_n - 1) / W * W : 0;  // columns finished before the last panel
  // Padded so that the buffers can start on 16 bytes (pairs of entries load together).
  const std::size_t words = std::size_t(2) * team + std::size_t(prev) * W + 16 / sizeof(T);
  const std::size_t bytes = Scratch<Exec, T>::shmem_size(words);
  auto body = KOKKOS_LAMBDA(const Member& member) {
    const int b = src.id(member.league_rank()), i = member.team_rank();
    const int n = src.order_of(b);  // the same for the whole team: the loops below stay uniform
    const auto m0 = src.matrix_of(b);
    const auto m = lower ? m0 : m0.transposed();
    Scratch<Exec, T> raw(member.team_scratch(0), words);
    T* const base = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(raw.data()) + 15) &
                                         ~std::uintptr_t(15));
    T* const colbuf = base;                   // 2 x team
    T* const panel = base + std::size_t(2) * team;  // prev x W, panel[q * W + w] = L(c0 + w, q)
    const bool mine = i < n;
    int fail = 0;
    for (int c0 = 0; c0 < n; c0 += W) {
      if (mine && i >= c0 && i < c0 + W)
        for (int q = 0; q < c0; ++q) panel[q * W + (i - c0)] = m(i, q);
      member.team_barrier();
      T r[W];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int w = 0; w < W; ++w) r[w] = (mine && c0 + w <= i) ? m(i, c0 + w) : T(0);
      if (mine && i >= c0) {
        for (int q = 0; q < c0; ++q) {
          const T liq = m(i, q);
          const T* p = static_cast<const T*>(__builtin_assume_aligned(panel + q * W, 16));
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
          for (int w = 0; w < W; ++w) r[w] -= liq * p[w];
        }
      }
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int w = 0; w < W; ++w) {
        const int k = c0 + w;
        if (k >= n) break;  // uniform over the team
        T* const col = static_cast<T*>(__builtin_assume_aligned(colbuf + (k & 1) * team, 16));
        col[i] = r[w];
        member.team_barrier();
        const T dkk = col[k];
        const bool ok = usable_pivot(dkk);
        fail = (fail == 0 && !ok) ? k + 1 : fail;
        // The pivot's chain is serial work repeated by every lane: one rsqrt instead of a
        // sqrt and a division shortens it.
        const T inv = ok ? kolesky::impl::rsqrt(dkk) : T(1);
        const T d = ok ? dkk * inv : T(1);
        const T l = r[w] * inv, s = i > k ? l * inv : T(0);
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
        for (int v = w + 1; v < W; ++v) r[v] -= s * col[c0 + v];
        r[w] = i == k ? d : i > k ? l : r[w];
      }
      if (mine && i >= c0) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
        for (int w = 0; w < W; ++w)
          if (c0 + w <= i) m(i, c0 + w) = r[w];
      }
    }
    if (i == 0) info(b) = fail;
  };
  Policy policy(exec, count, team);
  policy.set_scratch_size(0, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kolesky::batched::potrf_row_registers", policy, body);
}

template <int W, class Exec, class Batch, class Info>
void launch_row_registers(const Exec& exec, const Uplo uplo, const Batch& a, const Info& info) {
  launch_row_registers_on<W>(exec, uplo, UniformSource<Batch>{a, a.rows()}, a.size(), a.rows(),
                             info);
}

template <class Exec, class Batch, class Info>
void launch_team_rows(const Exec& exec, const Uplo uplo, const Batch& a, const Info& info,
                      int threads) {
  using T = typename Batch::value_type;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  const bool lower = uplo == Uplo::Lower;
  const int n = a.rows(), count = a.size();
  constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  if (threads <= 0) threads = host ? 1 : 128;
  const int per = host ? 1 : (threads / n > 0 ? threads / n : 1);  // matrices per team
  const int team = host ? threads : per * n;
  const int tri = n * (n + 1) / 2;
  const std::size_t bytes = Scratch<Exec, T>::shmem_size(std::size_t(per) * tri) +
                            Scratch<Exec, int>::shmem_size(per);
  const int level = bytes <= std::size_t(Policy::scratch_size_max(0)) ? 0 : 1;
  const int league = (count + per - 1) / per;
  auto body = KOKKOS_LAMBDA(const Member& member) {
    Scratch<Exec, T> buf(member.team_scratch(level), std::size_t(per) * tri);
    Scratch<Exec, int> fail(member.team_scratch(level), per);
    const int b0 = member.league_rank() * per;
    const int mats = count - b0 < per ? count - b0 : per;
    if (member.team_rank() < per) fail(member.team_rank()) = 0;
    staged_copy<true>(member, a, lower, b0, mats, n, tri, buf.data(), nullptr);
    member.team_barrier();
    {
      // Rows (q, i) of this team's matrices, strided over its threads: on a GPU team of
      // per * n threads each thread owns one row; on the host one thread owns them all.
      const int rows = mats * n;
      int col_k = 0;  // offset of column k in a packed triangle
      for (int k = 0; k < n; ++k) {
        for (int t = member.team_rank(); t < rows; t += member.team_size()) {
          const int q = t / n, i = t - q * n;
          T* s = buf.data() + q * tri;
          if (i > k) {
            const T d = s[col_k];
            s[col_k + i - k] /= usable_pivot(d) ? kolesky::impl::sqrt(d) : T(1);
          }
        }
        member.team_barrier();
        for (int t = member.team_rank(); t < rows; t += member.team_size()) {
          const int q = t / n, i = t - q * n;
          T* s = buf.data() + q * tri;
          if (i == k) {  // every read of the old pivot happened before the barrier
            const T d = s[col_k];
            const bool ok = usable_pivot(d);
            s[col_k] = ok ? kolesky::impl::sqrt(d) : T(1);
            if (!ok && fail(q) == 0) fail(q) = k + 1;
          } else if (i > k) {
            const T lik = s[col_k + i - k];
            int col_j = col_k + (n - k);  // column k + 1
            for (int j = k + 1; j <= i; ++j) {
              s[col_j + i - j] -= lik * s[col_k + j - k];
              col_j += n - j;
            }
          }
        }
        member.team_barrier();
        col_k += n - k;
      }
    }
    // Store what succeeded.
    {
      staged_copy<false>(member, a, lower, b0, mats, n, tri, buf.data(), fail.data());
      if (member.team_rank() < mats) info(b0 + member.team_rank()) = fail(member.team_rank());
    }
  };
  Policy policy(exec, league, team);
  policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("kolesky::batched::potrf_team_rows", policy, body);
}

// Host: C consecutive matrices (batch stride 1: interleaved, or one chunk) factored together,
// lane l of every entry being matrix l. Left-looking (Crout) with four rows' accumulators in
// vector registers: per column j, each row's entry is a dot product of finished columns, so
// an FMA needs 1.25 loads instead of the right-looking form's three loads and a store.
// A lane that fails continues on a dummy pivot; its info records the failure and its matrix
// is not trusted.
#if defined(__GNUC__) && !defined(__CUDACC__)
// GCC warns (-Wpsabi) that passing these vectors by value would change the ABI without AVX;
// they only travel between inlined helpers of this translation unit, so the ABI is moot.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 misreads the row loops of potrf_lanes once the vector pivot is inlined (it claims an
// iteration near INT_MAX of `k < j`, where j < n <= INT_MAX - 2).
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#define KOLESKY_IMPL_PSABI_PUSHED 1
// GCC/Clang vector extensions: one C-wide vector per entry. Loads and stores go through
// memcpy (unaligned moves): an interleaved batch of any count puts an entry's lanes at any
// offset, and an alignment attribute on a dependent typedef is not reliably honoured.
template <class T, int C>
struct LaneVec {
  typedef T type __attribute__((vector_size(sizeof(T) * C)));
  static inline type load(const T* p) {
    type v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static inline void store(T* p, const type& v) { std::memcpy(p, &v, sizeof v); }
};
#define KOLESKY_IMPL_LANES_VECTOR 1
#endif

#ifdef KOLESKY_IMPL_LANES_VECTOR
// d <- sqrt(d) in every lane; a lane whose pivot is unusable records column j + 1 (if it has
// not failed before) and carries on with 1. By reference: vectors by value draw -Wpsabi.
// One vector compare and (AVX) one vector sqrt: a scalar sqrt per lane and its reinsertion
// cost as much as the column's FMAs at n = 32.
template <int C, class V>
inline void lanes_pivot(V& d, const int j, int* inf) {
  using T = decltype(d[0] + 0);
  const auto ok = (d > T(0)) & (d <= kolesky::impl::FloatLimits<T>::max);
  bool all = true;
  for (int l = 0; l < C; ++l) all = all && ok[l] != 0;
  if (!all) {
    for (int l = 0; l < C; ++l)
      if (!ok[l]) {
        inf[l] = inf[l] == 0 ? j + 1 : inf[l];
        d[l] = T(1);
      }
  }
#if defined(__AVX__) && !defined(__CUDACC__)
  if constexpr (sizeof(V) == 32 && std::is_same<T, double>::value) {
    d = _mm256_sqrt_pd(d);
    return;
  } else if constexpr (sizeof(V) == 32 && std::is_same<T, float>::value) {
    d = _mm256_sqrt_ps(d);
    return;
  }
#endif
  for (int l = 0; l < C; ++l) d[l] = kolesky::impl::sqrt(d[l]);
}
// Four columns a pass (potrf_lanes): rows i .. i + RR - 1 of columns j .. j + 3, their dot
// products over the finished columns [0, j), then the solve against the diagonal block's
// factor (l below its diagonal, inv the inverse pivots). By reference: vectors by value draw
// -Wpsabi.
template <int RR, class L, class T, class V>
__attribute__((always_inline)) inline void lanes_rows4(const Strided<T>& a, const int i,
                                                       const int j, const V (&l)[4][4],
                                                       const V (&inv)[4]) {
  V p[RR][4];
#pragma GCC unroll 4
  for (int r = 0; r < RR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) p[r][c] = L::load(&a(i + r, j + c));
  for (int k = 0; k < j; ++k) {
    V x[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) x[c] = L::load(&a(j + c, k));
#pragma GCC unroll 4
    for (int r = 0; r < RR; ++r) {
      const V y = L::load(&a(i + r, k));
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) p[r][c] -= y * x[c];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < RR; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
      for (int b = 0; b < c; ++b) p[r][c] -= p[r][b] * l[c][b];
      p[r][c] *= inv[c];
      L::store(&a(i + r, j + c), p[r][c]);
    }
  }
}
#endif

template <int C, class T>
KOKKOS_INLINE_FUNCTION void potrf_lanes(const int n, const Strided<T> a, int* info) {
  int inf[C];
  for (int l = 0; l < C; ++l) inf[l] = 0;
#ifdef KOLESKY_IMPL_LANES_VECTOR
  using L = LaneVec<T, C>;
  using V = typename L::type;
  // No lambdas returning vectors here: GCC's -Wpsabi note would land in the caller's file.
  // Columns two at a time: each row block keeps 4 x 2 accumulators, so a k step loads 4 row
  // entries and 2 column entries for 8 FMAs (0.75 loads per FMA; one column at a time it was
  // 1.25, and the kernel was load-bound: ~12 GFLOP/s at n = 32 double on 2 cores).
  int j = 0;
  // Four columns a pass while they fit: the 4 x 4 diagonal block's 10 dot products and its
  // factor in registers, then blocks of R rows x 4 columns, R + 4 loads per 4 R FMAs (0.5 at
  // R = 4; 0.75 two columns a pass) and half the passes over each row's finished entries.
  // R = 4 needs 24 vector registers (AVX-512 has 32), R = 2 fits AVX2's 16.
#if defined(__AVX512F__)
  constexpr int R = 4;
#else
  constexpr int R = 2;
#endif
  for (; j + 4 <= n; j += 4) {
    V d00 = L::load(&a(j, j)), d10 = L::load(&a(j + 1, j)), d11 = L::load(&a(j + 1, j + 1)),
      d20 = L::load(&a(j + 2, j)), d21 = L::load(&a(j + 2, j + 1)),
      d22 = L::load(&a(j + 2, j + 2)), d30 = L::load(&a(j + 3, j)),
      d31 = L::load(&a(j + 3, j + 1)), d32 = L::load(&a(j + 3, j + 2)),
      d33 = L::load(&a(j + 3, j + 3));
    for (int k = 0; k < j; ++k) {  // ten independent chains
      const V x0 = L::load(&a(j, k)), x1 = L::load(&a(j + 1, k)), x2 = L::load(&a(j + 2, k)),
              x3 = L::load(&a(j + 3, k));
      d00 -= x0 * x0;
      d10 -= x1 * x0;
      d11 -= x1 * x1;
      d20 -= x2 * x0;
      d21 -= x2 * x1;
      d22 -= x2 * x2;
      d30 -= x3 * x0;
      d31 -= x3 * x1;
      d32 -= x3 * x2;
      d33 -= x3 * x3;
    }
    V inv[4], l[4][4];  // the block's factor below its diagonal, and the inverse pivots
    lanes_pivot<C>(d00, j, inf);
    L::store(&a(j, j), d00);
    inv[0] = T(1) / d00;
    l[1][0] = d10 * inv[0];
    l[2][0] = d20 * inv[0];
    l[3][0] = d30 * inv[0];
    d11 -= l[1][0] * l[1][0];
    lanes_pivot<C>(d11, j + 1, inf);
    L::store(&a(j + 1, j + 1), d11);
    inv[1] = T(1) / d11;
    l[2][1] = (d21 - l[2][0] * l[1][0]) * inv[1];
    l[3][1] = (d31 - l[3][0] * l[1][0]) * inv[1];
    d22 -= l[2][0] * l[2][0] + l[2][1] * l[2][1];
    lanes_pivot<C>(d22, j + 2, inf);
    L::store(&a(j + 2, j + 2), d22);
    inv[2] = T(1) / d22;
    l[3][2] = (d32 - l[3][0] * l[2][0] - l[3][1] * l[2][1]) * inv[2];
    d33 -= l[3][0] * l[3][0] + l[3][1] * l[3][1] + l[3][2] * l[3][2];
    lanes_pivot<C>(d33, j + 3, inf);
    L::store(&a(j + 3, j + 3), d33);
    inv[3] = T(1) / d33;
    for (int b = 1; b < 4; ++b)
      for (int c = 0; c < b; ++c) L::store(&a(j + b, j + c), l[b][c]);
    int i = j + 4;
    for (; i + R <= n; i += R) lanes_rows4<R, L>(a, i, j, l, inv);
    for (; i < n; ++i) lanes_rows4<1, L>(a, i, j, l, inv);
  }
  for (; j + 2 <= n; j += 2) {  // the last two or three columns
    V d0 = L::load(&a(j, j)), e = L::load(&a(j + 1, j)), d1 = L::load(&a(j + 1, j + 1));
    {  // two partial sums each: this FMA latency chain is on the critical path
      V d0b = V{}, eb = V{}, d1b = V{};
      int k = 0;
      for (; k + 2 <= j; k += 2) {
        const V x = L::load(&a(j, k)), y = L::load(&a(j + 1, k));
        const V xb = L::load(&a(j, k + 1)), yb = L::load(&a(j + 1, k + 1));
        d0 -= x * x;
        e -= y * x;
        d1 -= y * y;
        d0b -= xb * xb;
        eb -= yb * xb;
        d1b -= yb * yb;
      }
      // j is even: no odd k is left over.
      d0 += d0b;
      e += eb;
      d1 += d1b;
    }
    lanes_pivot<C>(d0, j, inf);
    L::store(&a(j, j), d0);
    const V inv0 = T(1) / d0;
    e *= inv0;
    L::store(&a(j + 1, j), e);
    d1 -= e * e;
    lanes_pivot<C>(d1, j + 1, inf);
    L::store(&a(j + 1, j + 1), d1);
    const V inv1 = T(1) / d1;
    int i = j + 2;
    for (; i + 4 <= n; i += 4) {
      V p0 = L::load(&a(i, j)), p1 = L::load(&a(i + 1, j)), p2 = L::load(&a(i + 2, j)),
        p3 = L::load(&a(i + 3, j));
      V q0 = L::load(&a(i, j + 1)), q1 = L::load(&a(i + 1, j + 1)),
        q2 = L::load(&a(i + 2, j + 1)), q3 = L::load(&a(i + 3, j + 1));
      for (int k = 0; k < j; ++k) {
        const V x = L::load(&a(j, k)), y = L::load(&a(j + 1, k));
        const V r0 = L::load(&a(i, k)), r1 = L::load(&a(i + 1, k)), r2 = L::load(&a(i + 2, k)),
                r3 = L::load(&a(i + 3, k));
        p0 -= r0 * x;
        q0 -= r0 * y;
        p1 -= r1 * x;
        q1 -= r1 * y;
        p2 -= r2 * x;
        q2 -= r2 * y;
        p3 -= r3 * x;
        q3 -= r3 * y;
      }
      p0 *= inv0;
      p1 *= inv0;
      p2 *= inv0;
      p3 *= inv0;
      L::store(&a(i, j), p0);
      L::store(&a(i + 1, j), p1);
      L::store(&a(i + 2, j), p2);
      L::store(&a(i + 3, j), p3);
      L::store(&a(i, j + 1), (q0 - p0 * e) * inv1);
      L::store(&a(i + 1, j + 1), (q1 - p1 * e) * inv1);
      L::store(&a(i + 2, j + 1), (q2 - p2 * e) * inv1);
      L::store(&a(i + 3, j + 1), (q3 - p3 * e) * inv1);
    }
    for (; i < n; ++i) {
      V p = L::load(&a(i, j)), q = L::load(&a(i, j + 1));
      for (int k = 0; k < j; ++k) {
        const V r = L::load(&a(i, k));
        p -= r * L::load(&a(j, k));
        q -= r * L::load(&a(j + 1, k));
      }
      p *= inv0;
      L::store(&a(i, j), p);
      L::store(&a(i, j + 1), (q - p * e) * inv1);
    }
  }
  if (j < n) {  // odd n: the last column is its diagonal alone
    V d = L::load(&a(j, j));
    for (int k = 0; k < j; ++k) {
      const V x = L::load(&a(j, k));
      d -= x * x;
    }
    lanes_pivot<C>(d, j, inf);
    L::store(&a(j, j), d);
  }
#else
  for (int j = 0; j < n; ++j) {
    T* ajj = &a(j, j);
    T s[C];
    for (int l = 0; l < C; ++l) {
      T d = ajj[l];
      for (int k = 0; k < j; ++k) d -= (&a(j, k))[l] * (&a(j, k))[l];
      const bool ok = usable_pivot(d);
      inf[l] = (inf[l] == 0 && !ok) ? j + 1 : inf[l];
      s[l] = ok ? kolesky::impl::sqrt(d) : T(1);
      ajj[l] = s[l];
    }
    for (int i = j + 1; i < n; ++i) {
      T acc[C];
      for (int l = 0; l < C; ++l) acc[l] = (&a(i, j))[l];
      for (int k = 0; k < j; ++k) {
        const T* x = &a(i, k);
        const T* y = &a(j, k);
        for (int l = 0; l < C; ++l) acc[l] -= x[l] * y[l];
      }
      for (int l = 0; l < C; ++l) (&a(i, j))[l] = acc[l] / s[l];
    }
  }
#endif
  for (int l = 0; l < C; ++l) info[l] = inf[l];
}

template <int C, class Exec, class Batch, class Info>
void launch_simd_lanes(const Exec& exec, const Uplo uplo, const Batch& a, const Info& info) {
  const bool lower = uplo == Uplo::Lower;
  const int n = a.rows(), count = a.size();
  const int groups = count / C;  // full groups; the tail goes matrix by matrix
  Kokkos::parallel_for(
      "kolesky::batched::potrf_lanes", Kokkos::RangePolicy<Exec>(exec, 0, groups),
      KOKKOS_LAMBDA(const int g) {
        const auto m = a.matrix(g * C);
        int r[C];
        potrf_lanes<C>(n, lower ? m : m.transposed(), r);
        for (int l = 0; l < C; ++l) info(g * C + l) = r[l];
      });
  if (groups * C < count) {
    Kokkos::parallel_for(
        "kolesky::batched::potrf_lanes_tail", Kokkos::RangePolicy<Exec>(exec, groups * C, count),
        KOKKOS_LAMBDA(const int b) {
          const auto m = a.matrix(b);
          info(b) = SerialPotrfInternal<Algo::RightLooking>::invoke(n, lower ? m : m.transposed());
        });
  }
}

#ifdef KOLESKY_IMPL_PSABI_PUSHED
#pragma GCC diagnostic pop
#undef KOLESKY_IMPL_PSABI_PUSHED
#endif
}  // namespace impl
}  // namespace batched
}  // namespace kolesky
