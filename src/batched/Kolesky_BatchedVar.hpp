// Batches of matrices of different orders (MAGMA's "vbatched"): potrf, potrs, posv in one call.
//
//   std::vector<int> orders = {3, 40, 17, 128, ...};
//   kolesky::batched::VarBatch<double> a("A", orders);        // square, order orders[p]
//   kolesky::batched::VarBatch<double> b("B", a, 2);          // a's orders, 2 columns each
//   ... fill through a host mirror: h(p, i, j) ...
//   Kokkos::View<int*> info("info", a.size());
//   kolesky::batched::posv(exec, kolesky::Uplo::Lower, a, b, info);
//
// Matrix p is column-major with leading dimension its order, and starts at values(offset p):
// the allocating constructors pack the matrices one after another; the wrapping constructor
// takes a user's buffer, offsets and orders (gaps between matrices are left alone).
//
// The orders are fixed when the batch is made, so the batch groups its matrices by size once,
// on the host, at construction: every call is then a few launches (one per size class, each
// with the kernel and team size for that class) and no host synchronisation. On the GPU orders
// up to 16 take a thread each, 17-128 a team of 32-128 threads with the row-register kernel of
// uniform batches, larger ones a team working in device memory; on the host each thread takes
// whole matrices, largest first. The GPU's solves: a thread per matrix to 16, a warp per matrix
// to 256 (dense/Kolesky_PotrsWarp.hpp), a team above.
#pragma once
#include <Kokkos_Core.hpp>

#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "batched/Kolesky_BatchedPotrf.hpp"
#include "common/Kolesky_Error.hpp"
#include "common/Kolesky_Profiling.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"
#include "host/Kolesky_PotrfBlocked.hpp"

namespace kolesky {
namespace batched {

namespace impl {
// Size classes: upper bounds of the orders in each (the last takes everything above 128).
constexpr int kVarClasses = 6;
constexpr int kVarClassMax[kVarClasses] = {16, 32, 64, 96, 128, INT_MAX};
inline int var_class(const int n) {
  int c = 0;
  while (n > kVarClassMax[c]) ++c;
  return c;
}
}  // namespace impl

template <class T, class MemSpace = Kokkos::DefaultExecutionSpace::memory_space>
class VarBatch {
 public:
  using value_type = T;
  using memory_space = MemSpace;
  using values_type = Kokkos::View<T*, MemSpace>;
  using offsets_type = Kokkos::View<const std::int64_t*, MemSpace>;
  using orders_type = Kokkos::View<const int*, MemSpace>;

  VarBatch() = default;

