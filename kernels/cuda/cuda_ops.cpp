#include "kernels/cuda/cuda_ops.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/common/column_sum.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_timers.h"
#include "kernels/cuda/gemm_lt.h"

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

// Names the op being enqueued (for error messages) and, while a graph is being captured,
// notices the op after which the capture stopped being valid.
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

bool CudaOps::run_gemm(const cuda::GemmCall& call) {
  std::string error;
  switch (gemm_->run(call, stream_, &error)) {
    case cuda::GemmLt::Outcome::kDone: return true;
    case cuda::GemmLt::Outcome::kUnsupported: return false;
    case cuda::GemmLt::Outcome::kFailed: break;
  }
  fail(error);
  return true;  // reported; nothing to fall back to
}

// ---- GEMMs ----

void CudaOps::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                   const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                   float* C, int64_t ldc) {
  OpScope scope(*this, "gemm");
  if (M == 0 || N == 0) return;
  if (K == 0) {  // cuBLASLt needs k >= 1; C = beta * C is all that is left
    check(cuda::launch_scale_rows(stream_, C, M, N, ldc, beta), "scale_rows_kernel");
    return;
  }
  run_gemm({.trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K, .alpha = alpha,
            .A = A, .lda = lda, .B = B, .ldb = ldb, .beta = beta, .C = C, .ldc = ldc});
}

// y(M,N) = act(x(M,K) W(N,K)^T + b) in one cuBLASLt call: BIAS, RELU_BIAS or
// GELU_AUX_BIAS (the GELU input lands in `pre`). cuBLASLt's GELU is the same tanh
// approximation as ours (kernels/common/math.h). Where no epilogue fits (pre requested for
// ReLU/identity, a GELU aux row stride N not a multiple of 8, or no algorithm for the
// epilogue) it is a plain GEMM followed by our bias_act kernel, as on the CPU.
void CudaOps::linear_forward(const float* x, const float* W, const float* b, float* y,
                             float* pre, int64_t M, int64_t N, int64_t K, Act act) {
  OpScope scope(*this, "linear_forward");
  if (M == 0 || N == 0) return;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool fusable = K > 0;
  switch (act) {
    case Act::kNone:
      epilogue = b ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      fusable = fusable && !pre;
      break;
    case Act::kReLU:
      epilogue = b ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
      fusable = fusable && !pre;
      break;
    case Act::kGELU:
      if (pre)
        epilogue = b ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
      else
        epilogue = b ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
      fusable = fusable && (!pre || N % 8 == 0);  // cuBLASLt: aux ld divisible by 8
      break;
  }
  if (fusable) {
    // (M, N) = (M, K) x (N, K)^T, epilogue on the (M, N) result
    const cuda::GemmCall c{.trans_a = false, .trans_b = true, .M = M, .N = N, .K = K,
                           .alpha = 1.0f, .A = x, .lda = K, .B = W, .ldb = K, .beta = 0.0f,
                           .C = y, .ldc = N, .epilogue = epilogue, .bias = b, .aux = pre};
    if (run_gemm(c)) return;
  }
  Ops::linear_forward(x, W, b, y, pre, M, N, K, act);  // gemm + bias_act
}

// dW(N,K) += dz(M,N)^T x(M,K) with beta = 1, then db(N) += column sums of dz by our
// bias_grad kernel. cuBLASLt's BGRADB epilogue would fuse the bias gradient, but it
// overwrites db (our contract accumulates: a parameter may be used twice) and documents
// no reduction order, so the deterministic kernel does it.
void CudaOps::linear_backward_params(const float* dz, const float* x, float* dW, float* db,
                                     int64_t M, int64_t N, int64_t K) {
  OpScope scope(*this, "linear_backward_params");
  gemm(true, false, N, K, M, 1.0f, dz, N, x, K, 1.0f, dW, K);
  if (db) bias_grad(dz, db, M, N);
}

// ---- Elementwise and reductions ----

void CudaOps::bias_act(float* y, float* pre, const float* bias, int64_t M, int64_t N, Act act) {
  OpScope scope(*this, "bias_act");
  check(cuda::launch_bias_act(stream_, y, pre, bias, M, N, act), "bias_act_kernel");
}

