// The tuned choices behind Kernel::Auto: for each backend family, scalar size, layout family
// and matrix order, the kernel and its parameters that measured fastest. The tables in
// batched/tuned/ are written by perf_test's kolesky_tune_batched (see docs/performance_log.md);
// an order between two tuned ones takes the next larger one's entry, so a kernel limited to
// small n (Registers, RowRegisters) is never chosen beyond its limit.
#pragma once
#include <cstddef>

#include "batched/Kolesky_BatchedPotrf_Impl.hpp"
#include "common/Kolesky_Types.hpp"

namespace kolesky {
namespace batched {
namespace tuning {

// Strided: each matrix contiguous (StridedBatch). BatchFastest: interleaved or chunked.
enum class Layout { Strided, BatchFastest };

inline const char* name(Layout l) { return l == Layout::Strided ? "Strided" : "BatchFastest"; }

struct Entry {
  int scalar_bytes;
  Layout layout;
  int n;
  Kernel kernel;
  Algo algo;
  int tile;
  int team_size;
};

template <std::size_t K>
const Entry* lookup(const Entry (&table)[K], const int scalar_bytes, const Layout layout,
                    const int n) {
  const Entry* above = nullptr;    // smallest tuned order >= n
  const Entry* largest = nullptr;  // for n beyond the table
  for (const Entry& e : table) {
    if (e.scalar_bytes != scalar_bytes || e.layout != layout) continue;
    if (e.n >= n && (!above || e.n < above->n)) above = &e;
    if (!largest || e.n > largest->n) largest = &e;
  }
  return above ? above : largest;
}

}  // namespace tuning
}  // namespace batched
}  // namespace kolesky
