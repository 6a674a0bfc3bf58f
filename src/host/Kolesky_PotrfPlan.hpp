// A reusable Cholesky of one order, for solvers that factor a matrix of the same size again
// and again (interior-point and Newton iterations):
//
//   kolesky::PotrfPlan<Kokkos::Cuda, double> plan(exec, n, kolesky::Uplo::Lower);
//   for (...) {
//     int info = plan.potrf(A);   // synchronous: info is on the host when it returns
//     plan.potrs(A, B);
//   }
//
// The plan owns what a call needs besides the matrix: the info words, the dataflow workspace
// and, on CUDA, two streams of its own (work and lookahead; the legacy default stream cannot
// be recorded, so the plan's work runs on its own stream, ordered after the work already
// queued on the execution space's). On CUDA it also records the whole launch sequence once as
// a CUDA graph and replays it: the first call on a matrix runs directly (one-time set-up stays
// out of the recording), the second call on the same matrix (same pointer and strides)
// records and replays, later ones replay. A call on another matrix records again
// (cudaGraphExecUpdate keeps the instantiated graph when only pointers changed). If recording
// fails, the plan runs directly from then on (uses_graph() tells); while a Kokkos Tools
// library or callback is active it does not record (Kokkos fences around kernels for tools).
//
// Small orders on CUDA (the staged kernels: up to 180 and 193-208 in double, 240 in float)
// are one launch that writes the plan's pinned info word, on the execution space's stream:
// nothing to record.
//
// potrs is recorded and replayed the same way, keyed by A and B (pointers, strides, count of
// right-hand sides): at n >= 512 with more than 16 right-hand sides its ~4 n / 256 cuBLAS calls
// cost the host more than the GPU. Any solve that is not replayed drops the recording (a
// direct call may have moved the per-stream workspaces the recording reads).
//
// kolesky::potrf without a plan runs the same code, with per-stream cached workspace.
#pragma once
#include <Kokkos_Core.hpp>

#include <memory>
#include <vector>

#include "common/Kolesky_Error.hpp"
#include "common/Kolesky_Profiling.hpp"
#include "common/Kolesky_Types.hpp"
#include "host/Kolesky_Potrf.hpp"

namespace kolesky {

template <class ExecSpace, class T>
class PotrfPlan {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kolesky::PotrfPlan: the scalar type must be float or double");

