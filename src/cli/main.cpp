// kolesky: factor, solve and benchmark from the command line (see `kolesky --help`).
#include <CLI/CLI.hpp>
#include <Kolesky.hpp>

#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "Cli_Common.hpp"

#ifndef KOLESKY_CLI_VERSION
#define KOLESKY_CLI_VERSION "unknown"
#endif

namespace kolesky_cli {
namespace {

const char* const kExitCodes =
    "Exit codes:\n"
    "  0  success\n"
    "  1  usage error: bad option or value, unknown backend or one not compiled in\n"
    "  2  input error: missing, unreadable or malformed file (with its line), non-square\n"
    "     matrix, right-hand side with the wrong number of rows, output not writable\n"
    "  3  numerical failure: info > 0 (not positive definite / singular)\n"
    "  4  a result check failed: residual above --threshold (in units of n*eps)\n"
    "  5  runtime failure: out of memory, backend error\n"
    "\n"
    "Progress lines go to stderr (--quiet turns them off), results to stdout.\n"
    "Kokkos options (--kokkos-...=value) are passed to Kokkos.";

void add_common(CLI::App* sub, Common& c) {
  sub->add_option("--precision", c.precision, "Scalar type")
      ->check(CLI::IsMember({"float", "double"}))
      ->capture_default_str()
      ->type_name("float|double");
  const std::string backends = join(compiled_backends(), "|");
  sub->add_option("--backend", c.backend,
                  "Kokkos backend (compiled in: " + join(compiled_backends()) +
                      "; default: " + default_backend() + ")")
      ->check(CLI::Validator([](std::string& s) { return check_backend(s); }, backends,
                             "backend"))
      ->type_name("NAME");
  sub->add_option("--threshold", c.threshold,
                  "Largest accepted residual, in units of n*eps of the precision")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_flag("-q,--quiet", c.quiet, "No progress lines on stderr");
}

void add_method(CLI::App* sub, bool& lu, bool& chol) {
  auto* l = sub->add_flag("--lu", lu, "LU with partial pivoting (getrf)");
  auto* c = sub->add_flag("--chol", chol, "Cholesky of the lower triangle (potrf)");
  l->excludes(c);
}

std::string describe(const kolesky::matrix_market_error& e) {
  return e.line() > 0 ? e.source() + ":" + std::to_string(e.line()) + ": " + e.reason()
                      : e.source() + ": " + e.reason();
}

int fail(int code, const std::string& message) {
  std::cerr << "kolesky: error: " << message << '\n';
  return code;
}

int run(int argc, char** argv) {
  CLI::App app{"Dense Cholesky and LU on Kokkos: factor, solve and benchmark.", "kolesky"};
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("kolesky ") + KOLESKY_CLI_VERSION);
  app.require_subcommand(1);

  FactorArgs fa;
  bool f_lu = false, f_chol = false;
  auto* factor = app.add_subcommand(
      "factor",
      "Factor a Matrix Market matrix (Cholesky if its header says symmetric, else LU) and "
      "report the time, GFLOP/s and the factor's residual");
  factor->add_option("file", fa.file, "Matrix Market file (.mtx or .mtx.gz)")->required();
  add_method(factor, f_lu, f_chol);
  add_common(factor, fa.common);
  factor->footer("Exit codes: see kolesky --help.");

  FactorArgs sa;
  sa.solve = true;
  bool s_lu = false, s_chol = false;
  auto* solve = app.add_subcommand(
      "solve",
      "Solve A x = b: b from --rhs, or b = A * ones (then the error against the all-ones "
      "solution is reported too)");
  solve->add_option("file", sa.file, "Matrix Market file of A (.mtx or .mtx.gz)")->required();
  solve->add_option("--rhs", sa.rhs,
                    "Matrix Market file of b (n rows, one column per right-hand side)");
  solve->add_option("--out", sa.out, "Write x there (Matrix Market array; .gz compresses)");
  add_method(solve, s_lu, s_chol);
  add_common(solve, sa.common);
  solve->footer("Exit codes: see kolesky --help.");

  BenchArgs ba;
  auto* bench = app.add_subcommand(
      "bench",
      "Time potrf on random SPD matrices (batched::potrf with --batch B > 1) and check every "
      "factor");
  bench->add_option("-n,--n", ba.sizes, "Matrix orders, comma-separated")
      ->required()
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20))
      ->type_name("N[,N...]");
  bench->add_option("--batch", ba.batch, "Matrices per batch (1: one matrix, potrf)")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  bench->add_option("--repeat", ba.repeat, "Timed runs per size (the best and mean are shown)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  bench->add_option("--seed", ba.seed, "Random seed")->capture_default_str();
  add_common(bench, ba.common);
  bench->footer("Exit codes: see kolesky --help.");

  // Kokkos' own options go to Kokkos only; CLI11 sees the rest.
  std::vector<char*> ours{argv[0]}, theirs{argv[0]};
  for (int i = 1; i < argc; ++i)
    (std::strncmp(argv[i], "--kokkos-", 9) == 0 ? theirs : ours).push_back(argv[i]);
  try {
    app.parse(int(ours.size()), ours.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    fail(kUsage, e.what());
    std::cerr << "Run 'kolesky --help' (or 'kolesky SUBCOMMAND --help') for more information.\n";
    return kUsage;
  }
  fa.method = f_lu ? Method::Lu : f_chol ? Method::Chol : Method::Auto;
  sa.method = s_lu ? Method::Lu : s_chol ? Method::Chol : Method::Auto;

  int kargc = int(theirs.size());
  theirs.push_back(nullptr);
  Kokkos::ScopeGuard guard(kargc, theirs.data());
  // Everything that holds a View lives and dies inside the guard's scope.
  try {
    if (factor->parsed()) return run_factor(fa);
    if (solve->parsed()) return run_factor(sa);
    return run_bench(ba);
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const kolesky::matrix_market_error& e) {
    return fail(kInput, describe(e));
  } catch (const kolesky::invalid_argument& e) {
    return fail(kInput, e.what());
  } catch (const std::bad_alloc&) {
    return fail(kRuntime, "out of memory");
  } catch (const std::exception& e) {
    return fail(kRuntime, e.what());
  }
}

}  // namespace
}  // namespace kolesky_cli

int main(int argc, char** argv) { return kolesky_cli::run(argc, argv); }
