// `noeira-bench env` and the results context: the CPU kernels the math libraries picked,
// warnings about fallbacks, the reason there is no GPU, and the git state recorded at
// build time.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/env/host_info.h"
#include "harness/results/results.h"
#include "noeira_git_info.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cuda_runtime_api.h>

#include "kernels/cuda/device_info.h"
#endif

using namespace noeira;
using namespace noeira::test;

namespace {

// `env --json` without the baseline probe (its own test below): the probe takes seconds.
nlohmann::json env_json(const std::string& env_vars = "") {
  const CommandResult r = run_shell(env_vars + " '" + bench_binary() + "' env --json --no-probe 2>/dev/null");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}

#if defined(NOEIRA_WITH_CUDA)
bool driver_loadable() {
  void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) ::dlclose(h);
  return h != nullptr;
}
#endif

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST_CASE("env records the CPU kernels oneDNN runs, and the CPU's features", "[cli][env]") {
  const nlohmann::json env = env_json();
  const nlohmann::json& build = env.at("build");
  CHECK_FALSE(build.at("onednn").at("isa").get<std::string>().empty());
  CHECK_FALSE(build.contains("openblas"));  // not linked: oneDNN runs every CPU GEMM
  // The -march of our own loops (CMake's NOEIRA_CPU_ISA; "auto" resolves on the build
  // machine: v4 with AVX-512, v3 with AVX2).
  const std::string loops = build.at("cpu_loops_isa").get<std::string>();
  CHECK_FALSE(loops.empty());
  if (loops == "x86-64-v4") CHECK(env.at("host").at("cpu_features").at("avx512f").get<bool>());
  CHECK(env.at("host").at("cpu_features").at("avx2").is_boolean());
  REQUIRE(env.at("warnings").is_array());
  // The binary's warnings are the rule applied to what it recorded.
  const nlohmann::json expected = environment_warnings(env.at("host"), build);
  CHECK(env.at("warnings") == expected);

  const CommandResult text = run_bench("env --no-probe");
  INFO(text.output);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Catch::Contains("onednn.isa") && Catch::Contains("cpu_features"));
  for (const auto& w : env.at("warnings"))
    CHECK_THAT(text.output, Catch::Contains("warning: " + w.get<std::string>() + "\n"));
}

TEST_CASE("env warns when oneDNN is held below the CPU, and records why", "[cli][env]") {
  const nlohmann::json plain = env_json();
  if (!plain.at("host").at("cpu_features").at("avx512f").get<bool>()) {
    std::printf("SKIP [env] %s: this CPU has no AVX-512, avx2 is no fallback here\n",
                Catch::getResultCapture().getCurrentTestName().c_str());
    return;
  }
  const nlohmann::json capped = env_json("ONEDNN_MAX_CPU_ISA=avx2");
  CHECK(capped.at("build").at("onednn").at("max_cpu_isa_env") == "avx2");
  CHECK(capped.at("build").at("onednn").at("isa") == "avx2");
  bool warned = false;
  for (const auto& w : capped.at("warnings"))
    warned |= w.get<std::string>().rfind("oneDNN runs its 'avx2' (AVX2) kernels", 0) == 0;
  CHECK(warned);
}

// A convolution switch of ours: build.onednn.<key> is null unset, "0" with `var`=0, which
// also adds a warning starting with `warning`.
static void check_off_switch(const std::string& var, const char* key, const std::string& warning) {
  CHECK(env_json().at("build").at("onednn").at(key).is_null());
  const nlohmann::json off = env_json(var + "=0");
  CHECK(off.at("build").at("onednn").at(key) == "0");
  bool warned = false;
  for (const auto& w : off.at("warnings")) warned |= w.get<std::string>().rfind(warning, 0) == 0;
  CHECK(warned);
}

TEST_CASE("env records NOEIRA_WINOGRAD and warns when it turns Winograd off", "[cli][env]") {
  check_off_switch("NOEIRA_WINOGRAD", "winograd_env", "NOEIRA_WINOGRAD=0: fp32 3x3");
}

