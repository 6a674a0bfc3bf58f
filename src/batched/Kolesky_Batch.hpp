// Batches of small matrices in three physical layouts behind one logical indexing
// (matrix b, row r, column c):
//
//   StridedBatch      each matrix contiguous: a rank-3 View (batch, n, m); LayoutRight is
//                     row-major matrices, LayoutLeft puts the batch index fastest.
//   InterleavedBatch  batch index fastest: (r, c) of matrix i at r*m*N + c*N + i, i.e. a
//                     rank-3 LayoutRight View (n, m, N).
//   ChunkedBatch      chunks of C matrices, each chunk interleaved: (r, c) of matrix p*C + i
//                     at p*C*n*m + (r*m + c)*C + i, i.e. a rank-4 LayoutRight View
//                     (ceil(N/C), n, m, C); the last chunk may be partial.
//
// Every layout gives each matrix as a pointer and two strides (impl::Strided), so the same
// device functions serve all of them.
#pragma once
#include <Kokkos_Core.hpp>

#include "common/Kolesky_Profiling.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "common/Kolesky_Error.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace batched {

template <class T, class Layout = Kokkos::LayoutRight,
          class MemSpace = Kokkos::DefaultExecutionSpace::memory_space>
struct StridedBatch {
  using value_type = T;
  using memory_space = MemSpace;
  using view_type = Kokkos::View<T***, Layout, MemSpace>;
  view_type data;  // (batch, n, m)

  StridedBatch() = default;
  explicit StridedBatch(const view_type& v) : data(v) {}
  StridedBatch(const std::string& label, int batch, int n, int m)
      : data(label, batch, n, m) {}
  KOKKOS_INLINE_FUNCTION int size() const { return int(data.extent(0)); }
  KOKKOS_INLINE_FUNCTION int rows() const { return int(data.extent(1)); }
  KOKKOS_INLINE_FUNCTION int cols() const { return int(data.extent(2)); }
  // The untruncated extents (matrices, rows, columns), checked by every routine.
  std::size_t extent_of(const int d) const { return data.extent(d); }
  KOKKOS_INLINE_FUNCTION T& operator()(int b, int r, int c) const { return data(b, r, c); }
  KOKKOS_INLINE_FUNCTION impl::Strided<T> matrix(int b) const {
    return {data.data() + b * std::ptrdiff_t(data.stride(0)), std::ptrdiff_t(data.stride(1)),
            std::ptrdiff_t(data.stride(2))};
  }
  // Distance between element (r, c) of matrices b and b + 1.
  KOKKOS_INLINE_FUNCTION std::ptrdiff_t batch_stride() const { return data.stride(0); }
  // Consecutive matrices that sit at batch stride 1 (see ChunkedBatch): none to speak of.
  KOKKOS_INLINE_FUNCTION int chunk() const { return 1; }
};

template <class T, class MemSpace = Kokkos::DefaultExecutionSpace::memory_space>
struct InterleavedBatch {
  using value_type = T;
  using memory_space = MemSpace;
  using view_type = Kokkos::View<T***, Kokkos::LayoutRight, MemSpace>;
  view_type data;  // (n, m, batch)

  InterleavedBatch() = default;
  explicit InterleavedBatch(const view_type& v) : data(v) {}
  InterleavedBatch(const std::string& label, int batch, int n, int m)
      : data(label, n, m, batch) {}
  KOKKOS_INLINE_FUNCTION int size() const { return int(data.extent(2)); }
  KOKKOS_INLINE_FUNCTION int rows() const { return int(data.extent(0)); }
  KOKKOS_INLINE_FUNCTION int cols() const { return int(data.extent(1)); }
  std::size_t extent_of(const int d) const { return data.extent(d == 0 ? 2 : d - 1); }
  KOKKOS_INLINE_FUNCTION T& operator()(int b, int r, int c) const { return data(r, c, b); }
  KOKKOS_INLINE_FUNCTION impl::Strided<T> matrix(int b) const {
    return {data.data() + b, std::ptrdiff_t(data.stride(0)), std::ptrdiff_t(data.stride(1))};
  }
  KOKKOS_INLINE_FUNCTION std::ptrdiff_t batch_stride() const { return 1; }
  KOKKOS_INLINE_FUNCTION int chunk() const { return size(); }  // one chunk of everything
};

