// Seed table (hand-written from docs/performance.md's first rounds) until
// kolesky_tune_batched --out=src/batched/tuned/Kolesky_TunedHost.hpp replaces it.
#pragma once
#include "batched/Kolesky_BatchedTuning.hpp"

namespace kolesky {
namespace batched {
namespace tuning {

// scalar bytes, layout, n, kernel, algo, tile, team size
inline constexpr Entry kTunedHost[] = {
    {4, Layout::Strided, 128, Kernel::ThreadDirect, Algo::RightLooking, 0, 0},
    {4, Layout::BatchFastest, 128, Kernel::SimdLanes, Algo::Default, 0, 0},
    {8, Layout::Strided, 128, Kernel::ThreadDirect, Algo::RightLooking, 0, 0},
    {8, Layout::BatchFastest, 128, Kernel::SimdLanes, Algo::Default, 0, 0},
};

}  // namespace tuning
}  // namespace batched
}  // namespace kolesky
