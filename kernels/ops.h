// The backend interface: every op a module, loss or optimizer needs, on raw pointers
// into arenas. kernels/cpu implements it with OpenBLAS + loops, kernels/cuda with
// cuBLASLt + kernels. Nothing here allocates or synchronises with the host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/error.h"
#include "kernels/common/math.h"

namespace noeira {

// Per-trainer step state, resident on the device. Kernels read batch offset and Adam
// step from here so a captured step can be replayed unchanged (DESIGN.md section 2).
struct StepCounters {
  int64_t step;            // optimizer steps taken so far
  int64_t batch_in_epoch;  // index of the current batch within the epoch
};

// Loss/accuracy accumulators, resident on the device, read back at epoch ends.
struct LossStats {
  double loss_sum;  // sum of per-sample losses
  int64_t correct;  // top-1 hits (classification)
  int64_t count;    // samples seen
};

// A captured training step, replayed once per batch.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  virtual void replay() = 0;
};

enum class DeviceTimerKind : uint8_t { kCupti, kEvent };

// Times each training step's device work. begin_step/end_step bracket the ops (or the
// graph replay) of one step without synchronising; collect() synchronises once and
// returns per-step milliseconds for the steps bracketed since the last collect().
class DeviceStepTimer {
 public:
  virtual ~DeviceStepTimer() = default;
  virtual void begin_step() = 0;
  virtual void end_step() = 0;
  struct Samples {
    std::vector<double> sum_ms;   // CUPTI: sum of kernel/memcpy/memset durations; events: elapsed
    std::vector<double> busy_ms;  // CUPTI: union of those intervals; events: empty
  };
  virtual Result<Samples> collect() = 0;
};

class Ops {
 public:
  virtual ~Ops() = default;

