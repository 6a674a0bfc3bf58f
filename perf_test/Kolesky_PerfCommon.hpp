// What every Kolesky benchmark binary shares: size-list parsing and the run's context
// (library, Kokkos, execution space and device), so JSON results say where they came from.
#pragma once
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace kolesky {
namespace perf {

inline std::vector<int> parse_ints(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(std::stoi(t));
  return v;
}

template <class Exec>
void add_context(const char* git_hash) {
  benchmark::AddCustomContext("kolesky_version", KOLESKY_VERSION);
  benchmark::AddCustomContext("kolesky_git", git_hash);
  benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
  benchmark::AddCustomContext("execution_space", Exec::name());
  benchmark::AddCustomContext("concurrency", std::to_string(Exec().concurrency()));
#ifdef KOKKOS_ENABLE_CUDA
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) benchmark::AddCustomContext("device", p.name);
#endif
}

}  // namespace perf
}  // namespace kolesky