 public:
  PotrfPlan(const ExecSpace& exec, const int n, const Uplo uplo, const PotrfOptions& opt = {})
      : exec_(exec), n_(n), uplo_(uplo), opt_(opt) {
    if (n < 0) impl::throw_invalid("PotrfPlan", "the order must be >= 0, got ", n);
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (is_cuda) {
      words_.allocate("kolesky::plan_info", "kolesky::plan_info_host");
      ctx_.info = words_.d;
      host_info_ = words_.h;
    }
#endif
    if (ctx_.info.extent(0) == 0) {
      ctx_.info = impl::InfoView<ExecSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::plan_info"), 1);
      host_info_ = HostInfo(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                               "kolesky::plan_info_host"), 1);
    }
    if (impl::potrf_uses_flow<ExecSpace, T>(n, opt)) {
      work_.reset(new impl::FlowWorkOf<ExecSpace>);
      work_->reserve(impl::flow_tiles(n));
      ctx_.work = work_.get();
    }
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (is_cuda) {
      side_.reset(new impl::CudaSide);
      ctx_.side = side_.get();
      own_.reset(new impl::CudaSide(impl::CudaSide::Default));
    }
#endif
  }
  ~PotrfPlan() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (is_cuda) {
      if (graph_ != nullptr) cudaGraphExecDestroy(graph_);
      if (solve_graph_ != nullptr) cudaGraphExecDestroy(solve_graph_);
    }
#endif
  }
  PotrfPlan(const PotrfPlan&) = delete;
  PotrfPlan& operator=(const PotrfPlan&) = delete;

  int order() const { return n_; }
  Uplo uplo() const { return uplo_; }
  const ExecSpace& space() const { return exec_; }
  // CUDA: whether the last potrf replayed a recorded graph.
  bool uses_graph() const { return replayed_; }
  // CUDA: whether the last potrs replayed a recorded graph.
  bool potrs_uses_graph() const { return solve_replayed_; }

  // Factor A (n x n, any layout) in place; returns LAPACK's info.
  template <class AView>
  int potrf(const AView& a) {
    const impl::Region region("kolesky::PotrfPlan::potrf");
    check(a, "potrf");
    if (n_ == 0) return 0;
    const auto l = lower(a);
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (is_cuda) {
      const impl::Staged kind = impl::cuda_staged<T>(exec_, n_, opt_);
      if (kind != impl::Staged::None) {  // one launch that writes the pinned word: no graph
        replayed_ = false;
        impl::staged_potrf(exec_, kind, n_, l, host_info_.data());
        exec_.fence();
        return host_info_(0);
      }
      const Key key{l.p, l.rs, l.cs};
      const Kokkos::Cuda& w = *own_->exec;
      impl::stream_wait(w, exec_, own_->to_side);  // after what exec_ already holds
      replayed_ = false;
      if (graphs_ok_ && graph_ != nullptr && key == graph_key_) {
        replayed_ = replay(w);
      } else if (graphs_ok_ && key == seen_key_) {
        replayed_ = record(l, key) && replay(w);
      }
      if (!replayed_) {
        enqueue(w, l);
        seen_key_ = key;
      }
      w.fence();
      return host_info_(0);
    }
#endif
    enqueue(exec_, l);
    exec_.fence();
    return host_info_(0);
  }

  // Solve with the factor from potrf: B (rank 1 or 2) <- A^{-1} B.
  template <class AView, class BView>
  void potrs(const AView& a, const BView& b) const {
    const impl::Region region("kolesky::PotrfPlan::potrs");
    check(a, "potrs");
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (is_cuda) {
      impl::check_rhs<ExecSpace>("potrs", a, b);
      // (A may be a view of const: the solve only reads it.)
      const auto l = uplo_ == Uplo::Lower ? impl::lower_of<Uplo::Lower>(a)
                                          : impl::lower_of<Uplo::Upper>(a);
      const impl::Strided<const T> lc{l.p, l.rs, l.cs};
      const impl::Strided<T> bs = impl::rhs_of(b);
      const int nrhs = impl::nrhs_of(b);
      solve_replayed_ = false;
      if (n_ == 0 || nrhs == 0) return;
      const SolveKey key{{l.p, l.rs, l.cs}, {bs.p, bs.rs, bs.cs}, nrhs, impl::fast_float_flag()};
      const Kokkos::Cuda& w = *own_->exec;
      impl::stream_wait(w, exec_, own_->to_side);  // after what exec_ already holds
      const auto solve = [&](const Kokkos::Cuda& e) {
        impl::potrs_strided<Kokkos::Cuda, T>(e, n_, nrhs, lc, bs, opt_.blas);
      };
      if (graphs_ok_ && solve_graph_ != nullptr && key == solve_key_) {
        solve_replayed_ = cudaGraphLaunch(solve_graph_, w.cuda_stream()) == cudaSuccess;
      } else if (graphs_ok_ && key == solve_seen_ && capture(solve_graph_, solve_shape_, solve)) {
        solve_key_ = key;
        solve_replayed_ = cudaGraphLaunch(solve_graph_, w.cuda_stream()) == cudaSuccess;
      }
      if (!solve_replayed_) {
        solve(w);
        solve_seen_ = key;
        solve_key_ = SolveKey{};
      }
      w.fence();
      return;
    }
#endif
    kolesky::potrs(exec_, uplo_, a, b, opt_.blas);
  }

  // Factor and solve; on info != 0, B is unchanged.
  template <class AView, class BView>
  int posv(const AView& a, const BView& b) {
    check(a, "posv");
    impl::check_rhs<ExecSpace>("PotrfPlan::posv", a, b);
    const int info = potrf(a);
    if (info == 0) potrs(a, b);
    return info;
  }

 private:
  static constexpr bool is_cuda =
#ifdef KOKKOS_ENABLE_CUDA
      std::is_same<ExecSpace, Kokkos::Cuda>::value;
#else
      false;
#endif
  using HostInfo = Kokkos::View<int*,
#ifdef KOKKOS_ENABLE_CUDA
                                std::conditional_t<is_cuda, Kokkos::CudaHostPinnedSpace,
                                                   Kokkos::HostSpace>
#else
                                Kokkos::HostSpace
#endif
                                >;
  struct Key {
    const void* p = nullptr;
    std::ptrdiff_t rs = 0, cs = 0;
    bool operator==(const Key& o) const { return p == o.p && rs == o.rs && cs == o.cs; }
  };
  struct SolveKey {
    Key a, b;
    int nrhs = 0;
    bool fast = false;
    bool operator==(const SolveKey& o) const {
      return a == o.a && b == o.b && nrhs == o.nrhs && fast == o.fast;
    }
  };

  template <class AView>
  void check(const AView& a, const char* what) const {
    impl::check_matrix<ExecSpace>(what, a);
    static_assert(std::is_same<typename AView::non_const_value_type, T>::value,
                  "kolesky::PotrfPlan: the matrix's scalar type differs from the plan's");
    if (int(a.extent(0)) != n_)
      impl::throw_invalid(what, "the plan is for order ", n_, " but A is ", a.extent(0), " x ",
                          a.extent(1));
  }

  template <class AView>
  impl::Strided<T> lower(const AView& a) const {
    return uplo_ == Uplo::Lower ? impl::lower_of<Uplo::Lower>(a) : impl::lower_of<Uplo::Upper>(a);
  }

  struct Queued {
    bool memset = true;   // info was zeroed first
    bool mapped = false;  // the launch hands info back itself and leaves the word zero
  };
  // Zero info, factor, copy info to the host word: all queued on `e`. CUDA: the memset only
  // where the word may not be zero, the copy only where the launch does not write the host
  // word itself (impl::CudaInfoWords::take, settle).
  Queued enqueue(const ExecSpace& e, const impl::Strided<T>& l) {
    Queued q;
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (is_cuda) {
      q.memset = !words_.zero;
      words_.take(e.cuda_stream());
      ctx_.host_info = words_.h.data();
      q.mapped = impl::potrf_enqueue(e, n_, l, opt_, ctx_);
      words_.settle(q.mapped, e.cuda_stream());
      return q;
    }
#endif
    Kokkos::deep_copy(e, ctx_.info, 0);
    impl::potrf_enqueue(e, n_, l, opt_, ctx_);
    Kokkos::deep_copy(e, host_info_, ctx_.info);
    return q;
  }

