// Tile-dataflow Cholesky: one launch factors a range of tile columns of a lower-triangular
// strided matrix (the whole matrix, or one panel of the blocked factorization).
//
// Tasks are the tiles (i, j), i >= j, of the tile columns [j0, j1), numbered column by column.
// A persistent grid of teams takes task numbers from a device counter (a ticket); the team
// that holds tile (i, j) owns it to the end: it applies the updates from the tile columns
// k in [j0, j) as soon as tiles (i, k) and (j, k) are published, then factors the tile
// (i == j) or solves it against the diagonal tile (i > j), writes it back and publishes it
// with a per-tile flag. Every task waits only on tasks with smaller numbers, which were taken
// by teams that are running, so the kernel cannot deadlock whatever the number of resident
// teams (no occupancy assumption).
//
// The counters reset themselves: the last team to finish zeroes the ticket counter and bumps
// a generation number, and a tile is published by writing generation + 1 into its flag. No
// per-call memset, and a replayed CUDA graph sees the same state as a fresh launch.
//
// info: the first failing diagonal tile writes it before publishing; every later task depends
// on that tile (transitively), so it sees info != 0, skips its arithmetic and still publishes.
#pragma once
#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>

#ifndef __CUDA_ARCH__
#include <thread>
#endif

#include "common/Kolesky_Compat.hpp"
#include "common/Kolesky_CudaCache.hpp"
#include "common/Kolesky_Dmma.hpp"
#include "dense/Kolesky_Potrf_Internal.hpp"

namespace kolesky {
namespace impl {

// Tile order of the dataflow kernel (a multiple of 16; the CUDA team is 16 x 16 threads, each
// with a 4 x 4 block of the tile).
constexpr int kFlowTile = 64;
// Values of one diagonal tile's inverted form in FlowWork::inv: the tile, then its
// reciprocal diagonal.
constexpr int kFlowInvSlot = kFlowTile * kFlowTile + kFlowTile;

// Largest order the GPU default factors in one dataflow launch (above it: Blocked with
// dataflow panels and cuBLAS trailing updates). Measured on the H200 with the tile updates on
// m16n8k4 and the split launch (docs/performance_log.md, issue 15 session 41): double's one
// launch 1 % faster than Blocked at 4608, 3 % slower at 5120; float's 11 % faster at 5120, 4 %
// at 6144. Float under FastFloatScope (TF32 tiles, no split) keeps its measured 3072.
constexpr int kFlowWholeMax = 4608;
constexpr int kFlowWholeMaxFloat = 6144;
constexpr int kFlowWholeMaxTf32 = 3072;

// Device state shared by the launches on one stream: ctr = {ticket, teams done, generation,
// and for split launches (FlowRole) the chain's claim, the tiles' kernel's start, and whether
// the launch was cancelled},
// one flag per tile of an nt x nt grid, and two staged tiles per tile row (the partial updates
// of the tiles the chain takes at that row, kept in the chain team's register order).
template <class MemSpace>
struct FlowWork {
  Kokkos::View<int*, MemSpace> ctr;
  Kokkos::View<unsigned*, MemSpace> flags;
  Kokkos::View<double*, MemSpace> part;  // float tiles use the first half of each slot
  // Per tile column: the chain sets 1 once the column's diagonal tile is factored, when the
  // launch asks (`FlowPotrf::cols`); a waiter on another stream resets it (flow_column_wait).
  Kokkos::View<unsigned*, MemSpace> cols;
  // Per tile column: the chain's inverted diagonal blocks (FlowPotrf::inv, double's split
  // launches from n = 3584), for the tile tasks' solves.
  Kokkos::View<double*, MemSpace> inv;
  int nt = 0;
  void reserve(const int tiles) {
    if (ctr.extent(0) == 0) ctr = Kokkos::View<int*, MemSpace>("kolesky::flow_counters", 6);
    if (tiles > nt) {  // final and partial flags
      flags = Kokkos::View<unsigned*, MemSpace>("kolesky::flow_flags", 2 * std::size_t(tiles) * tiles);
      cols = Kokkos::View<unsigned*, MemSpace>("kolesky::flow_columns", tiles);
      if constexpr (!std::is_same_v<MemSpace, Kokkos::HostSpace>)  // the host path stages none
        part = Kokkos::View<double*, MemSpace>(
            Kokkos::view_alloc("kolesky::flow_partials", Kokkos::WithoutInitializing),
            2 * std::size_t(tiles) * kFlowTile * kFlowTile);
      if constexpr (!std::is_same_v<MemSpace, Kokkos::HostSpace>)
        inv = Kokkos::View<double*, MemSpace>(
            Kokkos::view_alloc("kolesky::flow_inverses", Kokkos::WithoutInitializing),
            std::size_t(tiles) * kFlowInvSlot);
      nt = tiles;
    }
  }
};

// Per-task timestamps (ns) when tracing: taken, last dependency arrived, published; and the
// multiprocessor that ran it.
struct FlowTraceRec {
  unsigned long long t_take, t_ready, t_done;
  unsigned long long t_factor;  // chain records: the diagonal tile's factorization started
  unsigned long long t_wait;    // chain records: the partial updates it waited for arrived
  long long sub_cycles[2];      // chain records: cycles of its solve and of its stores issued
  long long cycles;             // chain records: SM clock cycles of that factorization
  long long inv_cycles;         // chain records: cycles of invert_blocks after the factor
  long long syrk_cycles;        // chain records: cycles of the SYRK update before the factor
  long long fac_cycles[4];      // chain records, summed over its four 16-column panels: warp 0
                                // loading the panel, its 16 pivots, its stores of the finished
                                // columns to scratch; thread 0 in the team update and barriers.
                                // Tile records (thread 0, after its deps): the factor staged,
                                // the solve, its stores issued, the barrier after them (and
                                // `cycles`: the publish)
  int i, j, sm, kind;           // kind: 0 the chain's column, 1-2 partial updates, 3 a tile
};

KOKKOS_INLINE_FUNCTION unsigned long long flow_clock() {
#ifdef __CUDA_ARCH__
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return 0;
#endif
}

KOKKOS_INLINE_FUNCTION int flow_sm() {
#ifdef __CUDA_ARCH__
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return int(s);
#else
  return 0;
#endif
}

// Loads of data other teams wrote during this launch: bypass L1 (not coherent across SMs).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T load_shared_global(const T* p) {
#ifdef __CUDA_ARCH__
  return __ldcg(p);
#else
  return *p;
#endif
}

// Role of a CUDA launch: the chain and the tiles in one kernel (kFlowBoth), or split over two
// kernels on two streams, each with its own register allocation: the chain's (one team, 255
// registers) and the tiles' (two teams per SM at 128 registers, float's tile code with no
// spill). CUDA promises neither that two kernels run at the same time nor in launch order
// (CUDA_LAUNCH_BLOCKING=1 or a tool serializes them), so neither kernel waits on the other
// unless it has seen it running: the tiles' kernel marks its start (ctr[4]); the chain's
// kernel claims the chain (ctr[3]) only once it has seen that mark, within kFlowStartWaitNs,
// and else leaves; the tile team that draws ticket 0 waits kFlowClaimWaitNs for that claim
// and else claims it itself and cancels the launch (info = kFlowCancelled, which every wait
// reads). Exactly one claim wins (atomicMax). A cancelled launch has written nothing to the
// matrix (no tile is stored before the chain's first diagonal tile is published; partial
// tasks write the workspace), and a one-kernel launch queued after it factors the matrix
// then; it returns at once otherwise (issue 15 sessions 36 and 38). The chain's code stays
// out of the tiles' kernel: there it cost the tiles more than the second team per SM gave.
// kFlowTilesLate: the tiles' kernel with each tile loaded after its updates (FlowPotrf::kLateTile).
// kFlowChainInv / kFlowTilesInv: the chain's and the tiles' kernels with the tiles solving by
// the chain's inverted blocks (FlowPotrf::kInvRole).
enum FlowRole : int {
  kFlowBoth = 0,
  kFlowChainOnly = 1,
  kFlowTilesOnly = 2,
  kFlowTilesLate = 3,
  kFlowChainInv = 4,
  kFlowTilesInv = 5
};
constexpr unsigned long long kFlowStartWaitNs = 200000;
constexpr unsigned long long kFlowClaimWaitNs = 50000;
constexpr int kFlowCancelled = -2147483647 - 1;

template <class T, int Role = kFlowBoth>
struct FlowPotrf {
  static constexpr int TS = kFlowTile;
  static constexpr int KB = 32;         // k-chunk of the staged update operands
  static constexpr int LD = TS + 1;     // padded row of a staged tile
  static constexpr int kThreads = 256;  // CUDA team
  // The chain's thread that publishes its tiles off its path: in warp 7, which the first
  // panel of factor_diag and the first part of invert_blocks leave idle.
  static constexpr int kLateThread = kThreads - 1;
  static constexpr int XLD = 17;        // row of the chain solve's column-block buffer
  // Row of a staged k-chunk (k-major): the padding puts the four k rows a tensor-core
  // fragment load touches in different banks (4 doubles; 8 floats for the TF32 fragments).
  static constexpr int KLD = TS + (sizeof(T) == 4 ? 8 : 4);
  // Scratch: two KB x KLD operand chunks, or one TS x LD tile; then TS reciprocals; then the
  // chain solve's TS x 16 column block (44 KB in double, under the 48 KB every Kokkos allows).
  static constexpr int kTileElems = 2 * KB * KLD > TS * LD ? 2 * KB * KLD : TS * LD;
  static constexpr bool kMmaType = std::is_same<T, double>::value;
  static constexpr int kScratchElems = kTileElems + TS + TS * XLD;
  static constexpr bool kChainRole = Role == kFlowChainOnly || Role == kFlowChainInv;
  static constexpr bool kTilesRole =
      Role == kFlowTilesOnly || Role == kFlowTilesLate || Role == kFlowTilesInv;
  // The tiles' kernel with no tile in registers during its updates (loaded after them, their
  // sum added): float's then fits two teams per SM without spills, double's spills half as
  // much. Its loads are then on each task's path: 10 % slower at n = 3072-3584, 2-5 % faster
  // from 4608 (H200, session 41); flow_launch_split picks it.
  static constexpr bool kLateTile = Role == kFlowTilesLate;
  // Where the tiles solve by the chain's inverted blocks (inv): kernels of their own, launched
  // for double's split launches with the tiles loaded first (flow_tile_inv). In the other
  // kernels the path's code alone cost more than it saved: the one kernel's spills 52 / 76 ->
  // 60 / 92 B, float's tiles' kernels 72 / 68 -> 100 / 196 B (1-3 % slower at n = 1000-4096),
  // double's split kernels at 3072 1 % slower with the path off (H200, session 42).
  static constexpr bool kInvRole = kMmaType && (Role == kFlowChainInv || Role == kFlowTilesInv);

  T* a;
  std::ptrdiff_t rs, cs;
  int n, nt, j0, j1, ntasks, nteams;
  // Tile updates on the FP64 tensor cores (m16n8k4, sm_80 and later), float's operands
  // widened to double and the sums rounded once (float has no tensor-core format of its own
  // precision). Float's FFMA loop issued a shared-memory load per two FMAs.
  bool mma = false;
  // Float tile updates on the TF32 tensor cores (posv_mixed's fast_factor only: 10-bit
  // mantissas, for a factor that refinement corrects; sm_80 and later).
  bool tf32 = false;
  // The chain's solve, SYRK and inverted blocks by DMMA (sm_80 and later), float too: its
  // operands widened to double, the results rounded back (no less accurate than FFMA).
  bool chain_mma = false;
  // With chain_mma: the diagonal tile's updates between its panels by DMMA too, on 8 warps
  // (1; 3: m16n8k4) or warps 0-3 (2) (FlowKnobs::factor_mma; panel_update_mma); 0 FFMA.
  int factor_mma = 0;
  // With chain_mma: the chain's SYRK on m16n8k4 (syrk_mma16) rather than m8n8k4.
  bool syrk16 = false;
  int* info;
  int* ctr;
  unsigned* flags;
  T* part;  // FlowWork::part
  // FlowWork::inv, or null: where the chain leaves each diagonal tile's inverted blocks (as
  // invert_blocks leaves them in scratch, then the reciprocal diagonal) before publishing the
  // tile, for the tile tasks below it to solve by four DMMA steps (solve_blocks_mma) instead of
  // 64 substitution steps (12.4k cycles of a tile task's ~20k after its inputs at n = 1000 in
  // double, H200; docs/performance_log.md, issue 15 session 42). Needs chain_mma and kInvRole
  // (flow_tile_inv).
  T* inv = nullptr;
  unsigned* cols = nullptr;  // FlowWork::cols when another stream waits on the chain's columns
  bool decline = false;  // tests: the chain's kernel does not claim (the launch is cancelled)
  bool resume = false;   // the one-kernel launch after a split one: runs only if it was cancelled
  // The one kernel of a synchronous call: the last team out copies info here (a pinned host
  // word, mapped) and zeroes info, so the call needs no memset before and no copy after.
  int* host_info = nullptr;
  FlowTraceRec* trace;

  KOKKOS_FORCEINLINE_FUNCTION T& at(const int i, const int j) const { return a[i * rs + j * cs]; }
  KOKKOS_FORCEINLINE_FUNCTION unsigned* flag(const int i, const int j) const {
    return flags + (std::size_t(j) * nt + i);
  }

  // Task number -> tile, column by column.
  KOKKOS_INLINE_FUNCTION void task_tile(int t, int& i, int& j) const {
    j = j0;
    while (t >= nt - j) {
      t -= nt - j;
      ++j;
    }
    i = j + t;
  }

