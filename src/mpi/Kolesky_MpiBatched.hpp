// A batch of small matrices spread over MPI ranks: each rank factors and solves its share with
// kolesky::batched on its own execution space (a GPU, or the host), and the routines return
// the number of failed matrices over all ranks.
//
//   kolesky::mpi::BatchSplit split(total, comm);              // who holds which matrices
//   kolesky::batched::StridedBatch<double> mine("A", split.batch_size(rank), n, n);
//   kolesky::mpi::batched::scatter(comm, 0, whole, mine);     // whole: on rank 0 only
//   Kokkos::View<int*> info("info", mine.size());
//   std::int64_t failed = kolesky::mpi::batched::potrf(comm, exec, uplo, mine, info);
//
// Every routine here is collective over `comm` and synchronous (it fences `exec`). Argument
// errors throw kolesky::invalid_argument on every rank. The numbers are the single-rank
// library's, bit for bit, when each matrix is factored by the same kernel in both: every kernel
// but SimdLanes treats a matrix the same wherever it sits in a batch; SimdLanes (Auto's choice
// for interleaved and chunked batches on the host) factors full groups of SIMD-width
// consecutive matrices one way and the batch's remainder another, so split with BatchSplit's
// granule (below) or name a kernel.
#pragma once
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "batched/Kolesky_Batch.hpp"
#include "batched/Kolesky_BatchedPotrf.hpp"
#include "common/Kolesky_Error.hpp"
#include "common/Kolesky_Profiling.hpp"
#include "common/Kolesky_Types.hpp"
#include "mpi/Kolesky_MpiCommon.hpp"

namespace kolesky {
namespace mpi {

// How `total` matrices are dealt out over `parts` ranks: consecutive ranges, the first
// total % parts ranks one matrix more. With a granule g > 1 the ranges are dealt in units of
// g matrices instead (the first units % parts ranks one unit more, the last unit possibly
// partial), so every rank's first matrix sits at a multiple of g: with
// g = kolesky::batched::default_chunk<Exec, T>() the SIMD groups of Kernel::SimdLanes (Auto's
// choice for interleaved and chunked batches on the host) are the single-rank call's, and so
// are the bits of every factor. Counts and offsets are 64-bit (the whole may exceed INT_MAX);
// one rank's share is a batch, whose size is an int (batch_size checks).
struct BatchSplit {
  std::int64_t total = 0;
  int parts = 1;
  int granule = 1;

  BatchSplit(const std::int64_t total_, const int parts_, const int granule_ = 1)
      : total(total_), parts(parts_), granule(granule_) {
    if (total < 0) kolesky::impl::throw_invalid("mpi::BatchSplit", "total ", total, " < 0");
    if (parts < 1) kolesky::impl::throw_invalid("mpi::BatchSplit", "parts ", parts, " < 1");
    if (granule < 1) kolesky::impl::throw_invalid("mpi::BatchSplit", "granule ", granule, " < 1");
  }
  // Over the ranks of comm.
  BatchSplit(const std::int64_t total_, MPI_Comm comm, const int granule_ = 1)
      : BatchSplit(total_, impl::size_of(comm), granule_) {}

  std::int64_t count(const int rank) const {
    check_rank(rank);
    return (rank + 1 < parts ? offset(rank + 1) : total) - offset(rank);
  }
  // Index of the rank's first matrix in the whole batch.
  std::int64_t offset(const int rank) const {
    check_rank(rank);
    const std::int64_t units = total / granule + (total % granule ? 1 : 0);
    const std::int64_t q = units / parts, r = units % parts;
    const std::int64_t first = (rank * q + (rank < r ? rank : r)) * granule;
    return first < total ? first : total;
  }
  // count(rank) as a batch size.
  int batch_size(const int rank) const {
    const std::int64_t c = count(rank);
    if (c > INT_MAX)
      kolesky::impl::throw_invalid("mpi::BatchSplit", "rank ", rank, " would hold ", c,
                                   " matrices, more than a batch's ", INT_MAX, ": use more ranks");
    return int(c);
  }

