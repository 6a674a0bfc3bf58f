// What the host's one-region factorizations (host/Kolesky_GetrfHost.hpp,
// host/Kolesky_PotrfHost.hpp) share: how the OpenMP runtime waits, and a ready flag per
// column group.
#pragma once
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace kolesky {
namespace impl {

// Whether the OpenMP runtime puts idle threads to sleep at once (OMP_WAIT_POLICY=passive, or
// libgomp's GOMP_SPINCOUNT=0): opening a parallel region then costs a wake-up (~30-50 us on
// the 2-core machine), so the smallest matrices stay on the calling thread longer.
inline bool host_pool_sleeps() {
  static const bool sleeps = [] {
    const char* p = std::getenv("OMP_WAIT_POLICY");
    const char* c = std::getenv("GOMP_SPINCOUNT");
    bool passive = p != nullptr;
    const char* want = "passive";
    for (int i = 0; passive && (p[i] != 0 || want[i] != 0); ++i)
      passive = std::tolower(static_cast<unsigned char>(p[i])) == want[i];
    return passive || (c != nullptr && std::strcmp(c, "0") == 0);
  }();
  return sleeps;
}

// Threads a one-region factorization may use: the pool, or only the calling thread when the
// call comes from inside the caller's own OpenMP parallel region (a Kokkos team cannot be
// opened there, and the caller's other threads are busy with their own work).
template <class Exec>
int host_team(const Exec& exec) {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
#endif
  return int(exec.concurrency());
}

// One flag per column group: set (release) by the thread that factored the group, awaited
// (acquire) by the others, which then see the group's columns.
class HostGroupFlags {
 public:
  explicit HostGroupFlags(const int n) : f_(new std::atomic<int>[std::size_t(n)]) {
    for (int g = 0; g < n; ++g) f_[g].store(0, std::memory_order_relaxed);
  }
  void publish(const int g) { f_[g].store(1, std::memory_order_release); }
  // Spin (the group is usually microseconds away), then give the core away: on an
  // oversubscribed machine the thread that sets the flag may be waiting for it.
  void wait(const int g) const {
    for (int spins = 0; f_[g].load(std::memory_order_acquire) == 0; ++spins) {
      if (spins < 2048) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else if (spins < 4096) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

 private:
  std::unique_ptr<std::atomic<int>[]> f_;
};

}  // namespace impl
}  // namespace kolesky
