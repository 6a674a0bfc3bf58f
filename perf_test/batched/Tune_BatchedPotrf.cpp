// Autotuner for batched::potrf: for each scalar, layout family and n, time every valid
// (kernel, variant, tile, team size) on the backend at hand, check each result against a
// reference kernel's, and write the fastest as the table Kernel::Auto reads.
//
//   kolesky_tune_batched [--n=4,8,...] [--batch=N] [--out=FILE] [--quick]
//
// --out writes batched/tuned/Kolesky_Tuned{Device,Host}.hpp (the backend decides which);
// without it the table goes to stdout. A candidate whose factors differ from the reference
// makes the run fail: a fast wrong kernel must never be tuned in.
#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "Kolesky_PerfCommon.hpp"
#include "batched/Kolesky_BatchPerfCommon.hpp"

namespace {

using namespace kolesky;
using batched::Kernel;
using batched::Options;
using batched::tuning::Layout;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
constexpr bool kHost = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;

std::vector<Options> candidates(const Layout layout, const int n) {
  std::vector<Options> v;
  auto add = [&](Kernel k, Algo a, int tile, int team) {
    Options o;
    o.kernel = k;
    o.algo = a;
    o.tile = tile;
    o.team_size = team;
    v.push_back(o);
  };
  if (n <= batched::impl::kMaxRegisterN) add(Kernel::Registers, Algo::Default, 0, 0);
  if (!kHost && n <= batched::impl::kMaxRowRegistersN) {
    add(Kernel::RowRegisters, Algo::Default, 32, 0);
    if (n > 16) add(Kernel::RowRegisters, Algo::Default, 16, 0);
  }
  // Strided only: it needs a unit stride inside the matrix (Auto falls back without one).
  if (batched::impl::warp_staged_available<Exec>() && layout == Layout::Strided &&
      n <= batched::impl::kMaxWarpStagedN)
    add(Kernel::WarpStaged, Algo::Default, 0, 0);
  if (kHost && layout == Layout::BatchFastest) add(Kernel::SimdLanes, Algo::Default, 0, 0);
  for (const int team : kHost ? std::vector<int>{0} : std::vector<int>{64, 128, 256})
    if (kHost || team >= n) add(Kernel::TeamRows, Algo::Default, 0, team);
  const Algo plain[] = {Algo::RightLooking, Algo::Crout};
  const Algo tiled[] = {Algo::TiledRight, Algo::TiledLeft, Algo::TiledTop};
  for (const Algo a : plain) add(Kernel::ThreadDirect, a, 0, 0);
  for (const Algo a : tiled)
    for (const int nb : {4, 8, 16})
      if (2 * nb <= n) add(Kernel::ThreadDirect, a, nb, 0);
  if (!kHost && n > 8) {
    for (const int team : {32, 64, 128}) {
      for (const Algo a : plain) add(Kernel::TeamScratch, a, 0, team);
      for (const Algo a : {Algo::TiledRight, Algo::TiledLeft})
        for (const int nb : {8, 16})
          if (2 * nb <= n) add(Kernel::TeamScratch, a, nb, team);
    }
  }
  return v;
}

std::string describe(const Options& o) {
  std::ostringstream s;
  s << batched::name(o.kernel);
  if (o.kernel == Kernel::ThreadDirect || o.kernel == Kernel::TeamScratch) s << "/" << name(o.algo);
  if (o.tile) s << (o.kernel == Kernel::RowRegisters ? "/panel" : "/nb") << o.tile;
  if (o.team_size) s << "/team" << o.team_size;
  return s.str();
}

template <class Batch>
double max_diff(const Batch& x, const Batch& y) {
  const int n = x.rows();
  double r = 0;
  Kokkos::parallel_reduce(
      "tune::diff", Kokkos::RangePolicy<Exec>(0, x.size()),
      KOKKOS_LAMBDA(const int b, double& acc) {
        const auto p = x.matrix(b), q = y.matrix(b);
        for (int j = 0; j < n; ++j)
          for (int i = j; i < n; ++i) {
            const double d = double(p(i, j)) - double(q(i, j));
            const double ad = d < 0 ? -d : d;
            acc = ad > acc ? ad : acc;
          }
      },
      Kokkos::Max<double>(r));
  return r;
}

// The batch-fastest family is timed in the layout that backend runs best: chunked on the host
// (a chunk of matrices stays in cache; a fully interleaved batch strides across pages),
// interleaved on the GPU.
template <class T>
using Fast = std::conditional_t<kHost, batched::ChunkedBatch<T, Mem>, batched::InterleavedBatch<T, Mem>>;

struct Best {
  int bytes;
  Layout layout;
  int n;
  Options opt;
  double ms;
};

template <class T, class Batch>
bool tune_point(const Layout layout, const int n, const int batch_req, std::vector<Best>& out) {
  // At most 512 MiB of matrices per copy (three copies live).
  int count = batch_req;
  while (count > 256 && std::size_t(count) * n * n * sizeof(T) > (std::size_t(512) << 20))
    count /= 2;
  auto make = [&](const char* label) { return perf::make_batch<Exec, Batch>(label, count, n); };
  Batch pristine = make("A0"), work = make("A"), ref = make("ref");
  perf::fill_spd<Exec>(pristine);
  Kokkos::View<int*, Mem> info("info", count);
  Options ref_opt;
  ref_opt.kernel = Kernel::ThreadDirect;
  ref_opt.algo = Algo::RightLooking;
  batched::copy(Exec(), pristine, ref);
  batched::potrf(Exec(), Uplo::Lower, ref, info, ref_opt);
  Exec().fence();
  const double tol = std::is_same<T, float>::value ? 1e-3 : 1e-10;
  Best best{int(sizeof(T)), layout, n, {}, 1e300};
  for (const Options& o : candidates(layout, n)) {
    double t_min = 1e300;
    for (int rep = 0; rep < 4; ++rep) {
      batched::copy(Exec(), pristine, work);
      Exec().fence();
      const auto t0 = std::chrono::steady_clock::now();
      batched::potrf(Exec(), Uplo::Lower, work, info, o);
      Exec().fence();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      t_min = ms < t_min ? ms : t_min;
      if (rep == 0 && ms > 3 * best.ms) break;  // hopeless: do not spend more time on it
    }
    const int bad = perf::count_failed<Exec>(info);
    const double diff = max_diff(work, ref);
    std::printf("%-6s %-12s n=%-4d batch=%-7d %-36s %10.4f ms  diff %.1e\n",
                sizeof(T) == 4 ? "float" : "double", name(layout), n, count, describe(o).c_str(),
                t_min, diff);
    if (bad || !(diff <= tol * n)) {
      std::printf("FAILED: %d matrices with info != 0, max difference %.3e from the reference\n",
                  bad, diff);
      return false;
    }
    if (t_min < best.ms) best = Best{int(sizeof(T)), layout, n, o, t_min};
  }
  std::printf("best   %-12s n=%-4d %s %.4f ms\n", name(layout), n, describe(best.opt).c_str(),
              best.ms);
  out.push_back(best);
  return true;
}

std::string table(const std::vector<Best>& rows, const char* tag, const char* device) {
  std::ostringstream s;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  s << "// Generated by kolesky_tune_batched on " << device << ", " << date
    << ".\n// Rerun the tool to refresh it; the comment on each line is the measured time.\n"
    << "#pragma once\n#include \"batched/Kolesky_BatchedTuning.hpp\"\n\n"
    << "namespace kolesky {\nnamespace batched {\nnamespace tuning {\n\n"
    << "// scalar bytes, layout, n, kernel, algo, tile, team size\n"
    << "inline constexpr Entry kTuned" << tag << "[] = {\n";
  for (const Best& b : rows) {
    s << "    {" << b.bytes << ", Layout::" << name(b.layout) << ", " << b.n << ", Kernel::"
      << batched::name(b.opt.kernel) << ", Algo::" << name(b.opt.algo) << ", " << b.opt.tile
      << ", " << b.opt.team_size << "},  // " << b.ms << " ms\n";
  }
  s << "};\n\n}  // namespace tuning\n}  // namespace batched\n}  // namespace kolesky\n";
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  std::vector<int> ns = kHost ? std::vector<int>{2, 4, 8, 12, 16, 24, 32, 48, 64, 128}
                              : std::vector<int>{4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128};
  int batch = kHost ? 1024 : 32768;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--n=", 0) == 0) ns = kolesky::perf::parse_ints(a.substr(4));
    else if (a.rfind("--batch=", 0) == 0) batch = std::stoi(a.substr(8));
    else if (a.rfind("--out=", 0) == 0) out = a.substr(6);
    else if (a == "--quick") ns = {3, 17}, batch = 64;
    else {
      std::cerr << "usage: kolesky_tune_batched [--n=LIST] [--batch=N] [--out=FILE] [--quick]\n";
      return 2;
    }
  }
  std::string device = Exec::name();
#ifdef KOKKOS_ENABLE_CUDA
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) device = p.name;
#else
  device += " (" + std::to_string(Exec().concurrency()) + " threads)";
#endif
  std::vector<Best> rows;
  bool ok = true;
  for (const int n : ns) {
    ok = ok && tune_point<float, batched::StridedBatch<float, Kokkos::LayoutRight, Mem>>(
                   Layout::Strided, n, batch, rows);
    ok = ok && tune_point<float, Fast<float>>(Layout::BatchFastest, n, batch, rows);
    ok = ok && tune_point<double, batched::StridedBatch<double, Kokkos::LayoutRight, Mem>>(
                   Layout::Strided, n, batch, rows);
    ok = ok && tune_point<double, Fast<double>>(Layout::BatchFastest, n, batch, rows);
    if (!ok) break;
  }
  if (!ok) return 1;
  const std::string t = table(rows, kHost ? "Host" : "Device", device.c_str());
  if (out.empty()) {
    std::cout << t;
  } else {
    std::ofstream f(out);
    f << t;
    if (!f) {
      std::cerr << "cannot write " << out << "\n";
      return 1;
    }
    std::cout << "wrote " << out << "\n";
  }
  return 0;
}