  KOKKOS_INLINE_FUNCTION static int read_int(const int* p) { return *(volatile const int*)p; }
  KOKKOS_INLINE_FUNCTION static unsigned read_flag(const unsigned* p) {
    return *(volatile const unsigned*)p;
  }

  // Flags f and g both at `want`; both loaded before either is tested (one round trip).
  KOKKOS_INLINE_FUNCTION static bool published(const unsigned* f, const unsigned* g,
                                               const unsigned want) {
    const unsigned a = read_flag(f), b = read_flag(g);
    return a == want && b == want;
  }

  // After flags were seen published: their writers' data ordered before this thread's later
  // loads; false when a failure is recorded.
  KOKKOS_INLINE_FUNCTION bool acquired(const bool check = true) const {
    Kokkos::memory_fence();
    return !check || read_int(info) == 0;
  }

  // Spin until flags f and g reach `want` or a failure is recorded; false: a failure. Both
  // flags are loaded before either is tested, and one fence follows: a ready pair costs two
  // L2 round trips (the flags, then info), where waiting on each in turn cost four and two
  // fences (~1.9 us of the chain's ~21 us step on the H100; docs/performance_log.md).
  // (check = false: the caller knows no failure can be recorded once the flags are set.)
  KOKKOS_INLINE_FUNCTION bool wait(const unsigned* f, const unsigned* g, const unsigned want,
                                   const bool check = true) const {
    for (;;) {
      if (published(f, g, want)) break;
      if (read_int(info) != 0) return false;
#ifdef __CUDA_ARCH__
      __nanosleep(20);
#else
      std::this_thread::yield();
#endif
    }
    return acquired(check);
  }
  KOKKOS_INLINE_FUNCTION bool wait(const unsigned* f, const unsigned want) const {
    return wait(f, f, want);
  }

  KOKKOS_INLINE_FUNCTION void publish(unsigned* f, const unsigned v) const {
    Kokkos::memory_fence();
    *(volatile unsigned*)f = v;
  }

  // The last team out resets the ticket and bumps the generation.
  KOKKOS_INLINE_FUNCTION void finish(const unsigned gen) const {
    Kokkos::memory_fence();
    const int d = Kokkos::atomic_fetch_add(&ctr[1], 1);
    if (d == nteams - 1) {
      if (host_info != nullptr) {  // every team's info writes precede their fences above
        Kokkos::memory_fence();
        *(volatile int*)host_info = read_int(info);
        *(volatile int*)info = 0;
      }
      *(volatile int*)&ctr[0] = 0;
      *(volatile int*)&ctr[1] = 0;
      Kokkos::memory_fence();
      *(volatile int*)&ctr[2] = int(gen + 1);
      Kokkos::memory_fence();
    }
  }

#ifdef __CUDA_ARCH__
  // ctr[3] (ctr[4]) holds the generation + 1 of the last launch whose chain was claimed (whose
  // tiles' kernel started); they only grow (a launch that never sets one leaves it behind,
  // which the next launch's max passes).
  __device__ bool claim_chain(const unsigned gen) const {
    return atomicMax(reinterpret_cast<unsigned*>(ctr + 3), gen + 1) < gen + 1;
  }
  __device__ bool marked(const int w, const unsigned gen) const {
    return *(volatile const unsigned*)(ctr + w) >= gen + 1;
  }
  // The chain's kernel: claim the chain once the tiles' kernel is seen running.
  __device__ bool claim_when_tiles_run(const unsigned gen) const {
    const unsigned long long t0 = flow_clock();
    while (!marked(4, gen)) {
      if (flow_clock() - t0 > kFlowStartWaitNs) return false;
      __nanosleep(200);
    }
    return claim_chain(gen);
  }
#endif

  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
#ifdef __CUDA_ARCH__
    run_cuda(member);
#else
    run_host(member);
#endif
  }

  //-------------------------------------------------------------------------------------------
  // Host backends: one thread per team, arithmetic in place on the matrix.
  //-------------------------------------------------------------------------------------------
  template <class Member>
  KOKKOS_INLINE_FUNCTION void run_host(const Member&) const {
#ifndef __CUDA_ARCH__
    const unsigned gen = unsigned(read_int(&ctr[2])), want = gen + 1;
    for (;;) {
      const int t = Kokkos::atomic_fetch_add(&ctr[0], 1);
      if (t >= ntasks) break;
      int i, j;
      task_tile(t, i, j);
      const int r0 = i * TS, c0 = j * TS;
      const int mi = imin(TS, n - r0), mj = imin(TS, n - c0);
      bool ok = read_int(info) == 0;
      for (int k = j0; k < j && ok; ++k) {
        ok = wait(flag(i, k), flag(j, k), want);
        if (!ok) break;
        const int kc = k * TS, kb = imin(TS, n - kc);
        for (int c = 0; c < mj; ++c)
          for (int r = (i == j ? c : 0); r < mi; ++r) {
            T s = at(r0 + r, c0 + c);
            for (int q = 0; q < kb; ++q) s -= at(r0 + r, kc + q) * at(c0 + c, kc + q);
            at(r0 + r, c0 + c) = s;
          }
      }
      if (ok && i == j) {
        const Strided<T> d{a + r0 * rs + c0 * cs, rs, cs};
        const int r = SerialPotrfInternal<Algo::RightLooking>::invoke(mj, d);
        if (r != 0) *(volatile int*)info = c0 + r;
      } else if (ok) {
        ok = wait(flag(j, j), want);
        if (ok)  // X L^T = C, row by row, column-oriented substitution
          for (int r = 0; r < mi; ++r)
            for (int q = 0; q < mj; ++q) {
              const T x = at(r0 + r, c0 + q) / at(c0 + q, c0 + q);
              at(r0 + r, c0 + q) = x;
              for (int m = q + 1; m < mj; ++m) at(r0 + r, c0 + m) -= x * at(c0 + m, c0 + q);
            }
      }
      publish(flag(i, j), want);
    }
    finish(gen);
#endif
  }

  //-------------------------------------------------------------------------------------------
  // CUDA: 256 threads as a 16 x 16 grid; thread (tr, tc) keeps rows tr + 16a and columns
  // tc + 16b (a, b < 4) of its tile in registers. The 16 threads of one row group share a
  // half-warp, so the substitution's column values travel by shuffles.
  //
  // The chain through the diagonal belongs to one team (task 0, the critical-path team): for
  // each tile column j it solves the tile just below the previous diagonal tile against that
  // tile's factor, still in its scratch, takes that solved tile's SYRK update off the diagonal
  // tile and factors it. No hand-off between teams on that chain. The other updates of those
  // two tiles are applied ahead of time by "partial" tasks (published with a second set of
  // flags); every other tile is owned by one task that applies its updates as they become
  // available and solves it.
  //
  // Task numbers: 0 is the chain; then, for each tile column j, the partial tasks the chain
  // needs at column j + 1, then the tiles of column j the chain does not own.
  //-------------------------------------------------------------------------------------------
  enum Kind : int { kChain = 0, kPartialBelow = 1, kPartialDiag = 2, kTile = 3 };

