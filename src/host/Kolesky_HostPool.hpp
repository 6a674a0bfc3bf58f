// What the host's one-region factorizations (host/Kolesky_GetrfHost.hpp,
// host/Kolesky_PotrfHost.hpp) share: how the OpenMP runtime waits, and a ready flag per
// column group.
#pragma once
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/Kolesky_Types.hpp"

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

// Mid-size host factorizations (the one-region potrf and getrf) run on the pool or on the
// calling thread alone, whichever this machine does faster at the time, learned from the
// calls' own times. The pool hands every group of columns from one core to the other; on the
// 2-core VMs of issue 17 a cache line's round trip between the two vCPUs took 100-200 ns in one
// hour and ~520 ns in the next (the hypervisor moves them), and in the slow state two threads
// took twice as long as one (getrf n = 250: 0.69 against 0.36 ms) where in the fast one they
// take two thirds (0.25). Both ways give the same factor bit for bit, so the choice shows only
// in the time.
//
// HostTeamStats is one routine's record for one scalar and half-octave of n: the first two
// calls take the pool, the next two the calling thread (a first call's cold caches count only
// if the second is no faster); then each call takes the way with the lower running mean of
// log(time / n^3) and every 16th call the other one (every 64th while they differ by more
// than 25 %); a try of the other way that beats the best's mean is repeated on the next call
// until one does not, so a change of state is followed within tens of calls either way (the
// best way growing slower shows at once; the other growing faster used to wait for 3-4 tries
// 64 calls apart: getrf n = 500 kept the calling thread at 1.56x the pool's time for a whole
// benchmark, issue 17, thirteenth session).
struct HostTeamStats {
  double mean[2] = {0.0, 0.0};  // [0] the calling thread, [1] the pool
  int count[2] = {0, 0};
  unsigned calls = 0;
  int again = -1;  // the other way, when its last try beat the best's mean
  bool warm() const { return count[0] >= 2 && count[1] >= 2; }
  int best() const { return mean[0] < mean[1] ? 0 : 1; }
  // 0: the calling thread, 1: the pool.
  int next() {
    ++calls;
    if (count[1] < 2) return 1;
    if (count[0] < 2) return 0;
    const int b = best();
    if (again == 1 - b) return again;
    const unsigned period = std::abs(mean[0] - mean[1]) < 0.223 ? 16 : 64;  // log(1.25)
    return calls % period == 0 ? 1 - b : b;
  }
  void add(const int way, const double seconds, const int n) {
    const double v = std::log(std::max(seconds, 1e-9) / (double(n) * n * n));
    if (warm() && way != best()) again = v < mean[best()] ? way : -1;
    if (count[way] == 0)
      mean[way] = v;
    else if (count[way] == 1)
      mean[way] = std::min(mean[way], v);
    else
      mean[way] += 0.25 * (v - mean[way]);
    ++count[way];
  }
};

enum class HostRoutine { Potrf = 0, Getrf = 1 };

// Knob (tests, perf_test --host-team=): -1 learn (the default), 0 the calling thread, 1 the pool.
struct HostTeamKnobs : Knobs<HostTeamKnobs> {
  int force = -1;
};

class HostTeamChooser {
 public:
  static constexpr int kClasses = 32;
  static HostTeamChooser& get() {
    static HostTeamChooser c;
    return c;
  }
  int next(const HostRoutine r, const int bytes, const int n) {
    std::lock_guard<std::mutex> lock(m_);
    return slot(r, bytes, n).next();
  }
  void add(const HostRoutine r, const int bytes, const int n, const int way, const double s) {
    std::lock_guard<std::mutex> lock(m_);
    slot(r, bytes, n).add(way, s, n);
  }
  HostTeamStats stats(const HostRoutine r, const int bytes, const int n) {
    std::lock_guard<std::mutex> lock(m_);
    return slot(r, bytes, n);
  }
  void reset() {
    std::lock_guard<std::mutex> lock(m_);
    for (auto& s : s_) s = HostTeamStats{};
  }

 private:
  HostTeamStats& slot(const HostRoutine r, const int bytes, const int n) {
    const int c = std::min(kClasses - 1, std::max(0, int(2.0 * std::log2(double(n)))));
    return s_[(int(r) * 2 + (bytes == 4 ? 0 : 1)) * kClasses + c];
  }
  std::mutex m_;
  HostTeamStats s_[2 * 2 * kClasses];
};

// factor(team) with team = 1 or `pool`, as the chooser (or the knob) says; its time goes to
// the chooser unless it failed (factor returns info: a failed call stops early).
template <class T, class F>
int host_team_run(const HostRoutine r, const int n, const int pool, F&& factor) {
  if (pool <= 1) return factor(1);
  const int force = HostTeamKnobs::get().force;
  if (force >= 0) return factor(force == 0 ? 1 : pool);
  auto& chooser = HostTeamChooser::get();
  const int way = chooser.next(r, int(sizeof(T)), n);
  const auto t0 = std::chrono::steady_clock::now();
  const int info = factor(way == 0 ? 1 : pool);
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  if (info == 0) chooser.add(r, int(sizeof(T)), n, way, dt.count());
  return info;
}

}  // namespace impl
}  // namespace kolesky
