#include "harness/env/host_info.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "noeira_git_info.h"  // generated at build time: kNoeiraGitSha, kNoeiraGitDirty
#include "kernels/backend.h"
#include "kernels/cpu/bf16_conv3x3_rows.h"
#include "kernels/cpu/bf16_conv3x3_wgrad.h"
#include "kernels/cpu/f32_conv3x3_rows.h"
#include "kernels/cpu/streaming_store.h"

namespace noeira {

#if defined(NOEIRA_WITH_CUDA)
nlohmann::json cuda_device_info();  // kernels/cuda
#endif

namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// The value of the first "key : value" line whose key is exactly `key` ("model" does
// not match "model name").
std::string first_value(const char* file, std::string_view key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(std::string_view(line).substr(0, colon)) == key)
      return trim(std::string_view(line).substr(colon + 1));
  }
  return "";
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

nlohmann::json env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Kernel generations, oldest first. A library whose generation is below the CPU's runs
// a fallback.
struct Level {
  int rank;
  const char* label;
};

// oneDNN ISA names (dnnl_cpu_isa2str without its "cpu_isa_" prefix, oneDNN 2.x and 3.x).
bool onednn_level(std::string_view isa, Level* out) {
  const std::string n = lower(isa);
  if (n.empty() || n == "all" || n == "default" || n == "unknown") return false;
  if (n.find("amx") != std::string::npos) *out = {6, "AMX"};
  else if (n.rfind("avx512_core_bf16", 0) == 0 || n.rfind("avx512_core_fp16", 0) == 0 ||
           n.rfind("avx10", 0) == 0)
    *out = {5, "AVX-512 BF16"};
  else if (n.rfind("avx512", 0) == 0) *out = {4, "AVX-512"};
  else if (n.rfind("avx2", 0) == 0) *out = {3, "AVX2"};
  else if (n == "avx") *out = {2, "AVX"};
  else if (n.rfind("sse", 0) == 0) *out = {1, "SSE4.1"};
  else return false;
  return true;
}

Level onednn_level_for(const CpuFeatures& cpu) {
  if (cpu.amx_bf16) return {6, "AMX-BF16"};
  if (cpu.avx512_bf16) return {5, "AVX-512 BF16"};
  if (cpu.avx512f) return {4, "AVX-512"};
  if (cpu.avx2) return {3, "AVX2"};
  if (cpu.avx) return {2, "AVX"};
  return {1, "SSE4.1"};
}

std::string onednn_isa_name(dnnl_cpu_isa_t isa) {
  const char* s = dnnl_cpu_isa2str(isa);
  std::string name = s ? s : "";
  if (name.rfind("cpu_isa_", 0) == 0) name.erase(0, 8);
  return name.empty() ? "unknown (" + std::to_string(static_cast<int>(isa)) + ")" : name;
}

