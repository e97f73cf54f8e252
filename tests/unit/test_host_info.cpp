// What the machine really runs: CPU flags, the kernels oneDNN picked, the warnings when
// it picked a fallback, and how `env` shows them.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/env/cpu_caches.h"
#include "harness/env/host_info.h"

using namespace noeira;

namespace {

CpuFeatures cpu(const char* flags) { return parse_cpu_flags(flags); }

const char* const kSse = "fpu sse sse2 ssse3 sse4_1 sse4_2";
const char* const kAvx2 = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx fma avx2";
const char* const kAvx512 = "fpu sse2 avx avx2 avx512f avx512dq avx512bw avx512vl";
const char* const kAvx512Bf16 = "fpu sse2 avx avx2 avx512f avx512bw avx512vl avx512_bf16";
// Intel family 6 model 207 (Emerald Rapids) with AMX exposed.
const char* const kAmx = "fpu avx avx2 avx512f avx512bw avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8";

}  // namespace

TEST_CASE("parse_cpu_flags reads whole words only", "[host_info]") {
  const CpuFeatures all = cpu(kAmx);
  CHECK(all.avx);
  CHECK(all.avx2);
  CHECK(all.avx512f);
  CHECK(all.avx512_bf16);
  CHECK(all.amx_bf16);
  const CpuFeatures none = cpu("avx512vl avx512_bf16x amx_tile avx2x xavx \tsse4_2");
  CHECK_FALSE(none.avx);
  CHECK_FALSE(none.avx2);
  CHECK_FALSE(none.avx512f);
  CHECK_FALSE(none.avx512_bf16);
  CHECK_FALSE(none.amx_bf16);
  CHECK_FALSE(cpu("").avx);
  CHECK(cpu("  avx2\n").avx2);
}

TEST_CASE("cpu_kernel_warnings: oneDNN on an older kernel set than the CPU's warns",
          "[host_info]") {
  struct Case {
    const char* what;
    const char* flags;
    const char* onednn_isa;
    const char* says;  // a part of the one expected warning; null: no warning
  };
  const Case cases[] = {
      {"oneDNN below an AVX-512 BF16 CPU", kAvx512Bf16, "avx2",
       "oneDNN runs its 'avx2' (AVX2) kernels on a CPU with AVX-512 BF16; GEMM and convolution "
       "figures reflect that (check ONEDNN_MAX_CPU_ISA)"},
      {"oneDNN without AMX on an AMX CPU", kAmx, "avx512_core_bf16",
       "'avx512_core_bf16' (AVX-512 BF16) kernels on a CPU with AMX-BF16"},
      {"oneDNN with AMX on an AMX CPU", kAmx, "avx512_core_amx", nullptr},
      {"oneDNN 3.x names", kAmx, "avx10_1_512_amx_fp16", nullptr},
      {"avx512_core_bf16 on an AVX-512 BF16 CPU", kAvx512Bf16, "avx512_core_bf16", nullptr},
      {"avx512_core on an AVX-512 CPU without BF16", kAvx512, "avx512_core_vnni", nullptr},
      {"avx2 on an AVX-512 CPU", kAvx512, "avx2", "'avx2' (AVX2) kernels on a CPU with AVX-512;"},
      {"avx2_vnni on an AVX2 CPU", kAvx2, "avx2_vnni", nullptr},
      {"sse41 on an AVX2 CPU", kAvx2, "sse41", "'sse41' (SSE4.1) kernels on a CPU with AVX2"},
      {"sse41 on an SSE-only CPU", kSse, "sse41", nullptr},
      {"upper case", kAvx512Bf16, "AVX2", "'AVX2' (AVX2)"},
      {"an ISA name it does not know", kAmx, "all", nullptr},
      {"no name at all", kAmx, "", nullptr},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::vector<std::string> w = cpu_kernel_warnings(cpu(c.flags), c.onednn_isa);
    REQUIRE(w.size() == (c.says ? 1u : 0u));
    if (c.says) CHECK_THAT(w[0], Catch::Contains(c.says));
  }
}

