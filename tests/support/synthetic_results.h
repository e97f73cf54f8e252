// Results files built from the typed records (harness/results/records.h), not JSON text:
// one benchmark (mlp on MNIST, CPU) with our eager variant, the twin's eager mode and,
// optionally, a noisy bf16 variant and memory records; deterministic samples.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results/records.h"
#include "harness/results/results.h"
#include "harness/run/stats.h"

namespace noeira::test {

struct SyntheticSpec {
  std::string cpu_model = "Test CPU 3000";
  std::string created = "2026-11-30T10:00:00Z";
  std::string model = "mlp";
  bool git_dirty = false;
  bool noisy_variant = false;  // adds "bf16" with a cv of 40%: its ratio is noisy
  bool memory = false;         // runs[].memory on both sides
  bool probes = true;          // context.probes (schema 2); false: a version 1 file
  double fp32_gflops = 150.0;  // our probe's 1-thread fp32 GEMM
};

inline VariantRecord synthetic_variant(const std::string& name, double median_ms, double rel_noise,
                                       const SyntheticSpec& s, uint64_t stream) {
  VariantRecord v;
  v.name = name;
  v.impl = name.rfind("twin:", 0) == 0 ? "torch" : "noeira";
  v.dtype = name.find("bf16") != std::string::npos ? "bf16" : "fp32";
  v.target = "cpu";
  uint64_t state = stream * 7919ULL + 17;
  auto uniform = [&state] {  // an LCG, in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  };
  std::vector<double> pooled;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    RunRecord r;
    r.seed = seed;
    std::vector<double> samples;
    for (int i = 0; i < 20; ++i) samples.push_back(median_ms * (1.0 + std::sqrt(3.0) * rel_noise * uniform()));
    pooled.insert(pooled.end(), samples.begin(), samples.end());
    const SampleSummary st = summarize(samples);
    r.timers.wall = TimerRecord{samples, {st.median, st.q1, st.q3, st.cv, st.n}, std::nullopt};
    r.test_top1 = 97.5;
    r.test_loss = 0.08;
    r.train_loss = 0.1;
    for (int k = 0; k < 20; ++k) r.losses.push_back(2.3 * std::exp(-0.1 * k));
    r.steps = 20;
    if (s.memory) {
      MemoryRecord m;
      if (!v.twin()) {
        m.plan_bytes = {{"parameters", 4 << 20}, {"gradients", 4 << 20}, {"optimizer_state", 8 << 20}, {"bf16_weights", 0},
                        {"activations", 12 << 20}, {"dataset", 180 << 20}};
        m.plan_total_bytes = 208 << 20;
      }
      m.peak_rss_bytes = static_cast<int64_t>(v.twin() ? 900 : 260) << 20;
      m.rss_method = "VmHWM";
      r.memory = m;
    }
    v.runs.push_back(r);
  }
  const SampleSummary st = summarize(pooled);
  v.summary.timers.wall = TimerStats{st.median, st.q1, st.q3, st.cv, st.n};
  v.summary.test_top1 = ScoreStats{97.5, 0.05, 3, std::nullopt};
  v.summary.test_loss = ScoreStats{0.08, 0.0, 3, std::nullopt};
  return v;
}

inline ResultsRecord synthetic_results(const SyntheticSpec& s = {}) {
  using nlohmann::json;
  ResultsRecord r;
  r.schema_version = s.probes ? kResultsSchemaVersion : 1;
  r.tool = "noeira-bench";
  r.tool_version = "0.1.0";
  r.created_utc = s.created;
  ContextRecord& c = r.context;
  c.command_line = "noeira-bench run --model " + s.model;
  c.git_sha = "0123456789abcdef0123456789abcdef01234567";
  c.git_dirty = s.git_dirty;
  c.host = host_record({{"cpu_model", s.cpu_model},
                        {"cpu_id", "GenuineIntel family 6 model 207"},
                        {"cores", 2},
                        {"memory_bytes", 25275990016LL},
                        {"os", "Linux 6.1 x86_64"},
                        {"hostname", "bench-1"}});
  c.build = build_record({{"compiler", "g++ 12.2.0"},
                          {"build_type", "release"},
                          {"blas", "oneDNN 2.6.3"},
                          {"cuda_built", false},
                          {"git_sha", c.git_sha},
                          {"git_dirty", s.git_dirty},
                          {"onednn", {{"version", "2.6.3"}, {"isa", "avx512_core_bf16"}, {"max_cpu_isa_env", nullptr}}}});
  c.device = device_record({{"available", false}, {"reason", "built without CUDA (test)"}});
  c.twin = TwinContext{"/usr/bin/python3", std::string("2.5.1"), true, std::nullopt};
  if (s.probes)
    c.probes = json{{"gemm_n", 1024},
                    {"stream_mib", 64},
                    {"method", "best of 3-20"},
                    {"ours",
                     {{"rows", {{{"threads", 1}, {"gemm_fp32_gflops", s.fp32_gflops}, {"gemm_bf16_gflops", 380.0},
                                 {"stream_gbs", 30.0}}}},
                      {"math", {{"summary", "oneDNN 2.6.3 (avx512_core_bf16)"}}}}},
                    {"twin",
                     {{"rows", {{{"threads", 1}, {"gemm_fp32_gflops", 140.0}, {"gemm_bf16_gflops", 300.0},
                                 {"stream_gbs", 28.0}}}},
                      {"math", {{"summary", "torch 2.5.1: MKL 2024.2, oneDNN 3.5.3"}}}}}};
  c.warnings = std::vector<std::string>{};
  r.config = ConfigRecord{"cpu", "fp32", {0, 1, 2}, 20, 5, 2, true, {10, 0.02, 30.0}};
  BenchmarkRecord b;
  b.model = s.model;
  b.dataset = "mnist";
  b.recipe = json{{"name", s.model}, {"batch", 128}};
  b.recipe_hash = "0123456789abcdef";
  b.variants.push_back(synthetic_variant("eager", 10.0, 0.01, s, 1));
  if (s.noisy_variant) b.variants.push_back(synthetic_variant("bf16", 12.0, 0.4, s, 2));
  b.variants.push_back(synthetic_variant("twin:eager", 20.0, 0.01, s, 3));
  r.benchmarks.push_back(b);
  return r;
}

}  // namespace noeira::test