  // Matrices of the given orders, packed one after another; `cols` columns each (right-hand
  // sides), or square when cols < 0.
  VarBatch(const std::string& label, const std::vector<int>& orders, const int cols = -1) {
    allocate(label, orders, cols);
  }
  // The same orders as `shape`, `cols` columns each: right-hand sides for shape's solves.
  template <class U, class M>
  VarBatch(const std::string& label, const VarBatch<U, M>& shape, const int cols) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), shape.orders());
    allocate(label, std::vector<int>(h.data(), h.data() + h.extent(0)), cols);
  }
  // A user's buffer: matrix p starts at values(offsets(p)), has orders(p) rows and orders(p)
  // columns (or `cols`), column-major with leading dimension orders(p). Checked here: every
  // order is >= 0 and every matrix lies inside values.
  template <class Offsets, class Orders,
            std::enable_if_t<Kokkos::is_view<Offsets>::value && Kokkos::is_view<Orders>::value,
                             int> = 0>
  VarBatch(const values_type& values, const Offsets& offsets, const Orders& orders,
           const int cols = -1)
      : values_(values), cols_(cols) {
    if (offsets.extent(0) != orders.extent(0))
      kolesky::impl::throw_invalid("VarBatch", "offsets has ", offsets.extent(0),
                                   " entries but orders has ", orders.extent(0));
    Kokkos::View<std::int64_t*, MemSpace> off("kolesky::VarBatch::offsets", offsets.extent(0));
    Kokkos::View<int*, MemSpace> ord("kolesky::VarBatch::orders", orders.extent(0));
    auto ho = Kokkos::create_mirror_view(off);
    auto hn = Kokkos::create_mirror_view(ord);
    {
      auto uo = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), offsets);
      auto un = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), orders);
      for (std::size_t p = 0; p < ho.extent(0); ++p) {
        ho(p) = std::int64_t(uo(p));
        hn(p) = int(un(p));
      }
    }
    Kokkos::deep_copy(off, ho);
    Kokkos::deep_copy(ord, hn);
    offsets_ = off;
    orders_ = ord;
    classify(hn, ho);
  }

  int size() const { return count_; }
  int max_order() const { return max_order_; }
  // Columns of every matrix, or -1 when each is square.
  int columns() const { return cols_; }
  const values_type& values() const { return values_; }
  const offsets_type& offsets() const { return offsets_; }
  const orders_type& orders() const { return orders_; }

  KOKKOS_INLINE_FUNCTION int order(const int p) const { return orders_(p); }
  KOKKOS_INLINE_FUNCTION int cols(const int p) const { return cols_ < 0 ? orders_(p) : cols_; }
  KOKKOS_INLINE_FUNCTION kolesky::impl::Strided<T> matrix(const int p) const {
    return {values_.data() + offsets_(p), 1, std::ptrdiff_t(orders_(p))};
  }
  // Element (i, j) of matrix p (host-side convenience on a host batch).
  KOKKOS_INLINE_FUNCTION T& operator()(const int p, const int i, const int j) const {
    return values_(offsets_(p) + i + std::int64_t(j) * orders_(p));
  }

  // What the routines use: matrix ids grouped by size class, largest class first, and each
  // class's range in that list and largest order.
  const Kokkos::View<const int*, MemSpace>& by_class() const { return perm_; }
  int class_begin(const int c) const { return class_begin_[c]; }
  int class_count(const int c) const { return class_count_[c]; }
  int class_max_order(const int c) const { return class_max_[c]; }
  // A fingerprint of the orders: A and B of a solve must have the same one.
  std::uint64_t shape_key() const { return key_; }

 private:
  template <class U, class M>
  friend class VarBatch;
  template <class U, class M>
  friend VarBatch<U, Kokkos::HostSpace> create_mirror_view(const VarBatch<U, M>&);

  void allocate(const std::string& label, const std::vector<int>& orders, const int cols) {
    cols_ = cols;
    Kokkos::View<std::int64_t*, MemSpace> off("kolesky::VarBatch::offsets", orders.size());
    Kokkos::View<int*, MemSpace> ord("kolesky::VarBatch::orders", orders.size());
    auto ho = Kokkos::create_mirror_view(off);
    auto hn = Kokkos::create_mirror_view(ord);
    std::int64_t total = 0;
    for (std::size_t p = 0; p < orders.size(); ++p) {
      if (orders[p] < 0)
        kolesky::impl::throw_invalid("VarBatch", "matrix ", p, " has negative order ", orders[p]);
      hn(p) = orders[p];
      ho(p) = total;
      total += std::int64_t(orders[p]) * (cols < 0 ? orders[p] : cols);
    }
    values_ = values_type(label, total);
    Kokkos::deep_copy(off, ho);
    Kokkos::deep_copy(ord, hn);
    offsets_ = off;
    orders_ = ord;
    classify(hn, ho);
  }

  // Checks the shapes, then sorts the ids by size class (a counting sort on the host; the
  // orders never change afterwards).
  template <class HostOrders, class HostOffsets>
  void classify(const HostOrders& hn, const HostOffsets& ho) {
    const std::size_t count = hn.extent(0);
    if (count > std::size_t(INT_MAX))
      kolesky::impl::throw_invalid("VarBatch", "holds ", count, " matrices, more than ", INT_MAX);
    count_ = int(count);
    class_count_.fill(0);
    key_ = 1469598103934665603ull;
    max_order_ = 0;
    class_max_.fill(0);
    for (std::size_t p = 0; p < count; ++p) {
      const int n = hn(p);
      if (n < 0)
        kolesky::impl::throw_invalid("VarBatch", "matrix ", p, " has negative order ", n);
      const std::int64_t len = std::int64_t(n) * (cols_ < 0 ? n : cols_);
      if (ho(p) < 0 || ho(p) + len > std::int64_t(values_.extent(0)))
        kolesky::impl::throw_invalid("VarBatch", "matrix ", p, " (", n, " x ",
                                     cols_ < 0 ? n : cols_, " at offset ", ho(p),
                                     ") does not lie inside values (", values_.extent(0),
                                     " entries)");
      const int c = impl::var_class(n);
      ++class_count_[c];
      class_max_[c] = n > class_max_[c] ? n : class_max_[c];
      max_order_ = n > max_order_ ? n : max_order_;
      key_ = (key_ ^ std::uint64_t(n)) * 1099511628211ull;
    }
    // Largest class first: on the host the threads then take big matrices before small ones.
    std::array<int, impl::kVarClasses> at{};
    int pos = 0;
    for (int c = impl::kVarClasses - 1; c >= 0; --c) {
      class_begin_[c] = at[c] = pos;
      pos += class_count_[c];
    }
    Kokkos::View<int*, MemSpace> perm("kolesky::VarBatch::by_class", count);
    auto hp = Kokkos::create_mirror_view(perm);
    for (std::size_t p = 0; p < count; ++p) hp(at[impl::var_class(hn(p))]++) = int(p);
    Kokkos::deep_copy(perm, hp);
    perm_ = perm;
  }

  values_type values_;
  offsets_type offsets_;
  orders_type orders_;
  Kokkos::View<const int*, MemSpace> perm_;
  int cols_ = -1, count_ = 0, max_order_ = 0;
  std::array<int, impl::kVarClasses> class_begin_{}, class_count_{}, class_max_{};
  std::uint64_t key_ = 0;
};

