#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness/cli/cli_options.h"
#include "harness/exit_codes.h"
#include "harness/micro/micro_benchmarks.h"
#include "harness/micro/micro_roofline.h"
#include "kernels/backend.h"

namespace noeira {

namespace {

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// Google Benchmark's value of a flag given as --name=value (its only form), or "" when
// absent ("true" for a bare boolean flag).
std::string flag_value(const std::vector<std::string>& args, const std::string& name) {
  std::string v;
  for (const std::string& a : args) {
    if (a == "--" + name) v = "true";
    if (a.rfind("--" + name + "=", 0) == 0) v = a.substr(name.size() + 3);
  }
  return v;
}

bool flag_true(const std::string& v) {
  return !v.empty() && v != "false" && v != "0" && v != "no" && v != "f" && v != "n";
}

}  // namespace

int run_micro(int threads, const std::vector<std::string>& passthrough) {
  // Google Benchmark parses (and removes) its own flags from an argv.
  std::string prog = "noeira-bench micro";
  std::vector<std::string> args = passthrough;
  std::vector<char*> argv;
  argv.push_back(prog.data());
  for (std::string& a : args)
    if (a != "--") argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  benchmark::Initialize(&argc, argv.data());
  if (benchmark::ReportUnrecognizedArguments(argc, argv.data())) {
    std::fprintf(stderr,
                 "noeira-bench micro: flags other than --threads go to Google Benchmark, which "
                 "did not recognise the ones above; see noeira-bench micro --help\n");
    benchmark::Shutdown();
    return kExitUsage;
  }

  // The roofline (GEMM and stream probes, under a second) only when something will run;
  // printed on stdout before the console table, on stderr when stdout is JSON or CSV.
  if (threads <= 0) threads = default_thread_count();
  MicroRoofline roofline;
  if (!flag_true(flag_value(passthrough, "benchmark_list_tests"))) {
    roofline = measure_cpu_roofline(threads);
    const std::string format = flag_value(passthrough, "benchmark_format");
    std::FILE* out = format.empty() || format == "console" ? stdout : stderr;
    std::fputs(render_cpu_roofline(roofline).c_str(), out);
    std::fflush(out);
    add_roofline_context(roofline);
  }
  const MicroRegistration reg = register_micro_benchmarks(threads, roofline);
  benchmark::AddCustomContext("noeira_backend", reg.backend);
  benchmark::AddCustomContext("noeira_recipes", join(reg.recipes, ","));
  if (!reg.skipped.empty()) benchmark::AddCustomContext("noeira_skipped", join(reg.skipped, "; "));
  if (reg.benchmarks == 0) {
    benchmark::ClearRegisteredBenchmarks();
    benchmark::Shutdown();
    return report_error("micro: no benchmarks to run (no usable recipe in models/recipes" +
                            (reg.skipped.empty() ? std::string(")")
                                                 : "; " + join(reg.skipped, "; ") + ")"),
                        kExitFailure);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::ClearRegisteredBenchmarks();  // frees the benchmarks' buffers and backend
  benchmark::Shutdown();
  return kExitOk;
}

}  // namespace noeira
