// One large SPD matrix over MPI ranks through ScaLAPACK: for a matrix that does not fit one
// device's (or one node's) memory. The matrix lives 2-D block-cyclic over a BLACS process grid;
// each rank holds its local piece column-major in a Kokkos View.
//
//   kolesky::mpi::Grid grid(comm, 2, 2);                       // 4 ranks, row-major
//   kolesky::mpi::Descriptor desc(grid, n, n, 128, 128);       // n x n in 128 x 128 blocks
//   Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> a("A", desc.local_rows(),
//                                                                   desc.local_cols());
//   kolesky::mpi::scatter(grid, 0, full, desc, a);             // full: on rank 0 only
//   auto r = kolesky::mpi::potrf(grid, kolesky::Uplo::Lower, desc, a);   // r.info
//
// Every routine is collective over grid.comm(); ranks outside the grid (more ranks than
// nprow * npcol) take part with empty pieces. Argument errors throw kolesky::invalid_argument on
// every rank. A device View is staged through host memory around the ScaLAPACK call (the
// result reports the time). ScaLAPACK itself runs on the host BLAS.
#pragma once
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/Kolesky_Error.hpp"
#include "common/Kolesky_Profiling.hpp"
#include "common/Kolesky_Types.hpp"
#include "mpi/Kolesky_MpiCommon.hpp"

// BLACS (C interface) and ScaLAPACK (Fortran: every argument by address, plus a hidden length
// for each character argument).
extern "C" {
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void pspotrf_(const char* uplo, const int* n, float* a, const int* ia, const int* ja,
              const int* desca, int* info, std::size_t);
void pdpotrf_(const char* uplo, const int* n, double* a, const int* ia, const int* ja,
              const int* desca, int* info, std::size_t);
void pspotrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* ia,
              const int* ja, const int* desca, float* b, const int* ib, const int* jb,
              const int* descb, int* info, std::size_t);
void pdpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* ia,
              const int* ja, const int* desca, double* b, const int* ib, const int* jb,
              const int* descb, int* info, std::size_t);
void psposv_(const char* uplo, const int* n, const int* nrhs, float* a, const int* ia,
             const int* ja, const int* desca, float* b, const int* ib, const int* jb,
             const int* descb, int* info, std::size_t);
void pdposv_(const char* uplo, const int* n, const int* nrhs, double* a, const int* ia,
             const int* ja, const int* desca, double* b, const int* ib, const int* jb,
             const int* descb, int* info, std::size_t);
}

