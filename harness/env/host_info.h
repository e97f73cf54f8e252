// What this machine and this build are: printed by `env`, recorded in results files.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace noeira {

// {cpu_model, cpu_id, cpu_features, cores, memory_bytes, os, hostname}
nlohmann::json host_info();
// {compiler, build_type, blas, onednn, cuda_built, git_sha, git_dirty}; blas names the
// CPU's GEMM library (oneDNN).
// git_sha/git_dirty are the source tree's state when the binary was built (a header the
// build regenerates whenever they change), not read at run time: a relocated binary
// still knows what it was built from.
nlohmann::json build_info();
// {available, reason, name, sm, memory_bytes, driver, runtime, cublaslt, cupti, clocks}
nlohmann::json device_info();

// The CPU features that decide which math kernels can run (from /proc/cpuinfo flags).
struct CpuFeatures {
  bool avx = false, avx2 = false, avx512f = false, avx512_bf16 = false, amx_bf16 = false;
};
// Parses the value of a /proc/cpuinfo "flags" line ("fpu vme ... avx2 ...").
CpuFeatures parse_cpu_flags(std::string_view flags);

// Warnings, one sentence each, when the math library runs an older kernel set than the
// CPU supports: oneDNN's effective ISA (e.g. "avx512_core_bf16"; every CPU GEMM and
// convolution). Names it does not know give no warning; an empty name is skipped.
std::vector<std::string> cpu_kernel_warnings(const CpuFeatures& cpu, std::string_view onednn_isa);

// The warnings about a machine and build, from host_info() and build_info() (the
// cpu_kernel_warnings of the libraries loaded): `warnings` in `env --json` and in the
// results files' context.
std::vector<std::string> environment_warnings(const nlohmann::json& host, const nlohmann::json& build);

// {host, build, device, warnings}: what `env --json` prints.
nlohmann::json environment();
// What `env` prints: each section's fields ("  key  value"; nested objects as
// "object.key", an object of flags as the names of those set), then one
// "warning: ..." line per warning.
std::string render_environment(const nlohmann::json& env);
// "warning: ...\n" per string of a `warnings` array; "" when there is none.
std::string render_warnings(const nlohmann::json& warnings);

}  // namespace noeira