template <class T, class MemSpace = Kokkos::DefaultExecutionSpace::memory_space>
struct ChunkedBatch {
  using value_type = T;
  using memory_space = MemSpace;
  using view_type = Kokkos::View<T****, Kokkos::LayoutRight, MemSpace>;
  view_type data;  // (chunks, n, m, C)
  int count = 0;   // matrices in use (the last chunk may be partial)

  ChunkedBatch() = default;
  ChunkedBatch(const view_type& v, int batch) : data(v), count(batch) {
    if (batch < 0 || std::size_t(batch) > v.extent(0) * v.extent(3))
      impl::throw_invalid("ChunkedBatch", "batch ", batch, " does not fit ", v.extent(0),
                          " chunks of ", v.extent(3));
  }
  ChunkedBatch(const std::string& label, int batch, int n, int m, int chunk)
      : data(label, (batch + chunk - 1) / (chunk > 0 ? chunk : 1), n, m, chunk), count(batch) {
    if (chunk <= 0) impl::throw_invalid("ChunkedBatch", "chunk size must be positive, got ", chunk);
  }
  KOKKOS_INLINE_FUNCTION int size() const { return count; }
  KOKKOS_INLINE_FUNCTION int rows() const { return int(data.extent(1)); }
  KOKKOS_INLINE_FUNCTION int cols() const { return int(data.extent(2)); }
  std::size_t extent_of(const int d) const {
    return d == 0 ? std::size_t(count) : data.extent(d);
  }
  KOKKOS_INLINE_FUNCTION int chunk() const { return int(data.extent(3)); }
  KOKKOS_INLINE_FUNCTION T& operator()(int b, int r, int c) const {
    return data(b / chunk(), r, c, b % chunk());
  }
  KOKKOS_INLINE_FUNCTION impl::Strided<T> matrix(int b) const {
    return {data.data() + (b / chunk()) * std::ptrdiff_t(data.stride(0)) + b % chunk(),
            std::ptrdiff_t(data.stride(1)), std::ptrdiff_t(data.stride(2))};
  }
  KOKKOS_INLINE_FUNCTION std::ptrdiff_t batch_stride() const { return 1; }  // within a chunk
};

// The chunk size Kolesky uses by default: a warp on NVIDIA GPUs (one coalesced 128-byte
// line per float element), the SIMD width of double/float on CPUs.
template <class ExecSpace, class T>
constexpr int default_chunk() {
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible)
    return 32 / int(sizeof(T));  // AVX2: 4 doubles or 8 floats
  else
    return 32;
}


template <class B>
struct is_batch : std::false_type {};
template <class T, class L, class M>
struct is_batch<StridedBatch<T, L, M>> : std::true_type {};
template <class T, class M>
struct is_batch<InterleavedBatch<T, M>> : std::true_type {};
template <class T, class M>
struct is_batch<ChunkedBatch<T, M>> : std::true_type {};

// What every batched routine accepts: a batch container, or a plain rank-3 View (batch, n, m)
// of any layout, taken as a StridedBatch; right-hand sides may also be a rank-2 View
// (batch, n): one right-hand side per matrix.
template <class X>
struct is_batch_like : is_batch<X> {};
template <class T, class... P>
struct is_batch_like<Kokkos::View<T***, P...>> : std::bool_constant<!std::is_pointer<T>::value> {};
template <class X>
struct is_rhs_like : is_batch_like<X> {};
template <class T, class... P>  // rank 2 (T** with T itself a pointer would be rank 3 or more)
struct is_rhs_like<Kokkos::View<T**, P...>>
    : std::bool_constant<!std::is_pointer<T>::value || is_batch_like<Kokkos::View<T**, P...>>::value> {};

