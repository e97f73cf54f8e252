// `noeira-bench micro`: Google Benchmark runs in the binary, takes its own flags, and
// rejects flags nobody knows; the benchmarks follow the recipes' traced steps and report
// their roofline. Kept short (tiny min_time, one kernel per run); no test reads a time.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "harness/micro/micro_roofline.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/support/run_binary.h"

using namespace noeira::test;

TEST_CASE("micro runs the filtered kernel benchmarks", "[micro]") {
  const CommandResult r = run_bench("micro --threads 1 --benchmark_filter=softmax "
                                    "--benchmark_min_time=0.01");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("softmax_xent/mlp/B=128/C=10"));
  CHECK_THAT(r.output, !Catch::Contains("gemm/"));
}

TEST_CASE("micro --benchmark_format=json prints JSON with a context block", "[micro]") {
  const CommandResult r = run_bench("micro --benchmark_format=json --benchmark_filter=adam "
                                    "--benchmark_min_time=0.01");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The JSON document is the whole of stdout; stderr (merged here) should be empty, but
  // parse from the first '{' to the last '}' so a stray warning does not fail the test.
  const size_t begin = r.output.find('{'), end = r.output.rfind('}');
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(begin, end - begin + 1));
  REQUIRE(j.contains("context"));
  CHECK(j["context"].contains("noeira_backend"));
  // The roofline's figures travel in the context (strings), each benchmark's place under it
  // as a counter. Sizes and rates are positive wherever they were measured or read.
  for (const char* key : {"stream_gbs", "l2_gbs", "l3_gbs", "l2_bytes", "l3_bytes", "l2_set_bytes",
                          "l3_set_bytes", "dram_set_bytes", "peak_fp32_gflops", "peak_bf16_gflops",
                          "gemm_fp32_gflops"}) {
    const std::string k = std::string("noeira_roofline_") + key;
    INFO(k);
    REQUIRE(j["context"].contains(k));
    REQUIRE(j["context"][k].is_string());
    CHECK(std::stod(j["context"][k].get<std::string>()) > 0.0);
  }
  // 0 where /proc/cpuinfo gives no clock: present, not necessarily positive.
  CHECK(j["context"].contains("noeira_roofline_estimate_fp32_gflops"));
  REQUIRE(j.contains("benchmarks"));
  REQUIRE(j["benchmarks"].size() >= 1);
  bool mlp = false;
  for (const auto& b : j["benchmarks"]) {
    if (b["name"].get<std::string>().rfind("adam/mlp/n=", 0) != 0) continue;
    mlp = true;
    CHECK(b.contains("roofline_pct"));
    CHECK(b.contains("bytes_per_second"));
  }
  CHECK(mlp);
}

TEST_CASE("micro lists GEMMs with the recipe shapes", "[micro]") {
  const CommandResult r = run_bench("micro --benchmark_list_tests --benchmark_filter=gemm");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("gemm/mlp/fc1/forward_NT/M=128/N=512/K=784") &&
                           Catch::Contains("gemm/mlp/fc1/weight_grad_TN/M=512/N=784/K=128") &&
                           Catch::Contains("gemm/mlp/fc2/input_grad_NN/M=128/N=512/K=512"));
  // The first layer's input needs no gradient; a Linear after a convolution's does.
  CHECK_THAT(r.output, !Catch::Contains("gemm/mlp/fc1/input_grad_NN"));
  CHECK_THAT(r.output, Catch::Contains("gemm/cifar-cnn/fc1/input_grad_NN/M=64/N=1024/K=64"));
  // Sequence models: B T rows (vit-tiny: 128 x 65 tokens; gpt-tiny: 12 x 64, its tied head).
  CHECK_THAT(r.output, Catch::Contains("gemm/vit-tiny/blocks.0.attn.c_attn/forward_NT/M=8320/N=384/K=128") &&
                           Catch::Contains("gemm/gpt-tiny/wte/forward_NT/M=768/N=65/K=128") &&
                           Catch::Contains("gemm/gpt-tiny/h.0.mlp.c_fc/weight_grad_TN/M=512/N=128/K=768"));
  // Blocks of one shape are one benchmark.
  CHECK_THAT(r.output, !Catch::Contains("gemm/vit-tiny/blocks.1."));
}