 private:
  void check_rank(const int rank) const {
    if (rank < 0 || rank >= parts)
      kolesky::impl::throw_invalid("mpi::BatchSplit", "rank ", rank, " outside [0, ", parts, ")");
  }
};

namespace batched {
namespace impl {

// The failed matrices (info != 0) of the first `count` entries, summed over comm; throws on
// every rank if any rank's local call threw kolesky::invalid_argument (`problem`).
template <class Exec, class Info>
std::int64_t count_failed(MPI_Comm comm, const char* routine, const Exec& exec, const int count,
                          const Info& info, const std::string& problem) {
  std::int64_t local[2] = {0, problem.empty() ? 0 : 1}, global[2] = {0, 0};
  if (problem.empty() && count > 0) {
    std::int64_t failed = 0;
    Kokkos::parallel_reduce(
        "kolesky::mpi::batched::count_failed", Kokkos::RangePolicy<Exec>(exec, 0, count),
        KOKKOS_LAMBDA(const int i, std::int64_t& s) { s += info(i) != 0 ? 1 : 0; }, failed);
    local[0] = failed;
  }
  exec.fence();
  kolesky::mpi::impl::check(MPI_Allreduce(local, global, 2, MPI_INT64_T, MPI_SUM, comm),
                            "MPI_Allreduce");
  if (!problem.empty()) throw kolesky::invalid_argument(problem);
  if (global[1] > 0)
    kolesky::impl::throw_invalid(routine, "invalid arguments on ", global[1],
                                 " rank(s) (their exceptions say which)");
  return global[0];
}

template <class B>
constexpr bool host_accessible() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename B::memory_space>::accessible;
}

// Each matrix contiguous, row-major, one after another: the form MPI sends.
template <class T>
using Packed = kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, Kokkos::HostSpace>;

template <class B>
bool is_packed(const B& b) {
  if constexpr (std::is_same<
                    B, kolesky::batched::StridedBatch<typename B::value_type, Kokkos::LayoutRight,
                                                      typename B::memory_space>>::value &&
                host_accessible<B>()) {
    return b.data.span_is_contiguous();
  } else {
    (void)b;
    return false;
  }
}

// A packed host copy of `b` (b itself when it is packed already).
template <class B>
auto pack(const B& b) {
  using T = std::remove_const_t<typename B::value_type>;
  using P = Packed<T>;
  if (is_packed(b))
    return P(typename P::view_type(const_cast<T*>(b.data.data()), b.size(), b.rows(), b.cols()));
  P p(typename P::view_type(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::mpi::packed"),
                            b.size(), b.rows(), b.cols()));
  if constexpr (host_accessible<B>()) {
    const Kokkos::DefaultHostExecutionSpace host;
    kolesky::batched::copy(host, b, p);
    host.fence();
  } else {
    // Repack on the device (coalesced there), then one contiguous transfer.
    using M = typename B::memory_space;
    using D = kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, M>;
    D d(typename D::view_type(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::mpi::packed"), b.size(), b.rows(),
        b.cols()));
    const typename M::execution_space exec;
    kolesky::batched::copy(exec, b, d);
    exec.fence();
    Kokkos::deep_copy(p.data, d.data);
  }
  return p;
}

// Packed host storage for `b`'s matrices: b's own when it is packed, else new.
template <class B>
auto packed_buffer(const B& b) {
  using T = typename B::value_type;
  using P = Packed<T>;
  if (is_packed(b)) return P(typename P::view_type(b.data.data(), b.size(), b.rows(), b.cols()));
  return P(
      typename P::view_type(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::mpi::packed"),
                            b.size(), b.rows(), b.cols()));
}

// Copy `p` into `b` unless it is b's own storage.
template <class T, class B>
void unpack(const Packed<T>& p, const B& b) {
  if (is_packed(b)) return;
  if constexpr (host_accessible<B>()) {
    const Kokkos::DefaultHostExecutionSpace host;
    kolesky::batched::copy(host, p, b);
    host.fence();
  } else {
    using M = typename B::memory_space;
    using D = kolesky::batched::StridedBatch<T, Kokkos::LayoutRight, M>;
    D d(typename D::view_type(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kolesky::mpi::packed"), b.size(), b.rows(),
        b.cols()));
    Kokkos::deep_copy(d.data, p.data);
    const typename M::execution_space exec;
    kolesky::batched::copy(exec, d, b);
    exec.fence();
  }
}

// A batch's size and shape as ints, or the reason they are not.
template <class B>
std::string shape_problem(const char* routine, const char* what, const B& b) {
  return kolesky::mpi::impl::problem_of([&] {
    const char* dims[3] = {"matrices", "rows", "columns"};
    for (int d = 0; d < 3; ++d)
      if (b.extent_of(d) > std::size_t(INT_MAX))
        kolesky::impl::throw_invalid(routine, what, " has ", b.extent_of(d), " ", dims[d],
                                     ", more than ", INT_MAX);
  });
}

// Collective shape agreement for scatter/gather. Every rank sends (matrices, rows, columns) of
// its local batch to root, which checks them against the whole batch; returns every rank's
// count (at root) and the common shape.
struct Layout {
  std::vector<int> counts, displs;  // root only: matrices per rank, first matrix of each
  int rows = 0, cols = 0;
};

template <class Whole, class Local>
Layout agree_layout(MPI_Comm comm, const char* routine, const int root, const Whole& whole,
                    const Local& local) {
  const int size = kolesky::mpi::impl::size_of(comm), me = kolesky::mpi::impl::rank_of(comm);
  if (root < 0 || root >= size)  // the same on every rank (else the call is wrong everywhere)
    kolesky::impl::throw_invalid(routine, "root ", root, " outside [0, ", size, ")");
  std::string problem = shape_problem(routine, "the local batch", local);
  const int mine[3] = {local.size(), local.rows(), local.cols()};
  std::vector<int> all(me == root ? 3 * std::size_t(size) : 0);
  kolesky::mpi::impl::check(MPI_Gather(mine, 3, MPI_INT, all.data(), 3, MPI_INT, root, comm),
                            "MPI_Gather");
  Layout l;
  if (me == root && problem.empty()) {
    problem = shape_problem(routine, "the whole batch", whole);
    if (problem.empty())
      problem = kolesky::mpi::impl::problem_of([&] {
        std::int64_t total = 0;
        for (int r = 0; r < size; ++r) {
          const int c = all[3 * r], n = all[3 * r + 1], m = all[3 * r + 2];
          if (n != whole.rows() || m != whole.cols())
            kolesky::impl::throw_invalid(routine, "rank ", r, "'s matrices are ", n, " x ", m,
                                         ", the whole batch's ", whole.rows(), " x ", whole.cols());
          total += c;
        }
        if (total != whole.size())
          kolesky::impl::throw_invalid(routine, "the ranks' batches hold ", total,
                                       " matrices, the whole batch ", whole.size());
        if (std::int64_t(whole.rows()) * whole.cols() > INT_MAX)
          kolesky::impl::throw_invalid(routine, "a matrix of ", whole.rows(), " x ", whole.cols(),
                                       " has more than ", INT_MAX, " elements");
      });
    if (problem.empty()) {
      l.counts.resize(size);
      l.displs.resize(size);
      for (int r = 0, d = 0; r < size; ++r) {
        l.counts[r] = all[3 * r];
        l.displs[r] = d;
        d += l.counts[r];
      }
    }
  }
  kolesky::mpi::impl::agree(comm, routine, problem);
  l.rows = local.rows();
  l.cols = local.cols();
  return l;
}

template <class X>
using rhs_t = kolesky::batched::rhs_t<X>;

}  // namespace impl

// Factor every rank's share: kolesky::batched::potrf on `exec`, then the count of matrices
// with info != 0 over all ranks. `a`: any batch (StridedBatch, InterleavedBatch, ChunkedBatch,
// a rank-3 View), possibly empty on some ranks; `info`: a rank-1 View of int that `exec` can
// access, one entry per local matrix.
template <class ExecSpace, class ABatch, class Info>
std::enable_if_t<kolesky::batched::is_batch_like<ABatch>::value && Kokkos::is_view<Info>::value,
                 std::int64_t>
potrf(MPI_Comm comm, const ExecSpace& exec, const Uplo uplo, const ABatch& a, const Info& info,
      const kolesky::batched::Options& opt = {}) {
  const kolesky::impl::Region region("kolesky::mpi::batched::potrf");
  const auto& b = kolesky::batched::as_batch(a);
  const std::string problem =
      kolesky::mpi::impl::problem_of([&] { kolesky::batched::potrf(exec, uplo, b, info, opt); });
  return impl::count_failed(comm, "mpi::batched::potrf", exec, b.size(), info, problem);
}

// Solve with the factors of mpi::batched::potrf; matrices whose info is not 0 keep their B.
// Returns how many matrices were skipped over all ranks.
template <class ExecSpace, class ABatch, class BBatch, class Info>
std::enable_if_t<kolesky::batched::is_batch_like<ABatch>::value &&
                     kolesky::batched::is_rhs_like<BBatch>::value && Kokkos::is_view<Info>::value,
                 std::int64_t>
potrs(MPI_Comm comm, const ExecSpace& exec, const Uplo uplo, const ABatch& a, const BBatch& b,
      const Info& info) {
  const kolesky::impl::Region region("kolesky::mpi::batched::potrs");
  const auto& ab = kolesky::batched::as_batch(a);
  const std::string problem =
      kolesky::mpi::impl::problem_of([&] { kolesky::batched::potrs(exec, uplo, a, b, info); });
  return impl::count_failed(comm, "mpi::batched::potrs", exec, ab.size(), info, problem);
}

// Factor and solve; failed matrices keep their B. Returns the failed count over all ranks.
template <class ExecSpace, class ABatch, class BBatch, class Info>
std::enable_if_t<kolesky::batched::is_batch_like<ABatch>::value &&
                     kolesky::batched::is_rhs_like<BBatch>::value && Kokkos::is_view<Info>::value,
                 std::int64_t>
posv(MPI_Comm comm, const ExecSpace& exec, const Uplo uplo, const ABatch& a, const BBatch& b,
     const Info& info, const kolesky::batched::Options& opt = {}) {
  const kolesky::impl::Region region("kolesky::mpi::batched::posv");
  const auto& ab = kolesky::batched::as_batch(a);
  const std::string problem =
      kolesky::mpi::impl::problem_of([&] { kolesky::batched::posv(exec, uplo, a, b, info, opt); });
  return impl::count_failed(comm, "mpi::batched::posv", exec, ab.size(), info, problem);
}

// Deal the batch `whole`, held by `root`, out to every rank's `local` batch, in rank order:
// rank r receives the local.size() matrices after those of ranks 0 .. r-1 (size the local
// batches with BatchSplit, or any way that adds up to whole.size()). Any layouts and memory
// spaces (a device batch goes through a host copy); matrices travel contiguous, one MPI
// element each. `whole` is read on root only (pass an empty batch elsewhere). Also takes
// rank-2 Views (batch, n): one vector per matrix.
template <class Whole, class Local>
std::enable_if_t<kolesky::batched::is_rhs_like<Whole>::value &&
                 kolesky::batched::is_rhs_like<Local>::value>
scatter(MPI_Comm comm, const int root, const Whole& whole_, const Local& local_) {
  const kolesky::impl::Region region("kolesky::mpi::batched::scatter");
  const auto whole = kolesky::batched::as_rhs(whole_);
  const auto local = kolesky::batched::as_rhs(local_);
  using T = typename impl::rhs_t<Local>::value_type;
  static_assert(
      std::is_same<std::remove_const_t<typename impl::rhs_t<Whole>::value_type>, T>::value,
      "kolesky::mpi::batched::scatter: both batches must hold the same scalar type "
      "(the local one not const)");
  const impl::Layout l = impl::agree_layout(comm, "mpi::batched::scatter", root, whole, local);
  const std::int64_t elems = std::int64_t(l.rows) * l.cols;
  if (elems == 0) return;
  const int me = kolesky::mpi::impl::rank_of(comm);
  const kolesky::mpi::impl::Type matrix(kolesky::mpi::impl::contiguous<T>(int(elems)));
  impl::Packed<T> src;
  if (me == root) src = impl::pack(whole);
  const auto dst = impl::packed_buffer(local);
  kolesky::mpi::impl::check(
      MPI_Scatterv(me == root ? src.data.data() : nullptr, l.counts.data(), l.displs.data(),
                   matrix.get(), dst.data.data(), local.size(), matrix.get(), root, comm),
      "MPI_Scatterv");
  impl::unpack(dst, local);
}

// The reverse of scatter: every rank's `local` batch into `whole` on root, in rank order.
template <class Local, class Whole>
std::enable_if_t<kolesky::batched::is_rhs_like<Whole>::value &&
                 kolesky::batched::is_rhs_like<Local>::value>
gather(MPI_Comm comm, const int root, const Local& local_, const Whole& whole_) {
  const kolesky::impl::Region region("kolesky::mpi::batched::gather");
  const auto whole = kolesky::batched::as_rhs(whole_);
  const auto local = kolesky::batched::as_rhs(local_);
  using T = typename impl::rhs_t<Whole>::value_type;
  static_assert(
      std::is_same<std::remove_const_t<typename impl::rhs_t<Local>::value_type>, T>::value,
      "kolesky::mpi::batched::gather: both batches must hold the same scalar type "
      "(the whole one not const)");
  const impl::Layout l = impl::agree_layout(comm, "mpi::batched::gather", root, whole, local);
  const std::int64_t elems = std::int64_t(l.rows) * l.cols;
  if (elems == 0) return;
  const int me = kolesky::mpi::impl::rank_of(comm);
  const kolesky::mpi::impl::Type matrix(kolesky::mpi::impl::contiguous<T>(int(elems)));
  const auto src = impl::pack(local);
  impl::Packed<T> dst;
  if (me == root) dst = impl::packed_buffer(whole);
  kolesky::mpi::impl::check(MPI_Gatherv(src.data.data(), local.size(), matrix.get(),
                                        me == root ? dst.data.data() : nullptr, l.counts.data(),
                                        l.displs.data(), matrix.get(), root, comm),
                            "MPI_Gatherv");
  if (me == root) impl::unpack(dst, whole);
}

// Every rank's rank-1 View (its matrices' info, say) into `whole` on root, in rank order.
// Any memory spaces; `whole` (root only) needs at least the sum of the local extents.
template <class Local, class Whole>
std::enable_if_t<Kokkos::is_view<Local>::value && Kokkos::is_view<Whole>::value &&
                 Local::rank == 1 && Whole::rank == 1>
gather(MPI_Comm comm, const int root, const Local& local, const Whole& whole) {
  const kolesky::impl::Region region("kolesky::mpi::batched::gather");
  using T = typename Whole::non_const_value_type;
  static_assert(std::is_same<typename Local::non_const_value_type, T>::value,
                "kolesky::mpi::batched::gather: both Views must hold the same type");
  static_assert(std::is_same<T, int>::value || std::is_same<T, float>::value ||
                    std::is_same<T, double>::value,
                "kolesky::mpi::batched::gather: int, float or double");
  const int size = kolesky::mpi::impl::size_of(comm), me = kolesky::mpi::impl::rank_of(comm);
  if (root < 0 || root >= size)
    kolesky::impl::throw_invalid("mpi::batched::gather", "root ", root, " outside [0, ", size, ")");
  std::string problem;
  if (local.extent(0) > std::size_t(INT_MAX))
    problem = kolesky::mpi::impl::problem_of([&] {
      kolesky::impl::throw_invalid("mpi::batched::gather", "the local View has ", local.extent(0),
                                   " entries, more than ", INT_MAX);
    });
  const int mine = int(local.extent(0));
  std::vector<int> counts(me == root ? size : 0), displs(counts.size());
  kolesky::mpi::impl::check(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm),
                            "MPI_Gather");
  if (me == root && problem.empty()) {
    std::int64_t total = 0;
    for (int r = 0; r < size; ++r) total += counts[r];
    if (total > std::int64_t(whole.extent(0)) || total > INT_MAX)
      problem = kolesky::mpi::impl::problem_of([&] {
        kolesky::impl::throw_invalid("mpi::batched::gather", "the ranks' Views hold ", total,
                                     " entries, the whole View ", whole.extent(0));
      });
    for (int r = 0, d = 0; r < size; ++r) displs[r] = d, d += counts[r];
  }
  kolesky::mpi::impl::agree(comm, "mpi::batched::gather", problem);
  const auto src = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local);
  typename Whole::HostMirror dst;
  if (me == root) dst = Kokkos::create_mirror_view(whole);
  kolesky::mpi::impl::check(
      MPI_Gatherv(src.data(), mine, kolesky::mpi::impl::datatype<T>(),
                  me == root ? dst.data() : nullptr, counts.data(), displs.data(),
                  kolesky::mpi::impl::datatype<T>(), root, comm),
      "MPI_Gatherv");
  if (me == root) Kokkos::deep_copy(whole, dst);
}

}  // namespace batched
}  // namespace mpi
}  // namespace kolesky