nlohmann::json onednn_info() {
  const dnnl_version_t* v = dnnl_version();
  std::string version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                        std::to_string(v->patch);
  if (v->hash && std::string_view(v->hash) != "N/A") version += " (" + std::string(v->hash) + ")";
  return {{"version", version},
          {"isa", onednn_isa_name(dnnl_get_effective_cpu_isa())},
          {"max_cpu_isa_env", std::getenv("ONEDNN_MAX_CPU_ISA") ? env_or_null("ONEDNN_MAX_CPU_ISA")
                                                               : env_or_null("DNNL_MAX_CPU_ISA")},
          // "0" turns the fp32 Winograd convolutions off (kernels/cpu/onednn_conv.h).
          {"winograd_env", env_or_null("NOEIRA_WINOGRAD")},
          // "0" keeps fp32 direct stride-1 16 -> 16-channel convolutions on nChw16c, not
          // nhwc (kernels/cpu/onednn_conv_pass.cpp).
          {"conv_nhwc16_env", env_or_null("NOEIRA_CONV_NHWC16")},
          // "0" sends fp32 3x3 stride-1 convolutions of 32-pixel rows back to oneDNN from
          // our kernel on the nchw rows (kernels/cpu/f32_conv3x3_rows.h); whether it runs.
          {"f32_conv_rows_env", env_or_null("NOEIRA_F32_CONV_ROWS")},
          {"f32_conv_rows", f32_conv_rows_available()},
          // The same for bf16 (kernels/cpu/bf16_conv3x3_rows.h): runs on AVX512-BF16 CPUs
          // where oneDNN does not run AMX.
          {"bf16_conv_rows_env", env_or_null("NOEIRA_BF16_CONV_ROWS")},
          {"bf16_conv_rows", bf16_conv_rows_available()},
          // "0" sends bf16 3x3 weight gradients back to oneDNN, "1" to our AVX512-BF16
          // kernel on every shape, "noamx" to the split before our AMX kernel
          // (kernels/cpu/bf16_conv3x3_wgrad.h).
          {"bf16_wgrad_env", env_or_null("NOEIRA_BF16_WGRAD")},
          // Whether that kernel runs here at all (AVX-512 build, AVX512-BF16 CPU, not off),
          // and on which shapes: "all", "amx" (ours on every shape, AMX tiles for channels
          // in blocks of 16), "cin<16" (where oneDNN runs AMX and ours cannot), "none".
          {"bf16_wgrad", bf16_wgrad_available()},
          {"bf16_wgrad_scope", bf16_wgrad_scope_name(bf16_wgrad_scope())}};
}

}  // namespace

CpuFeatures parse_cpu_flags(std::string_view flags) {
  CpuFeatures f;
  size_t i = 0;
  while (i < flags.size()) {
    const size_t b = flags.find_first_not_of(" \t\n", i);
    if (b == std::string_view::npos) break;
    size_t e = flags.find_first_of(" \t\n", b);
    if (e == std::string_view::npos) e = flags.size();
    const std::string_view w = flags.substr(b, e - b);
    if (w == "avx") f.avx = true;
    else if (w == "avx2") f.avx2 = true;
    else if (w == "avx512f") f.avx512f = true;
    else if (w == "avx512_bf16") f.avx512_bf16 = true;
    else if (w == "amx_bf16") f.amx_bf16 = true;
    i = e;
  }
  return f;
}

std::vector<std::string> cpu_kernel_warnings(const CpuFeatures& cpu, std::string_view onednn_isa) {
  std::vector<std::string> out;
  Level lib{};
  const Level dnn_cpu = onednn_level_for(cpu);
  if (onednn_level(onednn_isa, &lib) && lib.rank < dnn_cpu.rank)
    out.push_back("oneDNN runs its '" + std::string(onednn_isa) + "' (" + lib.label +
                  ") kernels on a CPU with " + dnn_cpu.label +
                  "; GEMM and convolution figures reflect that (check ONEDNN_MAX_CPU_ISA" +
                  (dnn_cpu.rank == 6 ? ", and that the kernel lets processes use AMX)" : ")"));
  return out;
}