void CudaOps::act_forward(const float* x, float* y, int64_t n, Act act) {
  OpScope scope(*this, "act_forward");
  check(cuda::launch_act_forward(stream_, x, y, n, act), "act_forward_kernel");
}

void CudaOps::act_backward(const float* dy, const float* pre, const float* post, float* dx,
                           int64_t n, Act act) {
  OpScope scope(*this, "act_backward");
  check(cuda::launch_act_backward(stream_, dy, pre, post, dx, n, act), "act_backward_kernel");
}

float* CudaOps::bias_grad_partials(int64_t M) {
  if (reduction_ws_) return reduction_ws_;
  // Say once that a caller did not plan the workspace, where it costs speed.
  if (!warned_unbound_ && column_sum_plan(M, kColumnSumMaxChunks).chunks > 1) {
    warned_unbound_ = true;
    std::fprintf(stderr,
                 "noeira: %s over %lld rows runs as one chunk: no reduction workspace is bound "
                 "(plan Ops::reduction_workspace_bytes() and call bind_reduction_workspace)\n",
                 op_ ? op_ : "bias_grad", static_cast<long long>(M));
  }
  return nullptr;
}

void CudaOps::bias_grad(const float* dy, float* db, int64_t M, int64_t N) {
  OpScope scope(*this, "bias_grad");
  check(cuda::launch_bias_grad(stream_, dy, db, M, N, bias_grad_partials(M), reduction_ws_bytes_),
        "bias_grad kernels");
}

void CudaOps::add(const float* a, const float* b, float* y, int64_t n) {
  OpScope scope(*this, "add");
  check(cuda::launch_add(stream_, a, b, y, n), "add_kernel");
}

void CudaOps::softmax_xent(const float* logits, const int32_t* labels, int64_t B, int64_t C,
                           float* dlogits, LossStats* stats, float* loss_history,
                           const StepCounters* counters) {
  OpScope scope(*this, "softmax_xent");
  check(cuda::launch_softmax_xent(stream_, logits, labels, B, C, dlogits, stats, loss_history,
                                  counters, loss_partials_),
        "softmax_xent_kernel");
}

void CudaOps::mse(const float* pred, const float* target, int64_t B, int64_t D, float* dpred,
                  LossStats* stats, float* loss_history, const StepCounters* counters) {
  OpScope scope(*this, "mse");
  check(cuda::launch_mse(stream_, pred, target, B, D, dpred, stats, loss_history, counters,
                         loss_partials_),
        "mse_kernel");
}

void CudaOps::adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
                   const StepCounters* counters) {
  OpScope scope(*this, "adam");
  check(cuda::launch_adam(stream_, p, g, m, v, n, h, counters), "adam_kernel");
}

void CudaOps::sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h) {
  OpScope scope(*this, "sgd");
  check(cuda::launch_sgd(stream_, p, g, buf, n, h), "sgd_kernel");
}

// ---- bf16 autocast (BF16Policy) ----

// C(M,N) fp32 = alpha op(A) op(B) + beta C, bf16 A and B, fp32 accumulation
// (CUBLAS_COMPUTE_32F whatever the TF32 switch says). The algorithm is chosen once per
// shape and cached, and runs in the backend's workspace, as for the fp32 GEMM.
void CudaOps::gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                        const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta,
                        float* C, int64_t ldc) {
  OpScope scope(*this, "gemm_bf16");
  if (M == 0 || N == 0) return;
  if (K == 0) {  // cuBLASLt needs k >= 1; C = beta * C is all that is left
    check(cuda::launch_scale_rows(stream_, C, M, N, ldc, beta), "scale_rows_kernel");
    return;
  }
  run_gemm({.trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K, .alpha = alpha,
            .A = A, .lda = lda, .B = B, .ldb = ldb, .beta = beta, .C = C, .ldc = ldc,
            .ab_type = CUDA_R_16BF});
}

void CudaOps::cast_to_bf16(const float* x, bf16_t* y, int64_t n) {
  OpScope scope(*this, "cast_to_bf16");
  check(cuda::launch_cast_to_bf16(stream_, x, y, n), "cast_kernel");
}

void CudaOps::cast_to_f32(const bf16_t* x, float* y, int64_t n) {
  OpScope scope(*this, "cast_to_f32");
  check(cuda::launch_cast_to_f32(stream_, x, y, n), "cast_kernel");
}