TEST_CASE("micro lists the ops of each recipe's training step, fp32 and bf16", "[micro]") {
  const CommandResult r = run_bench("micro --benchmark_list_tests");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* name : {
           // ReLU (conv2d-mnist, cifar-cnn; resnet20's run inside BatchNorm) and GELU
           // (gpt-tiny, vit-tiny MLPs: forward in bias_act, keeping GELU's derivative;
           // backward in c_proj's input gradient, chained: nn/linear.h)
           "act_forward/conv2d-mnist/f32/relu/n=2359296/", "act_backward/cifar-cnn/f32/relu/n=1843200/",
           "bias_act/gpt-tiny/f32/gelu/M=768/N=512/dact/",
           "bias_act/vit-tiny/f32/gelu/M=8320/N=256/bias/dact/",
           "linear_backward_data/gpt-tiny/f32/M=768/N=128/K=512/dact/",
           "linear_backward_data/vit-tiny/f32/M=8320/N=128/K=256/dact/",
           // one benchmark for a shape two recipes share
           "act_backward/cifar-cnn+mlp/f32/relu/n=65536/",
           "layernorm_forward/gpt-tiny/f32/N=768/C=128/", "layernorm_backward/vit-tiny/f32/N=8320/C=128/bias/",
           // resnet20's stem: BatchNorm with its ReLU inside (models/mlp.cpp)
           "batchnorm_forward_train/resnet20/f32/B=128/C=16/S=1024/relu/",
           "batchnorm_relu_backward/resnet20/f32/B=128/C=16/S=1024/",
           "batchnorm_forward_train/resnet20/f32/B=128/C=32/S=256/",
           "batchnorm_backward/resnet20/f32/B=128/C=64/S=64/",
           // ResNet's basic blocks: relu(bn1) and relu(bn2 + shortcut) in BatchNorm's pass
           "batchnorm_forward_train/resnet20/f32/B=128/C=32/S=256/relu/",
           "batchnorm_forward_train/resnet20/f32/B=128/C=64/S=64/residual/relu/",
           "attention_forward/gpt-tiny/f32/causal/B=12/T=64/C=128/nh=4/",
           "attention_backward/vit-tiny/f32/full/B=128/T=65/C=128/nh=4/",
           "patchify/vit+vit-tiny/f32/B=128/C=3/H=32/W=32/p=4/",
           "maxpool2d_forward/cifar-cnn/f32/B=64/C=32/H=30/W=30/k=2/s=2/",
           "maxpool2d_backward/cifar-cnn/f32/B=64/C=64/H=13/W=13/k=2/s=2/",
           "maxpool2d_forward/conv2d-mnist/f32/B=64/C=64/H=24/W=24/k=2/s=2/",
           "avgpool2d_forward/resnet20/f32/B=128/C=64/H=8/W=8/k=8/s=1/",
           "avgpool2d_backward/resnet20/f32/B=128/C=64/H=8/W=8/k=8/s=1/",
           "shortcut_forward/resnet20/f32/B=128/Cin=16/H=32/W=32/Cout=32/s=2/",
           "shortcut_backward/resnet20/f32/B=128/Cin=32/H=16/W=16/Cout=64/s=2/",
           "conv2d_forward/resnet20/f32/B=128/Cin=16/H=32/W=32/Cout=16/k=3/s=1/p=1/",
           // chained ResNet blocks' conv1 (nn/resnet_block.h): both passes and dx's epilogue
           "conv2d_backward/resnet20/f32/B=128/Cin=16/H=32/W=32/Cout=32/k=3/s=2/p=1/dx_relu_grad/",
           "conv2d_backward_data/resnet20/f32/B=128/Cin=16/H=32/W=32/Cout=16/k=3/s=1/p=1/",
           "conv2d_backward_weights/cifar-cnn/f32/B=64/Cin=3/H=32/W=32/Cout=32/k=3/s=1/p=0/bias/"})
    CHECK_THAT(r.output, Catch::Contains(name));
  // resnet20's stem ReLU runs inside its BatchNorm (models/mlp.cpp merges the two layers).
  CHECK_THAT(r.output, !Catch::Contains("act_forward/resnet20/"));
  // A chained MLP's GELU has no pass of its own in the backward.
  CHECK_THAT(r.output, !Catch::Contains("act_backward/gpt-tiny/") &&
                           !Catch::Contains("act_backward_saved/gpt-tiny/"));
  // A network's first convolution computes no d(input).
  CHECK_THAT(r.output, !Catch::Contains("conv2d_backward_data/resnet20/f32/B=128/Cin=3/"));
  if (noeira::CpuOps(1).supports_bf16()) {
    CHECK_THAT(r.output, Catch::Contains("batchnorm_backward/resnet20/bf16/B=128/C=16/S=1024/") &&
                             Catch::Contains("attention_forward/gpt-tiny/bf16/causal/B=12/T=64/C=128/nh=4/") &&
                             Catch::Contains("cast/mlp/f32_to_bf16/n=669706/weights/"));
  }
}

