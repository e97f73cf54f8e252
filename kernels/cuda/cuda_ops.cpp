// CudaOps' set-up and teardown, error handling, the reduction workspace binding, memory,
// host copies, synchronisation and timers. The ops themselves: cuda_gemm_ops.cpp (cuBLASLt)
// and cuda_kernel_ops.cpp (our kernels); graph capture: graph.cpp.
#include "kernels/cuda/cuda_ops.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/common/column_sum.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/device_timers.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/op_scope.h"

#ifndef NOEIRA_CUDA_ARCHS
#define NOEIRA_CUDA_ARCHS "?"
#endif

namespace noeira {

bool cuda_device_usable(std::string* why);  // device_info.cpp

namespace cuda {

void fatal(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "noeira: %s\n", message.c_str());
  std::fflush(stderr);
  std::exit(EXIT_FAILURE);
}

}  // namespace cuda

namespace {

// What to do about a device error met inside an op.
const char* fix_for(cudaError_t e) {
  switch (e) {
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureWrongThread:
      return "this call cannot be recorded into a CUDA graph; keep it out of the captured step";
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
    case cudaErrorLaunchFailure:
      return "a kernel touched memory outside its buffers; rerun under compute-sanitizer "
             "--tool memcheck to find it";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
      return "this build has no kernels for this GPU; rebuild with "
             "-DCMAKE_CUDA_ARCHITECTURES=<its compute capability>";
    case cudaErrorMemoryAllocation:
      return "out of device memory; free the GPU (nvidia-smi) or reduce the batch";
    default:
      return "rerun with CUDA_LAUNCH_BLOCKING=1 to find the call that failed";
  }
}

}  // namespace

CudaOptions cuda_options_from_env() {
  CudaOptions o;
  if (const char* v = std::getenv("NOEIRA_TF32"))
    o.tf32 = !(std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 ||
               std::strcmp(v, "false") == 0);
  return o;
}

Result<std::unique_ptr<CudaOps>> CudaOps::create(const CudaOptions& options) {
  std::string why;
  if (!cuda_device_usable(&why)) return make_error("target gpu: " + why + "; use --target cpu");
  std::unique_ptr<CudaOps> ops(new CudaOps());
  const std::string no_device = "the CUDA device is not usable; check nvidia-smi";
  NOEIRA_CUDA_TRY(cudaGetDevice(&ops->device_), no_device);
  NOEIRA_CUDA_TRY(cudaSetDevice(ops->device_), no_device);
  cudaDeviceProp prop{};
  NOEIRA_CUDA_TRY(cudaGetDeviceProperties(&prop, ops->device_), no_device);
  ops->sm_ = prop.major * 10 + prop.minor;
  ops->device_name_ = prop.name;
  const std::string sm = std::to_string(ops->sm_);
  if (const cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {  // starts the context
    (void)cudaGetLastError();
    return make_error("target gpu: could not start CUDA on " + ops->device_name_ + " (" +
                      cuda::error_text(e) +
                      "); check nvidia-smi: the device may be busy (exclusive mode), out of "
                      "memory or in an error state; or use --target cpu");
  }
  if (const cudaError_t e = cuda::check_kernel_image(); e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; do not let it surface in a later check
    return make_error("target gpu: this build has no CUDA kernels for " + ops->device_name_ +
                      " (sm_" + sm + "): it was compiled for CMAKE_CUDA_ARCHITECTURES=" +
                      NOEIRA_CUDA_ARCHS + " (" + cuda::error_text(e) +
                      "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + sm +
                      " (scripts/gpu-check does) or use --target cpu");
  }
  NOEIRA_CUDA_TRY(cudaStreamCreateWithFlags(&ops->stream_, cudaStreamNonBlocking), no_device);
  const size_t partial_bytes = sizeof(cuda::LossPartial) * cuda::kMaxLossBlocks;
  if (const cudaError_t e = cudaMalloc(&ops->loss_partials_, partial_bytes); e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda::call_error("cudaMalloc", e,
                            "out of device memory for the loss scratch (" +
                                std::to_string(partial_bytes) +
                                " bytes); free the GPU (nvidia-smi) or use --target cpu");
  }
  Result<std::unique_ptr<cuda::GemmLt>> gemm = cuda::GemmLt::create(prop.major, options.tf32);
  if (!gemm) {
    (void)cudaGetLastError();
    return make_error("target gpu: " + gemm.error().message);
  }
  ops->gemm_ = std::move(gemm).value();
  return ops;
}

CudaOps::~CudaOps() {
  if (capturing_) {  // abandoned capture: end it so the stream is usable and nothing leaks
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) cudaGraphDestroy(g);
    (void)cudaGetLastError();
  }
  if (stream_) cudaStreamSynchronize(stream_);
  gemm_.reset();
  conv_.reset();
  if (loss_partials_) cudaFree(loss_partials_);
  if (stream_) cudaStreamDestroy(stream_);
}

