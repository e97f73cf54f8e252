// What the machine really runs: CPU flags, the kernels OpenBLAS and oneDNN picked, the
// warnings when they picked a fallback, and how `env` shows them.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/host_info.h"

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

TEST_CASE("cpu_kernel_warnings: a library on an older kernel set than the CPU's warns",
          "[host_info]") {
  struct Case {
    const char* what;
    const char* flags;
    const char* openblas_core;
    const char* onednn_isa;
    std::vector<std::string> says;  // one entry per expected warning: a part of its text
  };
  const Case cases[] = {
      // The case seen on the build machines: Debian's OpenBLAS 0.3.21 on model 207.
      {"Prescott on an AVX-512 CPU", kAvx512Bf16, "Prescott", "avx512_core_bf16",
       {"OpenBLAS runs its 'Prescott' (SSE3) kernels on a CPU with AVX-512; fp32 GEMM figures "
        "reflect that (OPENBLAS_CORETYPE=SkylakeX selects the right ones)"}},
      {"SkylakeX on an AVX-512 CPU", kAvx512Bf16, "SkylakeX", "avx512_core_bf16", {}},
      {"Cooperlake on an AVX-512 BF16 CPU", kAvx512Bf16, "Cooperlake", "avx512_core_bf16", {}},
      {"a fixed-target build's upper-case name", kAvx512, "SKYLAKEX", "avx512_core", {}},
      {"upper-case PRESCOTT still warns", kAvx512, "PRESCOTT", "avx512_core", {"'PRESCOTT' (SSE3)"}},
      {"Haswell on an AVX2-only CPU", kAvx2, "Haswell", "avx2", {}},
      {"Zen on an AVX2-only CPU", kAvx2, "Zen", "avx2", {}},
      {"Prescott on an AVX2 CPU", kAvx2, "Prescott", "avx2",
       {"on a CPU with AVX2; fp32 GEMM figures reflect that (OPENBLAS_CORETYPE=Haswell"}},
      {"Zen (AVX2) on an AVX-512 AMD CPU", kAvx512, "Zen", "avx512_core",
       {"'Zen' (AVX2) kernels on a CPU with AVX-512"}},
      {"Sandybridge on an AVX2 CPU", kAvx2, "Sandybridge", "avx2", {"'Sandybridge' (AVX)"}},
      {"Prescott on an SSE-only CPU", kSse, "Prescott", "sse41", {}},
      {"OpenBLAS's generic kernels", kAvx2, "Generic", "avx2", {"'Generic' (generic C)"}},
      {"a core name it does not know", kAvx512, "ARMV8", "avx512_core", {}},
      {"no names at all", kAmx, "", "", {}},
      {"oneDNN below an AVX-512 BF16 CPU", kAvx512Bf16, "SkylakeX", "avx2",
       {"oneDNN runs its 'avx2' (AVX2) kernels on a CPU with AVX-512 BF16; bf16 GEMM figures "
        "reflect that (check ONEDNN_MAX_CPU_ISA)"}},
      {"oneDNN without AMX on an AMX CPU", kAmx, "SkylakeX", "avx512_core_bf16",
       {"'avx512_core_bf16' (AVX-512 BF16) kernels on a CPU with AMX-BF16"}},
      {"oneDNN with AMX on an AMX CPU", kAmx, "SapphireRapids", "avx512_core_amx", {}},
      {"oneDNN 3.x names", kAmx, "SkylakeX", "avx10_1_512_amx_fp16", {}},
      {"oneDNN avx512_core on an AVX-512 CPU without BF16", kAvx512, "SkylakeX", "avx512_core_vnni", {}},
      {"oneDNN avx2_vnni on an AVX2 CPU", kAvx2, "Haswell", "avx2_vnni", {}},
      {"both below the CPU", kAmx, "Prescott", "avx2", {"OpenBLAS runs its 'Prescott'", "oneDNN runs its 'avx2'"}},
      {"an ISA name it does not know", kAmx, "SkylakeX", "all", {}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::vector<std::string> w = cpu_kernel_warnings(cpu(c.flags), c.openblas_core, c.onednn_isa);
    REQUIRE(w.size() == c.says.size());
    for (size_t i = 0; i < w.size(); ++i) CHECK_THAT(w[i], Catch::Contains(c.says[i]));
  }
}

TEST_CASE("environment_warnings reads host.cpu_features, build.openblas and build.onednn",
          "[host_info]") {
  const nlohmann::json host = {{"cpu_features", {{"avx", true}, {"avx2", true}, {"avx512f", true},
                                                 {"avx512_bf16", true}, {"amx_bf16", false}}}};
  nlohmann::json build = {{"openblas", {{"core", "Prescott"}}},
                          {"onednn", {{"isa", "avx512_core_bf16"}}}};
  std::vector<std::string> w = environment_warnings(host, build);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Catch::StartsWith("OpenBLAS runs its 'Prescott' (SSE3)"));
  build["openblas"]["core"] = "SkylakeX";
  CHECK(environment_warnings(host, build).empty());
  // Older files and odd input: nothing to judge, no warning.
  CHECK(environment_warnings(nlohmann::json::object(), nlohmann::json::object()).empty());
  CHECK(environment_warnings(host, {{"openblas", "Prescott"}}).empty());
}

