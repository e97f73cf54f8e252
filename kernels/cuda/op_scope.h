// cuda::OpScope, for every call of the CUDA backend that enqueues work (the ops in
// kernels/cuda/<op>.cu, the stream's copies and fills): names the call being enqueued,
// for error messages, and, while a graph is being captured, notices the call after which
// the capture stopped being valid. Every such call opens one first.
#pragma once
#include <string>

#include "kernels/cuda/stream_state.h"

namespace noeira::cuda {

class OpScope {
 public:
  OpScope(StreamState& state, const char* name) : state_(state), outer_(state.op_) {
    state_.op_ = name;
  }
  ~OpScope() {
    if (state_.capturing_ && state_.capture_error_.empty()) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(state_.stream_, &status) == cudaSuccess &&
          status == cudaStreamCaptureStatusInvalidated)
        state_.capture_error_ = std::string(state_.op_) + ": the stream capture was invalidated";
    }
    state_.op_ = outer_;
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  StreamState& state_;
  const char* outer_;
};

}  // namespace noeira::cuda