  KOKKOS_INLINE_FUNCTION bool chain_next(const int j) const { return j + 1 < j1; }
  KOKKOS_INLINE_FUNCTION int group_partials(const int j) const {
    return (chain_next(j) && j > j0) ? 2 : 0;
  }
  KOKKOS_INLINE_FUNCTION int group_first_tile(const int j) const {
    return j + (chain_next(j) ? 2 : 1);
  }
  KOKKOS_INLINE_FUNCTION int group_size(const int j) const {
    return group_partials(j) + (nt - group_first_tile(j));
  }
  KOKKOS_INLINE_FUNCTION int cuda_ntasks() const {
    int t = 1;
    for (int j = j0; j < j1; ++j) t += group_size(j);
    return t;
  }
  // Task t >= 1 -> kind and tile.
  KOKKOS_INLINE_FUNCTION void cuda_task(int t, int& kind, int& i, int& j) const {
    t -= 1;
    j = j0;
    while (t >= group_size(j)) {
      t -= group_size(j);
      ++j;
    }
    const int np = group_partials(j);
    if (t < np) {
      kind = t == 0 ? kPartialBelow : kPartialDiag;
      i = j + 1;
      if (kind == kPartialDiag) j = j + 1;  // tile (j + 1, j + 1)
    } else {
      kind = kTile;
      i = group_first_tile(j) + (t - np);
    }
  }
  KOKKOS_FORCEINLINE_FUNCTION unsigned* pflag(const int i, const int j) const {
    return flags + (std::size_t(nt) * nt + std::size_t(j) * nt + i);
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION void run_cuda(const Member& member) const {
#ifdef __CUDA_ARCH__
    using Buf = Kokkos::View<T*, typename Member::execution_space::scratch_memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    using IBuf = Kokkos::View<int*, typename Member::execution_space::scratch_memory_space,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Buf sbuf(member.team_scratch(0), kScratchElems);
    IBuf sint(member.team_scratch(0), 4);
    run_team(member, sbuf.data(), sint.data(), member.team_rank());
#else
    (void)member;
#endif
  }

#ifdef KOKKOS_ENABLE_CUDA
  // Launched as a plain __global__ (flow_launch_raw, FlowKnobs::raw_launch): the same teams,
  // only team barriers asked of the member, the words after the tile buffers.
  struct RawMember {
    __device__ void team_barrier() const { __syncthreads(); }
  };
  __device__ void run_raw(unsigned char* const smem) const {
#ifdef __CUDA_ARCH__
    T* const s = reinterpret_cast<T*>(smem);
    run_team(RawMember{}, s, reinterpret_cast<int*>(s + kScratchElems), int(threadIdx.x));
#else
    (void)smem;
#endif
  }
  static constexpr std::size_t raw_bytes() { return kScratchElems * sizeof(T) + 4 * sizeof(int); }
#endif

#ifdef __CUDA_ARCH__
  struct Ctx {
    T* s;
    T* rdiag;
    T* xb;
    int* sh;
    int tid, lane, tr, tc;
    bool unit_rows;
    unsigned want;
  };

  template <class Member>
  __device__ void run_team(const Member& member, T* const s, int* const sh, const int tid) const {
    Ctx c;
    c.s = s;
    c.rdiag = c.s + kTileElems;
    c.xb = c.rdiag + TS;
    c.sh = sh;
    c.tid = tid;
    c.lane = c.tid & 31;
    c.tr = c.tid >> 4;
    c.tc = c.tid & 15;
    c.unit_rows = (rs < 0 ? -rs : rs) <= (cs < 0 ? -cs : cs);

    if (resume) {  // after a split launch: ctr[5] = 1 when it was cancelled (FlowResumeCheck)
      if (c.tid == 0) c.sh[3] = read_int(&ctr[5]);
      member.team_barrier();
      if (c.sh[3] == 0) return;
    }
    if (c.tid == 0) c.sh[2] = read_int(&ctr[2]);
    member.team_barrier();
    const unsigned gen = unsigned(c.sh[2]);
    c.want = gen + 1;

    if constexpr (kChainRole) {
      // nteams counts this team beside the tiles' kernel's, so the generation it read cannot
      // move before its own finish(), however late this kernel starts.
      if (c.tid == 0) c.sh[1] = !decline && read_int(info) == 0 && claim_when_tiles_run(gen);
      member.team_barrier();
      if (c.sh[1] != 0) chain(member, c);
      if (c.tid == 0) finish(gen);
    } else {
      if constexpr (kTilesRole)
        if (c.tid == 0) atomicMax(reinterpret_cast<unsigned*>(ctr + 4), gen + 1);
      tickets(member, c, gen);
    }
  }

  // The persistent loop over tickets.
  template <class Member>
  __device__ void tickets(const Member& member, Ctx& c, const unsigned gen) const {
    for (;;) {
      if (c.tid == 0) {
        c.sh[0] = Kokkos::atomic_fetch_add(&ctr[0], 1);
        c.sh[1] = read_int(info) == 0;
      }
      member.team_barrier();
      const int t = c.sh[0];
      const bool ok = c.sh[1] != 0;
      member.team_barrier();
      if (t >= ntasks) break;
      if (t == 0) {
        if constexpr (Role == kFlowBoth) {
          if (ok) chain(member, c);
        } else if (c.tid == 0 && ok) {  // the chain's kernel claims it, or the launch ends
          const unsigned long long t0 = flow_clock();
          while (!marked(3, gen) && flow_clock() - t0 < kFlowClaimWaitNs) __nanosleep(200);
          if (claim_chain(gen)) {
            atomicCAS(info, 0, kFlowCancelled);
            Kokkos::memory_fence();
          }
        }
        continue;
      }
      int kind, i, j;
      cuda_task(t, kind, i, j);
      const unsigned long long t_take = trace ? flow_clock() : 0;
      unsigned long long t_ready = 0;
      T acc[4][4];
      if (kind == kTile) {
        load_tile(c, acc, i, j, false, kLateTile);
        bool go = ok && update(member, c, acc, i, j, j, false);
        if (kLateTile && go) add_tile(c, acc, i, j, false);
        if (go) {
          if (c.tid == 0) c.sh[1] = wait(flag(j, j), c.want);
          member.team_barrier();
          go = c.sh[1] != 0;
        }
        if (trace) t_ready = flow_clock();
        long long q[5] = {0, 0, 0, 0, 0};  // trace: thread 0's clock at each part's end
        if (trace) q[0] = clock64();
        if (go && inv_below(j)) {  // false at compile time outside kInvRole
          double cf[8][2];
          tile_to_frags(member, c, acc, cf);
          stage_inverse(member, c, j);
          if (trace) q[1] = clock64();
          solve_blocks_mma(c, cf);
          if (trace) q[2] = clock64();
          member.team_barrier();  // every warp's reads of the inverse before the result's writes
          frags_to_scratch(c, cf);
          member.team_barrier();
          store_staged(c, i * TS, j * TS, imin(TS, n - i * TS), TS, false);
        } else if (go) {
          stage_factor(member, c, j);
          if (trace) q[1] = clock64();
          solve(c, acc);
          if (trace) q[2] = clock64();
          store_tile(c, acc, i, j, false);
        }
        if (trace) q[3] = clock64();
        member.team_barrier();
        if (trace) q[4] = clock64();
        if (c.tid == 0) publish(flag(i, j), c.want);
        if (c.tid == 0 && trace) {
          FlowTraceRec& rec = trace[t];
          for (int p = 0; p < 3; ++p) rec.fac_cycles[p] = go ? q[p + 1] - q[p] : 0;
          rec.fac_cycles[3] = q[4] - q[3];
          rec.cycles = clock64() - q[4];
        }
      } else {
        // Partial: the updates from columns [j0, jlast) of tile (i, j') (j' = j for the tile
        // below the diagonal, i for the diagonal tile), written back for the chain.
        const bool diag = kind == kPartialDiag;
        const int jc = diag ? i : j;          // tile column
        const int jlast = diag ? i - 1 : j;   // the chain applies column jlast itself
        load_tile(c, acc, i, jc, diag, kLateTile);
        if (ok && update(member, c, acc, i, jc, jlast, diag)) {
          if (kLateTile) add_tile(c, acc, i, jc, diag);
          store_part(c, acc, i, diag);
        }
        if (trace) t_ready = flow_clock();
        member.team_barrier();
        if (c.tid == 0) publish(pflag(i, jc), c.want);
      }
      if (c.tid == 0 && trace) {
        FlowTraceRec& rec = trace[t];
        rec.t_take = t_take;
        rec.t_ready = t_ready;
        rec.t_done = flow_clock();
        rec.i = i;
        rec.j = kind == kPartialDiag ? i : j;
        rec.sm = flow_sm();
        rec.kind = kind;
      }
    }
    if (c.tid == 0) finish(gen);
  }

  // acc <- tile (i, j) (lower part only when diag); zero outside the matrix. zero: acc <- 0
  // (kLateTile: the tile comes after the updates, add_tile).
  __device__ void load_tile(const Ctx& c, T (&acc)[4][4], const int i, const int j,
                            const bool diag, const bool zero = false) const {
    if (zero) {
#pragma unroll
      for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) acc[x][y] = T(0);
      return;
    }
    const int r0 = i * TS, c0 = j * TS, mi = imin(TS, n - r0), mj = imin(TS, n - c0);
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        const int r = c.tr + 16 * x, col = c.tc + 16 * y;
        acc[x][y] = (r < mi && col < mj && (!diag || col <= r))
                        ? load_shared_global(&at(r0 + r, c0 + col))
                        : T(0);
      }
  }

  // acc += tile (i, j), as load_tile reads it.
  __device__ void add_tile(const Ctx& c, T (&acc)[4][4], const int i, const int j,
                           const bool diag) const {
    T t[4][4];
    load_tile(c, t, i, j, diag);
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y < 4; ++y) acc[x][y] += t[x][y];
  }

  __device__ void store_tile(const Ctx& c, const T (&acc)[4][4], const int i, const int j,
                             const bool diag) const {
    const int r0 = i * TS, c0 = j * TS, mi = imin(TS, n - r0), mj = imin(TS, n - c0);
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        const int r = c.tr + 16 * x, col = c.tc + 16 * y;
        if (r < mi && col < mj && (!diag || col <= r)) at(r0 + r, c0 + col) = acc[x][y];
      }
  }

  // A partial task's result for the chain at tile row i (the tile below the diagonal, or the
  // diagonal tile), in the chain team's register order: each of the 16 stores and loads is one
  // coalesced 256-element row. Through the matrix, in the 4 x 4 layout, every access touched
  // 16 columns per warp; the chain's two loads sat on the critical path.
  __device__ T* part_slot(const Ctx& c, const int i, const bool diag) const {
    return part + (2 * std::size_t(i) + (diag ? 1 : 0)) * (TS * TS) + c.tid;
  }
  __device__ void store_part(const Ctx& c, const T (&acc)[4][4], const int i,
                             const bool diag) const {
    T* const q = part_slot(c, i, diag);
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y < 4; ++y)
        if (!diag || y <= x) q[(4 * x + y) * kThreads] = acc[x][y];  // the diagonal's lower half
  }
  __device__ void load_part(const Ctx& c, T (&acc)[4][4], const int i, const bool diag) const {
    const T* const q = part_slot(c, i, diag);
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        if (diag && y > x) {  // not stored: 6 of the 16 blocks, on the chain's path
          acc[x][y] = T(0);
          continue;
        }
        const T v = load_shared_global(q + (4 * x + y) * kThreads);
        acc[x][y] = (!diag || c.tc + 16 * y <= c.tr + 16 * x) ? v : T(0);
      }
  }

  // acc -= sum over k in [j0, kend) of L(i, k) L(jr, k)^T, each k once tiles (i, k) and
  // (jr, k) are published. False on a failure recorded meanwhile.
  template <class Member>
  __device__ bool update(const Member& member, const Ctx& c, T (&acc)[4][4], const int i,
                         const int jr, const int kend, const bool diag) const {
    const int r0 = i * TS, c0 = jr * TS, mi = imin(TS, n - r0), mj = imin(TS, n - c0);
    // The device code's own architecture decides too: a build for an older one run on a newer
    // device (PTX JIT) has no mma_chunk.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // A split launch's tiles take DMMA only (flow_split declines the others): the other paths'
    // registers are what kept that kernel from two teams per SM without spills.
    const bool use_mma = kTilesRole || mma || tf32;
#else
    const bool use_mma = false;
#endif
    double dm[16];
#pragma unroll
    for (int e = 0; e < 16; ++e) dm[e] = 0.0;
    if (kend <= j0) return true;
    T* const as = c.s;
    T* const bs = diag ? c.s : c.s + KB * KLD;
    // The operands go through registers (all of a chunk's loads in flight at once; a
    // load-then-store loop would wait out the L2 latency per element), and the next chunk's
    // loads are issued before this chunk is multiplied: the second half of tile column k
    // while the first is multiplied, and the first half of k + 1 while the second is, when
    // tiles (i, k + 1) and (jr, k + 1) are already published (polled, not waited for).
    constexpr int PER = KB * TS / kThreads;
    T va[PER], vb[PER];
    const auto fetch = [&](const int k, const int q0) {
      const int kc = k * TS, kb = imin(TS, n - kc);
#pragma unroll
      for (int it = 0; it < PER; ++it) {
        const int e = c.tid + it * kThreads;
        const int r = c.unit_rows ? e % TS : e / KB, q = c.unit_rows ? e / TS : e % KB;
        const bool kin = q0 + q < kb;
        va[it] = (r < mi && kin) ? load_shared_global(&at(r0 + r, kc + q0 + q)) : T(0);
        vb[it] = (!diag && r < mj && kin) ? load_shared_global(&at(c0 + r, kc + q0 + q)) : T(0);
      }
    };
    // Thread 0 waits (or, polling, looks once) for column k's operands: c.sh[1] = 1 ready,
    // 0 a failure, 2 not yet published.
    const auto deps = [&](const int k, const bool poll) {
      if (c.tid == 0) {
        const unsigned* const fa = flag(i, k);
        const unsigned* const fb = diag ? fa : flag(jr, k);
        // Info is not read again once the flags are seen: after a failure a task may go on
        // multiplying stale tiles, but a tile is stored only after its wait for the diagonal
        // tile, which reads it (partials go to the workspace, which a failed chain never
        // reads). A round trip a tile column on every task.
        if (poll)
          c.sh[1] = published(fa, fb, c.want) ? acquired(false) : 2;
        else
          c.sh[1] = wait(fa, fb, c.want, false);
      }
      member.team_barrier();
      return c.sh[1];
    };
    if (deps(j0, false) == 0) return false;
    fetch(j0, 0);
    int k = j0, q0 = 0;
#pragma unroll 1
    for (;;) {
#pragma unroll
      for (int it = 0; it < PER; ++it) {
        const int e = c.tid + it * kThreads;
        const int r = c.unit_rows ? e % TS : e / KB, q = c.unit_rows ? e / TS : e % KB;
        as[q * KLD + r] = va[it];
        if (!diag) bs[q * KLD + r] = vb[it];
      }
      member.team_barrier();
      const int nk = q0 + KB < TS ? k : k + 1, nq = q0 + KB < TS ? q0 + KB : 0;
      const bool more = nk < kend;
      bool fetched = false;
      if (more && (nk == k || deps(nk, true) == 1)) {
        fetch(nk, nq);
        fetched = true;
      }
      if (use_mma) {
        mma_chunk(c, dm, as, bs);
      } else {
#pragma unroll 8
        for (int q = 0; q < KB; ++q) {
          T av[4], bv[4];
#pragma unroll
          for (int x = 0; x < 4; ++x) av[x] = as[q * KLD + c.tr + 16 * x];
#pragma unroll
          for (int y = 0; y < 4; ++y) bv[y] = bs[q * KLD + c.tc + 16 * y];
#pragma unroll
          for (int x = 0; x < 4; ++x)
#pragma unroll
            for (int y = 0; y < 4; ++y) acc[x][y] -= av[x] * bv[y];
        }
      }
      member.team_barrier();
      if (!more) break;
      if (!fetched) {
        if (deps(nk, false) == 0) return false;
        fetch(nk, nq);
      }
      k = nk;
      q0 = nq;
    }
    if (use_mma && kend > j0) {  // the tensor-core layout's sum into acc, through scratch
      const int w = c.tid >> 5, g = c.lane >> 2, tq = c.lane & 3;
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int f = 0; f < 4; ++f)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            c.s[(16 * (w >> 1) + 8 * m + g) * LD + 32 * (w & 1) + 8 * f + 2 * tq + e] =
                static_cast<T>(dm[(m * 4 + f) * 2 + e]);
      member.team_barrier();
#pragma unroll
      for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) acc[x][y] += c.s[(c.tr + 16 * x) * LD + c.tc + 16 * y];
      member.team_barrier();
    }
    return true;
  }

  // dm -= the chunk's product on the FP64 tensor cores. Warp w owns rows 16 (w / 2) + [0, 16)
  // and columns 32 (w % 2) + [0, 32) of the tile: 2 x 4 fragments of 8 x 8, dm[(m 4 + f) 2 + e]
  // at row 8m + lane / 4, column 8f + 2 (lane % 4) + e, as four 16 x 8 fragments (m16n8k4:
  // twice m8n8k4's rate on sm_90). Per 4-wide k step a lane loads 2 A and 4 B elements
  // (conflict-free with KLD) for 4 DMMAs. Float (tf32): the same layout, m16n8k8 per 8-wide k
  // step (4 A and 8 B loads for 4 MMAs), summed in float per chunk, then into dm.
  __device__ void mma_chunk(const Ctx& c, double (&dm)[16], const T* as, const T* bs) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (kMmaType || kTilesRole || !tf32) {
      const int w = c.tid >> 5, g = c.lane >> 2, tq = c.lane & 3;
      const T* const pa = as + tq * KLD + 16 * (w >> 1) + g;
      const T* const pb = bs + tq * KLD + 32 * (w & 1) + g;
#pragma unroll 2
      for (int q = 0; q < KB; q += 4) {
        double a[2], b[4];
#pragma unroll
        for (int m = 0; m < 2; ++m) a[m] = -pa[q * KLD + 8 * m];
#pragma unroll
        for (int f = 0; f < 4; ++f) b[f] = pb[q * KLD + 8 * f];
#pragma unroll
        for (int f = 0; f < 4; ++f)
          dmma_16x8x4(dm[f * 2], dm[f * 2 + 1], dm[(4 + f) * 2], dm[(4 + f) * 2 + 1], a[0], a[1],
                      b[f]);
      }
    } else {
      const int w = c.tid >> 5, g = c.lane >> 2, tq = c.lane & 3;
      const T* const pa = as + tq * KLD + 16 * (w >> 1) + g;
      const T* const pb = bs + tq * KLD + 32 * (w & 1) + g;
      float ds[16];
#pragma unroll
      for (int e = 0; e < 16; ++e) ds[e] = 0.f;
#pragma unroll 2
      for (int q = 0; q < KB; q += 8) {
        const unsigned a[4] = {tf32_bits(-pa[q * KLD]), tf32_bits(-pa[q * KLD + 8]),
                               tf32_bits(-pa[(q + 4) * KLD]), tf32_bits(-pa[(q + 4) * KLD + 8])};
#pragma unroll
        for (int f = 0; f < 4; ++f) {
          const unsigned b[2] = {tf32_bits(pb[q * KLD + 8 * f]), tf32_bits(pb[(q + 4) * KLD + 8 * f])};
          tf32mma_16x8x8(ds[f * 2], ds[f * 2 + 1], ds[(4 + f) * 2], ds[(4 + f) * 2 + 1], a, b);
        }
      }
#pragma unroll
      for (int e = 0; e < 16; ++e) dm[e] += ds[e];
    }
#else
    (void)c, (void)dm, (void)as, (void)bs;
