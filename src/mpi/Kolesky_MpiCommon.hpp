// What the distributed batch and the ScaLAPACK interface share: MPI errors, the rank -> GPU
// mapping, and the collective ending of every routine's argument checks.
#pragma once
#include <mpi.h>

#include <Kokkos_Core.hpp>
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#endif
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_Error.hpp"

namespace kolesky {
namespace mpi {

// An MPI call returned an error (only reachable when the communicator's error handler returns
// errors; MPI's default aborts the job).
class mpi_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace impl {

inline void check(const int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw mpi_error(std::string("kolesky::mpi: ") + call + " failed: " + std::string(text, len));
}

template <class T>
MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype datatype<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype datatype<int>() {
  return MPI_INT;
}

// A committed derived datatype, freed when it goes out of scope.
class Type {
 public:
  Type() = default;
  explicit Type(MPI_Datatype t) : t_(t) { check(MPI_Type_commit(&t_), "MPI_Type_commit"); }
  ~Type() {
    if (t_ != MPI_DATATYPE_NULL) MPI_Type_free(&t_);
  }
  Type(const Type&) = delete;
  Type& operator=(const Type&) = delete;
  MPI_Datatype get() const { return t_; }

 private:
  MPI_Datatype t_ = MPI_DATATYPE_NULL;
};

// `count` consecutive elements of T as one element.
template <class T>
MPI_Datatype contiguous(const int count) {
  MPI_Datatype t;
  check(MPI_Type_contiguous(count, datatype<T>(), &t), "MPI_Type_contiguous");
  return t;
}

inline int rank_of(MPI_Comm comm) {
  int r = 0;
  check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  return r;
}
inline int size_of(MPI_Comm comm) {
  int s = 0;
  check(MPI_Comm_size(comm, &s), "MPI_Comm_size");
  return s;
}

// Collective. Each rank passes what its own checks found ("" for nothing); if any rank found a
// problem every rank throws kolesky::invalid_argument, the rank that found it with its own
// message. A rank throwing alone would leave the others waiting in the next collective.
inline void agree(MPI_Comm comm, const char* routine, const std::string& problem) {
  const int mine = problem.empty() ? INT_MAX : rank_of(comm);
  int first = INT_MAX;
  check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first == INT_MAX) return;
  if (!problem.empty()) throw kolesky::invalid_argument(problem);
  kolesky::impl::throw_invalid(routine, "invalid arguments on rank ", first,
                               " (its exception says which)");
}

// Runs a rank's own checks `f`; its kolesky::invalid_argument becomes this rank's problem.
template <class F>
std::string problem_of(F&& f) {
  try {
    f();
  } catch (const kolesky::invalid_argument& e) {
    return e.what();
  }
  return {};
}

}  // namespace impl

// This process's rank among the ranks of `comm` on the same node (shared memory). Collective.
inline int local_rank(MPI_Comm comm) {
  MPI_Comm node;
  impl::check(
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, impl::rank_of(comm), MPI_INFO_NULL, &node),
      "MPI_Comm_split_type");
  const int r = impl::rank_of(node);
  MPI_Comm_free(&node);
  return r;
}

// The GPU this rank should use when each node has `num_devices`: local rank modulo the count,
// so ranks on one node spread over its GPUs. Collective.
inline int device_for(MPI_Comm comm, const int num_devices) {
  if (num_devices < 1)
    kolesky::impl::throw_invalid("mpi::device_for", "num_devices must be at least 1, got ",
                                 num_devices);
  return local_rank(comm) % num_devices;
}

// The GPUs this process can see (CUDA builds; 1 elsewhere, where the device id is ignored).
// Callable before Kokkos::initialize.
inline int devices_per_node() {
#if defined(KOKKOS_ENABLE_CUDA)
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) return count;
#endif
  return 1;
}

// Kokkos::initialize on device_for(comm, num_devices) (GPU builds; host builds ignore the
// device). Settings from the environment (KOKKOS_*, OMP_NUM_THREADS) still apply; command-line
// --kokkos-* options do not (call Kokkos::initialize yourself for those). Collective.
inline void initialize_kokkos(MPI_Comm comm, const int num_devices) {
  kolesky::impl::initialize_on_device(device_for(comm, num_devices));
}

// The same with every GPU this process sees: ranks on a node spread over its GPUs.
inline void initialize_kokkos(MPI_Comm comm) { initialize_kokkos(comm, devices_per_node()); }

}  // namespace mpi
}  // namespace kolesky