#ifdef KOKKOS_ENABLE_CUDA
  // Record enqueue(l) as a graph (update the instantiated one when possible).
  bool record(const impl::Strided<T>& l, const Key& key) {
    Queued q;
    const bool zero = words_.zero;  // a recording runs nothing: the word is as it was
    const bool ok = capture(graph_, shape_, [&](const Kokkos::Cuda& e) { q = enqueue(e, l); });
    words_.zero = zero;
    if (!ok) return false;
    graph_key_ = key;
    graph_queued_ = q;
    return true;
  }
  // The recording on the plan's stream; a memset first where it has none and the word may
  // not be zero (a direct call in between left a failure in it).
  bool replay(const Kokkos::Cuda& w) {
    if (!graph_queued_.memset && !words_.zero)
      cudaMemsetAsync(words_.d.data(), 0, sizeof(int), w.cuda_stream());
    if (cudaGraphLaunch(graph_, w.cuda_stream()) != cudaSuccess) {
      cudaGetLastError();
      words_.zero = false;
      return false;
    }
    words_.zero = graph_queued_.mapped;
    return true;
  }

  // Record what `enqueue_on(stream)` queues on the plan's stream into `graph` (updated in
  // place when only parameters changed: `shape`, the instantiated recording's, is the same).
  // False, with graphs off for the plan, where recording fails; false while a Kokkos Tools
  // library is loaded (Kokkos fences around each kernel for the tool, which a stream capture
  // forbids).
  template <class F>
  bool capture(cudaGraphExec_t& graph, std::vector<int>& shape, const F& enqueue_on) const {
    if (Kokkos::Tools::profileLibraryLoaded()) return false;
    const Kokkos::Cuda& w = *own_->exec;
    cudaStream_t s = w.cuda_stream();
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      graphs_ok_ = false;
      cudaGetLastError();
      return false;
    }
    cudaGraph_t g = nullptr;
    try {
      enqueue_on(w);
    } catch (...) {  // leave the stream out of capture mode
      cudaStreamEndCapture(s, &g);
      if (g) cudaGraphDestroy(g);
      cudaGetLastError();
      throw;
    }
    const cudaError_t e = cudaStreamEndCapture(s, &g);
    if (e != cudaSuccess || g == nullptr) {
      graphs_ok_ = false;
      cudaGetLastError();
      if (g) cudaGraphDestroy(g);
      return false;
    }
    bool ok = false;
    std::vector<int> now = impl::graph_shape(g);
    if (graph != nullptr && now == shape && now != std::vector<int>{-1}) {
#if CUDART_VERSION >= 12000
      cudaGraphExecUpdateResultInfo info;
      ok = cudaGraphExecUpdate(graph, g, &info) == cudaSuccess;
#else
      cudaGraphNode_t node;
      cudaGraphExecUpdateResult res;
      ok = cudaGraphExecUpdate(graph, g, &node, &res) == cudaSuccess;
#endif
      if (!ok) cudaGetLastError();
    }
    if (!ok) {
      if (graph != nullptr) cudaGraphExecDestroy(graph);
      graph = nullptr;
      ok = impl::instantiate_graph(&graph, g) == cudaSuccess;
    }
    cudaGraphDestroy(g);
    if (!ok) {
      graphs_ok_ = false;
      graph = nullptr;
      shape.clear();
      cudaGetLastError();
      return false;
    }
    shape = std::move(now);
    return true;
  }
  cudaGraphExec_t graph_ = nullptr;
  mutable cudaGraphExec_t solve_graph_ = nullptr;
  std::vector<int> shape_;                // graph_'s recording (impl::graph_shape)
  mutable std::vector<int> solve_shape_;  // solve_graph_'s
  std::unique_ptr<impl::CudaSide> side_, own_;  // lookahead stream; the plan's work stream
  Queued graph_queued_;  // what graph_'s recording queued
  // The plan's info words (ctx_.info, host_info_) and whether the device word is known zero
  // in the work stream's order.
  impl::CudaInfoWords words_;
#endif

  ExecSpace exec_;
  int n_;
  Uplo uplo_;
  PotrfOptions opt_;
  impl::PotrfContext<ExecSpace> ctx_;
  std::unique_ptr<impl::FlowWorkOf<ExecSpace>> work_;
  HostInfo host_info_;
  Key seen_key_, graph_key_;
  // potrs (const) records and replays too: the last direct call's key and the replayable
  // recording's (none after a direct call).
  mutable SolveKey solve_seen_, solve_key_;
  mutable bool graphs_ok_ = true;
  bool replayed_ = false;
  mutable bool solve_replayed_ = false;
};

}  // namespace kolesky
