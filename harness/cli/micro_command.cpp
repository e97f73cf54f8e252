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
      "micro", "Google Benchmark micro-benchmarks of the CPU kernels at the shapes of each "
               "recipe's training step (fp32 and bf16), each beside this CPU's roofline");
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
      "Benchmarks, from one traced training step of each recipe in models/recipes (wall time):\n"
      "  gemm/<recipe>/<layer>/forward_NT|weight_grad_TN|input_grad_NN/M=/N=/K=\n"
      "  softmax_xent/<recipe>/B=/C=  adam/<recipe>/n=  gather_rows/<recipe>/B=/row=/src=\n"
      "  <op>/<recipes>/<dtype>/<shape>, one per distinct shape, fp32 and bf16, for act_forward,\n"
      "  act_backward, act_backward_saved, add_relu_backward, bias_act (.../dact: GELU's\n"
      "  derivative saved too), linear_backward_data (.../dact: times the layer before's\n"
      "  saved derivative), linear_backward_params, layernorm_*,\n"
      "  batchnorm_*, attention_*, maxpool2d_*, conv2d_forward|backward_data|backward_weights,\n"
      "  conv2d_backward (.../dx_relu_grad: both passes, dx through a ReLU),\n"
      "  cast (.../weights: the bf16 weight copy)\n"
      "Before the table: this CPU's roofline on --threads threads (peak: the larger of the\n"
      "per-core estimate, from the nominal clock, x threads and a GEMM measured now; bandwidth:\n"
      "the stream probe measured now over L2-, L3- and DRAM-sized working sets). Counters:\n"
      "bytes_per_second (operand bytes), FLOP/s (matrix work) and roofline_pct = 100 x\n"
      "max(FLOPs / peak, bytes / bandwidth of the smallest level holding the bytes) / time;\n"
      "the label gives the calls per step and the bound: compute-bound or memory-bound (L2|L3|DRAM).\n"
      "A convolution's FLOPs are the direct count: shapes the CPU runs with Winograd kernels\n"
      "(fp32 3x3 stride-1 'same', channels multiples of 16) do fewer, so their FLOP/s and\n"
      "roofline_pct are effective figures and may pass the peak.");
  return [cmd, o]() { return cmd->parsed() ? run_micro(o->threads, cmd->remaining()) : kNotThisCommand; };
}

}  // namespace noeira