#endif
  }

  // Element it of this thread's share of a staged tile: consecutive threads along the
  // matrix's unit stride, so that the global accesses coalesce.
  __device__ static void staged_elem(const Ctx& c, const int it, int& r, int& col) {
    const int e = c.tid + it * kThreads;
    r = c.unit_rows ? e % TS : e / TS;
    col = c.unit_rows ? e / TS : e % TS;
  }

  // The published factor of diagonal tile j into scratch (identity past n) and its
  // reciprocal diagonal.
  template <class Member>
  __device__ void stage_factor(const Member& member, const Ctx& c, const int j) const {
    const int c0 = j * TS, mj = imin(TS, n - c0);
    constexpr int PER = TS * TS / kThreads;
    T v[PER];
#pragma unroll
    for (int it = 0; it < PER; ++it) {  // all loads in flight, then the stores
      int r, col;
      staged_elem(c, it, r, col);
      if (r < mj && col < mj)
        v[it] = col <= r ? load_shared_global(&at(c0 + r, c0 + col)) : T(0);
      else
        v[it] = r == col ? T(1) : T(0);
    }
#pragma unroll
    for (int it = 0; it < PER; ++it) {
      int r, col;
      staged_elem(c, it, r, col);
      c.s[r * LD + col] = v[it];
    }
    member.team_barrier();
    if (c.tid < TS) c.rdiag[c.tid] = T(1) / c.s[c.tid * LD + c.tid];
    member.team_barrier();
  }

  // X L^T = acc with L (lower, unit stride LD) and 1 / diag(L) in scratch; x_k of a row comes
  // from the thread with tc == k % 16 of the same half-warp. The 16 steps of a column block
  // are a loop, not unrolled: the fully unrolled 64 steps made the kernel's code larger than
  // the instruction cache, and the chain's single team then waited on instruction fetches.
  __device__ void solve(const Ctx& c, T (&acc)[4][4]) const {
    const int half = c.lane & 16;
#pragma unroll
    for (int bo = 0; bo < 4; ++bo) {
#pragma unroll 2
      for (int o = 0; o < 16; ++o) {
        const int k = 16 * bo + o;
        const T rk = c.rdiag[k];
        T xk[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          xk[x] = __shfl_sync(0xffffffffu, acc[x][bo] * rk, half | o);
          if (c.tc == o) acc[x][bo] = xk[x];
        }
        if (c.tc > o) {  // the rest of this block
          const T l = c.s[(c.tc + 16 * bo) * LD + k];
#pragma unroll
          for (int x = 0; x < 4; ++x) acc[x][bo] -= xk[x] * l;
        }
#pragma unroll
        for (int y = bo + 1; y < 4; ++y) {  // the blocks to the right
          const T l = c.s[(c.tc + 16 * y) * LD + k];
#pragma unroll
          for (int x = 0; x < 4; ++x) acc[x][y] -= xk[x] * l;
        }
      }
    }
  }

  // The chain's factored diagonal tile (in scratch, already written to the matrix) turned into
  // the operands of solve_blocks: the inverse of each 16 x 16 diagonal block L(b, b) in its
  // strict upper triangle, transposed (its diagonal is rdiag), and each block below the
  // diagonal blocks replaced by W(y, b) = L(y, b) inv(L(b, b)). Then the solve has four
  // dependent steps instead of 64 (MAGMA's trsm inverts its diagonal blocks likewise).
  template <class Member>
  __device__ void invert_blocks(const Member& member, const Ctx& c) const {
    T* const s = c.s;
    if (c.tid < 64) {  // a half-warp per diagonal block, a lane per column m of its inverse
      const int o = 16 * (c.tid >> 4), m = c.tid & 15;
      T y[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) y[i] = i == m ? T(1) : T(0);
#pragma unroll
      for (int k = 0; k < 16; ++k) {  // column-oriented: each step's updates independent
        y[k] *= c.rdiag[o + k];
#pragma unroll
        for (int i = k + 1; i < 16; ++i) y[i] -= s[(o + i) * LD + o + k] * y[k];
      }
#pragma unroll
      for (int i = 1; i < 16; ++i)
        if (i > m) s[(o + m) * LD + o + i] = y[i];
    }
    member.team_barrier();
    if (chain_mma_on()) {
      w_blocks_mma(member, c);
      return;
    }
    T w[6];  // thread (tr, tc): W(y, b)(tr, tc) for the six blocks y > b
#pragma unroll
    for (int b = 0, q = 0; b < 3; ++b)
#pragma unroll
      for (int y = b + 1; y < 4; ++y, ++q) {
        T t = T(0);
#pragma unroll
        for (int k = 0; k < 16; ++k) {
          t += s[(16 * y + c.tr) * LD + 16 * b + k] * inv_block(c, b, k, c.tc);
        }
        w[q] = t;
      }
    member.team_barrier();
#pragma unroll
    for (int b = 0, q = 0; b < 3; ++b)
#pragma unroll
      for (int y = b + 1; y < 4; ++y, ++q) s[(16 * y + c.tr) * LD + 16 * b + c.tc] = w[q];
    member.team_barrier();
  }

  // invert_blocks' W(y, b) = L(y, b) inv(L(b, b)) on the FP64 tensor cores: 24 fragments of
  // 8 x 8 (six blocks of 2 x 2), three a warp; k in the order of solve_blocks_mma.
  template <class Member>
  __device__ void w_blocks_mma(const Member& member, const Ctx& c) const {
    T* const s = c.s;
    const int w = c.tid >> 5, g = c.lane >> 2, tq = c.lane & 3;
    double d[3][2];
    int at_[3];
#pragma unroll
    for (int h = 0; h < 3; ++h) {
      const int id = w + 8 * h, q = id >> 2, fr = (id >> 1) & 1, fc = id & 1;
      const int b = q < 3 ? 0 : (q < 5 ? 1 : 2), y = q < 3 ? q + 1 : (q < 5 ? q - 1 : 3);
      d[h][0] = d[h][1] = 0;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int m = 4 * tq + ks;
        dmma(d[h], s[(16 * y + 8 * fr + g) * LD + 16 * b + m], inv_block(c, b, m, 8 * fc + g));
      }
      at_[h] = (16 * y + 8 * fr + g) * LD + 16 * b + 8 * fc + 2 * tq;
    }
    member.team_barrier();  // every read of L(y, b) before it is overwritten
#pragma unroll
    for (int h = 0; h < 3; ++h) {
      s[at_[h]] = T(d[h][0]);
      s[at_[h] + 1] = T(d[h][1]);
    }
    member.team_barrier();
  }

  // inv(L(b, b))(i, k) as invert_blocks stores it: transposed in the block's strict upper
  // triangle, the diagonal in rdiag.
  __device__ T inv_block(const Ctx& c, const int b, const int i, const int k) const {
    const T u = c.s[(16 * b + k) * LD + 16 * b + i];  // unconditional: no branch in the loop
    return i > k ? u : (i == k ? c.rdiag[16 * b + i] : T(0));
  }

  // X L^T = acc with scratch as invert_blocks leaves it, by column blocks b: X(b) = C(b)
  // inv(L(b, b))^T and C(y) -= C(b) W(y, b)^T for y > b. The 16 steps inside a block are
  // independent; C(b)'s rows are exchanged through xb inside each half-warp (a thread's rows
  // tr + 16x belong to its half-warp), so a __syncwarp orders them.
  __device__ void solve_blocks(const Ctx& c, T (&acc)[4][4]) const {
    const T* const s = c.s;
    T* const xb = c.xb;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
#pragma unroll
      for (int x = 0; x < 4; ++x) xb[(c.tr + 16 * x) * XLD + c.tc] = acc[x][b];
      __syncwarp();
      T xn[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll 4
      for (int m = 0; m < 16; ++m) {
        const T d = inv_block(c, b, c.tc, m);
        T cm[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          cm[x] = xb[(c.tr + 16 * x) * XLD + m];
          xn[x] += cm[x] * d;
        }
#pragma unroll
        for (int y = b + 1; y < 4; ++y) {
          const T wv = s[(16 * y + c.tc) * LD + 16 * b + m];
#pragma unroll
          for (int x = 0; x < 4; ++x) acc[x][y] -= cm[x] * wv;
        }
      }
#pragma unroll
      for (int x = 0; x < 4; ++x) acc[x][b] = xn[x];
      __syncwarp();  // this block's reads of xb before the next block's writes
    }
  }

  // Whether this build and launch run the chain's solve, SYRK and W blocks on the FP64 tensor
  // cores.
  __device__ bool chain_mma_on() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return chain_mma;
#else
    return false;
#endif
  }
  __device__ int factor_mma_on() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return chain_mma ? factor_mma : 0;
#else
    return 0;
#endif
  }

  // d += a b, one m8n8k4 DMMA: lane (g, tq) = (lane / 4, lane % 4) gives A(g, tq) and B(tq, g)
  // and holds D(g, 2 tq + e) in d[e]. (On sm_90 m16n8k4 has twice its flop rate, but 16-row
  // fragments made this kernel spill: docs/performance_log.md, issue 15 session 18.)
  __device__ static void dmma(double (&d)[2], const double a, const double b) {
    dmma_8x8x4(d[0], d[1], a, b);
  }

  // Tile (i, i - 1) for solve_blocks_mma: cf[f][e] = C(8 w + g, 8 f + 2 tq + e) of warp w,
  // from its partial (store_part's order) or from the matrix.
  __device__ void load_sub_mma(const Ctx& c, double (&cf)[8][2], const int i,
                               const bool parts) const {
    const int r = 8 * (c.tid >> 5) + (c.lane >> 2), tq = c.lane & 3;
    if (parts) {
      const T* const q = part + 2 * std::size_t(i) * (TS * TS);
#pragma unroll
      for (int f = 0; f < 8; ++f)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = 8 * f + 2 * tq + e;
          cf[f][e] = load_shared_global(
              q + (4 * (r >> 4) + (col >> 4)) * kThreads + (r & 15) * 16 + (col & 15));
        }
    } else {
      const int r0 = i * TS, c0 = (i - 1) * TS, mi = imin(TS, n - r0);
#pragma unroll
      for (int f = 0; f < 8; ++f)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          cf[f][e] = r < mi ? load_shared_global(&at(r0 + r, c0 + 8 * f + 2 * tq + e)) : T(0);
    }
  }

  // A tile task's tile (the 4 x 4 register layout) in load_sub_mma's order, through scratch.
  template <class Member>
  __device__ void tile_to_frags(const Member& member, const Ctx& c, const T (&acc)[4][4],
                                double (&cf)[8][2]) const {
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y < 4; ++y) c.s[(c.tr + 16 * x) * LD + c.tc + 16 * y] = acc[x][y];
    member.team_barrier();
    const int r = 8 * (c.tid >> 5) + (c.lane >> 2), tq = c.lane & 3;
#pragma unroll
    for (int f = 0; f < 8; ++f)
#pragma unroll
      for (int e = 0; e < 2; ++e) cf[f][e] = c.s[r * LD + 8 * f + 2 * tq + e];
    member.team_barrier();
  }
  // The chain's solved tile (i, j) to the matrix from solve_blocks_mma's fragments: a store
  // instruction writes 8 rows of 4 columns, 8 whole sectors when rows have unit stride (as
  // many as store_staged's coalesced rows), without reading the tile back from scratch.
  __device__ void store_frags(const Ctx& c, const double (&cf)[8][2], const int i,
                              const int j) const {
    const int r = 8 * (c.tid >> 5) + (c.lane >> 2), tq = c.lane & 3;
    const int r0 = i * TS, c0 = j * TS;
    if (r >= n - r0) return;
#pragma unroll
    for (int f = 0; f < 8; ++f)
#pragma unroll
      for (int e = 0; e < 2; ++e) at(r0 + r, c0 + 8 * f + 2 * tq + e) = T(cf[f][e]);
  }
  // solve_blocks_mma's result into scratch as a row-major tile (for store_staged).
  __device__ void frags_to_scratch(const Ctx& c, const double (&cf)[8][2]) const {
    const int r = 8 * (c.tid >> 5) + (c.lane >> 2), tq = c.lane & 3;
#pragma unroll
    for (int f = 0; f < 8; ++f)
#pragma unroll
      for (int e = 0; e < 2; ++e) c.s[r * LD + 8 * f + 2 * tq + e] = T(cf[f][e]);
  }

  // solve_blocks on the FP64 tensor cores. Warp w holds rows 8 w + [0, 8) of C as eight 8 x 8
  // accumulator fragments, so no product leaves the warp: C(b) becomes the A operand through
  // the warp's rows of xb, and X(b) = C(b) inv(L(b, b))^T, C(y) -= C(b) W(y, b)^T are 4 DMMAs
  // per fragment. Lane (g, tq)'s k at step ks is m = 4 tq + ks, which puts the 16 addresses
  // of a half-warp's operand load in 16 banks (LD and XLD are 1 mod 16).
  __device__ void solve_blocks_mma(const Ctx& c, double (&cf)[8][2]) const {
    const T* const s = c.s;
    const int g = c.lane >> 2, tq = c.lane & 3;
    T* const xr = c.xb + (8 * (c.tid >> 5) + g) * XLD;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
#pragma unroll
      for (int f = 0; f < 2; ++f)
#pragma unroll
        for (int e = 0; e < 2; ++e) xr[8 * f + 2 * tq + e] = T(cf[2 * b + f][e]);
      __syncwarp();
      double a[4];
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) a[ks] = xr[4 * tq + ks];
      __syncwarp();  // this block's reads of xb before the next block's writes
      double xn[2][2] = {{0, 0}, {0, 0}};
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int m = 4 * tq + ks;
#pragma unroll
        for (int f = 0; f < 2; ++f) dmma(xn[f], a[ks], inv_block(c, b, 8 * f + g, m));
#pragma unroll
        for (int y = b + 1; y < 4; ++y)
#pragma unroll
          for (int f = 0; f < 2; ++f)
            dmma(cf[2 * y + f], -a[ks], s[(16 * y + 8 * f + g) * LD + 16 * b + m]);
      }
#pragma unroll
      for (int f = 0; f < 2; ++f)