template <class B, std::enable_if_t<is_batch<B>::value, int> = 0>
const B& as_batch(const B& b) {
  return b;
}
template <class T, class... P, std::enable_if_t<!std::is_pointer<T>::value, int> = 0>
auto as_batch(const Kokkos::View<T***, P...>& v) {
  using V = Kokkos::View<T***, P...>;
  using S = StridedBatch<T, typename V::array_layout, typename V::memory_space>;
  return S(typename S::view_type(v));
}
template <class B, std::enable_if_t<is_batch_like<B>::value, int> = 0>
auto as_rhs(const B& b) {
  return as_batch(b);
}
// (batch, n) as (batch, n, 1).
template <class T, class... P, std::enable_if_t<!std::is_pointer<T>::value, int> = 0>
auto as_rhs(const Kokkos::View<T**, P...>& v) {
  using V = Kokkos::View<T**, P...>;
  using M = typename V::memory_space;
  using S = StridedBatch<T, Kokkos::LayoutStride, M>;
  const Kokkos::LayoutStride ls(v.extent(0), v.stride(0), v.extent(1), v.stride(1), 1, 1);
  const Kokkos::View<T***, Kokkos::LayoutStride, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> u(
      v.data(), ls);
  return S(typename S::view_type(u));
}

// The container a batch-like argument stands for.
template <class X>
using batch_t = std::decay_t<decltype(as_batch(std::declval<const X&>()))>;
template <class X>
using rhs_t = std::decay_t<decltype(as_rhs(std::declval<const X&>()))>;

// Host mirrors (same layout, HostSpace) and deep copies between a batch and its mirror.
template <class T, class L, class M>
auto create_mirror_view(const StridedBatch<T, L, M>& b) {
  using H = StridedBatch<T, L, Kokkos::HostSpace>;
  return H(typename H::view_type(Kokkos::create_mirror_view(b.data)));
}
template <class T, class M>
auto create_mirror_view(const InterleavedBatch<T, M>& b) {
  using H = InterleavedBatch<T, Kokkos::HostSpace>;
  return H(typename H::view_type(Kokkos::create_mirror_view(b.data)));
}
template <class T, class M>
auto create_mirror_view(const ChunkedBatch<T, M>& b) {
  using H = ChunkedBatch<T, Kokkos::HostSpace>;
  return H(typename H::view_type(Kokkos::create_mirror_view(b.data)), b.count);
}
template <class Dst, class Src>
std::enable_if_t<is_batch<Dst>::value && is_batch<Src>::value> deep_copy(const Dst& dst,
                                                                         const Src& src) {
  Kokkos::deep_copy(dst.data, src.data);
}

