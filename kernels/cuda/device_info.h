// Why CUDA cannot be used here, in words a user can act on. Kept free of CUDA headers
// so the classification can be tested as a table.
#pragma once
#include <string>

namespace noeira {

// What a probe for a CUDA device found.
struct CudaProbe {
  int count_error = 0;          // cudaError_t of cudaGetDeviceCount (0 = cudaSuccess)
  std::string count_error_text;  // cudaGetErrorString of it
  int device_count = 0;
  bool driver_loadable = false;  // dlopen("libcuda.so.1") succeeded
  std::string driver_load_error; // dlerror() when it did not
  int driver_version = 0;        // cudaDriverGetVersion, e.g. 12040; 0 = unknown
  int runtime_version = 0;       // cudaRuntimeGetVersion of this build
};

// "" when a device is usable; otherwise, by cause:
//   no libcuda.so.1       -> "no NVIDIA driver / no GPU (libcuda.so.1: cannot open shared object file: ...)"
//   driver older than the runtime -> "the NVIDIA driver supports CUDA 12.2, this build needs 13.0 ..."
//   driver, no device     -> "no GPU: the NVIDIA driver (CUDA 13.0) sees no device ..."
//   anything else         -> "cudaGetDeviceCount: <CUDA's message>"
std::string cuda_unavailable_reason(const CudaProbe& p);

// Runs the probe on this machine.
CudaProbe probe_cuda();

// "13.0" from 13000.
std::string cuda_version_text(int version);

}  // namespace noeira