#pragma unroll
        for (int e = 0; e < 2; ++e) cf[2 * b + f][e] = xn[f][e];
    }
  }

  // acc -= X X^T on its lower triangle, X the solved tile in scratch, on the FP64 tensor cores:
  // 8 x 8 fragments (R, C), C <= R; warp w < 4 takes fragment row w and warp w + 4 row 7 - w,
  // 9 of the 36 fragments for each pair on one scheduler. k in the order of solve_blocks_mma
  // (conflict-free loads). The sums go through scratch (X is read by then) into acc.
  template <class Member>
  __device__ void syrk_mma(const Member& member, const Ctx& c, T (&acc)[4][4]) const {
    T* const s = c.s;
    const int w = c.tid >> 5, g = c.lane >> 2, tq = c.lane & 3;
    const int R = w < 4 ? w : 11 - w;
    double d[8][2];
#pragma unroll
    for (int f = 0; f < 8; ++f) d[f][0] = d[f][1] = 0;
#pragma unroll 4
    for (int st = 0; st < 16; ++st) {
      const int q = 16 * (st >> 2) + 4 * tq + (st & 3);
      const double a = s[(8 * R + g) * LD + q];
#pragma unroll
      for (int f = 0; f < 8; ++f)
        if (f <= R) dmma(d[f], a, s[(8 * f + g) * LD + q]);
    }
    member.team_barrier();  // every warp's reads of X
#pragma unroll
    for (int f = 0; f < 8; ++f)
      if (f <= R)
#pragma unroll
        for (int e = 0; e < 2; ++e) s[(8 * R + g) * LD + 8 * f + 2 * tq + e] = T(d[f][e]);
    member.team_barrier();
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y <= x; ++y) {
        const int r = c.tr + 16 * x, col = c.tc + 16 * y;
        if (col <= r) acc[x][y] -= s[r * LD + col];
      }
  }

  // syrk_mma on m16n8k4 (twice m8n8k4's rate on sm_90): 16-row blocks Rb and their 8-column
  // fragments F <= 2 Rb + 1, 20 in all, five per scheduler (warps w and w + 4): warps 0 / 1
  // take Rb 3's F 0-3 / 4-7, 4 / 5 Rb 0's F 0 / 1, 2 / 3 Rb 2's F 0-2 / 3-5, 6 / 7 Rb 1's
  // F 0-1 / 2-3. Only the lower triangle is stored.
  template <class Member>
  __device__ void syrk_mma16(const Member& member, const Ctx& c, T (&acc)[4][4]) const {
    T* const s = c.s;
    int w = c.tid >> 5, lane = c.lane;
    asm volatile("" : "+r"(w), "+r"(lane));  // as in panel_update_mma (without: spills)
    const int g = lane >> 2, tq = lane & 3;
    const int R = w < 2 ? 3 : w < 4 ? 2 : w < 6 ? 0 : 1;
    const int F0 = w < 2 ? 4 * w : w < 4 ? 3 * (w - 2) : w < 6 ? w - 4 : 2 * (w - 6);
    const int nf = w < 2 ? 4 : w < 4 ? 3 : w < 6 ? 1 : 2;
    double d[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) d[i][e] = 0;
#pragma unroll 4
    for (int st = 0; st < 16; ++st) {
      const int q = 16 * (st >> 2) + 4 * tq + (st & 3);
      const double a0 = s[(16 * R + g) * LD + q], a1 = s[(16 * R + 8 + g) * LD + q];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (i < nf) dmma_16x8x4(d[i][0], d[i][1], d[i][2], d[i][3], a0, a1, s[(8 * (F0 + i) + g) * LD + q]);
    }
    member.team_barrier();  // every warp's reads of X
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (i < nf)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int r = 16 * R + 8 * h + g, col = 8 * (F0 + i) + 2 * tq + e;
            if (col <= r) s[r * LD + col] = T(d[i][2 * h + e]);
          }
    member.team_barrier();
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y <= x; ++y) {
        const int r = c.tr + 16 * x, col = c.tc + 16 * y;
        if (col <= r) acc[x][y] -= s[r * LD + col];
      }
  }

  // The critical-path chain over the launch's tile columns (see above). The factor of the
  // last diagonal tile stays in scratch from one column to the next.
  template <class Member>
  __device__ void chain(const Member& member, const Ctx& c) const {
    for (int j = j0; j < j1; ++j) {
      const unsigned long long t0 = trace ? flow_clock() : 0;
      T acc[4][4];
      unsigned long long t1 = t0, tw = t0;
      long long sc[2] = {0, 0};  // trace: cycles of the solve and of its stores issued
      long long sc_syrk = 0;
      if (j > j0) {
        // Only the chain writes info during a CUDA launch, and it returns on its own failure,
        // so info need not be read again once the partials are seen (a round trip a column).
        if (c.tid == 0) c.sh[1] = j - 1 > j0 ? wait(pflag(j, j - 1), pflag(j, j), c.want, false) : 1;
        member.team_barrier();
        // The previous diagonal tile, held back for its inverse's stores (the barrier above
        // ordered every thread's), published by a thread idle until the solve.
        if (c.tid == kLateThread && inv_below(j - 1)) publish_column(c, j - 1, true);
        if (c.sh[1] == 0) return;
        if (trace) tw = flow_clock();
        // Tile (j, j - 1): solve against L(j-1, j-1), still in scratch; then through scratch
        // (where its SYRK update of the diagonal tile reads it) to the matrix. Scratch is
        // overwritten once every warp's solve has read L(j - 1, j - 1) there.
        const bool parts = j - 1 > j0;  // partial updates were applied
        long long q0 = 0, q1 = 0;
        if (chain_mma_on()) {
          double cf[8][2];
          load_sub_mma(c, cf, j, parts);
          if (parts)
            load_part(c, acc, j, true);
          else
            load_tile(c, acc, j, j, true);
          if (trace) q0 = clock64();
          solve_blocks_mma(c, cf);
          if (trace) q1 = clock64();
          member.team_barrier();
          frags_to_scratch(c, cf);
          store_frags(c, cf, j, j - 1);
        } else {
          T sub[4][4];
          if (parts) {
            load_part(c, sub, j, false);
            load_part(c, acc, j, true);
          } else {
            load_tile(c, sub, j, j - 1, false);
            load_tile(c, acc, j, j, true);
          }
          if (trace) q0 = clock64();
          solve_blocks(c, sub);
          if (trace) q1 = clock64();
          member.team_barrier();
#pragma unroll
          for (int x = 0; x < 4; ++x)
#pragma unroll
            for (int y = 0; y < 4; ++y) c.s[(c.tr + 16 * x) * LD + c.tc + 16 * y] = sub[x][y];
        }
        member.team_barrier();
        // Its stores are issued here (with DMMA above, from the fragments) and published during
        // factor_diag (kLateThread, once the SYRK has run): the fence then finds them drained,
        // where a barrier and a fence right here held the whole team (2-4 % of the time at
        // n = 500-2048; performance_log, session 27).
        if (!chain_mma_on()) store_staged(c, j * TS, (j - 1) * TS, imin(TS, n - j * TS), TS, false);
        if (trace) {
          t1 = flow_clock();
          sc[0] = q1 - q0;
          sc[1] = clock64() - q1;
        }
        const long long y0 = trace ? clock64() : 0;
        if (chain_mma_on() && syrk16) {
          syrk_mma16(member, c, acc);
        } else if (chain_mma_on()) {
          syrk_mma(member, c, acc);
        } else {
#pragma unroll 4
          for (int q = 0; q < TS; ++q) {
            T av[4], bv[4];
#pragma unroll
            for (int x = 0; x < 4; ++x) av[x] = c.s[(c.tr + 16 * x) * LD + q];
#pragma unroll
            for (int y = 0; y < 4; ++y) bv[y] = c.s[(c.tc + 16 * y) * LD + q];
#pragma unroll
            for (int x = 0; x < 4; ++x)
#pragma unroll
              for (int y = 0; y <= x; ++y) acc[x][y] -= av[x] * bv[y];  // lower blocks only
          }
        }
        member.team_barrier();
        if (trace) sc_syrk = clock64() - y0;
      } else {
        load_tile(c, acc, j, j, true);
      }
      const unsigned long long t2 = trace ? flow_clock() : 0;
      const long long cy0 = trace ? clock64() : 0;
      const int c0 = j * TS, mj = imin(TS, n - c0);
      long long fc[4] = {0, 0, 0, 0};
      // The tile below published by kLateThread, idle in the factor's first panel.
      const bool good = factor_diag(member, c, acc, c0, mj, fc, [&] {
        if (j > j0 && c.tid == kLateThread) publish(flag(j, j - 1), c.want);
      });
      const long long cy1 = trace ? clock64() : 0;
      // The diagonal tile is published at once when nothing follows it in this launch, else
      // by kLateThread beside invert_blocks' first part (as the tile below, above), after the
      // barrier that follows rdiag (factor_diag's last barrier already ordered its scratch);
      // when the tiles below solve by its inverted blocks (held), after their stores: by
      // kLateThread after the next column's first barrier, or at once in the last column.
      const bool late = good && chain_next(j);
      const bool held = good && inv_below(j);  // published after its inverse is stored
      if (!late && !held) {
        member.team_barrier();
        if (c.tid == 0) publish_column(c, j, good);
      }
      if (c.tid == 0 && trace) {
        FlowTraceRec& rec = trace[ntasks + (j - j0)];
        rec.t_take = t0;
        rec.t_ready = t1;
        rec.t_done = flow_clock();
        rec.t_factor = t2;
        rec.t_wait = tw;
        rec.sub_cycles[0] = sc[0];
        rec.sub_cycles[1] = sc[1];
        rec.cycles = cy1 - cy0;
        for (int q = 0; q < 4; ++q) rec.fac_cycles[q] = fc[q];
        rec.i = rec.j = j;
        rec.sm = flow_sm();
        rec.kind = kChain;
        rec.inv_cycles = 0;
        rec.syrk_cycles = sc_syrk;
      }
      if (!good) return;
      if (c.tid < TS) c.rdiag[c.tid] = T(1) / c.s[c.tid * LD + c.tid];
      member.team_barrier();
      if (late || held) {
        if (c.tid == kLateThread && !held) publish_column(c, j, true);
        const long long v0 = trace ? clock64() : 0;
        invert_blocks(member, c);
        if (held) store_inverse(c, j);
        if (c.tid == 0 && trace) trace[ntasks + (j - j0)].inv_cycles = clock64() - v0;
        if (held && !late) {  // the launch's last column: nothing follows to publish it
          member.team_barrier();
          if (c.tid == 0) publish_column(c, j, true);
        }
      }
    }
  }

  // Whether the tile tasks of column j solve by the chain's inverted blocks: the build and
  // launch have them, and tiles below (j, j) that the chain does not take exist.
  __device__ bool inv_below(const int j) const {
    if constexpr (!kInvRole) return false;
    return inv != nullptr && chain_mma_on() && group_first_tile(j) < nt;
  }
  __device__ T* inv_slot(const int j) const {
    return inv + std::size_t(j) * kFlowInvSlot;
  }
  // Scratch as invert_blocks leaves it (rows of TS in the slot) and the reciprocal diagonal.
  __device__ void store_inverse(const Ctx& c, const int j) const {
    T* const q = inv_slot(j);
    constexpr int PER = TS * TS / kThreads;
#pragma unroll
    for (int it = 0; it < PER; ++it) {
      const int e = c.tid + it * kThreads;
      q[e] = c.s[(e / TS) * LD + e % TS];
    }
    if (c.tid < TS) q[TS * TS + c.tid] = c.rdiag[c.tid];
  }
  template <class Member>
  __device__ void stage_inverse(const Member& member, const Ctx& c, const int j) const {
    const T* const q = inv_slot(j);
    constexpr int PER = TS * TS / kThreads;
    T v[PER];
#pragma unroll
    for (int it = 0; it < PER; ++it) v[it] = load_shared_global(q + c.tid + it * kThreads);
    const T r = c.tid < TS ? load_shared_global(q + TS * TS + c.tid) : T(0);
#pragma unroll
    for (int it = 0; it < PER; ++it) {
      const int e = c.tid + it * kThreads;
      c.s[(e / TS) * LD + e % TS] = v[it];
    }
    if (c.tid < TS) c.rdiag[c.tid] = r;
    member.team_barrier();
  }

  // Flag of the diagonal tile (j, j); then, when the launch asks (`cols`) and the tile
  // factored, its column's signal: tile column j is final from the launch's first row to its
  // diagonal (the tiles left of it in tile row j were published before their partial updates
  // reached the chain; the fence before flag(j, j) ordered the column's stores before both).
  __device__ void publish_column(const Ctx& c, const int j, const bool good) const {
    publish(flag(j, j), c.want);
    if (good && cols) *(volatile unsigned*)(cols + j) = 1u;
  }

  // Diagonal tile: the updated tile goes through scratch; four panels of 16 columns, each
  // factored in registers with shuffles by the warps that hold its rows (see below), then the
  // columns to its right updated (panel_update_mma, or panel_update by FFMA). Leaves the
  // factor (identity past mj) in scratch and writes it to the matrix (on a failure the columns
  // before the failing one; false, info written). `staged()` runs on every thread once the
  // tile is in scratch and the team has met (stores the caller issued before the call are then
  // complete).
  template <class Member, class Staged>
  __device__ bool factor_diag(const Member& member, const Ctx& c, const T (&acc)[4][4],
                              const int c0, const int mj, long long (&fc)[4],
                              const Staged& staged) const {
    T* const s = c.s;
    const int lane = c.lane;
#pragma unroll
    for (int x = 0; x < 4; ++x)
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        const int r = c.tr + 16 * x, col = c.tc + 16 * y;
        if (col <= r) s[r * LD + col] = (r < mj) ? acc[x][y] : (r == col ? T(1) : T(0));
      }
    member.team_barrier();
    staged();
