// What CUDA launches keep between calls: per-stream workspaces and the per-kernel shared-memory
// opt-in, written once for every kernel that needs them.
#pragma once
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace kolesky {
namespace impl {

// One W per CUDA stream, kept for the process and destroyed at Kokkos::finalize (before
// Kokkos frees its memory spaces). Calls on one stream are ordered by the stream, so they
// may share its W (one execution-space instance used from several host threads at once is
// not supported, as in Kokkos). W's default constructor must not touch the device.
template <class W>
W& per_stream(const Kokkos::Cuda& exec) {
  static std::mutex mu;
  static std::map<cudaStream_t, W>* cache = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (cache == nullptr) {
    cache = new std::map<cudaStream_t, W>;
    Kokkos::push_finalize_hook([]() {
      delete cache;
      cache = nullptr;
    });
  }
  return (*cache)[exec.cuda_stream()];
}

// One W for the process (streams, events), made on first use, destroyed at Kokkos::finalize.
template <class W>
W& per_process() {
  static std::mutex mu;
  static W* one = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (one == nullptr) {
    one = new W;
    Kokkos::push_finalize_hook([]() {
      delete one;
      one = nullptr;
    });
  }
  return *one;
}

// This device's bit in a once-per-device word (0: beyond 64 devices, done every time).
inline unsigned long long device_bit(const Kokkos::Cuda& exec) {
  const int dev = exec.cuda_device();
  return dev >= 0 && dev < 64 ? 1ull << dev : 0ull;
}

// Dynamic shared memory above the default 48 KB for `kernel`: its limit set once per device
// (`opted` holds a bit per device; one per kernel), not at every launch (~1 us, a few percent
// of a small factorization), to all the device offers beside the kernel's static shared
// memory, so that any later launch of it fits.
inline void opt_in_shared(std::atomic<unsigned long long>& opted, const void* const kernel,
                          const Kokkos::Cuda& exec, const std::size_t bytes,
                          const char* const what) {
  if (bytes <= 48 * 1024) return;
  const unsigned long long bit = device_bit(exec);
  if (bit != 0 && (opted.load(std::memory_order_acquire) & bit) != 0) return;
  cudaFuncAttributes fa{};
  int fixed = 0;  // the kernel's static shared memory
  if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess)
    fixed = int(fa.sharedSizeBytes);
  else
    cudaGetLastError();  // not left for the next launch's check to report
  const int room = int(exec.cuda_device_prop().sharedMemPerBlockOptin) - fixed;
  const cudaError_t attr = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(room, int(bytes)));
  if (attr != cudaSuccess) {
    cudaGetLastError();  // not left for the next launch's check to report
    throw std::runtime_error(std::string(what) + " cannot have its shared memory (" +
                             std::to_string(bytes) + " bytes): " + cudaGetErrorString(attr));
  }
  opted.fetch_or(bit, std::memory_order_release);
}

// A shared-memory carveout for `blocks` launches of `bytes` each per SM, set once per device
// (`carved`: a bit per device, one per kernel). Left to itself the driver sizes the carveout
// for one block, which halves the residency of a kernel meant to run two per SM. A hint only.
inline void prefer_shared_carveout(std::atomic<unsigned long long>& carved,
                                   const void* const kernel, const Kokkos::Cuda& exec,
                                   const std::size_t bytes, const int blocks) {
  const unsigned long long bit = device_bit(exec);
  if (bit != 0 && (carved.load(std::memory_order_acquire) & bit) != 0) return;
  const cudaDeviceProp& prop = exec.cuda_device_prop();
  const long need = long(blocks) * long(bytes + prop.reservedSharedMemPerBlock);
  const long per_sm = long(prop.sharedMemPerMultiprocessor);
  const int pct = int(std::min(100L, (100 * need + per_sm - 1) / per_sm));
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, pct) !=
      cudaSuccess)
    cudaGetLastError();  // not left for the next launch's check to report
  carved.fetch_or(bit, std::memory_order_release);
}

// Throws when the last launch failed (`what` names the kernel).
inline void check_launch(const char* const what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + " did not launch: " + cudaGetErrorString(e));
}

// Instantiate a captured graph. Capture copies each stream's priority into its kernel nodes,
// but a graph runs every node at its launch stream's priority unless asked to keep the
// nodes' own: without that a plan's lookahead panels lose their head start on the trailing
// GEMMs (1-4 % at n >= 6144, issue 15 session 23).
inline cudaError_t instantiate_graph(cudaGraphExec_t* const exec, const cudaGraph_t g) {
#if CUDART_VERSION >= 11070
  return cudaGraphInstantiateWithFlags(exec, g, cudaGraphInstantiateFlagUseNodePriority);
#else
  return cudaGraphInstantiate(exec, g, nullptr, nullptr, 0);
#endif
}

// A captured graph's shape as far as cudaGraphExecUpdate needs it unchanged: each node's
// kind and number of dependencies, in the graph's order. A recording of another shape (a
// plan's potrs with another count of right-hand sides takes other kernels) is instantiated
// anew rather than offered to an update that would fail and leave an API error behind for
// sanitizers and tools to report.
inline std::vector<int> graph_shape(const cudaGraph_t g) {
  std::size_t count = 0;
  if (cudaGraphGetNodes(g, nullptr, &count) != cudaSuccess) return {-1};
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0 && cudaGraphGetNodes(g, nodes.data(), &count) != cudaSuccess) return {-1};
  std::vector<int> shape;
  shape.reserve(2 * count);
  for (const cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    std::size_t deps = 0;
#if CUDART_VERSION >= 13000
    const cudaError_t e = cudaGraphNodeGetDependencies(node, nullptr, nullptr, &deps);
#else
    const cudaError_t e = cudaGraphNodeGetDependencies(node, nullptr, &deps);
#endif
    if (e != cudaSuccess || cudaGraphNodeGetType(node, &type) != cudaSuccess) return {-1};
    shape.push_back(int(type));
    shape.push_back(int(deps));
  }
  return shape;
}

}  // namespace impl
}  // namespace kolesky
#endif
