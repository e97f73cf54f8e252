// What the CUDA device is, for `noeira-bench env` and results files. Every query is
// checked; on a machine without a usable device the reason is reported, not thrown.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cupti_version.h>

#include <nlohmann/json.hpp>
#include <string>

#ifndef NOEIRA_CUDA_ARCHS
#define NOEIRA_CUDA_ARCHS "?"
#endif

namespace noeira {

bool cuda_device_usable(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    return false;
  }
  return true;
}

nlohmann::json cuda_device_info() {
  nlohmann::json d;
  int runtime = 0, driver = 0;
  d["runtime"] = cudaRuntimeGetVersion(&runtime) == cudaSuccess ? runtime : -1;
  d["built_for_sm"] = NOEIRA_CUDA_ARCHS;  // CMAKE_CUDA_ARCHITECTURES of this build
  d["cublaslt"] = cublasLtGetVersion();
  uint32_t cupti = 0;
  d["cupti"] = cuptiGetVersion(&cupti) == CUPTI_SUCCESS ? static_cast<int64_t>(cupti) : -1;
  std::string why;
  if (!cuda_device_usable(&why)) {
    d["available"] = false;
    d["reason"] = "no CUDA device: " + why;
    return d;
  }
  d["driver"] = cudaDriverGetVersion(&driver) == cudaSuccess ? driver : -1;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    d["available"] = false;
    d["reason"] = "cudaGetDevice failed";
    return d;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    d["available"] = false;
    d["reason"] = "cudaGetDeviceProperties failed";
    return d;
  }
  d["available"] = true;
  d["name"] = p.name;
  d["sm"] = std::to_string(p.major) + std::to_string(p.minor);
  d["multiprocessors"] = p.multiProcessorCount;
  d["memory_bytes"] = p.totalGlobalMem;
  int clock_khz = 0, mem_clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev) == cudaSuccess)
    d["sm_clock_max_mhz"] = clock_khz / 1000;
  if (cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess)
    d["memory_clock_max_mhz"] = mem_clock_khz / 1000;
  return d;
}

}  // namespace noeira