void CudaOps::bias_act_bf16(const float* acc, const float* bias, bf16_t* y, bf16_t* pre,
                            int64_t M, int64_t N, Act act) {
  OpScope scope(*this, "bias_act_bf16");
  check(cuda::launch_bias_act_bf16(stream_, acc, bias, y, pre, M, N, act), "bias_act_kernel");
}

void CudaOps::act_forward_bf16(const bf16_t* x, bf16_t* y, int64_t n, Act act) {
  OpScope scope(*this, "act_forward_bf16");
  check(cuda::launch_act_forward_bf16(stream_, x, y, n, act), "act_forward_kernel");
}

void CudaOps::act_backward_bf16(const bf16_t* dy, const bf16_t* pre, const bf16_t* post,
                                bf16_t* dx, int64_t n, Act act) {
  OpScope scope(*this, "act_backward_bf16");
  check(cuda::launch_act_backward_bf16(stream_, dy, pre, post, dx, n, act),
        "act_backward_kernel");
}

void CudaOps::bias_grad_bf16(const bf16_t* dy, float* db, int64_t M, int64_t N) {
  OpScope scope(*this, "bias_grad_bf16");
  check(cuda::launch_bias_grad_bf16(stream_, dy, db, M, N, bias_grad_partials(M),
                                    reduction_ws_bytes_),
        "bias_grad kernels");
}

void CudaOps::add_bf16(const bf16_t* a, const bf16_t* b, bf16_t* y, int64_t n) {
  OpScope scope(*this, "add_bf16");
  check(cuda::launch_add_bf16(stream_, a, b, y, n), "add_kernel");
}

void CudaOps::softmax_xent_bf16(const bf16_t* logits, const int32_t* labels, int64_t B,
                                int64_t C, bf16_t* dlogits, LossStats* stats,
                                float* loss_history, const StepCounters* counters) {
  OpScope scope(*this, "softmax_xent_bf16");
  check(cuda::launch_softmax_xent_bf16(stream_, logits, labels, B, C, dlogits, stats,
                                       loss_history, counters, loss_partials_),
        "softmax_xent_kernel");
}

void CudaOps::mse_bf16(const bf16_t* pred, const float* target, int64_t B, int64_t D,
                       bf16_t* dpred, LossStats* stats, float* loss_history,
                       const StepCounters* counters) {
  OpScope scope(*this, "mse_bf16");
  check(cuda::launch_mse_bf16(stream_, pred, target, B, D, dpred, stats, loss_history, counters,
                              loss_partials_),
        "mse_kernel");
}

void CudaOps::gather_rows_bf16(const float* src, const int32_t* perm, int64_t rows,
                               int64_t row_elems, const StepCounters* counters, bf16_t* dst) {
  OpScope scope(*this, "gather_rows_bf16");
  check(cuda::launch_gather_rows_bf16(stream_, src, perm, rows, row_elems, counters, dst),
        "gather_rows_kernel");
}

// ---- Data movement ----

void CudaOps::gather_rows(const float* src, const int32_t* perm, int64_t rows,
                          int64_t row_elems, const StepCounters* counters, float* dst) {
  OpScope scope(*this, "gather_rows");
  check(cuda::launch_gather_rows(stream_, src, perm, rows, row_elems, counters, dst),
        "gather_rows_kernel");
}

void CudaOps::gather_labels(const int32_t* src, const int32_t* perm, int64_t rows,
                            const StepCounters* counters, int32_t* dst) {
  OpScope scope(*this, "gather_labels");
  check(cuda::launch_gather_labels(stream_, src, perm, rows, counters, dst),
        "gather_labels_kernel");
}

Result<size_t> CudaOps::shuffle_workspace_bytes(int64_t n) const {
  return cuda::shuffle_workspace_bytes(n);
}

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

void CudaOps::shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm, void* workspace) {
  OpScope scope(*this, "shuffle");
  check(cuda::launch_shuffle(stream_, seed, epoch, n, perm, workspace),
        "shuffle (keys kernel + cub::DeviceRadixSort::SortPairs)");
}

void CudaOps::advance(StepCounters* counters) {
  OpScope scope(*this, "advance");
  check(cuda::launch_advance(stream_, counters), "advance_kernel");
}

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