bool CudaOps::tf32() const { return gemm_->tf32(); }

void CudaOps::fail(const std::string& what) {
  const std::string message = std::string(op_ ? op_ : "cuda") + ": " + what;
  if (capturing_) {  // end_capture reports the first failure as an Error
    if (capture_error_.empty()) capture_error_ = message;
    return;
  }
  cuda::fatal(message);
}

void CudaOps::check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  fail(std::string(call) + " failed (" + cuda::error_text(e) + "); " + fix_for(e));
}

bool CudaOps::refuse_while_capturing(const std::string& why) {
  if (!capturing_) return false;
  fail(why + "; it cannot be recorded into a CUDA graph: issue it before begin_capture or "
             "after end_capture");
  return true;
}

// ---- Workspaces ----

size_t CudaOps::reduction_workspace_bytes() const { return kColumnSumWorkspaceBytes; }

// A graph keeps the pointer it was captured with, so the buffer cannot change during a
// capture.
Status CudaOps::bind_reduction_workspace(void* workspace, size_t bytes) {
  if (capturing_)
    return make_error("bind_reduction_workspace: a CUDA graph is being captured; bind the "
                      "workspace before begin_capture");
  if (workspace && bytes < kColumnSumWorkspaceBytes)
    return make_error("bind_reduction_workspace: the buffer has " + std::to_string(bytes) +
                      " bytes, the CUDA backend needs " +
                      std::to_string(kColumnSumWorkspaceBytes) +
                      "; reserve reduction_workspace_bytes() in the plan");
  reduction_ws_ = static_cast<float*>(workspace);
  reduction_ws_bytes_ = workspace ? bytes : 0;
  return {};
}

// ---- Memory, copies and synchronisation ----

void CudaOps::fill_zero(void* p, size_t bytes) {
  OpScope scope(*this, "fill_zero");
  if (bytes == 0) return;
  check(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemsetAsync");
}

// The source is pageable host memory that the caller may free on return, and CUDA only
// promises such a copy "might be synchronous", so we wait for it. Used at set-up and
// epoch boundaries, never inside a step. Refused while capturing: the graph would keep
// the host pointer and re-read whatever it points to at every replay.
void CudaOps::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  OpScope scope(*this, "copy_to_device");
  if (refuse_while_capturing("a copy from pageable host memory (" + std::to_string(bytes) +
                             " bytes)"))
    return;
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (host to device)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

// Callers read the result immediately, so this waits for the copy.
void CudaOps::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  OpScope scope(*this, "copy_to_host");
  if (refuse_while_capturing("a copy to host memory that waits for the device (" +
                             std::to_string(bytes) + " bytes)"))
    return;
  if (bytes == 0) return;
  check(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (device to host)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaOps::synchronize() {
  OpScope scope(*this, "synchronize");
  if (refuse_while_capturing("waiting for the device")) return;
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

// ---- Timers ----

std::unique_ptr<DeviceStepTimer> CudaOps::make_device_timer(DeviceTimerKind kind,
                                                            std::string* why) {
  switch (kind) {
    case DeviceTimerKind::kCupti: return cuda::make_cupti_timer(stream_, why);
    case DeviceTimerKind::kEvent: return cuda::make_event_timer(stream_, why);
  }
  if (why) *why = "unknown device timer kind";
  return nullptr;
}

}  // namespace noeira
