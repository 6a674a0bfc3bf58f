// The critical-path tool of the GPU potrf (issue 15): when a StepTrace is installed, the
// blocked factorization brackets every step (panel, SYRK, GEMM) with CUDA events on the stream
// it runs on, and every dataflow launch records per-task timestamps (FlowTraceRec). After the
// call, report() prints each step's start and duration, the GPU's busy time against the wall
// time, and for each dataflow launch the chain through its diagonal tiles. perf_test's
// `kolesky_perf_dense --trace` uses it; without a StepTrace installed it costs one branch.
#pragma once
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "dense/Kolesky_PotrfDataflow.hpp"

namespace kolesky {
namespace impl {

#ifdef KOKKOS_ENABLE_CUDA
class StepTrace {
 public:
  struct Step {
    std::string name;
    cudaStream_t stream;
    cudaEvent_t b, e;
    long flow_offset = -1;  // dataflow launch: its records in the trace buffer
    int flow_tasks = 0;
  };
  static StepTrace*& current() {
    static StepTrace* t = nullptr;
    return t;
  }
  explicit StepTrace(cudaStream_t main_stream, std::size_t flow_capacity = 1 << 20)
      : main_(main_stream), flow_("kolesky::flow_trace", flow_capacity) {}
  ~StepTrace() {
    for (auto& s : steps_) {
      cudaEventDestroy(s.b);
      cudaEventDestroy(s.e);
    }
  }
  std::size_t begin(const std::string& name, cudaStream_t s) {
    Step st{name, s, nullptr, nullptr};
    cudaEventCreate(&st.b);
    cudaEventCreate(&st.e);
    cudaEventRecord(st.b, s);
    steps_.push_back(st);
    return steps_.size() - 1;
  }
  void end(const std::size_t id) { cudaEventRecord(steps_[id].e, steps_[id].stream); }
  // A segment of the device buffer for a dataflow launch of `tasks` tasks (nullptr if full).
  FlowTraceRec* flow_segment(const std::size_t id, const int tasks) {
    if (used_ + std::size_t(tasks) > flow_.extent(0)) return nullptr;
    steps_[id].flow_offset = long(used_);
    steps_[id].flow_tasks = tasks;
    used_ += std::size_t(tasks);
    return flow_.data() + steps_[id].flow_offset;
  }
  // Print the timeline; `wall_ms`: the call's wall time measured by the caller.
  void report(std::FILE* out, const std::string& title, const double wall_ms) const {
    cudaDeviceSynchronize();
    if (steps_.empty()) return;
    auto h = Kokkos::create_mirror_view(flow_);
    Kokkos::deep_copy(h, flow_);
    std::vector<std::pair<double, double>> iv;  // busy intervals (ms from the first event)
    std::fprintf(out, "# %s\n# step                              stream   start_ms    dur_ms\n",
                 title.c_str());
    double sum = 0;
    for (const auto& s : steps_) {
      float t0 = 0, d = 0;
      cudaEventElapsedTime(&t0, steps_.front().b, s.b);
      cudaEventElapsedTime(&d, s.b, s.e);
      iv.push_back({t0, t0 + d});
      sum += d;
      std::fprintf(out, "  %-34s %6s %10.4f %9.4f\n", s.name.c_str(),
                   s.stream == main_ ? "main" : "side", t0, d);
    }
    std::sort(iv.begin(), iv.end());
    double busy = 0, lo = iv[0].first, hi = iv[0].second;
    for (const auto& x : iv) {
      if (x.first > hi) {
        busy += hi - lo;
        lo = x.first;
      }
      hi = std::max(hi, x.second);
    }
    busy += hi - lo;
    std::fprintf(out, "# steps %zu, sum of step times %.4f ms, GPU busy (union) %.4f ms, "
                 "first event to last %.4f ms, wall %.4f ms\n",
                 steps_.size(), sum, busy, hi - iv[0].first, wall_ms);
    for (const auto& s : steps_)
      if (s.flow_offset >= 0) flow_report(out, s, h.data() + s.flow_offset);
  }