// A host copy of the batch's shape with uninitialized values (copy them with deep_copy).
template <class T, class M>
VarBatch<T, Kokkos::HostSpace> create_mirror_view(const VarBatch<T, M>& b) {
  VarBatch<T, Kokkos::HostSpace> h;
  h.values_ = Kokkos::create_mirror_view(b.values_);
  h.offsets_ = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.offsets_);
  h.orders_ = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.orders_);
  h.perm_ = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.perm_);
  h.cols_ = b.cols_;
  h.count_ = b.count_;
  h.max_order_ = b.max_order_;
  h.class_begin_ = b.class_begin_;
  h.class_count_ = b.class_count_;
  h.class_max_ = b.class_max_;
  h.key_ = b.key_;
  return h;
}
template <class T, class M1, class M2>
void deep_copy(const VarBatch<T, M1>& dst, const VarBatch<T, M2>& src) {
  if (dst.shape_key() != src.shape_key() || dst.size() != src.size() ||
      dst.columns() != src.columns())
    kolesky::impl::throw_invalid("batched::deep_copy", "the two VarBatches have different shapes");
  Kokkos::deep_copy(dst.values(), src.values());
}

namespace impl {

// A VarBatch as a kernel sees it: views only.
template <class T, class M>
struct VarView {
  Kokkos::View<T*, M> values;
  Kokkos::View<const std::int64_t*, M> offsets;
  Kokkos::View<const int*, M> orders;
  int cols;
  KOKKOS_INLINE_FUNCTION int order(const int p) const { return orders(p); }
  KOKKOS_INLINE_FUNCTION int ncols(const int p) const { return cols < 0 ? orders(p) : cols; }
  KOKKOS_INLINE_FUNCTION Strided<T> matrix(const int p) const {
    return {values.data() + offsets(p), 1, std::ptrdiff_t(orders(p))};
  }
};
template <class T, class M>
VarView<T, M> var_view(const VarBatch<T, M>& a) {
  return {a.values(), a.offsets(), a.orders(), a.columns()};
}

// One size class as a row-register source (launch_row_registers_on).
template <class T, class M>
struct VarSource {
  VarView<T, M> v;
  Kokkos::View<const int*, M> perm;
  int first;
  KOKKOS_INLINE_FUNCTION int id(const int t) const { return perm(first + t); }
  KOKKOS_INLINE_FUNCTION int order_of(const int b) const { return v.order(b); }
  KOKKOS_INLINE_FUNCTION Strided<T> matrix_of(const int b) const { return v.matrix(b); }
};

template <class Exec, class T, class M, class Info>
void var_potrf(const Exec& exec, const Uplo uplo, const VarBatch<T, M>& a, const Info& info) {
  const bool lower = uplo == Uplo::Lower;
  const auto v = var_view(a);
  const auto perm = a.by_class();
  constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  if constexpr (host) {
    // Whole matrices per thread, largest first (dynamic schedule: the sizes differ), each on
    // the host kernel for one small matrix.
    Kokkos::parallel_for(
        "kolesky::batched::potrf_var",
        Kokkos::RangePolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>(exec, 0, a.size()),
        [=](const int t) {
          const int b = perm(t), n = v.order(b);
          const auto m0 = v.matrix(b);
          const auto m = lower ? m0 : m0.transposed();
          info(b) = n <= kolesky::impl::kHostDiag
                        ? kolesky::impl::host_potrf_block(n, m)
                        : kolesky::impl::run_serial_potrf<Algo::TiledRight>(n, m, 32);
        });
  } else {
    for (int c = 0; c < kVarClasses; ++c) {
      const int first = a.class_begin(c), count = a.class_count(c);
      if (count == 0) continue;
      if (c == 0) {  // orders 0-16: a thread each
        Kokkos::parallel_for(
            "kolesky::batched::potrf_var_thread", Kokkos::RangePolicy<Exec>(exec, 0, count),
            KOKKOS_LAMBDA(const int t) {
              const int b = perm(first + t);
              const auto m0 = v.matrix(b);
              info(b) = kolesky::impl::run_serial_potrf<Algo::Crout>(
                  v.order(b), lower ? m0 : m0.transposed(), 0);
            });
      } else if (kVarClassMax[c] <= kMaxRowRegistersN) {
        // Panel widths as the tuned tables choose them for uniform batches.
        const VarSource<T, M> src{v, perm, first};
        const int max_n = a.class_max_order(c);
#if defined(KOKKOS_ENABLE_CUDA)
        if constexpr (warp_staged_available<Exec>()) {
          if (max_n <= kMaxWarpStagedN) {
            launch_warp_staged(exec, uplo, src, count, max_n, info, false);
            continue;
          }
        }
#endif
        if constexpr (std::is_same<T, float>::value) {
          if (max_n > 64) {
            launch_row_registers_on<32>(exec, uplo, src, count, max_n, info);
            continue;
          }
        }
        launch_row_registers_on<16>(exec, uplo, src, count, max_n, info);
      } else {  // above 128: a team per matrix in device memory (not tuned)
        using Policy = Kokkos::TeamPolicy<Exec>;
        using Member = typename Policy::member_type;
        Kokkos::parallel_for(
            "kolesky::batched::potrf_var_team", Policy(exec, count, 128),
            KOKKOS_LAMBDA(const Member& member) {
              const int b = perm(first + member.league_rank());
              const auto m0 = v.matrix(b);
              const int r = kolesky::impl::run_team_potrf<Algo::RightLooking>(
                  member, v.order(b), lower ? m0 : m0.transposed(), 0);
              Kokkos::single(Kokkos::PerTeam(member), [&]() { info(b) = r; });
            });
      }
    }
  }
}

// potrs of matrix p on one thread. A functor, not a lambda captured by a KOKKOS_LAMBDA: on the
// host, nvcc calls an extended lambda through a pointer kept per source file, and with the
// routine instantiated in two files that pointer was null (a segfault in host code of CUDA
// builds).
template <class TA, class M, class T, class MB, class Info>
struct VarSolveOne {
  VarView<TA, M> va;
  VarView<T, MB> vb;
  Info info;
  bool lower;
  // Matrix p's factor as the lower triangle the solvers read.
  KOKKOS_INLINE_FUNCTION Strided<const T> factor(const int p) const {
    const auto m0 = va.matrix(p);
    const auto m = lower ? m0 : m0.transposed();
    return {m.p, m.rs, m.cs};
  }
  KOKKOS_INLINE_FUNCTION void operator()(const int p) const {
    if (info(p) != 0) return;
    kolesky::impl::SerialPotrsInternal::invoke(va.order(p), vb.ncols(p), factor(p), vb.matrix(p));
  }
};

// batched_potrs_warp's source for the matrices of one size class.
template <class Solve, class Perm>
struct VarSolveSource {
  Solve solve;
  Perm perm;
  int first;
  template <class T>
  KOKKOS_INLINE_FUNCTION bool operator()(const int t, int& n, int& nrhs,
                                         kolesky::impl::Strided<const T>& l,
                                         kolesky::impl::Strided<T>& b) const {
    const int p = perm(first + t);
    if (solve.info(p) != 0) return false;
    n = solve.va.order(p);
    nrhs = solve.vb.ncols(p);
    l = solve.factor(p);
    b = solve.vb.matrix(p);
    return true;
  }
};

template <class Exec, class TA, class M, class T, class MB, class Info>
void var_potrs(const Exec& exec, const Uplo uplo, const VarBatch<TA, M>& a,
               const VarBatch<T, MB>& b, const Info& info) {
  const bool lower = uplo == Uplo::Lower;
  const auto va = var_view(a);
  const auto vb = var_view(b);
  const auto perm = a.by_class();
  const VarSolveOne<TA, M, T, MB, Info> solve{va, vb, info, lower};
  constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  if constexpr (host) {
    Kokkos::parallel_for(
        "kolesky::batched::potrs_var",
        Kokkos::RangePolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>(exec, 0, a.size()),
        KOKKOS_LAMBDA(const int t) { solve(perm(t)); });
  } else {
    // GPU: a thread per matrix up to order 16, a warp per matrix to 256 (B in registers, as
    // the uniform batches), a team per matrix above (classes above the first come first in
    // by_class(), so those are its first entries).
    const int small = a.class_count(0), first_small = a.class_begin(0);
    if (small > 0)
      Kokkos::parallel_for("kolesky::batched::potrs_var_thread",
                           Kokkos::RangePolicy<Exec>(exec, 0, small),
                           KOKKOS_LAMBDA(const int t) { solve(perm(first_small + t)); });
    int count = a.size() - small;
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
      if (kolesky::impl::PotrsWarpKnobs::get().batched != 0) {
        count = 0;
        for (int c = 1; c < kVarClasses; ++c) {
          const int max_n = a.class_max_order(c), n_c = a.class_count(c);
          if (n_c == 0) continue;
          if (max_n > kolesky::impl::kPotrsWarpMaxN) {  // the last class, first in by_class()
            count = n_c;
            continue;
          }
          // Column-major matrices: an Upper factor is row-major as L.
          kolesky::impl::batched_potrs_warp<T>(
              exec, "kolesky::batched::potrs_var_warp", n_c, max_n, !lower,
              VarSolveSource<VarSolveOne<TA, M, T, MB, Info>, decltype(perm)>{solve, perm,
                                                                               a.class_begin(c)});
        }
      }
    }
#endif
    if (count == 0) return;
    using Policy = Kokkos::TeamPolicy<Exec>;
    using Member = typename Policy::member_type;
    Kokkos::parallel_for(
        "kolesky::batched::potrs_var_team", Policy(exec, count, a.max_order() <= 64 ? 32 : 64),
        KOKKOS_LAMBDA(const Member& member) {
          const int p = perm(member.league_rank());
          if (info(p) != 0) return;
          kolesky::impl::TeamPotrsInternal<>::invoke(member, va.order(p), vb.ncols(p),
                                                     solve.factor(p), vb.matrix(p));
        });
  }
}