#pragma unroll 1
    for (int p = 0; p < 4; ++p) {
      const int cp = 16 * p;
      // Warps 0 .. nw-1 each hold the panel's diagonal block in lanes 0-15 (each computes the
      // same pivots; warp 0 stores them) and 16 of the rows below in lanes 16-31: a lane keeps
      // one row, half the instructions per pivot of one warp holding all 64 rows.
      const int nw = p < 3 ? 3 - p : 1;
      const bool in_panel = c.tid < 32 * nw;
      const int w = c.tid >> 5;
      const int row = lane < 16 ? cp + lane : cp + 16 * w + lane;
      T x[16];
      int f = 0;
      long long k0 = 0, k1 = 0, k2 = 0;  // trace: where warp 0's time goes
      if (in_panel) {
        if (trace) k0 = clock64();
        const auto load = [&] {
#pragma unroll
          for (int q = 0; q < 16; ++q)
            x[q] = (row < TS && (lane >= 16 || q <= lane)) ? s[row * LD + cp + q] : T(0);
        };
        load();
        if (trace) k1 = clock64();
        // xb is free in the factor. A pivot the fast panel cannot take (failing, denormal):
        // the panel again from scratch (unchanged by it), each pivot tested.
        f = warp_panel<true>(lane, x, s + cp * LD + cp, c.xb + 128 * w);
        if (f < 0) {
          load();
          f = warp_panel<false>(lane, x, s + cp * LD + cp, c.xb + 128 * w);
        }
        if (trace) k2 = clock64();
      }
      member.team_barrier();  // every warp's loads of the diagonal block before warp 0 stores it
      if (in_panel) {
        const bool mine = row < TS && (lane >= 16 || w == 0);  // rows this lane stores
        const int done = f ? f - 1 : 16;                      // finished columns of the panel
#pragma unroll
        for (int q = 0; q < 16; ++q)
          if (q < done && mine && (lane >= 16 || q <= lane)) s[row * LD + cp + q] = x[q];
        if (c.tid == 0) {
          c.sh[3] = f ? cp + f : 0;
          if (f) *(volatile int*)info = c0 + cp + f;
          if (trace) {
            const long long k3 = clock64();
            fc[0] += k1 - k0;
            fc[1] += k2 - k1;
            fc[2] += k3 - k2;
          }
        }
      }
      member.team_barrier();
      if (c.sh[3] != 0) {
        store_staged(c, c0, c0, mj, c.sh[3] - 1, true);
        return false;
      }
      if (p == 3) break;
      const long long u0 = trace ? clock64() : 0;
      // Columns right of the panel (see panel_update); p is a template argument so that only
      // the blocks right of and below the panel are computed (6, 3, 1 of 16).
      if (p == 0)
        panel_update_at<0>(c);
      else if (p == 1)
        panel_update_at<1>(c);
      else
        panel_update_at<2>(c);
      member.team_barrier();
      if (trace && c.tid == 0) fc[3] += clock64() - u0;
    }
    store_staged(c, c0, c0, mj, TS, true);
    return true;
  }

  // The update after panel P by the launch's pick (factor_mma_on).
  template <int P>
  __device__ void panel_update_at(const Ctx& c) const {
    const int m = factor_mma_on();
    if (m == 3)
      panel_update_mma16<P>(c);
    else if (m == 2)
      panel_update_mma<P, 4>(c);
    else if (m)
      panel_update_mma<P, 8>(c);
    else
      panel_update<P>(c);
  }

  // s(r, col) -= sum_q L(r, cp + q) L(col, cp + q) for r >= col >= cp + 16, cp = 16 P; thread
  // (tr, tc) takes rows tr + 16x, columns tc + 16y as in the tile layout, x >= y > P, the
  // operands loaded once per q for its blocks. It reads the panel's columns and writes only
  // the columns right of them, so no barrier parts its reads from its stores.
  template <int P>
  __device__ void panel_update(const Ctx& c) const {
    T* const s = c.s;
    constexpr int cp = 16 * P;
    T v[4][4];
#pragma unroll
    for (int x = P + 1; x < 4; ++x)
#pragma unroll
      for (int y = P + 1; y <= x; ++y) v[x][y] = s[(c.tr + 16 * x) * LD + c.tc + 16 * y];
#pragma unroll 4
    for (int q = 0; q < 16; ++q) {
      T av[4];
#pragma unroll
      for (int x = P + 1; x < 4; ++x) av[x] = s[(c.tr + 16 * x) * LD + cp + q];
#pragma unroll
      for (int y = P + 1; y < 4; ++y) {
        const T bv = s[(c.tc + 16 * y) * LD + cp + q];
#pragma unroll
        for (int x = y; x < 4; ++x) v[x][y] -= av[x] * bv;
      }
    }
#pragma unroll
    for (int x = P + 1; x < 4; ++x)
#pragma unroll
      for (int y = P + 1; y <= x; ++y) {
        const int r = c.tr + 16 * x, col = c.tc + 16 * y;
        if (col <= r) s[r * LD + col] = v[x][y];
      }
  }
  // panel_update on the FP64 tensor cores: the lower 8 x 8 fragments (R, C) of the trailing
  // block (21, 10, 3 for P = 0, 1, 2), fragment f to warp f mod NW, k = 16 in 4 DMMA steps in
  // syrk_mma's order (conflict-free loads). Its FFMA form was 3.4k cycles of the chain's
  // 36k-cycle step at n = 1000 in double (H200, session 42).
  template <int P, int NW>
  __device__ void panel_update_mma(const Ctx& c) const {
    T* const s = c.s;
    constexpr int cp = 16 * P, b0 = cp + 16, m8 = (TS - b0) / 8, nf = m8 * (m8 + 1) / 2;
    constexpr int kMax = (nf + NW - 1) / NW;
    int w = c.tid >> 5, lane = c.lane;
    // Opaque here: the addresses below are the same in every panel, and hoisted out of
    // factor_diag's panel loop they held ~50 registers across the pivots (spills).
    asm volatile("" : "+r"(w), "+r"(lane));
    const int g = lane >> 2, tq = lane & 3;
    if (w >= NW) return;
    T* dst[kMax];        // this lane's D(g, 2 tq) in scratch
    const T* pa[kMax];   // its A row in the panel, at k = 4 tq
    const T* pb[kMax];   // its B row
    int lim[kMax];       // D(g, 2 tq + e) is on or below the diagonal for e <= lim
    double d[kMax][2] = {};
#pragma unroll
    for (int i = 0; i < kMax; ++i) {
      int R = 0, C = w + NW * i;  // fragment number -> (R, C), row by row
#pragma unroll
      for (int r = 0; r + 1 < m8; ++r)
        if (C > R) {
          C -= R + 1;
          ++R;
        }
      dst[i] = s + (b0 + 8 * R + g) * LD + b0 + 8 * C + 2 * tq;
      pa[i] = s + (b0 + 8 * R + g) * LD + cp + 4 * tq;
      pb[i] = s + (b0 + 8 * C + g) * LD + cp + 4 * tq;
      lim[i] = 8 * (R - C) + g - 2 * tq;
      if (w + NW * i < nf)
#pragma unroll
        for (int e = 0; e < 2; ++e) d[i][e] = dst[i][e];
    }
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int i = 0; i < kMax; ++i)
        if (w + NW * i < nf) dmma(d[i], -double(pa[i][ks]), pb[i][ks]);
#pragma unroll
    for (int i = 0; i < kMax; ++i)
      if (w + NW * i < nf)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (e <= lim[i]) dst[i][e] = T(d[i][e]);
  }

  // panel_update_mma on m16n8k4 (twice m8n8k4's rate on sm_90): the trailing block's 16-row
  // blocks Rb and their 8-column fragments F <= 2 Rb + 1 (12, 6, 2 for P = 0, 1, 2; the
  // diagonal blocks' upper halves computed and not stored), fragment f to warp f mod 8.
  template <int P>
  __device__ void panel_update_mma16(const Ctx& c) const {
    T* const s = c.s;
    constexpr int cp = 16 * P, b0 = cp + 16, m16 = (TS - b0) / 16, nf = m16 * (m16 + 1);
    constexpr int kMax = (nf + 7) / 8;
    int w = c.tid >> 5, lane = c.lane;
    asm volatile("" : "+r"(w), "+r"(lane));  // as in panel_update_mma
    const int g = lane >> 2, tq = lane & 3;
    T* dst[kMax];       // this lane's D(g, 2 tq) of the fragment's upper 8 rows in scratch
    const T* pa[kMax];  // its A row (the upper 8), at k = 4 tq
    const T* pb[kMax];  // its B row
    int lim[kMax];      // D(g + 8 h, 2 tq + e) is on or below the diagonal for e <= lim + 8 h
    double d[kMax][4] = {};
#pragma unroll
    for (int i = 0; i < kMax; ++i) {
      int R = 0, F = w + 8 * i;  // fragment number -> (R, F), row by row
#pragma unroll
      for (int r = 0; r + 1 < m16; ++r)
        if (F >= 2 * R + 2) {
          F -= 2 * R + 2;
          ++R;
        }
      dst[i] = s + (b0 + 16 * R + g) * LD + b0 + 8 * F + 2 * tq;
      pa[i] = s + (b0 + 16 * R + g) * LD + cp + 4 * tq;
      pb[i] = s + (b0 + 8 * F + g) * LD + cp + 4 * tq;
      lim[i] = 16 * R - 8 * F + g - 2 * tq;
      if (w + 8 * i < nf)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) d[i][2 * h + e] = e <= lim[i] + 8 * h ? dst[i][8 * h * LD + e] : T(0);
    }
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int i = 0; i < kMax; ++i)
        if (w + 8 * i < nf)
          dmma_16x8x4(d[i][0], d[i][1], d[i][2], d[i][3], -double(pa[i][ks]),
                      -double(pa[i][8 * LD + ks]), pb[i][ks]);
#pragma unroll
    for (int i = 0; i < kMax; ++i)
      if (w + 8 * i < nf)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (e <= lim[i] + 8 * h) dst[i][8 * h * LD + e] = T(d[i][2 * h + e]);
  }

  // The staged tile in scratch to the matrix at (r0, c0): rows < mi, columns < ncols, on or
  // below the diagonal if lower; by the whole team, coalesced along the unit stride. Warp 0
  // once wrote each finished panel of the diagonal tile itself, one strided column per store
  // while the other warps waited (32 % of the factor's cycles), and the chain stored the solved
  // tile below from the 4 x 4 register layout (16 scattered rows per store, ~3.7k cycles);
  // docs/performance_log.md, issue 15.
  __device__ void store_staged(const Ctx& c, const int r0, const int c0, const int mi,
                               const int ncols, const bool lower) const {
    constexpr int PER = TS * TS / kThreads;
#pragma unroll
    for (int it = 0; it < PER; ++it) {
      int r, col;
      staged_elem(c, it, r, col);
      if (col < ncols && (!lower || col <= r) && r < mi) at(r0 + r, c0 + col) = c.s[r * LD + col];
    }
  }

  // A 16-column panel held by a warp, a row per lane: lanes 0-15 hold the panel's diagonal
  // block (zero above it), lanes 16-31 rows below it. By two 8-column halves: every lane reads
  // the half's 8 x 8 diagonal block (from the tile for the first half, from the warp's buffer
  // e for the second) and factors it in its own registers, then solves its row against it:
  // no shuffle between pivots (it was ~270 cycles per pivot with a shuffle broadcast). The
  // solve applies the half's columns in the factor's order, so lanes 0-15 reproduce the
  // register factor's off-diagonal entries bit for bit.
  //
  // Fast (the default): the chain from one pivot d to the next is the hardware's seed r0 of
  // 1 / sqrt(d) (MUFU, ~19 cycles in double, where rsqrt() takes ~66 with its range check and
  // branch), d r0, e = 1 - d r0^2 and c - (b r0)^2 (1 + e + e^2): ~51 cycles in double. The
  // full-precision 1 / sqrt(d) = r0 (1 + e/2 + 3e^2/8) (float: r0 (1 + e/2)) scales the column
  // off that chain; the diagonal entry sqrt(d) is d times it. No pivot is tested on the way:
  // the tests sat on the chain (a warp issues in order) and cost ~500 of ~2500 cycles a panel
  // (H200, issue 15 session 46). A pivot that is not positive and finite, or below the least
  // normal number (which the seed flushes), makes some 1 / sqrt(d) NaN or infinite, so their
  // sum is tested once at the end: -1, and the caller runs the panel again exactly (Fast =
  // false: rsqrt(), each pivot tested). Exact returns the 1-based failing column of the panel,
  // or 0 (columns before it finished).
  template <bool Fast>
  __device__ static int warp_panel(const int lane, T (&x)[16], const T* const d0, T* const e) {
    constexpr bool dbl = sizeof(T) == 8;
    T dp = T(1), ep = T(0), pp = T(0);  // this lane's pivot (lanes 0-15): d (Fast: d r0), e, p
    T rsum = T(0);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const T* const blk = h == 0 ? d0 : e + 64;
      const int ld = h == 0 ? LD : 8;
      T a[8][8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j <= i; ++j) a[i][j] = blk[i * ld + j];
      T r[8];
      int fail = 0;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const T d = a[k][k];
        T next = T(0);  // Fast: the next pivot
        if (Fast) {
          const T r0 = rsqrt_seed(d);
          const T dr = d * r0;
          const T ek = fma(-dr, r0, T(1));
          const T pk = dbl ? fma(ek, T(0.375), T(0.5)) : T(0.5);
          r[k] = fma(r0 * ek, pk, r0);
          rsum += r[k];
          if (lane == 8 * h + k) {
            dp = dr;
            ep = ek;
            pp = pk;
          }
          if (k < 7) {  // c - b^2 / d with 1 / d = r0^2 (1 + e + e^2 + ...), |e| < 2^-19
            const T q = a[k + 1][k] * r0;
            const T u = fma(-q, q, a[k + 1][k + 1]);
            next = fma(-(q * q), dbl ? fma(ek, ek, ek) : ek, u);
          }
        } else {  // the failure test is off the chain: checked after
          if (fail == 0 && !usable_pivot(d)) fail = k + 1;
          if (lane == 8 * h + k) dp = d;
          r[k] = rsqrt(d);
        }
#pragma unroll
        for (int i = k + 1; i < 8; ++i) a[i][k] *= r[k];
#pragma unroll
        for (int i = k + 1; i < 8; ++i)
#pragma unroll
          for (int j = k + 1; j <= i; ++j) {
            if (Fast && i == k + 1 && j == k + 1)
              a[i][j] = next;
            else
              a[i][j] -= a[i][k] * a[j][k];
          }
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {  // columns before a failure come out right regardless
        x[8 * h + k] *= r[k];
#pragma unroll
        for (int j = k + 1; j < 8; ++j) x[8 * h + j] -= x[8 * h + k] * a[j][k];
      }
      // A failure is uniform over the warp (same operands, same instructions).
      if (fail || h == 1) {
        const T dg = Fast ? fma(dp * ep, pp, dp) : sqrt(dp);  // Fast: d r0 (1 + e p)
#pragma unroll
        for (int q = 0; q < 16; ++q)
          if (lane == q) x[q] = dg;
        if (Fast) return fabs(rsum) <= FloatLimits<T>::max ? 0 : -1;
        return fail ? 8 * h + fail : 0;
      }
      // Rows 8-15's first half to every lane, which then updates its second half with it;
      // rows 8-15's updated second half (the next diagonal block) back through e.
      if (lane >= 8 && lane < 16)
#pragma unroll
        for (int k = 0; k < 8; ++k) e[(lane - 8) * 8 + k] = x[k];
      __syncwarp();
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int k = 0; k < 8; ++k) x[8 + j] -= x[k] * e[j * 8 + k];
      if (lane >= 8 && lane < 16)
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (j <= lane - 8) e[64 + (lane - 8) * 8 + j] = x[8 + j];
      __syncwarp();
    }
    return 0;
  }