std::vector<std::string> environment_warnings(const nlohmann::json& host, const nlohmann::json& build) {
  CpuFeatures cpu;
  if (const auto f = host.find("cpu_features"); f != host.end() && f->is_object()) {
    cpu.avx = f->value("avx", false);
    cpu.avx2 = f->value("avx2", false);
    cpu.avx512f = f->value("avx512f", false);
    cpu.avx512_bf16 = f->value("avx512_bf16", false);
    cpu.amx_bf16 = f->value("amx_bf16", false);
  }
  auto text = [](const nlohmann::json& j, const char* obj, const char* key) -> std::string {
    const auto o = j.find(obj);
    if (o == j.end() || !o->is_object()) return "";
    const auto v = o->find(key);
    return v != o->end() && v->is_string() ? v->get<std::string>() : "";
  };
  std::vector<std::string> warnings = cpu_kernel_warnings(cpu, text(build, "onednn", "isa"));
  if (text(build, "onednn", "winograd_env") == "0")
    warnings.push_back("NOEIRA_WINOGRAD=0: fp32 3x3 stride-1 convolutions run oneDNN's direct "
                       "kernels, not Winograd's; convolution figures reflect that");
  if (text(build, "onednn", "conv_nhwc16_env") == "0")
    warnings.push_back("NOEIRA_CONV_NHWC16=0: fp32 direct stride-1 convolutions from 16 "
                       "channels to 16 run oneDNN's nChw16c kernels, not its nhwc ones; "
                       "convolution figures reflect that");
  if (text(build, "onednn", "f32_conv_rows_env") == "0")
    warnings.push_back("NOEIRA_F32_CONV_ROWS=0: fp32 3x3 stride-1 convolutions of 32-pixel "
                       "rows run oneDNN's kernels on copies, not ours on the nchw rows; "
                       "convolution figures reflect that");
  if (text(build, "onednn", "bf16_conv_rows_env") == "0")
    warnings.push_back("NOEIRA_BF16_CONV_ROWS=0: bf16 3x3 stride-1 convolutions of 32-pixel "
                       "rows run oneDNN's kernels on copies, not ours on the nchw rows; "
                       "convolution figures reflect that");
  if (const auto e = build.find("stream_stores_env"); e != build.end() && *e == "0")
    warnings.push_back("NOEIRA_STREAM_STORES=0: large CPU outputs are written through the "
                       "caches, not streamed to memory; convolution, BatchNorm and "
                       "element-wise figures reflect that");
  if (text(build, "onednn", "bf16_wgrad_env") == "0")
    warnings.push_back("NOEIRA_BF16_WGRAD=0: bf16 3x3 stride-1 weight gradients run oneDNN's "
                       "kernel, not ours; convolution figures reflect that");
  if (text(build, "onednn", "bf16_wgrad_env") == "1" &&
      text(build, "onednn", "isa").find("amx") != std::string::npos)
    warnings.push_back("NOEIRA_BF16_WGRAD=1: bf16 3x3 stride-1 weight gradients run our "
                       "AVX512-BF16 kernel on every shape, also where AMX kernels are faster; "
                       "convolution figures reflect that");
  if (text(build, "onednn", "bf16_wgrad_env") == "noamx" &&
      text(build, "onednn", "bf16_wgrad_scope") == "cin<16")
    warnings.push_back("NOEIRA_BF16_WGRAD=noamx: bf16 3x3 stride-1 weight gradients from 16 "
                       "input channels run oneDNN's AMX kernel, not ours; convolution figures "
                       "reflect that");
  return warnings;
}

