// The baseline probe (harness/env/baseline_probe.h): which figures call for a warning, the
// CPU peak estimate, our own probe's shape, and the results schema that records it.
#include <catch2/catch.hpp>

#include "harness/env/baseline_probe.h"
#include "harness/results/results.h"

using namespace noeira;
using nlohmann::json;

namespace {

json row(json threads, double fp32, double bf16, double stream) {
  return {{"threads", threads}, {"gemm_fp32_gflops", fp32}, {"gemm_bf16_gflops", bf16}, {"stream_gbs", stream}};
}

json side(std::vector<json> rows, const std::string& math) {
  return {{"rows", rows}, {"math", {{"summary", math}}}};
}

json zen5_peak() { return {{"fp32_gflops_per_core", 166.4}, {"bf16_gflops_per_core", 332.8}, {"basis", "test"}}; }

std::string joined(const std::vector<std::string>& w) {
  std::string s;
  for (const std::string& x : w) s += x + "\n";
  return s;
}

}  // namespace

TEST_CASE("probe: two sane sides give no warning", "[probe]") {
  const json probes = {{"peak", zen5_peak()},
                       {"ours", side({row(1, 150, 380, 30), row(2, 290, 700, 60)}, "oneDNN 2.6.3")},
                       {"twin", side({row(1, 100, 450, 37), row(2, 190, 820, 40)}, "torch 2.15: BLAS MKL")}};
  CHECK(probe_warnings(probes).empty());
}

TEST_CASE("probe: a twin on the reference BLAS is named, with its figure and what it biases",
          "[probe]") {
  const json probes = {
      {"peak", zen5_peak()},
      {"ours", side({row(1, 150, 380, 30)}, "oneDNN 2.6.3")},
      {"twin", side({row(1, 6.4, 416, 30)}, "torch 1.13: BLAS the reference BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3)")}};
  const std::vector<std::string> w = probe_warnings(probes);
  INFO(joined(w));
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Catch::StartsWith("the twin's fp32 GEMM runs at 6.40 GFLOP/s at 1 thread") &&
                       Catch::Contains("the reference BLAS") && Catch::Contains("under a third of ours (150)") &&
                       Catch::Contains("fp32 ratios measure that"));
}

TEST_CASE("probe: a side as slow as the other is still named against the CPU's own peak", "[probe]") {
  // Both sides crippled alike (say, the same misdetecting BLAS): no side-vs-side warning,
  // but each is far under the CPU's peak per core.
  const json probes = {{"peak", zen5_peak()},
                       {"ours", side({row(1, 7.0, 300, 30)}, "ours")},
                       {"twin", side({row(1, 6.4, 300, 30)}, "twin")}};
  const std::vector<std::string> w = probe_warnings(probes);
  INFO(joined(w));
  REQUIRE(w.size() == 2);
  CHECK_THAT(w[0], Catch::StartsWith("ours fp32 GEMM runs at 7.00") && Catch::Contains("estimated peak per core (166"));
  CHECK_THAT(w[1], Catch::StartsWith("the twin's fp32 GEMM runs at 6.40") &&
                       Catch::Contains("a reference or misdetected BLAS?"));
}

TEST_CASE("probe: each kind and thread count is compared with the same row of the other side",
          "[probe]") {
  const json probes = {{"ours", side({row(1, 100, 300, 30), row(2, 200, 600, 60)}, "ours")},
                       {"twin", side({row(1, 100, 300, 30), row(2, 200, 150, 15)}, "twin")}};
  const std::vector<std::string> w = probe_warnings(probes);
  INFO(joined(w));
  REQUIRE(w.size() == 2);
  CHECK_THAT(w[0], Catch::Contains("bf16 GEMM runs at 150 GFLOP/s at 2 threads") && Catch::Contains("bf16 ratios"));
  CHECK_THAT(w[1], Catch::Contains("streaming bandwidth runs at 15.0 GB/s at 2 threads") &&
                       Catch::Contains("memory-bound ratios"));
}

TEST_CASE("probe: a failed or absent side gives no warning and no crash", "[probe]") {
  CHECK(probe_warnings(json{{"ours", side({row(1, 100, 300, 30)}, "ours")}, {"twin", {{"error", "timed out"}}}})
            .empty());
  CHECK(probe_warnings(json(nullptr)).empty());
  CHECK(probe_warnings(json{{"ours", {{"rows", "garbage"}}}}).empty());
  CHECK_THAT(render_probes(json{{"ours", side({row(1, 100, 300, 30)}, "oneDNN")}, {"twin", {{"error", "timed out"}}}}),
             Catch::Contains("twin: probe failed: timed out") && Catch::Contains("fp32 GEMM 100 GFLOP/s"));
}

TEST_CASE("probe: the CPU peak estimate follows the vector units and the clock", "[probe]") {
  const json avx512 = {{"cpu_mhz", 2600.0},
                       {"cpu_features", {{"avx", true}, {"avx2", true}, {"avx512f", true}, {"avx512_bf16", true}, {"amx_bf16", false}}}};
  const json p = cpu_peak_estimate(avx512);
  CHECK(p["fp32_gflops_per_core"].get<double>() == Approx(64 * 2.6));
  CHECK(p["bf16_gflops_per_core"].get<double>() == Approx(128 * 2.6));
  json avx2 = avx512;
  avx2["cpu_features"]["avx512f"] = false;
  avx2["cpu_features"]["avx512_bf16"] = false;
  CHECK(cpu_peak_estimate(avx2)["fp32_gflops_per_core"].get<double>() == Approx(32 * 2.6));
  json zen4 = avx512;  // 512-bit FMAs in two 256-bit halves
  zen4["cpu_id"] = "AuthenticAMD family 25 model 17";
  CHECK(cpu_peak_estimate(zen4)["fp32_gflops_per_core"].get<double>() == Approx(32 * 2.6));
  CHECK(cpu_peak_estimate(zen4)["bf16_gflops_per_core"].get<double>() == Approx(64 * 2.6));
  json zen5 = avx512;
  zen5["cpu_id"] = "AuthenticAMD family 26 model 2";
  CHECK(cpu_peak_estimate(zen5)["fp32_gflops_per_core"].get<double>() == Approx(64 * 2.6));
  json unknown = avx512;
  unknown["cpu_mhz"] = 0.0;
  CHECK(cpu_peak_estimate(unknown).is_null());
}

TEST_CASE("probe: ours on the CPU gives one row per thread count, every figure positive", "[probe]") {
  Result<json> p = run_our_probe(Device::kCpu, 2);
  REQUIRE(p.ok());
  REQUIRE((*p)["rows"].size() == 2);
  for (const json& r : (*p)["rows"])
    for (const char* k : {"gemm_fp32_gflops", "gemm_bf16_gflops", "stream_gbs"}) {
      INFO(r.dump());
      CHECK(r[k].get<double>() > 0.0);
    }
  CHECK((*p)["rows"][0]["threads"] == 1);
  CHECK((*p)["rows"][1]["threads"] == 2);
  CHECK_THAT((*p)["math"]["summary"].get<std::string>(), Catch::StartsWith("oneDNN"));
}