template <class Exec, class TA, class M, class T, class MB>
void check_var_solve(const char* routine, const VarBatch<TA, M>& a, const VarBatch<T, MB>& b) {
  static_assert(std::is_same<std::remove_const_t<TA>, T>::value,
                "kolesky::batched: A and B must have the same scalar type (B not const)");
  static_assert(Kokkos::SpaceAccessibility<Exec, MB>::accessible,
                "kolesky::batched: the execution space cannot access B's memory space");
  if (b.size() != a.size())
    kolesky::impl::throw_invalid(routine, "B holds ", b.size(), " matrices but A holds ",
                                 a.size());
  if (b.shape_key() != a.shape_key())
    kolesky::impl::throw_invalid(routine, "B's matrices do not have A's orders (make B with "
                                          "VarBatch(label, A, nrhs))");
}

template <class Exec, class T, class M>
void check_var_factor(const char* routine, const VarBatch<T, M>& a) {
  static_assert(std::is_same<std::remove_const_t<T>, float>::value ||
                    std::is_same<std::remove_const_t<T>, double>::value,
                "kolesky::batched: the scalar type must be float or double");
  static_assert(Kokkos::SpaceAccessibility<Exec, M>::accessible,
                "kolesky::batched: the execution space cannot access A's memory space");
  if (a.columns() >= 0)
    kolesky::impl::throw_invalid(routine, "A must hold square matrices, but it was made with ",
                                 a.columns(), " columns per matrix");
}

}  // namespace impl

