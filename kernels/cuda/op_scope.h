// CudaOps::OpScope, for the files that implement CudaOps' ops: names the op being
// enqueued (for error messages) and, while a graph is being captured, notices the op
// after which the capture stopped being valid. Every op opens one first.
#pragma once
#include <string>

#include "kernels/cuda/cuda_ops.h"

namespace noeira {

class CudaOps::OpScope {
 public:
  OpScope(CudaOps& ops, const char* name) : ops_(ops), outer_(ops.op_) { ops_.op_ = name; }
  ~OpScope() {
    if (ops_.capturing_ && ops_.capture_error_.empty()) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(ops_.stream_, &status) == cudaSuccess &&
          status == cudaStreamCaptureStatusInvalidated)
        ops_.capture_error_ = std::string(ops_.op_) + ": the stream capture was invalidated";
    }
    ops_.op_ = outer_;
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  CudaOps& ops_;
  const char* outer_;
};

}  // namespace noeira