namespace impl {

// Batches of at least this many bytes take the tiled, streaming host copy (2-core host: below
// it the batch stays in cache and the plain loop is faster, 47 against 32 % of a copy at 1 MB).
// A reference so that tests can send every batch that way (0: always, shapes and
// alignment aside).
inline std::size_t& host_stream_copy_bytes() {
  static std::size_t bytes = std::size_t(4) << 20;
  return bytes;
}

// GPU copy between a strided batch and a batch-fastest one (either direction): tiles of 32
// matrices x 32 elements go through scratch, so the read and the write are both coalesced
// (a direct copy reads or writes one element per 32-byte sector on one side: Nsight Compute
// measured 4x the bytes needed).
template <class ExecSpace, class Src, class Dst>
void copy_transposed(const ExecSpace& exec, const Src& src, const Dst& dst) {
  using T = typename Dst::value_type;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  using Tile = Kokkos::View<T*, typename ExecSpace::scratch_memory_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  constexpr int QB = 32, EB = 32, LD = EB + 1;
  const int count = src.size(), n = src.rows(), m = src.cols(), ne = n * m;
  const int tiles_e = (ne + EB - 1) / EB, tiles_q = (count + QB - 1) / QB;
  const bool src_fast = src.batch_stride() == 1;
  // Element order along the strided side's unit stride.
  const auto sm = src_fast ? dst.matrix(0) : src.matrix(0);
  const bool row_fast = (sm.rs < 0 ? -sm.rs : sm.rs) <= (sm.cs < 0 ? -sm.cs : sm.cs);
  auto body = KOKKOS_LAMBDA(const Member& member) {
    Tile tile(member.team_scratch(0), QB * LD);
    const int tq = member.league_rank() / tiles_e, te = member.league_rank() - tq * tiles_e;
    const int q0 = tq * QB, e0 = te * EB;
    for (int pass = 0; pass < 2; ++pass) {
      const bool fast = pass == 0 ? src_fast : !src_fast;
      for (int t = member.team_rank(); t < QB * EB; t += member.team_size()) {
        const int q = fast ? t % QB : t / EB, e = fast ? t / QB : t % EB;
        const int b = q0 + q, g = e0 + e;
        if (b >= count || g >= ne) continue;
        const int r = row_fast ? g % n : g / m, c = row_fast ? g / n : g % m;
        if (pass == 0)
          tile(q * LD + e) = src(b, r, c);
        else
          dst(b, r, c) = tile(q * LD + e);
      }
      member.team_barrier();
    }
  };
  Policy policy(exec, tiles_q * tiles_e, 256);
  policy.set_scratch_size(0, Kokkos::PerTeam(Tile::shmem_size(QB * LD)));
  Kokkos::parallel_for("kolesky::batched::copy_transposed", policy, body);
}

#if defined(__SSE2__)
// Streaming (non-temporal) stores for a transposing copy: its writes are short runs spread
// over many pages, so ordinary stores pay a read of each line first and evict lines that are
// still being filled. Whole-run x86 stores; the remainder and unaligned heads go as usual.
inline void stream16(double* p, const double* v) { _mm_stream_pd(p, _mm_loadu_pd(v)); }
inline void stream16(float* p, const float* v) { _mm_stream_ps(p, _mm_loadu_ps(v)); }
template <class D>
void stream_run(D* p, const D* v, const int len) {
  constexpr int W = 16 / int(sizeof(D));
  int i = 0;
  for (; i < len && (reinterpret_cast<std::uintptr_t>(p + i) & 15) != 0; ++i) p[i] = v[i];
  for (; i + W <= len; i += W) stream16(p + i, v + i);
  for (; i < len; ++i) p[i] = v[i];
}
template <class D>
constexpr bool has_stream_run() {
  return std::is_same<D, double>::value || std::is_same<D, float>::value;
}
// out[e * ld + q] = p[q][o + e] for e < len and the block's B matrices q, by B x B register
// transposes (the scalar form is bound by instructions in float: ~4 per element).
template <class D>
constexpr int kTransposeBlock = 16 / int(sizeof(D));
template <class P>
inline void transpose_block(P* p, const std::ptrdiff_t o, const int len, double* out,
                            const int ld) {
  int e = 0;
  for (; e + 2 <= len; e += 2) {
    const __m128d a = _mm_loadu_pd(p[0] + o + e), b = _mm_loadu_pd(p[1] + o + e);
    _mm_storeu_pd(out + e * ld, _mm_unpacklo_pd(a, b));
    _mm_storeu_pd(out + (e + 1) * ld, _mm_unpackhi_pd(a, b));
  }
  for (; e < len; ++e) out[e * ld] = p[0][o + e], out[e * ld + 1] = p[1][o + e];
}
template <class P>
inline void transpose_block(P* p, const std::ptrdiff_t o, const int len, float* out,
                            const int ld) {
  int e = 0;
  for (; e + 4 <= len; e += 4) {
    __m128 a = _mm_loadu_ps(p[0] + o + e), b = _mm_loadu_ps(p[1] + o + e);
    __m128 c = _mm_loadu_ps(p[2] + o + e), d = _mm_loadu_ps(p[3] + o + e);
    _MM_TRANSPOSE4_PS(a, b, c, d);
    _mm_storeu_ps(out + e * ld, a);
    _mm_storeu_ps(out + (e + 1) * ld, b);
    _mm_storeu_ps(out + (e + 2) * ld, c);
    _mm_storeu_ps(out + (e + 3) * ld, d);
  }
  for (; e < len; ++e)
    for (int q = 0; q < 4; ++q) out[e * ld + q] = p[q][o + e];
}

// Host copy between a strided batch and a batch-fastest one (large batches, x86): the batch
// is cut into tiles of QB matrices x EB elements that go through a buffer in L1, so that each
// side is read or written in runs along its unit stride, and the runs are written with
// streaming stores. Strided -> fast: one thread takes QB matrices at a time and walks their
// elements; fast -> strided: one thread takes EB elements of SB matrices, so that the fast
// side's rows it reads stay few (one page per row visit otherwise). Measured on the 2-core
// host (docs/performance_log.md, issue 16): 2-5x the element-by-element loop below.
template <class ExecSpace, class Src, class Dst>
void copy_host_tiled(const ExecSpace& exec, const Src& src, const Dst& dst) {
  using D = std::remove_const_t<std::remove_reference_t<decltype(*dst.matrix(0).p)>>;
  constexpr int L = 128 / int(sizeof(D));  // values in 128 bytes
  const int count = src.size(), n = src.rows(), m = src.cols(), ne = n * m;
  const bool to_fast = dst.batch_stride() == 1;
  const auto su = to_fast ? src.matrix(0) : dst.matrix(0);  // the strided side orders elements
  const bool row_fast = (su.rs < 0 ? -su.rs : su.rs) <= (su.cs < 0 ? -su.cs : su.cs);
  const auto s0 = src.matrix(0);
  const auto d0 = dst.matrix(0);
  const std::ptrdiff_t srs = s0.rs, scs = s0.cs, drs = d0.rs, dcs = d0.cs;
  constexpr bool same_scalar =
      std::is_same<std::remove_const_t<std::remove_pointer_t<decltype(s0.p)>>, D>::value;
  const auto unit_run = [](const std::ptrdiff_t* o, const int len) {
    bool unit = true;
    for (int e = 1; e < len; ++e) unit = unit && o[e] == o[e - 1] + 1;
    return unit;
  };
  const auto offsets = [=](const int g0, const int e1, std::ptrdiff_t* so, std::ptrdiff_t* dof) {
    for (int e = 0; e < e1; ++e) {
      const int g = g0 + e, r = row_fast ? g % n : g / m, c = row_fast ? g / n : g % m;
      so[e] = r * srs + c * scs;
      dof[e] = r * drs + c * dcs;
    }
  };
  if (to_fast) {
    constexpr int QB = L, EB = 64;
    Kokkos::parallel_for(
        "kolesky::batched::copy", Kokkos::RangePolicy<ExecSpace>(exec, 0, (count + QB - 1) / QB),
        [=](const int blk) {
          const int b0 = blk * QB, q1 = count - b0 < QB ? count - b0 : QB;
          decltype(s0.p) sp[QB];
          D* dp[QB];
          int run[QB + 1], nrun = 0;  // starts of the runs of consecutive destinations
          for (int q = 0; q < q1; ++q) {
            sp[q] = src.matrix(b0 + q).p, dp[q] = dst.matrix(b0 + q).p;
            if (q == 0 || dp[q] != dp[q - 1] + 1) run[nrun++] = q;
          }
          run[nrun] = q1;
          alignas(64) D buf[EB][QB];
          std::ptrdiff_t so[EB], dof[EB];
          for (int g0 = 0; g0 < ne; g0 += EB) {
            const int e1 = ne - g0 < EB ? ne - g0 : EB;
            offsets(g0, e1, so, dof);
            if (unit_run(so, e1)) {
              int q = 0;
              if constexpr (same_scalar)
                for (; q + kTransposeBlock<D> <= q1; q += kTransposeBlock<D>)
                  transpose_block(sp + q, so[0], e1, &buf[0][q], QB);
              for (; q < q1; ++q) {
                const auto r = sp[q] + so[0];
                for (int e = 0; e < e1; ++e) buf[e][q] = D(r[e]);
              }
            } else {
              for (int q = 0; q < q1; ++q)
                for (int e = 0; e < e1; ++e) buf[e][q] = D(sp[q][so[e]]);
            }
            for (int e = 0; e < e1; ++e)
              for (int k = 0; k < nrun; ++k)
                stream_run(dp[run[k]] + dof[e], &buf[e][run[k]], run[k + 1] - run[k]);
          }
          _mm_sfence();
        });
  } else {
    constexpr int QB = 64, EB = L, SB = 2048;
    const int neb = (ne + EB - 1) / EB, nsb = (count + SB - 1) / SB;
    Kokkos::parallel_for(
        "kolesky::batched::copy", Kokkos::RangePolicy<ExecSpace>(exec, 0, neb * nsb),
        [=](const int it) {
          const int sb = it / neb, g0 = (it - sb * neb) * EB, e1 = ne - g0 < EB ? ne - g0 : EB;
          const int bend = count - sb * SB < SB ? count : (sb + 1) * SB;
          std::ptrdiff_t so[EB], dof[EB];
          offsets(g0, e1, so, dof);
          const bool contiguous = unit_run(dof, e1);
          alignas(64) D buf[QB][EB];
          for (int b0 = sb * SB; b0 < bend; b0 += QB) {
            const int q1 = bend - b0 < QB ? bend - b0 : QB;
            decltype(s0.p) sp[QB];
            D* dp[QB];
            bool one_run = true;  // the block's values of each element are consecutive
            for (int q = 0; q < q1; ++q) {
              sp[q] = src.matrix(b0 + q).p, dp[q] = dst.matrix(b0 + q).p;
              one_run = one_run && sp[q] == sp[0] + q;
            }
            int e = 0;
            if constexpr (same_scalar)
              if (one_run)
                for (; e + kTransposeBlock<D> <= e1; e += kTransposeBlock<D>) {
                  decltype(s0.p) rows[kTransposeBlock<D>];
                  for (int i = 0; i < kTransposeBlock<D>; ++i) rows[i] = sp[0] + so[e + i];
                  transpose_block(rows, 0, q1, &buf[0][e], EB);
                }
            for (; e < e1; ++e)
              for (int q = 0; q < q1; ++q) buf[q][e] = D(sp[q][so[e]]);
            for (int q = 0; q < q1; ++q) {
              if (contiguous) {
                stream_run(dp[q] + dof[0], buf[q], e1);
              } else {
                for (int e = 0; e < e1; ++e) dp[q][dof[e]] = buf[q][e];
              }
            }
          }
          _mm_sfence();
        });
  }
}

// Where the tiled copy's streaming stores fill whole 64-byte lines (a line that two runs
// share goes out in pieces, slower than ordinary stores), measured on the 2-core host:
// strided -> fast above 64 elements a matrix (to there the element loop reads the small
// matrices as one stream: 64 against 52 % of a copy at n = 8), the fast side's elements on
// line boundaries; fast -> strided into packed matrices of whole lines.
template <class Src, class Dst>
bool tiled_copy_pays(const Src& src, const Dst& dst) {
  using D = std::remove_const_t<std::remove_reference_t<decltype(*dst.matrix(0).p)>>;
  const std::ptrdiff_t ne = std::ptrdiff_t(src.rows()) * src.cols(), line = 64 / sizeof(D);
  const auto lines = [=](const std::ptrdiff_t e) { return (e < 0 ? -e : e) % line == 0; };
  const auto d0 = dst.matrix(0);
  if (dst.batch_stride() == 1)
    return ne > 64 && lines(d0.rs) && lines(d0.cs) && lines(dst.chunk());
  const bool packed = (d0.rs == 1 && d0.cs == src.rows()) || (d0.cs == 1 && d0.rs == src.cols());
  return packed && ne % line == 0 && (src.size() < 2 || dst.matrix(1).p == d0.p + ne);
}
#endif  // __SSE2__ (elsewhere the element loop below does every copy)

// Host copy, otherwise: each thread takes blocks of QB matrices. Element (r, c) sits at the
// same offset r * rs + c * cs from every matrix's start in a batch, so a block keeps QB start
// pointers per side and walks the elements once; with the batch index innermost when either
// side is batch-fastest (that side then runs at unit stride), else matrix by matrix in the
// source's unit-stride order. Small batches (in cache) copy fastest this way.
template <class ExecSpace, class Src, class Dst>
void copy_host(const ExecSpace& exec, const Src& src, const Dst& dst) {
  constexpr int QB = 64;
  using S = std::remove_reference_t<decltype(*src.matrix(0).p)>;
  using D = std::remove_reference_t<decltype(*dst.matrix(0).p)>;
  const int count = src.size(), n = src.rows(), m = src.cols();
  const bool src_fast = src.batch_stride() == 1, dst_fast = dst.batch_stride() == 1;
#if defined(__SSE2__)
  const std::size_t from = host_stream_copy_bytes();
  if (has_stream_run<std::remove_const_t<D>>() && src_fast != dst_fast &&
      (from == 0 || (std::size_t(count) * n * m * sizeof(D) >= from && tiled_copy_pays(src, dst))))
    return copy_host_tiled(exec, src, dst);
#endif
  const bool batch_inner = src_fast || dst_fast;
  const auto s0 = src.matrix(0);
  const auto d0 = dst.matrix(0);
  const std::ptrdiff_t srs = s0.rs, scs = s0.cs, drs = d0.rs, dcs = d0.cs;
  const bool row_fast = (srs < 0 ? -srs : srs) <= (scs < 0 ? -scs : scs);
  Kokkos::parallel_for(
      "kolesky::batched::copy", Kokkos::RangePolicy<ExecSpace>(exec, 0, (count + QB - 1) / QB),
      [=](const int blk) {
        const int b0 = blk * QB, q1 = count - b0 < QB ? count - b0 : QB;
        S* sp[QB];
        D* dp[QB];
        for (int q = 0; q < q1; ++q) sp[q] = src.matrix(b0 + q).p, dp[q] = dst.matrix(b0 + q).p;
        if (batch_inner) {
          for (int r = 0; r < n; ++r)
            for (int c = 0; c < m; ++c) {
              const std::ptrdiff_t so = r * srs + c * scs, d = r * drs + c * dcs;
              for (int q = 0; q < q1; ++q) dp[q][d] = sp[q][so];
            }
        } else {
          for (int q = 0; q < q1; ++q) {
            const S* const sq = sp[q];
            D* const dq = dp[q];
            if (row_fast)
              for (int c = 0; c < m; ++c)
                for (int r = 0; r < n; ++r) dq[r * drs + c * dcs] = sq[r * srs + c * scs];
            else
              for (int r = 0; r < n; ++r)
                for (int c = 0; c < m; ++c) dq[r * drs + c * dcs] = sq[r * srs + c * scs];
          }
        }
      });
}

}  // namespace impl

