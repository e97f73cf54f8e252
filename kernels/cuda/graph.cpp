// CUDA-graph capture of a training step (DESIGN.md section 2). Ops issued between
// begin_capture and end_capture are recorded on the backend's stream, in thread-local
// mode so that other threads' CUDA calls neither break nor join the capture. Every op
// reads its per-step values (batch index, Adam step) from the device counters, so the
// instantiated graph replays unchanged at every step.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_stream.h"

namespace noeira {

namespace {

class CudaStepGraph final : public StepGraph {
 public:
  CudaStepGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaStepGraph() override { cudaGraphExecDestroy(exec_); }
  CudaStepGraph(const CudaStepGraph&) = delete;
  CudaStepGraph& operator=(const CudaStepGraph&) = delete;

  void replay() override {
    const cudaError_t e = cudaGraphLaunch(exec_, stream_);
    if (e != cudaSuccess)
      cuda::fatal("graph replay: cudaGraphLaunch failed (" + cuda::error_text(e) +
                  "); run without --graph to see which op fails");
  }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

}  // namespace

Status CudaStream::begin_capture() {
  if (state_->capturing()) return make_error("begin_capture: a capture is already in progress");
  const cudaStream_t stream = state_->stream();
  // Surface errors of earlier work now, so none is blamed on a captured op.
  NOEIRA_CUDA_TRY(cudaStreamSynchronize(stream),
                  "work queued before the capture failed; run without --graph to find it");
  NOEIRA_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                  "the stream cannot be captured (is another capture running on it?)");
  state_->set_capturing(true);
  return {};
}

Result<std::unique_ptr<StepGraph>> CudaStream::end_capture() {
  if (!state_->capturing())
    return make_error("end_capture: no capture in progress; call begin_capture first");
  state_->set_capturing(false);
  const cudaStream_t stream = state_->stream();
  const std::string& capture_error = state_->capture_error();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  struct GraphGuard {
    cudaGraph_t g;
    ~GraphGuard() {
      if (g) cudaGraphDestroy(g);
    }
  } guard{graph};
  if (!capture_error.empty() || ended != cudaSuccess) {
    (void)cudaGetLastError();  // capture errors are not sticky; clear the last-error slot
    if (!capture_error.empty())
      return make_error("CUDA-graph capture failed at " + capture_error +
                        "; run the step without --graph to check the op works eagerly");
    return cuda::call_error("cudaStreamEndCapture", ended,
                            "something outside our ops used or synchronised the stream during "
                            "the capture; run without --graph");
  }
  cudaGraphExec_t exec = nullptr;
  NOEIRA_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0),
                  "the captured step could not be instantiated; run without --graph");
  if (const cudaError_t e = cudaGraphUpload(exec, stream); e != cudaSuccess) {
    cudaGraphExecDestroy(exec);
    return cuda::call_error("cudaGraphUpload", e, "run without --graph");
  }
  return std::unique_ptr<StepGraph>(new CudaStepGraph(exec, stream));
}

}  // namespace noeira
