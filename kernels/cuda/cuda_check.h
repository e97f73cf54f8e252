// Error text for CUDA, cuBLASLt and CUPTI calls. Creation paths turn a failed call into
// an Error value (DESIGN.md rule 7); ops, which return void, stop the process with one
// actionable line instead (llm.c's cudaCheck), since a failed kernel launch or copy in
// the middle of training leaves nothing sensible to continue with.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <string>

#include "kernels/common/error.h"

namespace noeira::cuda {

// "cudaErrorMemoryAllocation (out of memory)"
inline std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

inline std::string error_text(cublasStatus_t s) {
  return std::string(cublasLtGetStatusName(s)) + " (" + cublasLtGetStatusString(s) + ")";
}

inline std::string error_text(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) s = "unknown CUPTI result";
  return std::string(s) + " (CUptiResult " + std::to_string(static_cast<int>(r)) + ")";
}

// "<call> failed (<error>); <fix>" as an Error value.
template <class Code>
Error call_error(const char* call, Code code, const std::string& fix) {
  return make_error(std::string(call) + " failed (" + error_text(code) + ")" +
                    (fix.empty() ? std::string() : "; " + fix));
}

// Prints "noeira: <message>" on stderr and aborts: for device errors inside ops.
[[noreturn]] void fatal(const std::string& message);

}  // namespace noeira::cuda

// Creation paths: return an Error naming the call and the fix.
#define NOEIRA_CUDA_TRY(call, fix)                                              \
  do {                                                                          \
    const cudaError_t noeira_cuda_e_ = (call);                                  \
    if (noeira_cuda_e_ != cudaSuccess)                                          \
      return ::noeira::cuda::call_error(#call, noeira_cuda_e_, (fix));          \
  } while (0)

#define NOEIRA_CUBLAS_TRY(call, fix)                                            \
  do {                                                                          \
    const cublasStatus_t noeira_cublas_s_ = (call);                             \
    if (noeira_cublas_s_ != CUBLAS_STATUS_SUCCESS)                              \
      return ::noeira::cuda::call_error(#call, noeira_cublas_s_, (fix));        \
  } while (0)
