// The host one-region factorizations' rank-G update of a few columns (LU's group update and
// Cholesky's): x[c][i] -= sum_t L(i, t) u[c][t] for rows i in [i0, m). C columns and two
// vectors of rows at a time stay in registers, each L vector loaded once for the C columns. Every column's arithmetic (its rows' chunking, the
// order of the t sum) depends only on i0 and m, never on which columns it is grouped with, so
// the pool's split of the columns does not change a bit.
#pragma once
#include <cstddef>
#include <cstring>

namespace kolesky {
namespace impl {

// B bytes of T (by default one vector register: 64 bytes with AVX-512, 32 with AVX, else 16):
// GCC / Clang vector extensions, plain arrays for other compilers. Loads and stores are
// unaligned (memcpy).
#if defined(__GNUC__) && !defined(__CUDACC__)
#if defined(__AVX512F__)
constexpr int kHostVecBytes = 64;
#elif defined(__AVX__)
constexpr int kHostVecBytes = 32;
#else
constexpr int kHostVecBytes = 16;
#endif
template <class T, int B = kHostVecBytes>
struct HostVec {
  static constexpr int V = B / int(sizeof(T));
  typedef T type __attribute__((vector_size(B)));
  static void sub_mul(type& acc, const type& l, const T u) { acc -= l * u; }
  static void add(type& a, const type& b) { a += b; }
  // Keeps a loaded vector in a register: without it GCC folds the load into each of the
  // multiply-adds that use it (C loads of the same L entries per step, which made the update
  // load-bound at ~60 % of its FMA rate on Zen 4).
  static void keep(type& x) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__("" : "+v"(x));
#elif defined(__aarch64__)
    __asm__("" : "+w"(x));
#else
    (void)x;
#endif
  }
#else
constexpr int kHostVecBytes = 16;
template <class T, int B = kHostVecBytes>
struct HostVec {
  static constexpr int V = B / int(sizeof(T));
  struct type {
    T e[V];
  };
  static void sub_mul(type& acc, const type& l, const T u) {
    for (int i = 0; i < V; ++i) acc.e[i] -= l.e[i] * u;
  }
  static void add(type& a, const type& b) {
    for (int i = 0; i < V; ++i) a.e[i] += b.e[i];
  }
  static void keep(type&) {}
#endif
  static void load(type& x, const T* p) { std::memcpy(&x, p, sizeof x); }
  static void store(T* p, const type& x) { std::memcpy(p, &x, sizeof x); }
  static void zero(type& x) { std::memset(&x, 0, sizeof x); }
};

// Columns per pass, and rows per pass in vectors.
constexpr int kHostUpdateColumns = 4;
constexpr int kHostUpdateVectors = 2;
template <class T>
constexpr int host_update_chunk() {
  return kHostUpdateVectors * HostVec<T>::V;
}

// Rows [i, i + W * VB) of the C columns x, W vectors of B bytes (VB entries) each; L(i, t) at
// lt + t * ls.
template <int G, int C, int W, int B = kHostVecBytes, class T>
void host_update_rows(T* const* x, const T (*u)[G], const int i, const T* lt,
                      const std::ptrdiff_t ls) {
  using VecB = HostVec<T, B>;
  constexpr int VB = VecB::V;
  typename VecB::type acc[C][W], l[W];
  for (int c = 0; c < C; ++c)
    for (int w = 0; w < W; ++w) VecB::load(acc[c][w], x[c] + i + w * VB);
  for (int t = 0; t < G; ++t, lt += ls) {
    for (int w = 0; w < W; ++w) {
      VecB::load(l[w], lt + w * VB);
      VecB::keep(l[w]);
    }
    for (int c = 0; c < C; ++c)
      for (int w = 0; w < W; ++w) VecB::sub_mul(acc[c][w], l[w], u[c][t]);
  }
  for (int c = 0; c < C; ++c)
    for (int w = 0; w < W; ++w) VecB::store(x[c] + i + w * VB, acc[c][w]);
}

// Rows [i, m), L(i, t) at l[t * ls] (l points at row i): whole chunks, one vector, a half and
// a quarter vector (16 bytes at least), then row by row.
template <int G, int C, class T>
void host_rank_update(T* const* x, const T (*u)[G], int i, const int m, const T* l,
                      const std::ptrdiff_t ls) {
  constexpr int V = HostVec<T>::V, RV = host_update_chunk<T>();
  constexpr int B2 = kHostVecBytes / 2 >= 16 ? kHostVecBytes / 2 : 16;
  constexpr int B4 = kHostVecBytes / 4 >= 16 ? kHostVecBytes / 4 : 16;
  for (; i + RV <= m; i += RV, l += RV) host_update_rows<G, C, kHostUpdateVectors>(x, u, i, l, ls);
  for (; i + V <= m; i += V, l += V) host_update_rows<G, C, 1>(x, u, i, l, ls);
  if (B2 < kHostVecBytes && i + HostVec<T, B2>::V <= m) {
    host_update_rows<G, C, 1, B2>(x, u, i, l, ls);
    i += HostVec<T, B2>::V, l += HostVec<T, B2>::V;
  }
  if (B4 < B2 && i + HostVec<T, B4>::V <= m) {
    host_update_rows<G, C, 1, B4>(x, u, i, l, ls);
    i += HostVec<T, B4>::V, l += HostVec<T, B4>::V;
  }
  for (; i < m; ++i, ++l)
    for (int c = 0; c < C; ++c) {
      T s = x[c][i];
      for (int t = 0; t < G; ++t) s -= l[t * ls] * u[c][t];
      x[c][i] = s;
    }
}

// A copy of L's rows [pb, m) (G columns, leading dimension lda) for host_rank_update: its own
// leading dimension, a whole number of vectors and never a multiple of 1 KB, so that the G
// columns' rows do not meet in one L1 set (with a 4 KB leading dimension, double n = 512, they
// all did and the pool's getrf took 2.4x OpenBLAS's time).
template <class T>
struct HostPackedL {
  const T* l = nullptr;  // L(pb, 0) in the copy
  std::ptrdiff_t ld = 0;
  static std::ptrdiff_t lead(const int rows) {
    constexpr int V = HostVec<T>::V;
    std::ptrdiff_t ld = (rows + V - 1) / V * V;
    if (ld * std::ptrdiff_t(sizeof(T)) % 1024 == 0) ld += V;
    return ld;
  }
  // Entries `work` needs for `rows` rows of G columns.
  static std::size_t size(const int g, const int rows) {
    return std::size_t(g) * std::size_t(lead(rows > 0 ? rows : 0));
  }
  template <int G>
  void pack(const T* l0, const std::ptrdiff_t lda, const int pb, const int m, T* work) {
    ld = lead(m - pb);
    for (int t = 0; t < G; ++t) std::memcpy(work + t * ld, l0 + t * lda + pb, sizeof(T) * (m - pb));
    l = work;
  }
};

}  // namespace impl
}  // namespace kolesky