nlohmann::json host_info() {
  nlohmann::json h;
  h["cpu_model"] = first_value("/proc/cpuinfo", "model name");
  // Vendor, family and model: "GenuineIntel family 6 model 207" names the CPU where the
  // model name is generic ("Intel(R) Xeon(R) Processor" under some hypervisors).
  const std::string vendor = first_value("/proc/cpuinfo", "vendor_id");
  const std::string family = first_value("/proc/cpuinfo", "cpu family");
  const std::string model = first_value("/proc/cpuinfo", "model");
  h["cpu_id"] = family.empty() ? vendor : vendor + " family " + family + " model " + model;
  const CpuFeatures f = parse_cpu_flags(first_value("/proc/cpuinfo", "flags"));
  h["cpu_features"] = {{"avx", f.avx},
                       {"avx2", f.avx2},
                       {"avx512f", f.avx512f},
                       {"avx512_bf16", f.avx512_bf16},
                       {"amx_bf16", f.amx_bf16}};
  h["cores"] = default_thread_count();
  // The clock /proc/cpuinfo reports (nominal under most hypervisors): the basis of the
  // baseline probe's peak estimate (harness/env/baseline_probe.h).
  const std::string mhz = first_value("/proc/cpuinfo", "cpu MHz");
  h["cpu_mhz"] = mhz.empty() ? 0.0 : std::strtod(mhz.c_str(), nullptr);
  const std::string mem = first_value("/proc/meminfo", "MemTotal");  // "24576000 kB"
  h["memory_bytes"] = mem.empty() ? 0 : std::stoll(mem) * 1024;
  struct utsname u{};
  if (::uname(&u) == 0) h["os"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  h["hostname"] = host;
  return h;
}

nlohmann::json build_info() {
  nlohmann::json b;
#if defined(__clang__)
  b["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  b["compiler"] = std::string("g++ ") + __VERSION__;
#endif
#if defined(NDEBUG)
  b["build_type"] = "release";
#else
  b["build_type"] = "debug";
#endif
  // The math library as loaded now: which kernels it picked on this CPU. oneDNN runs
  // every CPU GEMM and convolution ("blas": the GEMM library, a results-file field).
  const nlohmann::json onednn = onednn_info();
  b["blas"] = "oneDNN " + onednn.at("version").get<std::string>();
  b["onednn"] = onednn;
#if defined(NOEIRA_CPU_LOOPS_ISA)
  // The -march our own CPU loops were compiled for (CMake's NOEIRA_CPU_ISA, resolved).
  b["cpu_loops_isa"] = std::string(NOEIRA_CPU_LOOPS_ISA).empty() ? "default"
                                                                  : NOEIRA_CPU_LOOPS_ISA;
#endif
  // Our CPU loops' streaming stores for large outputs (kernels/cpu/streaming_store.h).
  b["stream_stores"] = streaming_stores_available();
  b["stream_stores_env"] = env_or_null("NOEIRA_STREAM_STORES");
#if defined(NOEIRA_WITH_CUDA)
  b["cuda_built"] = true;
#else
  b["cuda_built"] = false;
#endif
  // The distributed trainer's CPU engine (mpirun -np N ... --zero K).
#if defined(NOEIRA_WITH_MPI)
  b["mpi_built"] = true;
#else
  b["mpi_built"] = false;
#endif
  b["git_sha"] = kNoeiraGitSha;
  b["git_dirty"] = kNoeiraGitDirty;
  return b;
}

nlohmann::json environment() {
  nlohmann::json env = {{"host", host_info()}, {"build", build_info()}, {"device", device_info()}};
  env["warnings"] = environment_warnings(env["host"], env["build"]);
  return env;
}

namespace {

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

void render_fields(const nlohmann::json& fields, const std::string& prefix, std::string* out) {
  for (const auto& [k, v] : fields.items()) {
    const std::string key = prefix + k;
    const bool flags = v.is_object() && !v.empty() &&
                       std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) { return x.is_boolean(); });
    if (v.is_object() && !flags) {
      render_fields(v, key + ".", out);
      continue;
    }
    std::string text;
    if (flags) {
      for (const auto& [name, set] : v.items())
        if (set.get<bool>()) text += (text.empty() ? "" : " ") + name;
      if (text.empty()) text = "none";
    } else {
      text = value_text(v);
    }
    char pad[64];
    std::snprintf(pad, sizeof pad, "  %-24s ", key.c_str());
    *out += pad + text + "\n";
  }
}

}  // namespace

std::string render_warnings(const nlohmann::json& warnings) {
  std::string out;
  if (!warnings.is_array()) return out;
  for (const nlohmann::json& w : warnings)
    if (w.is_string()) out += "warning: " + w.get<std::string>() + "\n";
  return out;
}

std::string render_environment(const nlohmann::json& env) {
  std::string out;
  for (const char* section : {"host", "build", "device"}) {
    const auto it = env.find(section);
    if (it == env.end() || !it->is_object()) continue;
    out += std::string(section) + ":\n";
    render_fields(*it, "", &out);
  }
  return out + render_warnings(env.value("warnings", nlohmann::json::array()));
}

nlohmann::json device_info() {
#if defined(NOEIRA_WITH_CUDA)
  return cuda_device_info();
#else
  return {{"available", false}, {"reason", "built without CUDA (configure with -DNOEIRA_CUDA=ON)"}};
#endif
}

}  // namespace noeira