TEST_CASE("micro runs an op benchmark beside the roofline", "[micro]") {
  const CommandResult r = run_bench("micro --threads 1 --benchmark_filter=act_forward/conv2d-mnist/f32/relu/n=2359296 "
                                    "--benchmark_min_time=0.01");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // The header: both peaks' sources said plainly, three bandwidth levels, the caches.
  CHECK_THAT(r.output, Catch::Contains("roofline (CPU, 1 thread): peak fp32") &&
                           Catch::Contains("stream bandwidth L2 ") && Catch::Contains(", DRAM ") &&
                           Catch::Contains("nominal clock") && Catch::Contains("GEMM measured now") &&
                           Catch::Contains("caches ("));
  CHECK_THAT(r.output, Catch::Contains("act_forward/conv2d-mnist/f32/relu/n=2359296") &&
                           Catch::Contains("roofline_pct=") && Catch::Contains("bytes_per_second=") &&
                           Catch::Contains("per step: conv2d-mnist x"));
  // Which level rated it depends on this machine's caches; that one was named does not.
  CHECK_THAT(r.output, Catch::Contains("memory-bound (L2)") || Catch::Contains("memory-bound (L3)") ||
                           Catch::Contains("memory-bound (DRAM)"));
  CHECK_THAT(r.output, !Catch::Contains("gemm/"));
}

TEST_CASE("micro rejects unknown benchmark flags with exit 2", "[micro]") {
  const CommandResult r = run_bench("micro --benchmark_nonsense");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--benchmark_nonsense"));
}

TEST_CASE("micro --help says where the other flags go", "[micro]") {
  const CommandResult r = run_bench("micro --help");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("Google Benchmark") &&
                           Catch::Contains("--benchmark_filter") && Catch::Contains("--threads") &&
                           Catch::Contains("roofline_pct"));
}

TEST_CASE("micro rates an op at the smallest measured level that holds its bytes", "[micro]") {
  noeira::MicroRoofline r;
  r.levels = {{"L2", 1e6, 200e9}, {"L3", 16e6, 100e9}, {"DRAM", 128e6, 40e9}};
  CHECK(r.level_for(1e6)->name == "L2");
  CHECK(r.level_for(1e6 + 1)->name == "L3");
  CHECK(r.level_for(16e6)->name == "L3");
  CHECK(r.level_for(17e6)->name == "DRAM");
  CHECK(r.level_for(1e9)->name == "DRAM");  // past every set: the largest
  CHECK(r.dram_bytes_per_s() == 40e9);
  r.levels[1].bytes_per_s = 0;  // a failed probe is skipped, never rated against
  CHECK(r.level_for(2e6)->name == "DRAM");
  r.levels = {};
  CHECK(r.level_for(1.0) == nullptr);
}
