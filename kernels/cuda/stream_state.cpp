// StreamState: the CUDA backend's start-up checks, its stream, and what to do about a
// device error met inside an op or a stream call.
#include "kernels/cuda/stream_state.h"

#include <cstdio>
#include <cstdlib>

#include "kernels/cuda/cuda_check.h"

#ifndef NOEIRA_CUDA_ARCHS
#define NOEIRA_CUDA_ARCHS "?"
#endif

namespace noeira {

bool cuda_device_usable(std::string* why);  // device_info.cpp

namespace cuda {

cudaError_t check_kernel_image();  // kernel_image.cu

void fatal(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "noeira: %s\n", message.c_str());
  std::fflush(stderr);
  std::exit(EXIT_FAILURE);
}

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

Result<std::shared_ptr<StreamState>> StreamState::create() {
  std::string why;
  if (!cuda_device_usable(&why)) return make_error("target gpu: " + why + "; use --target cpu");
  std::shared_ptr<StreamState> st(new StreamState());
  const std::string no_device = "the CUDA device is not usable; check nvidia-smi";
  NOEIRA_CUDA_TRY(cudaGetDevice(&st->device_), no_device);
  NOEIRA_CUDA_TRY(cudaSetDevice(st->device_), no_device);
  cudaDeviceProp prop{};
  NOEIRA_CUDA_TRY(cudaGetDeviceProperties(&prop, st->device_), no_device);
  st->sm_ = prop.major * 10 + prop.minor;
  st->device_name_ = prop.name;
  const std::string sm = std::to_string(st->sm_);
  if (const cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {  // starts the context
    (void)cudaGetLastError();
    return make_error("target gpu: could not start CUDA on " + st->device_name_ + " (" +
                      error_text(e) +
                      "); check nvidia-smi: the device may be busy (exclusive mode), out of "
                      "memory or in an error state; or use --target cpu");
  }
  if (const cudaError_t e = check_kernel_image(); e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; do not let it surface in a later check
    return make_error("target gpu: this build has no CUDA kernels for " + st->device_name_ +
                      " (sm_" + sm + "): it was compiled for CMAKE_CUDA_ARCHITECTURES=" +
                      NOEIRA_CUDA_ARCHS + " (" + error_text(e) +
                      "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + sm +
                      " (scripts/gpu-check does) or use --target cpu");
  }
  NOEIRA_CUDA_TRY(cudaStreamCreateWithFlags(&st->stream_, cudaStreamNonBlocking), no_device);
  return st;
}

StreamState::~StreamState() {
  abandon_capture();
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void StreamState::abandon_capture() {
  if (!capturing_) return;
  capturing_ = false;
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) cudaGraphDestroy(g);
  (void)cudaGetLastError();
}

void StreamState::set_capturing(bool on) {
  capturing_ = on;
  if (on) capture_error_.clear();
}

void StreamState::set_reduction_workspace(float* workspace, size_t bytes) {
  reduction_ws_ = workspace;
  reduction_ws_bytes_ = workspace ? bytes : 0;
}

void StreamState::fail(const std::string& what) {
  const std::string message = std::string(op_ ? op_ : "cuda") + ": " + what;
  if (capturing_) {  // end_capture reports the first failure as an Error
    if (capture_error_.empty()) capture_error_ = message;
    return;
  }
  fatal(message);
}

void StreamState::check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  fail(std::string(call) + " failed (" + error_text(e) + "); " + fix_for(e));
}

bool StreamState::refuse_while_capturing(const std::string& why) {
  if (!capturing_) return false;
  fail(why + "; it cannot be recorded into a CUDA graph: issue it before begin_capture or "
             "after end_capture");
  return true;
}

}  // namespace cuda

}  // namespace noeira
