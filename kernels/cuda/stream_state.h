// What the CUDA backend's compute ops and its stream share (cuda_ops.h, cuda_stream.h):
// the device, the one cudaStream_t both enqueue on, the capture in progress, the op being
// enqueued (for messages) and the bound reduction workspace. make_cuda_backend makes one
// and hands it to both.
//
// Failures: ops and stream calls return void, so an unexpected device error inside one
// stops the process with a line naming the op, the call and a fix — except while a graph
// is being captured, where the first failure is kept and end_capture() returns it as an
// Error.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/common/error.h"

namespace noeira::cuda {

class StreamState {
 public:
  // Starts CUDA on the current device, checks that this build has kernels for it and
  // creates the stream; an Error naming the cause and the fix otherwise.
  static Result<std::shared_ptr<StreamState>> create();
  ~StreamState();
  StreamState(const StreamState&) = delete;
  StreamState& operator=(const StreamState&) = delete;

  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  int sm() const { return sm_; }  // e.g. 90
  const std::string& device_name() const { return device_name_; }

  // Stops the process (or, while capturing, records the first failure) when e != success.
  void check(cudaError_t e, const char* call);
  void fail(const std::string& what);
  // True (and the capture is marked failed) when a graph is being captured: for calls
  // that must wait for the host or the device, which a graph cannot record.
  bool refuse_while_capturing(const std::string& why);

  // ---- The capture (cuda_stream.h drives it; OpScope watches it) ----
  bool capturing() const { return capturing_; }
  // On: a capture has begun, with no failure yet. Off: it has ended.
  void set_capturing(bool on);
  const std::string& capture_error() const { return capture_error_; }
  // Ends a capture nobody ended (teardown), so the stream is usable and nothing leaks.
  void abandon_capture();

  // The op being enqueued, for messages (null: none). OpScope sets it.
  const char* op() const { return op_; }

  // The reduction workspace bound through CudaStream (null: unbound; bias_grad then runs
  // as one chunk).
  float* reduction_workspace() const { return reduction_ws_; }
  size_t reduction_workspace_bytes() const { return reduction_ws_bytes_; }
  void set_reduction_workspace(float* workspace, size_t bytes);

 private:
  friend class OpScope;
  StreamState() = default;

  int device_ = 0;
  int sm_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  const char* op_ = nullptr;
  bool capturing_ = false;        // between begin_capture and end_capture
  std::string capture_error_;     // first failure seen while capturing
  float* reduction_ws_ = nullptr;  // planned by the caller, bound, not owned
  size_t reduction_ws_bytes_ = 0;
};

}  // namespace noeira::cuda
