// What this machine and this build are: printed by `env`, recorded in results files.
#pragma once
#include <nlohmann/json.hpp>

namespace noeira {

// {cpu_model, cores, memory_bytes, os, hostname}
nlohmann::json host_info();
// {compiler, build_type, blas, cuda_built, version, git_sha, git_dirty}
nlohmann::json build_info();
// {available, reason, name, sm, memory_bytes, driver, runtime, cublaslt, cupti, clocks}
nlohmann::json device_info();

}  // namespace noeira
