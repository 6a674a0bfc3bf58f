// What the batched benchmark and the autotuner share: making a batch of any layout, filling
// it with SPD matrices on the device, counting failed factorizations.
#pragma once
#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>
#include <string>
#include <type_traits>

namespace kolesky {
namespace perf {

// A batch of `count` n x n matrices; chunked batches use the backend's default chunk.
template <class Exec, class Batch>
Batch make_batch(const std::string& label, int count, int n) {
  using T = typename Batch::value_type;
  if constexpr (std::is_same<Batch, batched::ChunkedBatch<T, typename Batch::memory_space>>::value)
    return Batch(label, count, n, n, batched::default_chunk<Exec, T>());
  else
    return Batch(label, count, n, n);
}

// Matrix p of order n: symmetric, entries in [-1, 1], diagonal n + 1 + p % 3: strictly
// diagonally dominant, so SPD, and different per matrix. `m` is a strided matrix.
template <class M>
KOKKOS_INLINE_FUNCTION void spd_matrix(const int p, const int n, const M& m) {
  using T = std::remove_reference_t<decltype(m(0, 0))>;
  unsigned x = 2654435761u * unsigned(p + 1);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      x = x * 1664525u + 1013904223u;
      const T v = i == j ? T(n + 1 + p % 3) : T(int(x >> 9) % 2001 - 1000) / T(1000);
      m(i, j) = v;
      m(j, i) = v;
    }
}

// Every matrix of a batch (uniform or VarBatch) made by spd_matrix, on the device, so any
// batch size is cheap.
template <class Exec, class Batch>
void fill_spd(const Batch& a) {
  Kokkos::parallel_for(
      "kolesky::perf::fill_spd", Kokkos::RangePolicy<Exec>(0, a.size()),
      KOKKOS_LAMBDA(const int p) {
        const auto m = a.matrix(p);
        if constexpr (std::is_same<Batch, batched::VarBatch<typename Batch::value_type,
                                                             typename Batch::memory_space>>::value)
          spd_matrix(p, a.order(p), m);
        else
          spd_matrix(p, a.rows(), m);
      });
  Kokkos::fence();
}

// Matrices whose info is not 0.
template <class Exec, class Info>
int count_failed(const Info& info) {
  int bad = 0;
  Kokkos::parallel_reduce(
      "kolesky::perf::count_failed", Kokkos::RangePolicy<Exec>(0, info.extent(0)),
      KOKKOS_LAMBDA(const int p, int& c) { c += info(p) != 0; }, bad);
  return bad;
}

}  // namespace perf
}  // namespace kolesky