// Copy between any two batches of the same shape, on the device: pack a user's strided batch
// into a fast layout, or unpack results back.
template <class ExecSpace, class Src, class Dst>
void copy(const ExecSpace& exec, const Src& src, const Dst& dst) {
  const kolesky::impl::Region region("kolesky::batched::copy");
  static_assert(is_batch<Src>::value && is_batch<Dst>::value, "kolesky::batched::copy: batches");
  if (src.size() != dst.size() || src.rows() != dst.rows() || src.cols() != dst.cols())
    kolesky::impl::throw_invalid("batched::copy", "shapes differ: ", src.size(), " x ", src.rows(), " x ",
                        src.cols(), " vs ", dst.size(), " x ", dst.rows(), " x ", dst.cols());
  const int n = src.rows(), m = src.cols();
  if (src.size() == 0 || n == 0 || m == 0) return;
  constexpr bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
  const bool src_fast = src.batch_stride() == 1, dst_fast = dst.batch_stride() == 1;
  if (!host && src_fast != dst_fast) {
    impl::copy_transposed(exec, src, dst);
    return;
  }
  if constexpr (host) {
    impl::copy_host(exec, src, dst);
    return;
  }
  // Batch index fastest when the destination is batch-fastest, so its writes coalesce.
  Kokkos::parallel_for(
      "kolesky::batched::copy",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<3, Kokkos::Iterate::Left>>(
          exec, {0, 0, 0}, {src.size(), n, m}),
      KOKKOS_LAMBDA(const int b, const int r, const int c) { dst(b, r, c) = src(b, r, c); });
}

}  // namespace batched
}  // namespace kolesky