  // Row-major C(M,N) = alpha * op(A)(M,K) * op(B)(K,N) + beta * C.
  virtual void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                    float* C, int64_t ldc) = 0;
  // Linear layer forward: y(M,N) = act(x(M,K) W(N,K)^T + b); `pre` (GELU only) keeps
  // the pre-activation. Default: gemm + bias_act; cuBLASLt fuses them in an epilogue.
  virtual void linear_forward(const float* x, const float* W, const float* b, float* y,
                              float* pre, int64_t M, int64_t N, int64_t K, Act act) {
    gemm(false, true, M, N, K, 1.0f, x, K, W, K, 0.0f, y, N);
    if (b || act != Act::kNone) bias_act(y, pre, b, M, N, act);
  }
  // Linear layer weight gradients: dW(N,K) += dz(M,N)^T x(M,K); db(N) += column sums of
  // dz (when db is not null). Accumulates, so a parameter may be used more than once.
  virtual void linear_backward_params(const float* dz, const float* x, float* dW, float* db,
                                      int64_t M, int64_t N, int64_t K) {
    gemm(true, false, N, K, M, 1.0f, dz, N, x, K, 1.0f, dW, K);
    if (db) bias_grad(dz, db, M, N);
  }
  // y(M,N) = act(y + bias) in place; `pre` (may be null) receives y + bias for backward.
  virtual void bias_act(float* y, float* pre, const float* bias, int64_t M, int64_t N,
                        Act act) = 0;
  virtual void act_forward(const float* x, float* y, int64_t n, Act act) = 0;
  // dx = dy * act'(pre, post).
  virtual void act_backward(const float* dy, const float* pre, const float* post, float* dx,
                            int64_t n, Act act) = 0;
  // db(N) += column sums of dy(M,N), in a fixed order that depends on M only, so a run
  // repeats bit for bit: the CPU sums each column's rows in order; CUDA cuts the rows
  // into chunks, sums each chunk (in lanes folded in a fixed tree), then adds the chunk
  // sums in chunk order (kernels/common/column_sum.h). The two differ by rounding.
  virtual void bias_grad(const float* dy, float* db, int64_t M, int64_t N) = 0;
  virtual void add(const float* a, const float* b, float* y, int64_t n) = 0;

  // Fused stable softmax + cross-entropy over logits(B,C). Writes dlogits (if not null)
  // = (softmax - onehot) / B, adds to *stats, and stores the batch mean loss in
  // loss_history[counters->batch_in_epoch] when loss_history is not null.
  virtual void softmax_xent(const float* logits, const int32_t* labels, int64_t B, int64_t C,
                            float* dlogits, LossStats* stats, float* loss_history,
                            const StepCounters* counters) = 0;
  // Mean squared error over pred(B,D): loss = mean over all B*D; dpred = 2(p - t)/(B*D).
  virtual void mse(const float* pred, const float* target, int64_t B, int64_t D, float* dpred,
                   LossStats* stats, float* loss_history, const StepCounters* counters) = 0;

  // Optimizers over flat buffers; the 1-based step is counters->step + 1.
  virtual void adam(float* p, const float* g, float* m, float* v, int64_t n,
                    const AdamHyper& h, const StepCounters* counters) = 0;
  virtual void sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h) = 0;

  // dst(rows, row_elems) = src[perm[batch_in_epoch * rows + r]] for r < rows.
  virtual void gather_rows(const float* src, const int32_t* perm, int64_t rows,
                           int64_t row_elems, const StepCounters* counters, float* dst) = 0;
  virtual void gather_labels(const int32_t* src, const int32_t* perm, int64_t rows,
                             const StepCounters* counters, int32_t* dst) = 0;
  // perm(n) = the Philox permutation of epoch `epoch` (docs/rng.md). `workspace` holds
  // shuffle_workspace_bytes(n) bytes (planned by the caller, like every buffer); an
  // Error when the backend cannot shuffle n samples (the plan must not go on with it).
  virtual Result<size_t> shuffle_workspace_bytes(int64_t n) const = 0;
  virtual void shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm,
                       void* workspace) = 0;

  // ---- bf16 autocast (BF16Policy, DESIGN.md rule 6): bf16 storage, fp32 math and
  // ---- accumulation. A backend without them cannot run --dtype bf16.
  virtual bool supports_bf16() const { return false; }
  // C(M,N) fp32 = alpha * op(A) op(B) + beta * C with bf16 A and B, fp32 accumulation.
  virtual void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                         const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta,
                         float* C, int64_t ldc);
  virtual void cast_to_bf16(const float* x, bf16_t* y, int64_t n);
  virtual void cast_to_f32(const bf16_t* x, float* y, int64_t n);
  // y(M,N) = bf16(act(acc + bias)); pre (GELU only) = bf16(acc + bias).
  virtual void bias_act_bf16(const float* acc, const float* bias, bf16_t* y, bf16_t* pre,
                             int64_t M, int64_t N, Act act);
  virtual void act_forward_bf16(const bf16_t* x, bf16_t* y, int64_t n, Act act);
  virtual void act_backward_bf16(const bf16_t* dy, const bf16_t* pre, const bf16_t* post,
                                 bf16_t* dx, int64_t n, Act act);
  virtual void bias_grad_bf16(const bf16_t* dy, float* db, int64_t M, int64_t N);
  virtual void add_bf16(const bf16_t* a, const bf16_t* b, bf16_t* y, int64_t n);
  virtual void softmax_xent_bf16(const bf16_t* logits, const int32_t* labels, int64_t B,
                                 int64_t C, bf16_t* dlogits, LossStats* stats,
                                 float* loss_history, const StepCounters* counters);
  virtual void mse_bf16(const bf16_t* pred, const float* target, int64_t B, int64_t D,
                        bf16_t* dpred, LossStats* stats, float* loss_history,
                        const StepCounters* counters);
  // dst(rows, row_elems) = bf16(src[perm[batch_in_epoch * rows + r]]): gather + cast.
  virtual void gather_rows_bf16(const float* src, const int32_t* perm, int64_t rows,
                                int64_t row_elems, const StepCounters* counters, bf16_t* dst);

  // Scratch for the backend's own multi-pass reductions (CUDA: bias_grad's per-chunk
  // partial sums), planned like every buffer: the caller reserves
  // reduction_workspace_bytes() in the workspace arena and binds it once, before any
  // capture; it must outlive every op and graph that uses it. Ops run one after another
  // on one stream, so one buffer serves them all. Unbound, results stay deterministic
  // but CUDA's bias_grad runs as a single chunk (slower for many rows, other rounding).
  // Null unbinds. An Error for a buffer that is too small or a capture in progress.
  virtual size_t reduction_workspace_bytes() const { return 0; }
  virtual Status bind_reduction_workspace(void* workspace, size_t bytes) {
    (void)workspace;
    (void)bytes;
    return {};
  }

  // End of a training step: step += 1, batch_in_epoch += 1.
  virtual void advance(StepCounters* counters) = 0;
  virtual void fill_zero(void* p, size_t bytes) = 0;
  // Host copies wait for the transfer, so neither may be issued while a graph is being
  // captured: the CUDA backend refuses them (and synchronize), and end_capture returns
  // the error naming the op.
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // Waits for queued work (epoch boundaries and timers only, never inside a step).
  virtual void synchronize() = 0;

  // ---- Graph capture: ops issued between begin_capture and end_capture are recorded
  // ---- into a graph instead of running; replay() runs them all again.
  virtual bool supports_graphs() const { return false; }
  virtual Status begin_capture() {
    return make_error("CUDA-graph capture needs the gpu target; drop --graph or use --target gpu");
  }
  virtual Result<std::unique_ptr<StepGraph>> end_capture() {
    return make_error("no capture in progress");
  }

  // ---- Step timers beyond the host clock (CUPTI activity, CUDA events), null where the
  // ---- backend has none; `why` receives the reason.
  virtual std::unique_ptr<DeviceStepTimer> make_device_timer(DeviceTimerKind kind,
                                                             std::string* why) {
    if (why) *why = "not a CUDA target";
    (void)kind;
    return nullptr;
  }
};

}  // namespace noeira
