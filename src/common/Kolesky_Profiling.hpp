// Kokkos Tools regions: every public entry point opens one named after the routine
// (kolesky::potrf, kolesky::batched::potrf, ...), so a Kokkos Tools user sees where time goes;
// every kernel label starts with "kolesky::" as well. pushRegion / popRegion exist in every
// supported Kokkos version (3.4 to 4.x) and cost nothing when no tool is loaded.
#pragma once
#include <Kokkos_Core.hpp>

namespace kolesky {
namespace impl {

class Region {
 public:
  explicit Region(const char* name) { Kokkos::Profiling::pushRegion(name); }
  ~Region() { Kokkos::Profiling::popRegion(); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
};

}  // namespace impl
}  // namespace kolesky