TEST_CASE("env records NOEIRA_CONV_NHWC16 and warns when it keeps 16-channel convolutions "
          "blocked", "[cli][env]") {
  check_off_switch("NOEIRA_CONV_NHWC16", "conv_nhwc16_env", "NOEIRA_CONV_NHWC16=0: fp32 direct");
}

TEST_CASE("env records NOEIRA_F32_CONV_ROWS and warns when it sends fp32 3x3 passes back to "
          "oneDNN", "[cli][env]") {
  check_off_switch("NOEIRA_F32_CONV_ROWS", "f32_conv_rows_env", "NOEIRA_F32_CONV_ROWS=0: fp32 3x3");
  const nlohmann::json off = env_json("NOEIRA_F32_CONV_ROWS=0");
  CHECK(off.at("build").at("onednn").at("f32_conv_rows") == false);
}

TEST_CASE("env records NOEIRA_BF16_CONV_ROWS and warns when it sends bf16 3x3 passes back to "
          "oneDNN", "[cli][env]") {
  check_off_switch("NOEIRA_BF16_CONV_ROWS", "bf16_conv_rows_env",
                   "NOEIRA_BF16_CONV_ROWS=0: bf16 3x3");
  const nlohmann::json off = env_json("NOEIRA_BF16_CONV_ROWS=0");
  CHECK(off.at("build").at("onednn").at("bf16_conv_rows") == false);
}

TEST_CASE("env records whether large CPU outputs are streamed, and warns when switched off",
          "[cli][env]") {
  const nlohmann::json on = env_json();
  CHECK(on.at("build").at("stream_stores_env").is_null());
  // Available in builds for AVX-512 (streaming_store.h); "native" may be either.
  const std::string loops = on.at("build").at("cpu_loops_isa");
  if (loops == "x86-64-v4") CHECK(on.at("build").at("stream_stores") == true);
  if (loops == "x86-64-v3" || loops == "x86-64" || loops == "default")
    CHECK(on.at("build").at("stream_stores") == false);
  const nlohmann::json off = env_json("NOEIRA_STREAM_STORES=0");
  CHECK(off.at("build").at("stream_stores_env") == "0");
  CHECK(off.at("build").at("stream_stores") == false);
  bool warned = false;
  for (const auto& w : off.at("warnings"))
    warned |= w.get<std::string>().rfind("NOEIRA_STREAM_STORES=0: large CPU outputs", 0) == 0;
  CHECK(warned);
}

TEST_CASE("env records NOEIRA_BF16_WGRAD and warns when it turns our weight gradient off",
          "[cli][env]") {
  CHECK(env_json().at("build").at("onednn").at("bf16_wgrad_env").is_null());
  CHECK(env_json().at("build").at("onednn").at("bf16_wgrad").is_boolean());
  const std::string scope = env_json().at("build").at("onednn").at("bf16_wgrad_scope");
  CHECK((scope == "all" || scope == "amx" || scope == "cin<16" || scope == "none"));
  const nlohmann::json off = env_json("NOEIRA_BF16_WGRAD=0");
  CHECK(off.at("build").at("onednn").at("bf16_wgrad_env") == "0");
  CHECK(off.at("build").at("onednn").at("bf16_wgrad") == false);
  CHECK(off.at("build").at("onednn").at("bf16_wgrad_scope") == "none");
  // "1": ours on every shape it takes; where oneDNN runs AMX that is slower, and it warns.
  const nlohmann::json on = env_json("NOEIRA_BF16_WGRAD=1");
  const bool runs = on.at("build").at("onednn").at("bf16_wgrad");
  CHECK(on.at("build").at("onednn").at("bf16_wgrad_scope") == (runs ? "all" : "none"));
  bool warned_on = false;
  for (const auto& w : on.at("warnings"))
    warned_on |= w.get<std::string>().rfind("NOEIRA_BF16_WGRAD=1: bf16 3x3", 0) == 0;
  const std::string isa = on.at("build").at("onednn").at("isa");
  CHECK(warned_on == (isa.find("amx") != std::string::npos));
  bool warned = false;
  for (const auto& w : off.at("warnings"))
    warned |= w.get<std::string>().rfind("NOEIRA_BF16_WGRAD=0: bf16 3x3", 0) == 0;
  CHECK(warned);
  // "noamx": where oneDNN runs AMX, the split before our AMX kernel, and a warning.
  const nlohmann::json split = env_json("NOEIRA_BF16_WGRAD=noamx");
  const std::string split_scope = split.at("build").at("onednn").at("bf16_wgrad_scope");
  if (isa.find("amx") != std::string::npos && runs) CHECK(split_scope == "cin<16");
  bool warned_split = false;
  for (const auto& w : split.at("warnings"))
    warned_split |= w.get<std::string>().rfind("NOEIRA_BF16_WGRAD=noamx: bf16 3x3", 0) == 0;
  CHECK(warned_split == (split_scope == "cin<16"));
}