 private:
  // The chain through a dataflow launch's diagonal tiles (the chain team's record per tile
  // column): its start, the solve of the tile below the previous diagonal tile (with the wait
  // for the partial updates), the SYRK, and the factorization (in us and in SM cycles, which
  // give the clock), plus how the other tasks spent their time.
  static void flow_report(std::FILE* out, const Step& s, const FlowTraceRec* r) {
    const int m = s.flow_tasks;
    unsigned long long t0 = ~0ull, t1 = 0;
    std::vector<const FlowTraceRec*> chain;
    double busy[4] = {0, 0, 0, 0}, waitt[4] = {0, 0, 0, 0};
    int count[4] = {0, 0, 0, 0};
    double parts[5] = {0, 0, 0, 0, 0};  // tiles after their deps, cycles (FlowTraceRec)
    for (int t = 0; t < m; ++t) {
      if (r[t].t_done == 0) continue;
      t0 = std::min(t0, r[t].t_take);
      t1 = std::max(t1, r[t].t_done);
      const int k = r[t].kind & 3;
      if (k == 0) {
        chain.push_back(&r[t]);
      } else {
        ++count[k];
        waitt[k] += double(r[t].t_ready - r[t].t_take) * 1e-3;
        busy[k] += double(r[t].t_done - r[t].t_ready) * 1e-3;
        if (k == 3) {
          for (int p = 0; p < 4; ++p) parts[p] += double(r[t].fac_cycles[p]);
          parts[4] += double(r[t].cycles);
        }
      }
    }
    std::sort(chain.begin(), chain.end(),
              [](const FlowTraceRec* a, const FlowTraceRec* b) { return a->j < b->j; });
    const auto us = [&](unsigned long long a, unsigned long long b) {
      return b > a ? double(b - a) * 1e-3 : -double(a - b) * 1e-3;
    };
    std::fprintf(out, "#   %s: span %.1f us (first take to last publish); tiles %d (take->deps "
                 "%.1f us, deps->done %.1f us avg), partials %d (%.1f, %.1f us avg)\n",
                 s.name.c_str(), us(t0, t1), count[3], count[3] ? waitt[3] / count[3] : 0.0,
                 count[3] ? busy[3] / count[3] : 0.0, count[1] + count[2],
                 count[1] + count[2] ? (waitt[1] + waitt[2]) / (count[1] + count[2]) : 0.0,
                 count[1] + count[2] ? (busy[1] + busy[2]) / (count[1] + count[2]) : 0.0);
    if (count[3])
      std::fprintf(out, "#     tiles after their deps, avg cycles: factor staged %.0f, solve %.0f, "
                   "stores issued %.0f, barrier %.0f, publish %.0f\n", parts[0] / count[3],
                   parts[1] / count[3], parts[2] / count[3], parts[3] / count[3], parts[4] / count[3]);
    // The tasks the chain's column j waits for: partials (j, j-1), (j, j) and the tile
    // (j, j-2) they wait for; times from the chain column's start.
    const auto find = [&](int kind, int i, int j) -> const FlowTraceRec* {
      for (int t = 0; t < m; ++t)
        if (r[t].t_done != 0 && (r[t].kind & 3) == kind && r[t].i == i && r[t].j == j) return &r[t];
      return nullptr;
    };
    if (!chain.empty()) std::fprintf(out, "#   the chain on SM %d\n", chain.front()->sm);
    std::fprintf(out, "#   col   start_us  step_us  wait_us  solve_us  syrk_us  factor_us  factor_cyc"
                 "   GHz | tile(j,j-2) ready/done  partial(j,j-1) done  partial(j,j) done | solve/store cyc"
                 " | factor: panel load/pivots/stores, team update cyc | invert_blocks cyc | syrk cyc\n");
    for (const auto* c : chain) {
      const FlowTraceRec* nt2 = find(3, c->j, c->j - 2);
      const FlowTraceRec* pb = find(1, c->j, c->j - 1);
      const FlowTraceRec* pd = find(2, c->j, c->j);
      std::fprintf(out, "    %4d %9.1f %8.1f %8.1f %9.1f %8.1f %10.1f %11lld %6.2f | %8.1f %8.1f %12.1f %18.1f | %lld %lld | %lld %lld %lld %lld | %lld | %lld\n",
                   c->j, us(t0, c->t_take), us(c->t_take, c->t_done), us(c->t_take, c->t_wait),
                   us(c->t_wait, c->t_ready), us(c->t_ready, c->t_factor),
                   us(c->t_factor, c->t_done), c->cycles,
                   c->t_done > c->t_factor ? double(c->cycles) / double(c->t_done - c->t_factor)
                                           : 0.0,
                   nt2 ? us(c->t_take, nt2->t_ready) : 0.0, nt2 ? us(c->t_take, nt2->t_done) : 0.0,
                   pb ? us(c->t_take, pb->t_done) : 0.0, pd ? us(c->t_take, pd->t_done) : 0.0,
                   c->sub_cycles[0], c->sub_cycles[1], c->fac_cycles[0],
                   c->fac_cycles[1], c->fac_cycles[2], c->fac_cycles[3], c->inv_cycles,
                   c->syrk_cycles);
    }
  }

  std::vector<Step> steps_;
  cudaStream_t main_;
  Kokkos::View<FlowTraceRec*, Kokkos::CudaSpace> flow_;
  std::size_t used_ = 0;
};

// RAII bracket of one step on `exec`'s stream (nothing when no trace is installed).
struct TraceStep {
  StepTrace* t;
  std::size_t id = 0;
  TraceStep(const Kokkos::Cuda& exec, const std::string& name) : t(StepTrace::current()) {
    if (t) id = t->begin(name, exec.cuda_stream());
  }
  FlowTraceRec* flow(const int tasks) { return t ? t->flow_segment(id, tasks) : nullptr; }
  ~TraceStep() {
    if (t) t->end(id);
  }
};
#endif

}  // namespace impl
}  // namespace kolesky
