// What the CUDA device is, for `noeira-bench env` and results files. Every query is
// checked; on a machine without a usable device the reason is reported, not thrown.
#include "kernels/cuda/device_info.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cupti_version.h>
#include <dlfcn.h>

#include <nlohmann/json.hpp>
#include <string>

#ifndef NOEIRA_CUDA_ARCHS
#define NOEIRA_CUDA_ARCHS "?"
#endif

namespace noeira {

std::string cuda_version_text(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string cuda_unavailable_reason(const CudaProbe& p) {
  if (p.count_error == cudaSuccess && p.device_count > 0) return "";
  // cudart loads the driver as libcuda.so.1; without it every call reports
  // "CUDA driver version is insufficient", which is not what is wrong.
  if (!p.driver_loadable)
    return "no NVIDIA driver / no GPU (" +
           (p.driver_load_error.empty() ? std::string("libcuda.so.1 cannot be loaded")
                                        : p.driver_load_error) +
           ")";  // dlerror names the library: "libcuda.so.1: cannot open shared object file: ..."
  if (p.count_error == cudaErrorStubLibrary)
    return "no NVIDIA driver / no GPU (the libcuda.so.1 found is the CUDA toolkit's stub, "
           "not a driver; take the stubs folder out of LD_LIBRARY_PATH)";
  if (p.count_error == cudaErrorInsufficientDriver)
    return p.count_error_text + ": the NVIDIA driver supports CUDA " +
           cuda_version_text(p.driver_version) + ", this build's runtime is CUDA " +
           cuda_version_text(p.runtime_version) + "; update the driver";
  if (p.count_error == cudaErrorNoDevice || p.count_error == cudaSuccess)
    return "no GPU: the NVIDIA driver (CUDA " + cuda_version_text(p.driver_version) +
           ") sees no device (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
  return "cudaGetDeviceCount: " + p.count_error_text;
}

CudaProbe probe_cuda() {
  CudaProbe p;
  if (void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    p.driver_loadable = true;
    ::dlclose(h);
  } else if (const char* e = ::dlerror()) {
    p.driver_load_error = e;
  }
  if (cudaDriverGetVersion(&p.driver_version) != cudaSuccess) p.driver_version = 0;
  if (cudaRuntimeGetVersion(&p.runtime_version) != cudaSuccess) p.runtime_version = 0;
  const cudaError_t e = cudaGetDeviceCount(&p.device_count);
  p.count_error = e;
  p.count_error_text = cudaGetErrorString(e);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    p.device_count = 0;
  }
  return p;
}

bool cuda_device_usable(std::string* why) {
  const std::string reason = cuda_unavailable_reason(probe_cuda());
  if (why) *why = reason;
  return reason.empty();
}

nlohmann::json cuda_device_info() {
  nlohmann::json d;
  int runtime = 0;
  d["runtime"] = cudaRuntimeGetVersion(&runtime) == cudaSuccess ? runtime : -1;
  d["built_for_sm"] = NOEIRA_CUDA_ARCHS;  // CMAKE_CUDA_ARCHITECTURES of this build
  d["cublaslt"] = cublasLtGetVersion();
  uint32_t cupti = 0;
  d["cupti"] = cuptiGetVersion(&cupti) == CUPTI_SUCCESS ? static_cast<int64_t>(cupti) : -1;
  const CudaProbe probe = probe_cuda();
  d["driver_loadable"] = probe.driver_loadable;
  if (probe.driver_loadable) d["driver"] = probe.driver_version;  // e.g. 13000
  if (const std::string why = cuda_unavailable_reason(probe); !why.empty()) {
    d["available"] = false;
    d["reason"] = why;
    return d;
  }
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
  int bus_bits = 0;  // with the memory clock: the bandwidth of profile --budget
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess)
    d["memory_bus_bits"] = bus_bits;
  return d;
}

}  // namespace noeira