TEST_CASE("env prints the baseline probe of ours and of the twin", "[cli][env][probe]") {
  const CommandResult r = run_bench("env --threads 1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("cpu baseline probe (GEMM 1024^3") &&
                           Catch::Contains("  ours: fp32 GEMM ") && Catch::Contains("(1 thread); oneDNN"));
  // The twin's line: its figures, or why there are none (no python with torch).
  CHECK_THAT(r.output, Catch::Contains("  twin: "));
  const CommandResult j = run_bench("env --json --threads 1");
  REQUIRE(j.exit_code == 0);
  const nlohmann::json env = nlohmann::json::parse(j.output);
  CHECK(env["probes"]["cpu"]["ours"]["rows"][0]["gemm_fp32_gflops"].get<double>() > 0.0);
  CHECK(env["probes"]["cpu"]["twin"].is_object());
}

TEST_CASE("env on a machine without an NVIDIA driver says so", "[cli][env]") {
  const nlohmann::json env = env_json();
  const CommandResult text = run_bench("env --no-probe");
  INFO(text.output);
#if defined(NOEIRA_WITH_CUDA)
  if (driver_loadable()) {
    std::printf("SKIP [env] %s: libcuda.so.1 loads here (a driver is installed)\n",
                Catch::getResultCapture().getCurrentTestName().c_str());
    return;
  }
  CHECK(env.at("device").at("available") == false);
  CHECK(env.at("device").at("driver_loadable") == false);
  CHECK_THAT(env.at("device").at("reason").get<std::string>(),
             Catch::StartsWith("no NVIDIA driver / no GPU (libcuda.so.1"));
  CHECK_THAT(text.output, Catch::Contains("no NVIDIA driver / no GPU"));
  CHECK_THAT(text.output, !Catch::Contains("driver version is insufficient"));
#else
  CHECK_THAT(env.at("device").at("reason").get<std::string>(), Catch::Contains("built without CUDA"));
  CHECK_THAT(text.output, Catch::Contains("built without CUDA"));
#endif
}

TEST_CASE("train --target gpu without an NVIDIA driver names the missing driver",
          "[cli][env][mnist]") {
#if defined(NOEIRA_WITH_CUDA)
  if (driver_loadable()) {
    std::printf("SKIP [env] %s: libcuda.so.1 loads here (a driver is installed)\n",
                Catch::getResultCapture().getCurrentTestName().c_str());
    return;
  }
  const CommandResult train = run_bench("train --target gpu --epochs 1");
  INFO(train.output);
  CHECK(train.exit_code == 1);
  CHECK_THAT(train.output, Catch::Contains("target gpu: no NVIDIA driver / no GPU"));
#else
  std::printf("SKIP [env] %s: this build has no CUDA backend\n",
              Catch::getResultCapture().getCurrentTestName().c_str());
#endif
}

#if defined(NOEIRA_WITH_CUDA)
TEST_CASE("cuda_unavailable_reason tells no driver, an old driver and no device apart",
          "[env]") {
  CudaProbe p;
  p.runtime_version = 13000;

  SECTION("a device: usable") {
    p.driver_loadable = true;
    p.driver_version = 13000;
    p.device_count = 1;
    CHECK(cuda_unavailable_reason(p).empty());
  }
  SECTION("no libcuda.so.1: cudart says 'insufficient driver', we say no driver") {
    p.count_error = cudaErrorInsufficientDriver;
    p.count_error_text = "CUDA driver version is insufficient for CUDA runtime version";
    p.driver_load_error = "libcuda.so.1: cannot open shared object file: No such file or directory";
    CHECK(cuda_unavailable_reason(p) ==
          "no NVIDIA driver / no GPU (libcuda.so.1: cannot open shared object file: No such file "
          "or directory)");
    p.driver_load_error.clear();
    CHECK(cuda_unavailable_reason(p) == "no NVIDIA driver / no GPU (libcuda.so.1 cannot be loaded)");
    p.count_error = cudaErrorNoDevice;
    CHECK_THAT(cuda_unavailable_reason(p), Catch::StartsWith("no NVIDIA driver / no GPU"));
  }
  SECTION("the toolkit's stub libcuda: no driver either") {
    p.driver_loadable = true;
    p.count_error = cudaErrorStubLibrary;
    CHECK_THAT(cuda_unavailable_reason(p), Catch::StartsWith("no NVIDIA driver / no GPU") &&
                                               Catch::Contains("stub"));
  }
  SECTION("a driver too old for the runtime: CUDA's message with both versions") {
    p.driver_loadable = true;
    p.driver_version = 12020;
    p.count_error = cudaErrorInsufficientDriver;
    p.count_error_text = "CUDA driver version is insufficient for CUDA runtime version";
    CHECK(cuda_unavailable_reason(p) ==
          "CUDA driver version is insufficient for CUDA runtime version: the NVIDIA driver "
          "supports CUDA 12.2, this build's runtime is CUDA 13.0; update the driver");
  }
  SECTION("a driver and no device") {
    p.driver_loadable = true;
    p.driver_version = 13000;
    p.count_error = cudaErrorNoDevice;
    CHECK_THAT(cuda_unavailable_reason(p),
               Catch::StartsWith("no GPU: the NVIDIA driver (CUDA 13.0) sees no device"));
    p.count_error = cudaSuccess;
    p.device_count = 0;
    CHECK_THAT(cuda_unavailable_reason(p), Catch::StartsWith("no GPU:"));
  }
  SECTION("anything else: CUDA's own message") {
    p.driver_loadable = true;
    p.count_error = cudaErrorSystemDriverMismatch;
    p.count_error_text = "system has unsupported display driver / cuda driver combination";
    CHECK(cuda_unavailable_reason(p) ==
          "cudaGetDeviceCount: system has unsupported display driver / cuda driver combination");
  }
  CHECK(cuda_version_text(12040) == "12.4");
  CHECK(cuda_version_text(0) == "unknown");
}
#endif

TEST_CASE("the git sha and dirty flag are the build's, not read at run time", "[env]") {
  // No git on PATH and a working directory outside the source tree: the binary still
  // reports what it was built from.
  TempDir dir;
  const CommandResult r = run_shell("cd " + shell_quote(dir.path().string()) +
                                    " && PATH=/nonexistent " + shell_quote(bench_binary()) +
                                    " env --json 2>/dev/null");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json env = nlohmann::json::parse(r.output);
  CHECK(env.at("build").at("git_sha") == std::string(kNoeiraGitSha));
  CHECK(env.at("build").at("git_dirty") == kNoeiraGitDirty);
  const nlohmann::json b = build_info();
  CHECK(b.at("git_sha") == std::string(kNoeiraGitSha));
}

TEST_CASE("cmake/git_info.cmake writes the header, and rewrites it only on a change",
          "[env]") {
  const std::filesystem::path script =
      std::filesystem::path(NOEIRA_SOURCE_DIR) / "cmake" / "git_info.cmake";
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  if (!std::filesystem::exists(script) || run_shell("git --version && cmake --version").exit_code != 0) {
    std::printf("SKIP [env] %s: needs the source tree, git and cmake\n", name.c_str());
    return;
  }
  TempDir dir;
  const std::string repo = (dir / "repo").string();
  const std::string header = (dir / "out" / "git_info.h").string();
  const std::string git = "git -C " + shell_quote(repo) +
                          " -c user.name=t -c user.email=t@t -c commit.gpgsign=false ";
  auto generate = [&] {
    const CommandResult r = run_shell("cmake -DSOURCE_DIR=" + shell_quote(repo) +
                                      " -DGIT=git -DOUT=" + shell_quote(header) + " -P " +
                                      shell_quote(script.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::ifstream in(header);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  auto head = [&] {
    CommandResult r = run_shell(git + "rev-parse HEAD");
    REQUIRE(r.exit_code == 0);
    while (!r.output.empty() && r.output.back() == '\n') r.output.pop_back();
    return r.output;
  };

  // Not a git checkout: unknown sha, clean.
  std::filesystem::create_directories(repo);
  CHECK_THAT(generate(), Catch::Contains("kNoeiraGitSha = \"\";") &&
                             Catch::Contains("kNoeiraGitDirty = false;"));

  REQUIRE(run_shell(git + "init -q && echo a > " + shell_quote(repo + "/f") + " && " + git +
                    "add f && " + git + "commit -qm one")
              .exit_code == 0);
  const std::string one = head();
  CHECK_THAT(generate(), Catch::Contains("kNoeiraGitSha = \"" + one + "\";") &&
                             Catch::Contains("kNoeiraGitDirty = false;"));

  // Unchanged state: the file is not rewritten (so nothing recompiles).
  const auto stamp = std::filesystem::last_write_time(header);
  std::filesystem::last_write_time(header, stamp - std::chrono::hours(1));
  generate();
  CHECK(std::filesystem::last_write_time(header) == stamp - std::chrono::hours(1));

  // An untracked file does not make the tree dirty; a changed tracked file does.
  std::ofstream(repo + "/untracked") << "x";
  CHECK_THAT(generate(), Catch::Contains("kNoeiraGitDirty = false;"));
  std::ofstream(repo + "/f") << "b";
  CHECK_THAT(generate(), Catch::Contains("kNoeiraGitDirty = true;"));

  // A new commit: the new sha, without reconfiguring anything.
  REQUIRE(run_shell(git + "commit -qam two").exit_code == 0);
  const std::string two = head();
  CHECK(two != one);
  CHECK_THAT(generate(), Catch::Contains("kNoeiraGitSha = \"" + two + "\";") &&
                             Catch::Contains("kNoeiraGitDirty = false;"));
}

TEST_CASE("run records the CPU kernels and warnings in the results file and prints them",
          "[run][env][mnist]") {
  const nlohmann::json plain = env_json();
  if (!plain.at("host").at("cpu_features").at("avx512f").get<bool>()) {
    std::printf("SKIP [env] %s: this CPU has no AVX-512, avx2 is no fallback here\n",
                Catch::getResultCapture().getCurrentTestName().c_str());
    return;
  }
  TempDir dir;
  const auto out = dir / "r.json";
  const CommandResult r = run_shell(
      "ONEDNN_MAX_CPU_ISA=avx2 " + shell_quote(bench_binary()) +
      " run --model mlp --target cpu --quick --steps 12 --warmup 2 --threads 1 --seeds 1 "
      "--twin none --out " + shell_quote(out.string()));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("\nwarning: oneDNN runs its 'avx2' (AVX2) kernels"));
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  const nlohmann::json& c = (*res)["context"];
  CHECK(c["build"]["onednn"]["isa"] == "avx2");
  CHECK(c["build"]["onednn"]["max_cpu_isa_env"] == "avx2");
  REQUIRE(c["warnings"].is_array());
  REQUIRE_FALSE(c["warnings"].empty());
  CHECK_THAT(c["warnings"][0].get<std::string>(), Catch::StartsWith("oneDNN runs its 'avx2'"));

  const CommandResult report = run_bench("report " + shell_quote(out.string()));
  INFO(report.output);
  CHECK(report.exit_code == 0);
  CHECK_THAT(report.output, Catch::Contains("| CPU math kernels | oneDNN ") &&
                                Catch::Contains(" avx2 (ONEDNN_MAX_CPU_ISA=avx2), our loops x86-64") &&
                                Catch::Contains("warning: oneDNN runs its 'avx2'"));
}