// Factor every matrix of a batch of mixed orders; info(p) as for uniform batches.
template <class ExecSpace, class T, class M, class Info>
void potrf(const ExecSpace& exec, const Uplo uplo, const VarBatch<T, M>& a, const Info& info) {
  const kolesky::impl::Region region("kolesky::batched::potrf");
  impl::check_var_factor<ExecSpace>("batched::potrf", a);
  impl::check_info<ExecSpace>("batched::potrf", info, a.size());
  if (a.size() > 0) impl::var_potrf(exec, uplo, a, info);
}

// Solve with the factors of batched::potrf for every matrix whose info is 0 (the others keep
// their B). B has A's orders: make it with VarBatch(label, A, nrhs).
template <class ExecSpace, class TA, class MA, class T, class MB, class Info>
void potrs(const ExecSpace& exec, const Uplo uplo, const VarBatch<TA, MA>& a,
           const VarBatch<T, MB>& b, const Info& info) {
  const kolesky::impl::Region region("kolesky::batched::potrs");
  impl::check_var_factor<ExecSpace>("batched::potrs", a);
  impl::check_var_solve<ExecSpace>("batched::potrs", a, b);
  impl::check_info<ExecSpace>("batched::potrs", info, a.size());
  if (a.size() > 0) impl::var_potrs(exec, uplo, a, b, info);
}

// Factor and solve; matrices that fail keep their right-hand sides.
template <class ExecSpace, class T, class MA, class MB, class Info>
void posv(const ExecSpace& exec, const Uplo uplo, const VarBatch<T, MA>& a,
          const VarBatch<T, MB>& b, const Info& info) {
  const kolesky::impl::Region region("kolesky::batched::posv");
  impl::check_var_factor<ExecSpace>("batched::posv", a);
  impl::check_var_solve<ExecSpace>("batched::posv", a, b);
  impl::check_info<ExecSpace>("batched::posv", info, a.size());
  if (a.size() == 0) return;
  impl::var_potrf(exec, uplo, a, info);
  impl::var_potrs(exec, uplo, a, b, info);
}

}  // namespace batched
}  // namespace kolesky