TEST_CASE("environment_warnings reads host.cpu_features and build.onednn", "[host_info]") {
  const nlohmann::json host = {{"cpu_features", {{"avx", true}, {"avx2", true}, {"avx512f", true},
                                                 {"avx512_bf16", true}, {"amx_bf16", false}}}};
  nlohmann::json build = {{"onednn", {{"isa", "avx2"}}}};
  std::vector<std::string> w = environment_warnings(host, build);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Catch::StartsWith("oneDNN runs its 'avx2' (AVX2)"));
  build["onednn"]["isa"] = "avx512_core_bf16";
  CHECK(environment_warnings(host, build).empty());
  // Older files and odd input: nothing to judge, no warning. Files from builds that
  // linked OpenBLAS carry build.openblas, which no longer warns.
  CHECK(environment_warnings(nlohmann::json::object(), nlohmann::json::object()).empty());
  CHECK(environment_warnings(host, {{"onednn", "avx2"}}).empty());
  CHECK(environment_warnings(host, {{"openblas", {{"core", "Prescott"}}}}).empty());
}

TEST_CASE("env text: nested fields as object.key, flags by name, then warning lines",
          "[host_info]") {
  const nlohmann::json env = {
      {"host", {{"cpu_model", "Some CPU"}, {"cpu_features", {{"avx", true}, {"avx2", true}, {"amx_bf16", false}}}}},
      {"build", {{"onednn", {{"isa", "avx2"}, {"max_cpu_isa_env", nullptr}}}, {"cuda_built", false}}},
      {"device", {{"available", false}, {"reason", "no NVIDIA driver / no GPU (x)"}}},
      {"warnings", {"oneDNN runs its 'avx2' kernels"}}};
  const std::string text = render_environment(env);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("host:\n  cpu_features             avx avx2\n"));
  CHECK_THAT(text, Catch::Contains("  onednn.isa               avx2\n"));
  CHECK_THAT(text, Catch::Contains("  onednn.max_cpu_isa_env   -\n"));
  CHECK_THAT(text, Catch::Contains("  cuda_built               false\n"));
  CHECK_THAT(text, Catch::Contains("  reason                   no NVIDIA driver / no GPU (x)\n"));
  CHECK_THAT(text, Catch::EndsWith("\nwarning: oneDNN runs its 'avx2' kernels\n"));
  // Sections in the order host, build, device.
  CHECK(text.find("host:") < text.find("build:"));
  CHECK(text.find("build:") < text.find("device:"));
  CHECK(render_warnings(nlohmann::json::array()).empty());
  CHECK(render_warnings(nullptr).empty());
}

TEST_CASE("build_info and host_info record the math libraries and CPU features here",
          "[host_info]") {
  const nlohmann::json b = build_info();
  CHECK_FALSE(b.contains("openblas"));  // not linked: oneDNN runs every CPU GEMM
  CHECK_FALSE(b.at("onednn").at("version").get<std::string>().empty());
  CHECK(b.at("blas") == "oneDNN " + b.at("onednn").at("version").get<std::string>());
  const std::string isa = b.at("onednn").at("isa").get<std::string>();
  CHECK_FALSE(isa.empty());
  CHECK(isa.rfind("cpu_isa_", 0) == std::string::npos);  // the prefix is stripped
  const nlohmann::json h = host_info();
  for (const char* f : {"avx", "avx2", "avx512f", "avx512_bf16", "amx_bf16"})
    CHECK(h.at("cpu_features").at(f).is_boolean());
  CHECK(h.at("cpu_id").is_string());
}

TEST_CASE("cache sizes: sysfs's spelling, and some size for both levels here", "[host_info]") {
  CHECK(parse_cache_size("1024K") == 1024 * 1024);
  CHECK(parse_cache_size("32M") == 32 * 1024 * 1024);
  CHECK(parse_cache_size("512") == 512);
  CHECK(parse_cache_size("") == 0);
  CHECK(parse_cache_size("K") == 0);
  CHECK(parse_cache_size("12Q") == 0);
  const CpuCaches c = cpu_caches();
  CHECK(c.l2_bytes > 0);
  CHECK(c.l3_bytes > 0);
  CHECK_FALSE(c.source.empty());
}