TEST_CASE("env text: nested fields as object.key, flags by name, then warning lines",
          "[host_info]") {
  const nlohmann::json env = {
      {"host", {{"cpu_model", "Some CPU"}, {"cpu_features", {{"avx", true}, {"avx2", true}, {"amx_bf16", false}}}}},
      {"build", {{"openblas", {{"core", "Prescott"}, {"coretype_env", nullptr}}}, {"cuda_built", false}}},
      {"device", {{"available", false}, {"reason", "no NVIDIA driver / no GPU (x)"}}},
      {"warnings", {"OpenBLAS runs its 'Prescott' kernels"}}};
  const std::string text = render_environment(env);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("host:\n  cpu_features           avx avx2\n"));
  CHECK_THAT(text, Catch::Contains("  openblas.core          Prescott\n"));
  CHECK_THAT(text, Catch::Contains("  openblas.coretype_env  -\n"));
  CHECK_THAT(text, Catch::Contains("  cuda_built             false\n"));
  CHECK_THAT(text, Catch::Contains("  reason                 no NVIDIA driver / no GPU (x)\n"));
  CHECK_THAT(text, Catch::EndsWith("\nwarning: OpenBLAS runs its 'Prescott' kernels\n"));
  // Sections in the order host, build, device.
  CHECK(text.find("host:") < text.find("build:"));
  CHECK(text.find("build:") < text.find("device:"));
  CHECK(render_warnings(nlohmann::json::array()).empty());
  CHECK(render_warnings(nullptr).empty());
}

TEST_CASE("build_info and host_info record the math libraries and CPU features here",
          "[host_info]") {
  const nlohmann::json b = build_info();
  CHECK_FALSE(b.at("openblas").at("core").get<std::string>().empty());
  CHECK_THAT(b.at("openblas").at("config").get<std::string>(), Catch::Contains("OpenBLAS"));
  CHECK_FALSE(b.at("onednn").at("version").get<std::string>().empty());
  const std::string isa = b.at("onednn").at("isa").get<std::string>();
  CHECK_FALSE(isa.empty());
  CHECK(isa.rfind("cpu_isa_", 0) == std::string::npos);  // the prefix is stripped
  const nlohmann::json h = host_info();
  for (const char* f : {"avx", "avx2", "avx512f", "avx512_bf16", "amx_bf16"})
    CHECK(h.at("cpu_features").at(f).is_boolean());
  CHECK(h.at("cpu_id").is_string());
}