#endif
};

template <class Exec>
using FlowWorkOf = FlowWork<typename Exec::memory_space>;

#ifdef KOKKOS_ENABLE_CUDA
// One workspace per CUDA stream, kept for the process (like the info words).
inline FlowWork<Kokkos::CudaSpace>& cuda_flow_work(const Kokkos::Cuda& exec) {
  return per_stream<FlowWork<Kokkos::CudaSpace>>(exec);
}
#endif


inline int flow_tiles(const int n) { return (n + kFlowTile - 1) / kFlowTile; }

inline int flow_tasks(const int nt, const int j0, const int j1) {
  int t = 0;
  for (int j = j0; j < j1; ++j) t += nt - j;
  return t;
}

// Trace records a launch may write (tasks, plus one per column of the CUDA chain).
inline int flow_trace_records(const int nt, const int j0, const int j1) {
  return flow_tasks(nt, j0, j1) + 3 * (j1 - j0) + 1;
}

// Knobs of the dataflow launches and the blocked path around them (perf_test and tests set
// them): teams of a dataflow launch that runs beside the trailing update (a lookahead panel;
// 0 = the library's choice); what runs on the FP64 tensor cores where the device has them: the
// tile updates (float's too unless float_mma = 0) and the chain's solve, SYRK and inverted
// blocks (1, the default), the tile updates only (2), nothing (0); the CUDA lookahead stream's
// priority (1: the device's highest, 0: default; read when the stream is made); the
// lookahead's own update on the lookahead stream (1) or the caller's (0); and from how many
// rows below its diagonal block a panel is split (CUDA, cuBLAS: the dataflow kernel on the
// diagonal block, TRSM below; 0: split_rows_for<T>()). Defaults measured on the H100
// (docs/performance_log.md, issue 15, sessions 23 and 24).
struct FlowKnobs : Knobs<FlowKnobs> {
  int panel_teams = 0;
  int mma = 1;
  int side_priority = 1;
  int la_side = 1;
  int split_rows = 0;
  int split_first = 2;  // the first panel: 0 never, 1 as the others, 2 when the second splits
  // A split panel's rows below: one TRSM after the diagonal block (0), or blocks of this many
  // columns solved on a third stream as the chain finishes them (a multiple of kFlowTile;
  // 256 against 0: 1.5 % at n = 10240 double, 1.2-1.8 % at 9000-10240 float; 128 in between).
  int below_cols = 256;
  // > 0: at most this many teams for every dataflow launch, beside any cap its caller gives
  // (a lookahead panel's panel_teams); tests, measurements.
  int teams = 0;
  // CUDA: the chain's kernel split from the tiles' (flow_split): -1 the default pick, 0 never,
  // 1 / 2 the tiles' kernel at one / two teams per SM, 3 as 2 with the chain's kernel not
  // claiming the chain (the launch is cancelled and refactored by one kernel; tests), 4 as 2
  // and panels' launches too where no kernel beside them reads the info word, 5 as 2 with the
  // tiles loaded after their updates (kFlowTilesLate).
  int split_chain = -1;
  // CUDA: float's tile updates on the FP64 tensor cores (1) or FFMA (0).
  int float_mma = 1;
  // CUDA: tile tasks solve by the chain's inverted diagonal blocks (flow_tile_inv): -1 the
  // default pick, 0 never, 1 in every launch that can (tests).
  int tile_inv = -1;
  // CUDA, with the chain on DMMA (mma 1): the diagonal tile's updates between its panels on
  // DMMA by 8 warps (1; 3 on m16n8k4) or 4 (2), or FFMA (0); -1 the default pick
  // (flow_factor_mma).
  int factor_mma = -1;
  // CUDA, with the chain on DMMA: its SYRK on m16n8k4 (1) or m8n8k4 (0).
  int syrk16 = 1;
  // CUDA: the one-kernel launch as a plain __global__ (1) or through Kokkos' TeamPolicy (0);
  // 2: the split launches' kernels too. The one kernel raw is 2.5-5 % faster at n = 250-2048
  // on the H200 (session 52); the split launches raw 4-10 % faster at n = 3072-4096 and
  // within 1 % at 5120-6144 on the H100 (session 54; docs/performance_log.md). Under a Kokkos
  // tool the launches go through Kokkos, so the tool sees kolesky::potrf_flow.
  int raw_launch = 2;
  // CUDA: a synchronous call's one kernel hands info back through the stream's pinned host
  // word and leaves the device word zero (1), or the call sets the word before and copies it
  // after (0). 1 saves 4-8 us a call at n = 250-2048 on the H100 (session 54).
  int mapped_info = 1;
};

// Calls whose one kernel wrote the pinned host word (tests).
inline std::atomic<unsigned long long>& flow_mapped_calls() {
  static std::atomic<unsigned long long> count{0};
  return count;
}

// Launches taken by flow_launch_raw (tests).
inline std::atomic<unsigned long long>& flow_raw_launches() {
  static std::atomic<unsigned long long> count{0};
  return count;
}

// FlowPotrf::factor_mma for a launch whose chain is (or is not) on DMMA: by default m16n8k4 on
// 8 warps in both scalars (H200, session 44: 0.5-2 % faster than m8n8k4 at n = 500-2048, which
// had been 1.4-2.4 % faster than FFMA in double, session 43).
template <class T>
int flow_factor_mma(const bool chain_mma) {
  const int knob = FlowKnobs::get().factor_mma;
  if (!chain_mma) return 0;
  return knob >= 0 ? knob : 3;
}

// Panels split from 6144 rows below the diagonal block: float's whole-panel launches (FFMA
// tile updates) gained 1-3 % at n = 8192-12288 (session 24); double's, with the rows below
// solved beside the chain (below_cols), 1.4-2 % at 10240-12288 (session 25; with one TRSM
// after the chain, 8192 had been better). TF32's (posv_mixed) stay at 8192, not remeasured.
template <class T>
int split_rows_for() {
  const int k = FlowKnobs::get().split_rows;
  if (k > 0) return k;
  return sizeof(T) == 4 && fast_float_flag() ? 8192 : 6144;
}

// Whether panel [k0, k0 + kb) of an order-n matrix with panels of nb columns is split. A panel
// with no trailing update beside it (the first) gains from the split only when the panel after
// it splits too: alone it lost 3 % at float n = 7500, while at 10240-16384 splitting the first
// panel as well gains 1-2 % (H100, issue 15 session 24).
template <class T>
bool split_here(const int n, const int k0, const int kb, const int nb, const bool beside_update) {
  const int rows = split_rows_for<T>(), first = FlowKnobs::get().split_first;
  if (n - k0 - kb < rows) return false;
  return beside_update || first == 1 || (first == 2 && n - k0 - kb - nb >= rows);
}

// Teams of the persistent grid: enough to fill the device (one per SM on CUDA: a team takes
// up to 255 registers per thread; one per host thread), never more than there are tasks, nor
// than either positive cap: the caller's (a lookahead panel's panel_teams) and
// FlowKnobs::teams.
template <class Exec>
int flow_teams(const Exec& exec, const int tasks, const int cap = 0) {
  int teams = 1;
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value)
    teams = exec.cuda_device_prop().multiProcessorCount;
  else
#endif
    teams = int(exec.concurrency());
  for (const int c : {cap, FlowKnobs::get().teams})
    if (c > 0 && c < teams) teams = c;
  teams = teams < tasks ? teams : tasks;
  // The CUDA chain (task 0) waits on later tasks: another team must exist beside it (one team
  // fits per SM, so two SMs keep both resident).
  return teams < 2 && tasks > 1 ? 2 : teams;
}

#ifdef KOKKOS_ENABLE_CUDA
// Side streams and their events, for launches that leave the caller's stream and join it
// again: the lookahead's (one for the process, get(), or one per PotrfPlan), a plan's own work
// stream, and a split dataflow launch's chain stream (chain(): one per caller's stream).
// `stream` takes the panels or the chain's kernel; `below_stream`, at the same priority, a
// split panel's rows below its diagonal block while the chain factors it (split_panel).
struct CudaSide {
  // Lookahead: the device's highest priority unless FlowKnobs::side_priority is 0, so that
  // panels take SMs ahead of the trailing update's GEMMs as those drain. Highest: the chain's
  // stream, launched first so that its kernel claims the chain before the tiles' would.
  enum Priority { Default, Lookahead, Highest };
  cudaStream_t stream{}, below_stream{};
  cudaEvent_t to_side{}, to_main{}, to_below{}, from_below{};
  std::unique_ptr<Kokkos::Cuda> exec, below;
  explicit CudaSide(const Priority p = Lookahead) {
    int least = 0, greatest = 0;
    if (p == Default || (p == Lookahead && FlowKnobs::get().side_priority == 0) ||
        cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess)
      greatest = 0;
    cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest);
    cudaStreamCreateWithPriority(&below_stream, cudaStreamNonBlocking, greatest);
    for (cudaEvent_t* e : {&to_side, &to_main, &to_below, &from_below})
      cudaEventCreateWithFlags(e, cudaEventDisableTiming);
    exec.reset(new Kokkos::Cuda(stream));
    below.reset(new Kokkos::Cuda(below_stream));
  }
  ~CudaSide() {
    exec.reset();
    below.reset();
    for (cudaEvent_t e : {to_side, to_main, to_below, from_below}) cudaEventDestroy(e);
    cudaStreamDestroy(stream);
    cudaStreamDestroy(below_stream);
  }
  CudaSide(const CudaSide&) = delete;
  CudaSide& operator=(const CudaSide&) = delete;
  static CudaSide& get() { return per_process<CudaSide>(); }
  // Made on first use (per_stream's entries are made before the device may be touched).
  static CudaSide& chain(const Kokkos::Cuda& exec) {
    std::unique_ptr<CudaSide>& s = per_stream<std::unique_ptr<CudaSide>>(exec);
    if (!s) s.reset(new CudaSide(Highest));
    return *s;
  }
};
// `waiter` runs nothing more until all work queued so far on `signaller` is done.
inline void stream_wait(const Kokkos::Cuda& waiter, const Kokkos::Cuda& signaller, cudaEvent_t e) {
  cudaEventRecord(e, signaller.cuda_stream());
  cudaStreamWaitEvent(waiter.cuda_stream(), e, 0);
}

// Whether a CUDA launch splits the chain from the tiles (FlowRole), and how: 0 one kernel; 1
// the tiles' kernel at one team per SM; 2 at two; 5 at two with each tile loaded after its
// updates (kFlowTilesLate); 3: 2 with the chain's kernel declining, so the launch is cancelled
// and factored by the one kernel after it (tests). Default: whole-matrix launches from n =
// 3072, where the tiles' throughput bounds the launch: float at two teams per SM (late from
// 4608); double at one to 4095, two from 4096, late from 5120 (its tiles' kernel spills at 128
// registers, which costs more than the second team gives below 4096; H200, session 41: 3584
// 1.35 / 1.49 ms, 4096 1.79 / 1.76, one kernel 1.40 / 1.86). At 2048, chain-bound, the second
// kernel costs 2-5 %. Only with DMMA tile updates (`f.mma`): the tiles' kernel has no other
// path. A panel's launch (columns [j0, j1) of a larger matrix) splits only with knob 4
// and when its caller says no kernel beside it reads the info word (`panel_ok`): a cancelled
// launch's sentinel would be read as a failure by a split panel's column waiter or native
// updates' skip test. Never with a team cap. Also while capturing (a plan's graph): a replay
// may start the two kernels in either order or one after the other, which the cancel path
// absorbs.
template <class T>
int flow_split(const int n, const int j0, const int j1, const int nt, const FlowPotrf<T>& f,
               const int max_teams, const bool signal_columns, const bool panel_ok) {
  const int knob = FlowKnobs::get().split_chain;
  if (knob == 0 || !f.mma || signal_columns || max_teams != 0 || FlowKnobs::get().teams != 0 ||
      f.nteams < 3)
    return 0;
  if (j0 != 0 || j1 != nt) return panel_ok && knob == 4 ? 2 : 0;
  if (knob > 0) return knob == 4 ? 2 : knob;
  if (n < 3072) return 0;
  if (n >= (std::is_same<T, float>::value ? 4608 : 5120)) return 5;
  return std::is_same<T, float>::value || n >= 4096 ? 2 : 1;
}