namespace kolesky {
namespace mpi {

// A BLACS process grid of nprow x npcol over the first nprow * npcol ranks of comm, row-major
// (rank = prow * npcol + pcol). Collective over comm; destroy it before MPI_Finalize.
class Grid {
 public:
  Grid(MPI_Comm comm, const int nprow, const int npcol) {
    impl::check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    const int size = impl::size_of(comm_);
    // The same shape on every rank, or every rank throws.
    int v[4] = {nprow, npcol, -nprow, -npcol}, lo[4];
    impl::check(MPI_Allreduce(v, lo, 4, MPI_INT, MPI_MIN, comm_), "MPI_Allreduce");
    std::string problem = impl::problem_of([&] {
      if (lo[0] != -lo[2] || lo[1] != -lo[3])
        kolesky::impl::throw_invalid("mpi::Grid", "the ranks asked for different grids");
      if (nprow < 1 || npcol < 1)
        kolesky::impl::throw_invalid("mpi::Grid", "a grid of ", nprow, " x ", npcol,
                                     " has no process");
      if (std::int64_t(nprow) * npcol > size)
        kolesky::impl::throw_invalid("mpi::Grid", "a grid of ", nprow, " x ", npcol, " needs ",
                                     std::int64_t(nprow) * npcol, " ranks, the communicator has ",
                                     size);
    });
    if (!problem.empty()) {
      MPI_Comm_free(&comm_);
      throw kolesky::invalid_argument(problem);
    }
    handle_ = Csys2blacs_handle(comm_);
    context_ = handle_;
    Cblacs_gridinit(&context_, "Row", nprow, npcol);
    nprow_ = nprow;
    npcol_ = npcol;
    if (context_ >= 0) {
      int r = 0, c = 0;
      Cblacs_gridinfo(context_, &r, &c, &myrow_, &mycol_);
    } else {
      context_ = -1;
    }
    // Who is where, known on every rank (scatter and gather address pieces by rank).
    const int mine = myrow_ >= 0 ? myrow_ * npcol_ + mycol_ : -1;
    std::vector<int> all(size);
    impl::check(MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    ranks_.assign(std::size_t(nprow_) * npcol_, -1);
    for (int r = 0; r < size; ++r)
      if (all[r] >= 0) ranks_[all[r]] = r;
  }
  ~Grid() { release(); }
  Grid(const Grid&) = delete;
  Grid& operator=(const Grid&) = delete;
  Grid(Grid&& o) noexcept { steal(o); }
  Grid& operator=(Grid&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }

  // The BLACS context (-1 on ranks outside the grid).
  int context() const { return context_; }
  int nprow() const { return nprow_; }
  int npcol() const { return npcol_; }
  // This rank's place (-1, -1 outside the grid).
  int myrow() const { return myrow_; }
  int mycol() const { return mycol_; }
  bool in_grid() const { return context_ >= 0; }
  // The grid's own duplicate of the communicator it was made from.
  MPI_Comm comm() const { return comm_; }
  // Rank in comm() of process (prow, pcol).
  int rank_of(const int prow, const int pcol) const {
    if (prow < 0 || prow >= nprow_ || pcol < 0 || pcol >= npcol_)
      kolesky::impl::throw_invalid("mpi::Grid::rank_of", "process (", prow, ", ", pcol,
                                   ") outside the ", nprow_, " x ", npcol_, " grid");
    return ranks_[std::size_t(prow) * npcol_ + pcol];
  }

 private:
  void release() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || comm_ == MPI_COMM_NULL) return;
    if (context_ >= 0) Cblacs_gridexit(context_);
    Cfree_blacs_system_handle(handle_);
    MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  void steal(Grid& o) {
    comm_ = o.comm_;
    handle_ = o.handle_;
    context_ = o.context_;
    nprow_ = o.nprow_;
    npcol_ = o.npcol_;
    myrow_ = o.myrow_;
    mycol_ = o.mycol_;
    ranks_ = std::move(o.ranks_);
    o.comm_ = MPI_COMM_NULL;
    o.context_ = -1;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int handle_ = -1, context_ = -1;
  int nprow_ = 0, npcol_ = 0, myrow_ = -1, mycol_ = -1;
  std::vector<int> ranks_;  // rank of (prow, pcol) at prow * npcol + pcol
};

namespace impl {
inline int numroc(const int n, const int nb, const int proc, const int src, const int nprocs) {
  return numroc_(&n, &nb, &proc, &src, &nprocs);
}
// Global index (0-based) of local index `l` on process `proc` (ScaLAPACK's INDXL2G).
inline std::int64_t global_index(const int l, const int nb, const int proc, const int src,
                                 const int nprocs) {
  const int shift = (proc - src + nprocs) % nprocs;
  return (std::int64_t(l / nb) * nprocs + shift) * nb + l % nb;
}
}  // namespace impl

// The ScaLAPACK descriptor of an m x n matrix in mb x nb blocks over `grid`, the block row
// rsrc and block column csrc starting on process (rsrc, csrc), and this rank's piece:
// local_rows() x local_cols(), column-major. The routines take the leading dimension from the
// View they are given (its stride between columns), not from lld().
class Descriptor {
 public:
  Descriptor(const Grid& grid, const int m, const int n, const int mb, const int nb,
             const int rsrc = 0, const int csrc = 0)
      : nprow_(grid.nprow()), npcol_(grid.npcol()), myrow_(grid.myrow()), mycol_(grid.mycol()) {
    const char* r = "mpi::Descriptor";
    if (m < 0 || n < 0) kolesky::impl::throw_invalid(r, "a matrix of ", m, " x ", n);
    if (mb < 1 || nb < 1)
      kolesky::impl::throw_invalid(r, "blocks of ", mb, " x ", nb, " (both must be >= 1)");
    if (rsrc < 0 || rsrc >= nprow_)
      kolesky::impl::throw_invalid(r, "rsrc ", rsrc, " outside the grid's rows [0, ", nprow_, ")");
    if (csrc < 0 || csrc >= npcol_)
      kolesky::impl::throw_invalid(r, "csrc ", csrc, " outside the grid's columns [0, ", npcol_,
                                   ")");
    if (grid.in_grid()) {
      local_rows_ = impl::numroc(m, mb, myrow_, rsrc, nprow_);
      local_cols_ = impl::numroc(n, nb, mycol_, csrc, npcol_);
      const int lld = local_rows_ > 1 ? local_rows_ : 1, ctxt = grid.context();
      int info = 0;
      descinit_(desc_, &m, &n, &mb, &nb, &rsrc, &csrc, &ctxt, &lld, &info);
      if (info != 0) kolesky::impl::throw_invalid(r, "descinit_ refused argument ", -info);
    } else {
      const int d[9] = {1, -1, m, n, mb, nb, rsrc, csrc, 1};
      for (int i = 0; i < 9; ++i) desc_[i] = d[i];
    }
  }

