// What every Kolesky benchmark binary shares: size-list parsing and the run's context
// (library, Kokkos, execution space and device), so JSON results say where they came from.
#pragma once
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
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

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Kolesky and a baseline timed alternately in every iteration (the order swapped each time),
// so that a noisy machine's drift hits both alike: manual time = Kolesky's; counters
// kolesky_ms and baseline_ms (medians) and ratio = the median over iterations of baseline
// time / Kolesky time (> 1: Kolesky faster). `restore` runs untimed before each call.
template <class Restore, class Ours, class Theirs>
void paired(benchmark::State& state, Restore restore, Ours ours, Theirs theirs) {
  std::vector<double> to, tt, r;
  bool flip = false;
  for (auto _ : state) {
    double t[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const bool mine = (k == 0) != flip;
      restore(mine);
      const auto t0 = std::chrono::steady_clock::now();
      if (mine)
        ours();
      else
        theirs();
      t[mine ? 0 : 1] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    flip = !flip;
    state.SetIterationTime(t[0]);
    to.push_back(t[0]), tt.push_back(t[1]), r.push_back(t[1] / t[0]);
  }
  state.counters["kolesky_ms"] = 1e3 * median_of(to);
  state.counters["baseline_ms"] = 1e3 * median_of(tt);
  state.counters["ratio"] = median_of(r);
}

// The same on a host build, Kolesky three ways in every iteration (the order rotated): as a
// user gets it (the mid-size factorizations choose between the pool and the calling thread,
// impl::HostTeamChooser), forced to the calling thread, forced to the pool; and the baseline.
// Manual time = the learned choice's; counters: kolesky_ms, thread_ms, pool_ms, baseline_ms
// (medians); ratio, ratio_thread, ratio_pool = medians of baseline time / each; auto_over_best
// = the median of the choice's time over the faster forced way's in the same iteration.
template <class Restore, class Ours, class Theirs>
void paired_ways(benchmark::State& state, Restore restore, Ours ours, Theirs theirs) {
  auto& force = kolesky::impl::HostTeamKnobs::get().force;
  const int saved = force;
  std::vector<double> t[4], r[3], best;
  int rot = 0;
  for (auto _ : state) {
    double it[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; ++k) {
      const int way = (k + rot) % 4;  // 0 learned, 1 calling thread, 2 pool, 3 baseline
      restore(way < 3);
      force = way == 0 ? -1 : way == 1 ? 0 : 1;
      const auto t0 = std::chrono::steady_clock::now();
      if (way < 3)
        ours();
      else
        theirs();
      it[way] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    force = saved;
    rot = (rot + 1) % 4;
    state.SetIterationTime(it[0]);
    for (int w = 0; w < 4; ++w) t[w].push_back(it[w]);
    for (int w = 0; w < 3; ++w) r[w].push_back(it[3] / it[w]);
    best.push_back(it[0] / std::min(it[1], it[2]));
  }
  force = saved;
  state.counters["kolesky_ms"] = 1e3 * median_of(t[0]);
  state.counters["thread_ms"] = 1e3 * median_of(t[1]);
  state.counters["pool_ms"] = 1e3 * median_of(t[2]);
  state.counters["baseline_ms"] = 1e3 * median_of(t[3]);
  state.counters["ratio"] = median_of(r[0]);
  state.counters["ratio_thread"] = median_of(r[1]);
  state.counters["ratio_pool"] = median_of(r[2]);
  state.counters["auto_over_best"] = median_of(best);
}

// The restore step of the paired benchmarks: Kolesky's matrix from its device original or the
// baseline's host copy from its own, then a fence (outside the timed calls).
template <class Exec, class V, class V0, class H, class H0>
auto restore_pair(const V& mine, const V0& mine0, const H& theirs, const H0& theirs0) {
  return [=](const bool ours) {
    if (ours)
      Kokkos::deep_copy(mine, mine0);
    else
      std::memcpy(theirs.data(), theirs0.data(), sizeof(*theirs.data()) * theirs.size());
    Exec().fence();
  };
}

// KOLESKY_PERF_BREAK=1 simulates a wrong kernel: the result's (0, 0) entry is changed after
// timing, before the check, so that the sweep's failure path stays tested (ctest sweep_broken).
template <class View>
void break_if_asked(const View& a) {
  const char* e = std::getenv("KOLESKY_PERF_BREAK");
  if (e == nullptr || *e == '\0' || *e == '0' || a.extent(0) == 0) return;
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  h(0, 0) += 1 + 2 * (h(0, 0) < 0 ? -h(0, 0) : h(0, 0));
  Kokkos::deep_copy(a, h);
}

// The same for a batch in any layout: its first stored element is matrix 0's (0, 0).
template <class View>
void break_first_if_asked(const View& data) {
  const char* e = std::getenv("KOLESKY_PERF_BREAK");
  if (e == nullptr || *e == '\0' || *e == '0' || data.size() == 0) return;
  using T = typename View::non_const_value_type;
  Kokkos::View<T, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> first(data.data());
  T h = 0;
  Kokkos::deep_copy(h, first);
  h += 1 + 2 * (h < 0 ? -h : h);
  Kokkos::deep_copy(first, h);
}

template <class Exec>
void add_context(const char* git_hash) {
  benchmark::AddCustomContext("kolesky_version", KOLESKY_VERSION);
  benchmark::AddCustomContext("kolesky_git", git_hash);
  benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
  benchmark::AddCustomContext("execution_space", Exec::name());
  benchmark::AddCustomContext("concurrency", std::to_string(Exec().concurrency()));
  // The Kokkos configuration the numbers belong to: backends, and the vendor libraries used.
  std::string backends;
#ifdef KOKKOS_ENABLE_SERIAL
  backends += "Serial ";
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  backends += "OpenMP ";
#endif
#ifdef KOKKOS_ENABLE_CUDA
  backends += "Cuda ";
#endif
  benchmark::AddCustomContext("kokkos_backends", backends);
  std::string tpls;
#ifdef KOLESKY_HAVE_BLAS
  tpls += "BLAS ";
#endif
#ifdef KOLESKY_HAVE_CUBLAS
  tpls += "cuBLAS ";
#endif
#ifdef KOLESKY_HAVE_LAPACK
  tpls += "LAPACK ";
#endif
#ifdef KOLESKY_HAVE_CUSOLVER
  tpls += "cuSOLVER ";
#endif
#ifdef KOLESKY_HAVE_KOKKOSKERNELS
  tpls += "KokkosKernels ";
#endif
  benchmark::AddCustomContext("kolesky_tpls", tpls);
#ifdef KOKKOS_ENABLE_CUDA
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) benchmark::AddCustomContext("device", p.name);
#endif
}

}  // namespace perf
}  // namespace kolesky