// Whether a split launch's tiles solve by the chain's inverted blocks (FlowPotrf::inv; the
// launch then takes kFlowChainInv / kFlowTilesInv): double, with the tiles loaded first
// (splits 1-3) and, by default,
// from n = 3584, where the tiles' throughput counts (H200, session 42: 3584 / 4096 / 4608 1 /
// 6.5 / 3.5 % faster; 3072 1-2 % slower, the chain's ~0.2 us a column of stores not repaid).
template <class T>
bool flow_tile_inv(const int n, const FlowPotrf<T>& f, const int split) {
  const int knob = FlowKnobs::get().tile_inv;
  if (!std::is_same<T, double>::value || !f.chain_mma || knob == 0 || split < 1 || split > 3)
    return false;
  return knob == 1 || n >= 3584;
}

// After a split launch: whether it was cancelled (info = kFlowCancelled: cleared, ctr[5] = 1).
struct FlowResumeCheck {
  int* info;
  int* ctr;
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {
    const bool cancelled = *(volatile int*)info == kFlowCancelled;
    if (cancelled) *(volatile int*)info = 0;
    *(volatile int*)(ctr + 5) = cancelled ? 1 : 0;
  }
};

template <class F, int MinBlocks>
__global__ void __launch_bounds__(F::kThreads, MinBlocks) flow_raw_kernel(const F f) {
  extern __shared__ __align__(16) unsigned char flow_raw_smem[];
  f.run_raw(flow_raw_smem);
}

// Whether a launch goes around Kokkos' (FlowKnobs::raw_launch at least `level`: 1 the one
// kernel, 2 the split launches' kernels; never under a Kokkos tool).
inline bool flow_raw(const int level) {
  return FlowKnobs::get().raw_launch >= level && !Kokkos::Tools::profileLibraryLoaded();
}

// A dataflow kernel of `teams` teams on `stream` without Kokkos' launch path (its teams fit as
// the TeamPolicy launch's: MinBlocks per SM, whatever the registers).
template <int MinBlocks, class F>
void flow_launch_raw(const Kokkos::Cuda& exec, cudaStream_t stream, const F& f, const int teams) {
  const auto kernel = flow_raw_kernel<F, MinBlocks>;
  constexpr std::size_t bytes = F::raw_bytes();
  static std::atomic<unsigned long long> opted{0};
  opt_in_shared(opted, reinterpret_cast<const void*>(kernel), exec, bytes,
                "kolesky::potrf: the dataflow kernel");
  // The tiles' kernel of a split launch, two per SM (raw without the hint: 10 % slower at
  // double's n = 4096).
  if constexpr (MinBlocks > 1) {
    static std::atomic<unsigned long long> carved{0};
    prefer_shared_carveout(carved, reinterpret_cast<const void*>(kernel), exec, bytes, MinBlocks);
  }
  kernel<<<unsigned(teams), unsigned(F::kThreads), bytes, stream>>>(f);
  check_launch("kolesky::potrf: the dataflow kernel");
  flow_raw_launches().fetch_add(1, std::memory_order_relaxed);
}

// The raw kernel's module loaded on this device (CUDA loads a kernel lazily at its first
// launch, and that load waits for the device).
template <int MinBlocks, class F>
void flow_load_raw(const F&) {
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, flow_raw_kernel<F, MinBlocks>) != cudaSuccess) cudaGetLastError();
}

// The chain's kernel (one team, on its own stream) and the tiles' kernel (on exec's), joined
// back into exec's stream. Both count in nteams for finish().
template <class T, int MinBlocks, int TilesRole, int ChainRole = kFlowChainOnly>
void flow_launch_roles(const Kokkos::Cuda& exec, FlowPotrf<T> f, const int tile_teams,
                       const bool decline) {
  CudaSide& cs = CudaSide::chain(exec);
  FlowPotrf<T> fr = f;  // the one-kernel launch that runs if the split one is cancelled
  fr.resume = true;
  f.nteams = 1 + tile_teams;
  f.decline = decline;
  // The roles share one member list: the functor's bytes carry over.
  static_assert(std::is_trivially_copyable<FlowPotrf<T>>::value, "");
  FlowPotrf<T, ChainRole> fc;
  FlowPotrf<T, TilesRole> ft;
  static_assert(sizeof(fc) == sizeof(f) && sizeof(ft) == sizeof(f), "");
  std::memcpy(static_cast<void*>(&fc), &f, sizeof f);
  std::memcpy(static_cast<void*>(&ft), &f, sizeof f);
  const std::size_t shmem = FlowPotrf<T>::kScratchElems * sizeof(T) + 64;
  constexpr int threads = FlowPotrf<T>::kThreads;
  Kokkos::TeamPolicy<Kokkos::Cuda, Kokkos::LaunchBounds<threads, 1>> pc(*cs.exec, 1, threads);
  pc.set_scratch_size(0, Kokkos::PerTeam(shmem));
  Kokkos::TeamPolicy<Kokkos::Cuda, Kokkos::LaunchBounds<threads, MinBlocks>> pt(exec, tile_teams,
                                                                                threads);
  pt.set_scratch_size(0, Kokkos::PerTeam(shmem));
  // Both kernels' modules loaded on this device before either runs: CUDA loads a kernel
  // lazily at its first launch, and that load waits for the device (session 36's first split
  // hung on it). A bit per device (modules load per context); two threads may both load.
  const bool raw = flow_raw(2);
  static std::atomic<unsigned long long> loaded[2] = {{0}, {0}};
  const unsigned long long bit = device_bit(exec);
  if (bit == 0 || (loaded[raw].load(std::memory_order_acquire) & bit) == 0) {
    if (raw) {
      flow_load_raw<1>(fc);
      flow_load_raw<MinBlocks>(ft);
      flow_load_raw<1>(fr);
    } else {
      (void)pc.team_size_max(fc, Kokkos::ParallelForTag());
      (void)pt.team_size_max(ft, Kokkos::ParallelForTag());
    }
    loaded[raw].fetch_or(bit, std::memory_order_release);
  }
  stream_wait(*cs.exec, exec, cs.to_side);
  if (raw) {
    flow_launch_raw<1>(exec, cs.exec->cuda_stream(), fc, 1);
    flow_launch_raw<MinBlocks>(exec, exec.cuda_stream(), ft, tile_teams);
  } else {
    Kokkos::parallel_for("kolesky::potrf_flow_chain", pc, fc);
    Kokkos::parallel_for("kolesky::potrf_flow_tiles", pt, ft);
  }
  stream_wait(exec, *cs.exec, cs.to_main);
  Kokkos::parallel_for("kolesky::potrf_flow_resume_check",
                       Kokkos::RangePolicy<Kokkos::Cuda>(exec, 0, 1), FlowResumeCheck{f.info, f.ctr});
  if (raw) {
    flow_launch_raw<1>(exec, exec.cuda_stream(), fr, fr.nteams);
    return;
  }
  Kokkos::TeamPolicy<Kokkos::Cuda, Kokkos::LaunchBounds<threads, 1>> pr(exec, fr.nteams, threads);
  pr.set_scratch_size(0, Kokkos::PerTeam(shmem));
  Kokkos::parallel_for("kolesky::potrf_flow", pr, fr);
}

template <class T>
void flow_launch_split(const Kokkos::Cuda& exec, const FlowPotrf<T>& f, const int split) {
  // One SM left to the chain's team (it takes a whole SM's registers) when nothing else runs.
  const int tiles = 2 * (f.nteams - 1) < f.ntasks - 1 ? 2 * (f.nteams - 1) : f.ntasks - 1;
  if constexpr (FlowPotrf<T>::kMmaType) {  // flow_tile_inv: double only
    if (f.inv != nullptr) {
      if (split == 1)
        flow_launch_roles<T, 1, kFlowTilesInv, kFlowChainInv>(exec, f, f.nteams - 1, false);
      else
        flow_launch_roles<T, 2, kFlowTilesInv, kFlowChainInv>(exec, f, tiles, split == 3);
      return;
    }
  }
  if (split == 1)
    flow_launch_roles<T, 1, kFlowTilesOnly>(exec, f, f.nteams - 1, false);
  else if (split == 5)
    flow_launch_roles<T, 2, kFlowTilesLate>(exec, f, tiles, false);
  else
    flow_launch_roles<T, 2, kFlowTilesOnly>(exec, f, tiles, split == 3);
}
#endif

// Factor tile columns [j0, j1) of the n x n lower matrix `a` (columns before j0 already
// factored and their updates applied). `info` is a device word; a non-zero value on entry
// makes the call a no-op. The workspace must not be used by another launch at the same time.
// `split_ok`: no kernel that runs beside this launch reads `info` (flow_split). `host_info`:
// a pinned host word the launch may hand info back through (FlowPotrf::host_info); true when
// it does (then `info` is zero again once the launch ends).
template <class Exec, class T>
bool flow_potrf(const Exec& exec, const int n, const Strided<T> a, int* info, const int j0,
                const int j1, FlowWorkOf<Exec>& work, FlowTraceRec* trace = nullptr,
                const int max_teams = 0, const bool signal_columns = false,
                const bool split_ok = false, int* const host_info = nullptr) {
  (void)split_ok;  // read by CUDA launches only
  (void)host_info;
  if (n == 0 || j0 >= j1) return false;
  const int nt = flow_tiles(n);
  work.reserve(nt);
  using F = FlowPotrf<T>;
  F f;
  f.a = a.p;
  f.rs = a.rs;
  f.cs = a.cs;
  f.n = n;
  f.nt = nt;  // flag(i, j) = flags + j * nt + i stays inside the work.nt^2 allocation
  f.j0 = j0;
  f.j1 = j1;
  constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  f.ntasks = host ? flow_tasks(nt, j0, j1) : f.cuda_ntasks();
  f.nteams = flow_teams(exec, f.ntasks, max_teams);
  f.info = info;
  f.ctr = work.ctr.data();
  f.flags = work.flags.data();
  f.part = reinterpret_cast<T*>(work.part.data());
  f.cols = signal_columns ? work.cols.data() : nullptr;
  f.trace = trace;
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    const bool dmma = FlowKnobs::get().mma != 0 && exec.cuda_device_prop().major >= 8;
    f.chain_mma = FlowKnobs::get().mma == 1 && exec.cuda_device_prop().major >= 8;
    f.factor_mma = flow_factor_mma<T>(f.chain_mma);
    f.syrk16 = f.chain_mma && FlowKnobs::get().syrk16 != 0;
    f.tf32 = !F::kMmaType && fast_float_flag() && dmma;
    f.mma = dmma && !f.tf32 && (F::kMmaType || FlowKnobs::get().float_mma != 0);
  }
#endif
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<F::kThreads, 1>>;
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    const int split = flow_split<T>(n, j0, j1, nt, f, max_teams, signal_columns, split_ok);
    if (split > 0) {
      if (flow_tile_inv(n, f, split)) f.inv = reinterpret_cast<T*>(work.inv.data());
      flow_launch_split(exec, f, split);
      return false;
    }
  }
#endif
  if constexpr (host) {
    Kokkos::parallel_for("kolesky::potrf_flow", Kokkos::TeamPolicy<Exec>(exec, f.nteams, 1), f);
    return false;
  } else {
    bool mapped = false;
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
      mapped = host_info != nullptr && FlowKnobs::get().mapped_info != 0;
      if (mapped) f.host_info = host_info;
      if (flow_raw(1)) {
        flow_launch_raw<1>(exec, exec.cuda_stream(), f, f.nteams);
        return mapped;
      }
    }
#endif
    Policy policy(exec, f.nteams, F::kThreads);
    policy.set_scratch_size(0, Kokkos::PerTeam(F::kScratchElems * sizeof(T) + 64));
    Kokkos::parallel_for("kolesky::potrf_flow", policy, f);
    return mapped;
  }
}

#ifdef KOKKOS_ENABLE_CUDA
// One thread on another stream waits until the dataflow launch's chain has factored tile
// column j (FlowWork::cols[j] == 1) or a failure is recorded, and resets the flag, so the
// kernels queued after it on its stream read the column's final values (the chain publishes
// after a fence; stream order carries that to them). A failing launch publishes no column at
// or after the failure; the reset after the failure is seen clears any earlier one this
// waiter missed, so no flag outlives the call (plans replay it).
struct FlowColumnWait {
  unsigned* cols;  // tile columns [first, last]: waits on the last, resets them all
  int count;
  const int* info;
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {
    volatile unsigned* const c = cols;
    for (;;) {
      if (c[count - 1] == 1u) break;
      if (*(volatile const int*)info != 0) break;
#ifdef __CUDA_ARCH__
      __nanosleep(100);
#endif
    }
    Kokkos::memory_fence();
    for (int q = 0; q < count; ++q) c[q] = 0u;
    Kokkos::memory_fence();
  }
};

// Tile columns [first, last] of the running (or queued) dataflow launch that signals columns.
inline void flow_column_wait(const Kokkos::Cuda& exec, FlowWorkOf<Kokkos::Cuda>& work,
                             const int first, const int last, const int* info) {
  Kokkos::parallel_for("kolesky::flow_column_wait",
                       Kokkos::RangePolicy<Kokkos::Cuda>(exec, 0, 1),
                       FlowColumnWait{work.cols.data() + first, last - first + 1, info});
}
#endif

}  // namespace impl
}  // namespace kolesky
