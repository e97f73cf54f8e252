#include "harness/cli/micro_command.h"

#include <memory>

#include "harness/cli/cli.h"
#include "harness/micro/micro_benchmarks.h"

namespace noeira {

namespace {

struct MicroOptions {
  int threads = 0;  // 0 = all cores
};

}  // namespace

std::function<int()> add_micro_command(CLI::App& app) {
  auto o = std::make_shared<MicroOptions>();
  CLI::App* cmd = app.add_subcommand(
      "micro", "Google Benchmark micro-benchmarks of the CPU kernels (GEMM, softmax_xent, adam, "
               "gather_rows) at the shapes the recipes use");
  cmd->add_option("--threads", o->threads, "CPU threads for the kernels (default: all available)")
      ->check(CLI::Range(0, 4096));
  // Everything we do not know is kept (in order) for Google Benchmark.
  cmd->allow_extras();
  cmd->footer(
      "Every other flag goes to Google Benchmark, e.g.\n"
      "  --benchmark_filter=gemm          run the benchmarks whose name matches a regex\n"
      "  --benchmark_list_tests           list the benchmark names and exit\n"
      "  --benchmark_format=json          console (default), json or csv on stdout\n"
      "  --benchmark_out=FILE             also write the results to FILE\n"
      "                                   (--benchmark_out_format=json|console|csv)\n"
      "  --benchmark_min_time=0.5         seconds per benchmark (a plain number)\n"
      "  --benchmark_repetitions=5        repeat and report mean/median/stddev/cv\n"
      "Use the --flag=value form for them. Unrecognized flags exit 2.\n"
      "Benchmarks, per recipe in models/recipes (wall time; GEMMs report FLOP/s = 2MNK):\n"
      "  gemm/<recipe>/<layer>/forward_NT|weight_grad_TN|input_grad_NN/M=/N=/K=\n"
      "  softmax_xent/<recipe>/B=/C=  adam/<recipe>/n=  gather_rows/<recipe>/B=/row=/src=");
  return [cmd, o]() { return cmd->parsed() ? run_micro(o->threads, cmd->remaining()) : kNotThisCommand; };
}

}  // namespace noeira
