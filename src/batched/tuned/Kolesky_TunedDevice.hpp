// Seed table (hand-written from docs/performance.md's first rounds) until
// kolesky_tune_batched --out=src/batched/tuned/Kolesky_TunedDevice.hpp replaces it.
#pragma once
#include "batched/Kolesky_BatchedTuning.hpp"

namespace kolesky {
namespace batched {
namespace tuning {

// scalar bytes, layout, n, kernel, algo, tile, team size
inline constexpr Entry kTunedDevice[] = {
    {4, Layout::Strided, 16, Kernel::Registers, Algo::Default, 0, 0},
    {4, Layout::Strided, 128, Kernel::TeamRows, Algo::Default, 0, 0},
    {4, Layout::BatchFastest, 16, Kernel::Registers, Algo::Default, 0, 0},
    {4, Layout::BatchFastest, 128, Kernel::TeamRows, Algo::Default, 0, 0},
    {8, Layout::Strided, 16, Kernel::Registers, Algo::Default, 0, 0},
    {8, Layout::Strided, 128, Kernel::TeamRows, Algo::Default, 0, 0},
    {8, Layout::BatchFastest, 16, Kernel::Registers, Algo::Default, 0, 0},
    {8, Layout::BatchFastest, 128, Kernel::TeamRows, Algo::Default, 0, 0},
};

}  // namespace tuning
}  // namespace batched
}  // namespace kolesky
