// Shared by the MPI tests: the fixture that makes a failure on any rank a failure on all, and
// the host configurations the typed tests run on.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstring>

namespace kolesky {
namespace test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// After each test, whether it failed anywhere: rank 0's report then names it too. Every rank
// runs the same tests in the same order, so this collective pairs up.
class MpiTest : public ::testing::Test {
 protected:
  void TearDown() override {
    const int mine = HasFailure() ? 1 : 0;
    int any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && !mine) ADD_FAILURE() << "failed on another rank (its output says where)";
  }
  int rank() const { return world_rank(); }
  int size() const { return world_size(); }
};

template <class E, class T>
struct Config {
  using Exec = E;
  using Scalar = T;
};

#if defined(KOKKOS_ENABLE_SERIAL)
using HostConfigs = ::testing::Types<Config<Kokkos::DefaultHostExecutionSpace, float>,
                                     Config<Kokkos::DefaultHostExecutionSpace, double>,
                                     Config<Kokkos::Serial, float>, Config<Kokkos::Serial, double>>;
#else
using HostConfigs = ::testing::Types<Config<Kokkos::DefaultHostExecutionSpace, float>,
                                     Config<Kokkos::DefaultHostExecutionSpace, double>>;
#endif
using Scalars = ::testing::Types<float, double>;

template <class T>
bool same_bits(const T a, const T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace test
}  // namespace kolesky