  int rows() const { return desc_[2]; }
  int cols() const { return desc_[3]; }
  int row_block() const { return desc_[4]; }
  int col_block() const { return desc_[5]; }
  int row_source() const { return desc_[6]; }
  int col_source() const { return desc_[7]; }
  int context() const { return desc_[1]; }
  int lld() const { return desc_[8]; }
  int local_rows() const { return local_rows_; }
  int local_cols() const { return local_cols_; }
  // Process (prow, pcol)'s piece.
  int local_rows_of(const int prow) const {
    return impl::numroc(rows(), row_block(), prow, row_source(), nprow_);
  }
  int local_cols_of(const int pcol) const {
    return impl::numroc(cols(), col_block(), pcol, col_source(), npcol_);
  }
  // The 9 integers ScaLAPACK reads.
  const int* data() const { return desc_; }

 private:
  int desc_[9] = {1, -1, 0, 0, 1, 1, 0, 0, 1};
  int local_rows_ = 0, local_cols_ = 0;
  int nprow_, npcol_, myrow_, mycol_;
};

// What a ScaLAPACK call returned, the same on every rank: info as ScaLAPACK gives it (0, or
// the order k > 0 of the first leading minor that is not positive definite), and this rank's
// seconds in the call and in moving a device View to and from host memory.
struct ScalapackResult {
  int info = 0;
  double seconds = 0;
  double staging_seconds = 0;
};

namespace impl {

template <class V>
constexpr void static_check_piece() {
  static_assert(Kokkos::is_view<V>::value && V::rank == 2,
                "kolesky::mpi: a local piece is a rank-2 Kokkos View");
  using T = typename V::non_const_value_type;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kolesky::mpi: the scalar type must be float or double");
  static_assert(!std::is_same<typename V::array_layout, Kokkos::LayoutRight>::value,
                "kolesky::mpi: a local piece is column-major (LayoutLeft, or LayoutStride with "
                "unit stride down a column)");
}

// This rank's piece matches the descriptor and the grid.
template <class V>
void check_piece(const char* routine, const char* what, const Grid& grid, const Descriptor& d,
                 const V& v) {
  static_check_piece<V>();
  if (d.context() != grid.context())
    kolesky::impl::throw_invalid(routine, "the descriptor of ", what, " belongs to BLACS context ",
                                 d.context(), ", the grid's is ", grid.context());
  if (v.extent(0) != std::size_t(d.local_rows()) || v.extent(1) != std::size_t(d.local_cols()))
    kolesky::impl::throw_invalid(routine, what, "'s local piece is ", v.extent(0), " x ",
                                 v.extent(1), ", its descriptor makes it ", d.local_rows(), " x ",
                                 d.local_cols(), " on process (", grid.myrow(), ", ", grid.mycol(),
                                 ")");
  if (v.extent(0) > 1 && v.extent(1) > 0 && v.stride(0) != 1)
    kolesky::impl::throw_invalid(routine, what, "'s local piece has row stride ", v.stride(0),
                                 " (column-major pieces only)");
}

// Leading dimension of a column-major piece.
template <class V>
int leading_dim(const V& v) {
  const std::size_t ld = v.extent(1) > 1 ? std::size_t(v.stride(1)) : v.extent(0);
  return ld > 1 ? int(ld) : 1;
}

template <class V>
constexpr bool on_host() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible;
}

// The piece in host memory (itself when it is there), timed.
template <class V>
auto to_host(const V& v, double& seconds) {
  Kokkos::Timer t;
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  if (!on_host<V>()) seconds += t.seconds();
  return h;
}
template <class V, class H>
void from_host(const V& v, const H& h, double& seconds) {
  if constexpr (!on_host<V>()) {
    Kokkos::Timer t;
    Kokkos::deep_copy(v, h);
    seconds += t.seconds();
  } else {
    (void)v, (void)h, (void)seconds;
  }
}

// ScaLAPACK's info on process (0, 0), to every rank of the grid's communicator.
inline int share_info(const Grid& grid, int info) {
  check(MPI_Bcast(&info, 1, MPI_INT, grid.rank_of(0, 0), grid.comm()), "MPI_Bcast");
  return info;
}

inline void p_potrf(const char* u, int n, float* a, const int* d, int* info) {
  const int one = 1;
  pspotrf_(u, &n, a, &one, &one, d, info, 1);
}
inline void p_potrf(const char* u, int n, double* a, const int* d, int* info) {
  const int one = 1;
  pdpotrf_(u, &n, a, &one, &one, d, info, 1);
}
inline void p_potrs(const char* u, int n, int nrhs, const float* a, const int* da, float* b,
                    const int* db, int* info) {
  const int one = 1;
  pspotrs_(u, &n, &nrhs, a, &one, &one, da, b, &one, &one, db, info, 1);
}
inline void p_potrs(const char* u, int n, int nrhs, const double* a, const int* da, double* b,
                    const int* db, int* info) {
  const int one = 1;
  pdpotrs_(u, &n, &nrhs, a, &one, &one, da, b, &one, &one, db, info, 1);
}
inline void p_posv(const char* u, int n, int nrhs, float* a, const int* da, float* b, const int* db,
                   int* info) {
  const int one = 1;
  psposv_(u, &n, &nrhs, a, &one, &one, da, b, &one, &one, db, info, 1);
}
inline void p_posv(const char* u, int n, int nrhs, double* a, const int* da, double* b,
                   const int* db, int* info) {
  const int one = 1;
  pdposv_(u, &n, &nrhs, a, &one, &one, da, b, &one, &one, db, info, 1);
}

// The descriptor with the View's leading dimension.
inline std::vector<int> with_lld(const Descriptor& d, const int lld) {
  std::vector<int> v(d.data(), d.data() + 9);
  v[8] = lld;
  return v;
}

inline void check_square(const char* routine, const Descriptor& da) {
  if (da.rows() != da.cols())
    kolesky::impl::throw_invalid(routine, "A is ", da.rows(), " x ", da.cols(), ", not square");
  if (da.row_block() != da.col_block())
    kolesky::impl::throw_invalid(routine, "A's blocks are ", da.row_block(), " x ", da.col_block(),
                                 "; ScaLAPACK's Cholesky needs square blocks");
}

inline void check_rhs(const char* routine, const Descriptor& da, const Descriptor& db) {
  if (db.rows() != da.rows())
    kolesky::impl::throw_invalid(routine, "B has ", db.rows(), " rows, A is ", da.rows(), " x ",
                                 da.cols());
  if (db.row_block() != da.row_block() || db.row_source() != da.row_source())
    kolesky::impl::throw_invalid(routine, "B's row blocks (", db.row_block(), " from process row ",
                                 db.row_source(), ") must be A's (", da.row_block(),
                                 " from process row ", da.row_source(), ")");
}

template <class A, class B>
constexpr void static_check_pair() {
  static_assert(std::is_same<typename A::non_const_value_type, typename B::value_type>::value,
                "kolesky::mpi: A and B must hold the same scalar type (B not const)");
}

}  // namespace impl

// Cholesky of the distributed matrix (p?potrf): the triangle `uplo` of each rank's piece
// becomes the factor's. Collective over grid.comm().
template <class AView>
ScalapackResult potrf(const Grid& grid, const Uplo uplo, const Descriptor& desc, const AView& a) {
  const kolesky::impl::Region region("kolesky::mpi::potrf");
  static_assert(!std::is_const<typename AView::value_type>::value,
                "kolesky::mpi::potrf: A is overwritten, it cannot be const");
  impl::agree(grid.comm(), "mpi::potrf", impl::problem_of([&] {
                impl::check_piece("mpi::potrf", "A", grid, desc, a);
                impl::check_square("mpi::potrf", desc);
              }));
  ScalapackResult r;
  if (grid.in_grid()) {
    const auto h = impl::to_host(a, r.staging_seconds);
    const auto d = impl::with_lld(desc, impl::leading_dim(h));
    Kokkos::Timer t;
    impl::p_potrf(uplo == Uplo::Lower ? "L" : "U", desc.rows(), h.data(), d.data(), &r.info);
    r.seconds = t.seconds();
    impl::from_host(a, h, r.staging_seconds);
  }
  r.info = impl::share_info(grid, r.info);
  return r;
}

namespace impl {
// p?potrs and p?posv: the checks agreed over the communicator, both pieces staged to the host,
// `call` (the ScaLAPACK routine) timed, B copied back (and A where ScaLAPACK writes it), the
// info shared over the grid.
template <bool WritesA, class AView, class BView, class Call>
ScalapackResult solve_on_grid(const char* routine, const Grid& grid, const Uplo uplo,
                              const Descriptor& desc_a, const AView& a, const Descriptor& desc_b,
                              const BView& b, const Call& call) {
  static_check_pair<AView, BView>();
  agree(grid.comm(), routine, problem_of([&] {
          check_piece(routine, "A", grid, desc_a, a);
          check_piece(routine, "B", grid, desc_b, b);
          check_square(routine, desc_a);
          check_rhs(routine, desc_a, desc_b);
        }));
  ScalapackResult r;
  if (grid.in_grid()) {
    const auto ha = to_host(a, r.staging_seconds);
    const auto hb = to_host(b, r.staging_seconds);
    const auto da = with_lld(desc_a, leading_dim(ha));
    const auto db = with_lld(desc_b, leading_dim(hb));
    Kokkos::Timer t;
    call(uplo == Uplo::Lower ? "L" : "U", desc_a.rows(), desc_b.cols(), ha.data(), da.data(),
         hb.data(), db.data(), &r.info);
    r.seconds = t.seconds();
    if constexpr (WritesA) from_host(a, ha, r.staging_seconds);
    from_host(b, hb, r.staging_seconds);
  }
  r.info = share_info(grid, r.info);
  return r;
}
}  // namespace impl

// Solve A X = B with the factor from potrf (p?potrs); B (desc_b: n x nrhs, row blocks as A's)
// is overwritten with X.
template <class AView, class BView>
ScalapackResult potrs(const Grid& grid, const Uplo uplo, const Descriptor& desc_a, const AView& a,
                      const Descriptor& desc_b, const BView& b) {
  const kolesky::impl::Region region("kolesky::mpi::potrs");
  return impl::solve_on_grid<false>("mpi::potrs", grid, uplo, desc_a, a, desc_b, b,
                                    [](auto... args) { impl::p_potrs(args...); });
}

// Factor and solve (p?posv): A gets the factor, B the solution when info == 0.
template <class AView, class BView>
ScalapackResult posv(const Grid& grid, const Uplo uplo, const Descriptor& desc_a, const AView& a,
                     const Descriptor& desc_b, const BView& b) {
  const kolesky::impl::Region region("kolesky::mpi::posv");
  static_assert(!std::is_const<typename AView::value_type>::value,
                "kolesky::mpi::posv: A is overwritten, it cannot be const");
  return impl::solve_on_grid<true>("mpi::posv", grid, uplo, desc_a, a, desc_b, b,
                                   [](auto... args) { impl::p_posv(args...); });
}

namespace impl {

// Copies between the full matrix (host View, any layout) and local columns [c0, c1) of
// process (prow, pcol)'s piece, column-major at `p` (column c0 first) with leading dimension
// ld, a run of up to mb rows at a time.
template <bool ToPiece, class Full, class P>
void pack_piece(const Full& full, const Descriptor& d, const int prow, const int pcol,
                const Grid& grid, P* p, const int ld, const int c0, const int c1) {
  const int lr = d.local_rows_of(prow);
  const int mb = d.row_block(), nb = d.col_block(), rs = d.row_source(), cs = d.col_source();
  const int nprow = grid.nprow(), npcol = grid.npcol();
  Kokkos::parallel_for("kolesky::mpi::pack_piece",
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(c0, c1),
                       [=](const int jl) {
                         const std::int64_t j = global_index(jl, nb, pcol, cs, npcol);
                         P* col = p + std::ptrdiff_t(jl - c0) * ld;
                         for (int il = 0; il < lr; il += mb) {
                           const std::int64_t i0 = global_index(il, mb, prow, rs, nprow);
                           const int len = lr - il < mb ? lr - il : mb;
                           if constexpr (ToPiece)
                             for (int t = 0; t < len; ++t) col[il + t] = full(i0 + t, j);
                           else
                             for (int t = 0; t < len; ++t) full(i0 + t, j) = col[il + t];
                         }
                       });
  Kokkos::DefaultHostExecutionSpace().fence();
}

// Pieces travel in slabs of whole local columns, about kSlabBytes each: the root packs (or
// unpacks) one while the previous one is in flight, through two buffers it reuses, instead of
// allocating (and page-faulting) a copy of the matrix.
constexpr std::size_t kSlabBytes = std::size_t(4) << 20;

struct Slab {
  int rank, prow, pcol, c0, c1;
};

// Every piece's slabs but `me`'s, process by process.
inline std::vector<Slab> slabs(const Grid& grid, const Descriptor& d, const int me,
                               const std::size_t elem) {
  std::vector<Slab> v;
  for (int pr = 0; pr < grid.nprow(); ++pr)
    for (int pc = 0; pc < grid.npcol(); ++pc) {
      const int r = grid.rank_of(pr, pc), lr = d.local_rows_of(pr), lc = d.local_cols_of(pc);
      if (r == me || std::int64_t(lr) * lc == 0) continue;
      const std::size_t per = kSlabBytes / (std::size_t(lr) * elem);
      const int w = per < 1 ? 1 : per > std::size_t(lc) ? lc : int(per);
      for (int c0 = 0; c0 < lc; c0 += w) v.push_back({r, pr, pc, c0, c0 + w < lc ? c0 + w : lc});
    }
  return v;
}

// One local column of `rows` elements, spaced `ld` apart: a piece is `cols` of them.
template <class T>
MPI_Datatype column_type(const int rows, const int ld) {
  MPI_Datatype c, r;
  check(MPI_Type_contiguous(rows, datatype<T>(), &c), "MPI_Type_contiguous");
  check(MPI_Type_create_resized(c, 0, MPI_Aint(ld) * MPI_Aint(sizeof(T)), &r),
        "MPI_Type_create_resized");
  MPI_Type_free(&c);
  return r;
}

template <class Full>
void check_full(const char* routine, const Descriptor& d, const Full& full) {
  static_assert(Kokkos::is_view<Full>::value && Full::rank == 2,
                "kolesky::mpi: the full matrix is a rank-2 Kokkos View");
  if (full.extent(0) != std::size_t(d.rows()) || full.extent(1) != std::size_t(d.cols()))
    kolesky::impl::throw_invalid(routine, "the full matrix is ", full.extent(0), " x ",
                                 full.extent(1), ", the descriptor's ", d.rows(), " x ", d.cols());
}

constexpr int kPieceTag = 0x4b50;  // 'KP'

}  // namespace impl

// Distribute `full` (m x n on rank `root` of grid.comm(); read there only, any layout and
// memory space) block-cyclically into every rank's piece `local`. Collective.
template <class FullView, class LocalView>
void scatter(const Grid& grid, const int root, const FullView& full, const Descriptor& desc,
             const LocalView& local) {
  const kolesky::impl::Region region("kolesky::mpi::scatter");
  using T = typename LocalView::value_type;
  static_assert(std::is_same<typename FullView::non_const_value_type, T>::value,
                "kolesky::mpi::scatter: full and local must hold the same scalar type (local "
                "not const)");
  MPI_Comm comm = grid.comm();
  const int me = impl::rank_of(comm), size = impl::size_of(comm);
  impl::agree(comm, "mpi::scatter", impl::problem_of([&] {
                if (root < 0 || root >= size)
                  kolesky::impl::throw_invalid("mpi::scatter", "root ", root, " outside [0, ", size,
                                               ")");
                impl::check_piece("mpi::scatter", "the matrix", grid, desc, local);
                if (me == root) impl::check_full("mpi::scatter", desc, full);
              }));
  const auto mine = Kokkos::create_mirror_view(local);  // local itself when on the host
  const int ld = impl::leading_dim(mine);
  const auto jobs = impl::slabs(grid, desc, me, sizeof(T));
  if (me == root) {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), full);
    std::size_t cap = 0;
    for (const auto& j : jobs)
      cap = std::max(cap, std::size_t(desc.local_rows_of(j.prow)) * std::size_t(j.c1 - j.c0));
    std::vector<T> buf[2] = {std::vector<T>(cap), std::vector<T>(cap)};
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      const impl::Slab& j = jobs[k];
      const int lr = desc.local_rows_of(j.prow), b = int(k % 2);
      impl::check(MPI_Wait(&req[b], MPI_STATUS_IGNORE), "MPI_Wait");
      impl::pack_piece<true>(h, desc, j.prow, j.pcol, grid, buf[b].data(), lr, j.c0, j.c1);
      const impl::Type col(impl::column_type<T>(lr, lr));
      impl::check(
          MPI_Isend(buf[b].data(), j.c1 - j.c0, col.get(), j.rank, impl::kPieceTag, comm, &req[b]),
          "MPI_Isend");
    }
    if (grid.in_grid() && std::int64_t(desc.local_rows()) * desc.local_cols() > 0)
      impl::pack_piece<true>(h, desc, grid.myrow(), grid.mycol(), grid, mine.data(), ld, 0,
                             desc.local_cols());
    impl::check(MPI_Waitall(2, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
  } else if (grid.in_grid() && std::int64_t(desc.local_rows()) * desc.local_cols() > 0) {
    // This rank's slabs straight into its piece, in the order root sends them.
    const auto all = impl::slabs(grid, desc, root, sizeof(T));
    const impl::Type col(impl::column_type<T>(desc.local_rows(), ld));
    std::vector<MPI_Request> reqs;
    for (const auto& j : all) {
      if (j.rank != me) continue;
      reqs.emplace_back();
      impl::check(MPI_Irecv(mine.data() + std::ptrdiff_t(j.c0) * ld, j.c1 - j.c0, col.get(), root,
                            impl::kPieceTag, comm, &reqs.back()),
                  "MPI_Irecv");
    }
    impl::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  if (!impl::on_host<LocalView>()) Kokkos::deep_copy(local, mine);
}

// Collect every rank's piece `local` into the full matrix `full` (m x n, any layout and
// memory space) on rank `root` of grid.comm(). Collective.
template <class LocalView, class FullView>
void gather(const Grid& grid, const int root, const Descriptor& desc, const LocalView& local,
            const FullView& full) {
  const kolesky::impl::Region region("kolesky::mpi::gather");
  using T = typename FullView::value_type;
  static_assert(std::is_same<typename LocalView::non_const_value_type, T>::value,
                "kolesky::mpi::gather: full and local must hold the same scalar type (full "
                "not const)");
  MPI_Comm comm = grid.comm();
  const int me = impl::rank_of(comm), size = impl::size_of(comm);
  impl::agree(comm, "mpi::gather", impl::problem_of([&] {
                if (root < 0 || root >= size)
                  kolesky::impl::throw_invalid("mpi::gather", "root ", root, " outside [0, ", size,
                                               ")");
                impl::check_piece("mpi::gather", "the matrix", grid, desc, local);
                if (me == root) impl::check_full("mpi::gather", desc, full);
              }));
  const auto mine = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local);
  const int ld = impl::leading_dim(mine);
  if (me == root) {
    const auto h = Kokkos::create_mirror_view(full);
    const auto jobs = impl::slabs(grid, desc, me, sizeof(T));
    std::size_t cap = 0;
    for (const auto& j : jobs)
      cap = std::max(cap, std::size_t(desc.local_rows_of(j.prow)) * std::size_t(j.c1 - j.c0));
    std::vector<T> buf[2] = {std::vector<T>(cap), std::vector<T>(cap)};
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const auto post = [&](const std::size_t k) {
      const impl::Slab& j = jobs[k];
      const int lr = desc.local_rows_of(j.prow);
      const impl::Type col(impl::column_type<T>(lr, lr));
      impl::check(MPI_Irecv(buf[k % 2].data(), j.c1 - j.c0, col.get(), j.rank, impl::kPieceTag,
                            comm, &req[k % 2]),
                  "MPI_Irecv");
    };
    if (!jobs.empty()) post(0);
    if (grid.in_grid() && std::int64_t(desc.local_rows()) * desc.local_cols() > 0)
      impl::pack_piece<false>(h, desc, grid.myrow(), grid.mycol(), grid, mine.data(), ld, 0,
                              desc.local_cols());
    // Unpack slab k while slab k + 1 lands in the other buffer.
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      if (k + 1 < jobs.size()) post(k + 1);
      impl::check(MPI_Wait(&req[k % 2], MPI_STATUS_IGNORE), "MPI_Wait");
      const impl::Slab& j = jobs[k];
      impl::pack_piece<false>(h, desc, j.prow, j.pcol, grid, buf[k % 2].data(),
                              desc.local_rows_of(j.prow), j.c0, j.c1);
    }
    Kokkos::deep_copy(full, h);
  } else if (grid.in_grid() && std::int64_t(desc.local_rows()) * desc.local_cols() > 0) {
    const auto all = impl::slabs(grid, desc, root, sizeof(T));
    const impl::Type col(impl::column_type<T>(desc.local_rows(), ld));
    std::vector<MPI_Request> reqs;
    for (const auto& j : all) {
      if (j.rank != me) continue;
      reqs.emplace_back();
      impl::check(MPI_Isend(mine.data() + std::ptrdiff_t(j.c0) * ld, j.c1 - j.c0, col.get(), root,
                            impl::kPieceTag, comm, &reqs.back()),
                  "MPI_Isend");
    }
    impl::check(MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
}

}  // namespace mpi
}  // namespace kolesky
