// The backend interface (DESIGN.md section 2b): every op a module, loss or optimizer
// calls. kernels/cpu implements it (oneDNN, loops), kernels/cuda too (cuBLASLt, cuDNN,
// our kernels).
//
// Adding an op = one declaration here + one implementation per backend + one gradcheck
// (tests/unit/test_gradcheck.cpp). The declaration's comment is the op's contract, stated
// only here: shapes, dtypes, whether it overwrites or accumulates, the order of its
// reductions. Operands whose storage dtype can vary are views (kernels/view.h: pointer,
// dtype, element count); each backend turns the dtype into a template argument once per
// op (kernels/dispatch.h) and runs a kernel written once for every storage type. Math is
// fp32 whatever the storage. fp32-only state (master weights, their gradients, optimizer
// state, loss accumulators) is plain float*.
//
// Layouts are fixed at this interface: dense and row-major, the last index fastest.
// Matrices are (M, N); images NCHW; sequences (B, T, C); weights as torch stores them
// (Linear (out, in)). A backend may use other layouts inside an op (blocked, NHWC) and
// says so in its header; callers never see them.
//
// Nothing here allocates or waits for the host, except the copies and synchronize(),
// which say so. Ops run in call order on the backend's one stream, so a step can be
// captured into a CUDA graph. Every reduction runs in an order fixed by the shapes alone,
// so results repeat bit for bit (DESIGN.md rule 3); the CPU's are also independent of
// its thread count. The two backends' orders differ, so their results differ by rounding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/saturating.h"
#include "kernels/common/error.h"
#include "kernels/common/image_shapes.h"
#include "kernels/common/math.h"
#include "kernels/common/norm.h"
#include "kernels/view.h"

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
  // Whether the pointers this backend takes are host memory (the CPU backend).
  virtual bool host_memory() const = 0;

  // ---- Matrix products. fp32 accumulation; A and B both fp32 or both bf16. ----

  // C(M,N) = alpha op(A)(M,K) op(B)(K,N) + beta C, with leading dimensions lda, ldb, ldc
  // (the views' counts are not checked against them). beta == 0 overwrites C without
  // reading it; beta == 1 accumulates. K == 0 leaves beta C. fp32 A/B may run on TF32
  // tensor cores (CUDA, when enabled); bf16 A/B always accumulate in plain fp32. The
  // K-sum's order is the library's, fixed per shape: on the CPU oneDNN, single-threaded
  // over fixed 64-row slabs of C; on CUDA one cuBLASLt algorithm
  // per shape, chosen once, without in-place split-K.
  virtual void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                    ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
                    int64_t ldc) = 0;
  // Linear layer forward, overwriting y(M,N) = act(x(M,K) W(N,K)^T + b(N)) in y's dtype
  // (fp32 or bf16). x and W: gemm's A and B; b fp32 or null. pre (GELU only, else empty)
  // receives x W^T + b in y's dtype. acc: fp32 (M,N) scratch for the product when y is
  // not fp32; null when it is (y holds the product). Default: gemm + bias_act, whose
  // orders it has; CUDA fuses the fp32 case into a cuBLASLt epilogue.
  virtual void linear_forward(ConstView x, ConstView W, const float* b, View y, View pre,
                              float* acc, int64_t M, int64_t N, int64_t K, Act act);
  // Linear layer parameter gradients, accumulating (a parameter may be used more than
  // once): dW(N,K) += dz(M,N)^T x(M,K) and, when db is not null, db(N) += column sums of
  // dz. dz and x: gemm's A and B; dW and db fp32. Default: gemm + bias_grad, whose orders
  // it has (cuBLASLt's fused bias gradient would overwrite db in an undocumented order).
  virtual void linear_backward_params(ConstView dz, ConstView x, float* dW, float* db,
                                      int64_t M, int64_t N, int64_t K);

  // ---- Element-wise: fp32 math, one rounding on store; every element is computed by
  // ---- itself, so results depend on neither launch shape nor thread count. Unless
  // ---- said otherwise, the views of one op share one dtype, fp32 or bf16.

  // Overwrites y(M,N) = act(acc(M,N) + bias(N)); pre (may be empty) receives acc + bias.
  // acc and bias (may be null) are fp32; acc may be y's own memory when y is fp32.
  virtual void bias_act(const float* acc, const float* bias, View y, View pre, int64_t M,
                        int64_t N, Act act) = 0;
  // Overwrites y = act(x).
  virtual void act_forward(ConstView x, View y, Act act) = 0;
  // Overwrites dx = dy * act'(pre, post). pre and post may be empty where the activation
  // does not read them (ReLU reads post, GELU pre; kernels/common/math.h act_grad).
  virtual void act_backward(ConstView dy, ConstView pre, ConstView post, View dx, Act act) = 0;
  // Overwrites y = a + b.
  virtual void add(ConstView a, ConstView b, View y) = 0;
  // Overwrites y = x in y's dtype: fp32 -> bf16 rounds to nearest even, bf16 -> fp32 is
  // exact, one dtype to itself copies (the AMP boundary casts, the bf16 weight copies).
  virtual void cast(ConstView x, View y) = 0;

  // ---- Reductions and losses ----

  // Accumulates db(N) += column sums of dy(M,N) (fp32 or bf16; sums in fp32), in an
  // order that depends on M only: the CPU sums each column's rows in order; CUDA cuts the
  // rows into chunks, sums each chunk in lanes folded in a fixed tree, then adds the
  // chunk sums in chunk order (kernels/common/column_sum.h; one chunk while no reduction
  // workspace is bound).
  virtual void bias_grad(ConstView dy, float* db, int64_t M, int64_t N) = 0;
  // Fused stable softmax + cross-entropy over logits(B,C) with int32 labels(B) in [0, C)
  // and label smoothing eps in [0, 1) (torch's label_smoothing; 0 = plain one-hot).
  // Accumulates into *stats: loss_sum += the B per-row losses (kernels/common/math.h
  // xent_row_loss; with eps > 0 it needs each row's logit sum: in column order on the CPU,
  // lane-strided then a warp tree on CUDA), correct += top-1 hits (ties: the lowest
  // index), count += B. Overwrites loss_history[batch_in_epoch] with the batch mean when
  // loss_history is not null, and dlogits (logits' dtype, may be empty) with (softmax -
  // smoothed_target) / B. Row math in fp32; the batch sum in double: in row order on the
  // CPU; on CUDA per block in warp order, then the block sums in a fixed tree.
  virtual void softmax_xent(ConstView logits, const int32_t* labels, int64_t B, int64_t C,
                            float label_smoothing, View dlogits, LossStats* stats,
                            float* loss_history, const StepCounters* counters) = 0;
  // Mean squared error of pred(B,D) against fp32 target(B,D). Accumulates loss_sum += sum
  // of squared errors / D (each sample's mean) and count += B; overwrites
  // loss_history[batch_in_epoch] (when not null) with sum / (B*D), and dpred (pred's
  // dtype, may be empty) with 2 (pred - target) / (B*D). Squares summed in double: in
  // element order on the CPU; on CUDA per thread, then block and grid trees.
  virtual void mse(ConstView pred, const float* target, int64_t B, int64_t D, View dpred,
                   LossStats* stats, float* loss_history, const StepCounters* counters) = 0;

  // ---- Optimizers, in place over flat fp32 buffers (parameters, gradients, state), one
  // ---- element at a time in torch's order of operations (kernels/common/math.h). ----

  // Adam / AdamW (h.decoupled); the 1-based step is counters->step + 1, read on the device.
  // h.decay_mask (device, n floats of 0 or 1; null = all 1) scales the weight decay per
  // element: AdamW's two groups (no decay on biases and LayerNorm weights).
  virtual void adam(float* p, const float* g, float* m, float* v, int64_t n,
                    const AdamHyper& h, const StepCounters* counters) = 0;
  // SGD with momentum (torch's, dampening 0, Nesterov optional; kernels/common/math.h
  // sgd_update); the learning rate of 1-based step counters->step + 1, read on the device.
  virtual void sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h,
                   const StepCounters* counters) = 0;

  // ---- Images: NCHW activations, OIHW weights (kernels/common/image_shapes.h). Unless
  // ---- said otherwise the views of one op share one dtype, fp32 or bf16; math is fp32.

  // Plans a convolution shape for activations and weights of `dtype`: creates what its
  // three passes need (CPU: oneDNN primitives; CUDA: cuDNN descriptors and one
  // deterministic algorithm per pass, chosen now, before any capture) and returns the
  // workspace bytes they need (one workspace may serve every shape, sized for the
  // largest). Slow and allocating: call once per shape while planning. The passes stop
  // the process for a shape that was not planned. An Error for an invalid shape or one
  // the backend cannot run.
  virtual Result<size_t> conv2d_plan(const ConvShape& s, DType dtype) = 0;
  // Overwrites y (B, Cout, Ho, Wo) = conv(x (B, Cin, H, W), w (Cout, Cin, kh, kw)) + bias
  // (fp32 (Cout), or null when !s.has_bias). fp32 sums; bf16 y is rounded once.
  virtual void conv2d_forward(const ConvShape& s, ConstView x, ConstView w, const float* bias,
                              View y, void* workspace, size_t workspace_bytes) = 0;
  // Overwrites dx (B, Cin, H, W) = the transposed convolution of dy (B, Cout, Ho, Wo) with w.
  virtual void conv2d_backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx,
                                    void* workspace, size_t workspace_bytes) = 0;
  // Accumulates dw (Cout, Cin, kh, kw) += the correlation of x with dy over the batch and
  // db (Cout) += sums of dy over (B, Ho, Wo) (when db is not null); dw and db fp32.
  // Order: CPU, per slab of kConvSlabImages images (oneDNN, single-threaded), the slab
  // partials added in slab order; CUDA, the planned deterministic cuDNN algorithm.
  virtual void conv2d_backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw,
                                       float* db, void* workspace, size_t workspace_bytes) = 0;

  // Overwrites y with each window's maximum and argmax (int32, one per element of y) with
  // its position h * W + w in the input plane; the first maximum in row-major window
  // order wins, and a NaN always takes over, so the last NaN of a window wins (as torch;
  // kernels/common/pool.h).
  virtual void maxpool2d_forward(const PoolShape& s, ConstView x, View y, int32_t* argmax) = 0;
  // Overwrites dx: each input element receives the sum of dy over the windows whose
  // argmax it is, in row-major window order (zero when none).
  virtual void maxpool2d_backward(const PoolShape& s, ConstView dy, const int32_t* argmax,
                                  View dx) = 0;
  // Overwrites y with each window's mean: the sum in row-major window order (padding
  // counted as zeros) divided by kh * kw.
  virtual void avgpool2d_forward(const PoolShape& s, ConstView x, View y) = 0;
  // Overwrites dx: each input element receives the sum, in row-major window order, of
  // dy / (kh * kw) over the windows that cover it.
  virtual void avgpool2d_backward(const PoolShape& s, ConstView dy, View dx) = 0;

  // BatchNorm2d over x (B, C, S) (kernels/common/norm.h). Training: each channel's sum
  // and sum of squares in double, in an order fixed by the shape (CPU: b, then s; CUDA:
  // fixed chunks in a fixed tree through the workspace); saves mean and invstd (C) for
  // backward, updates running_mean / running_var (C) in place, and overwrites y. gamma,
  // beta and the statistics are fp32. workspace: batchnorm_workspace_bytes(s).
  virtual size_t batchnorm_workspace_bytes(const NormShape& s) const {
    (void)s;
    return 0;
  }
  virtual void batchnorm_forward_train(const NormShape& s, ConstView x, const float* gamma,
                                       const float* beta, const BatchNormHyper& h, View y,
                                       float* save_mean, float* save_invstd, float* running_mean,
                                       float* running_var, void* workspace) = 0;
  // Eval: overwrites y from the running statistics.
  virtual void batchnorm_forward_eval(const NormShape& s, ConstView x, const float* gamma,
                                      const float* beta, const float* running_mean,
                                      const float* running_var, const BatchNormHyper& h,
                                      View y) = 0;
  // Backward of the training forward: channel sums of dy and dy * xhat in double (the
  // forward's order), overwrites dx (may be empty), accumulates dgamma and dbeta (C).
  virtual void batchnorm_backward(const NormShape& s, ConstView dy, ConstView x,
                                  const float* gamma, const float* save_mean,
                                  const float* save_invstd, View dx, float* dgamma, float* dbeta,
                                  void* workspace) = 0;

  // Overwrites y (the option-A shortcut of x, kernels/common/image_shapes.h).
  virtual void shortcut_forward(const ShortcutShape& s, ConstView x, View y) = 0;
  // Overwrites dx: dy at the subsampled pixels of the kept channels, zero elsewhere.
  virtual void shortcut_backward(const ShortcutShape& s, ConstView dy, View dx) = 0;

  // Overwrites y = x * (keep ? dropout_scale(p) : 0) (torch's mask product),
  // keep = dropout_keep(seed, counters->step, layer, i, p)
  // (kernels/common/philox.h) for element i, read on the device. Backward is the same op
  // on dy with the same arguments before the step counter advances: the mask is drawn
  // again, never stored. p in [0, 1).
  virtual void dropout(ConstView x, View y, float p, uint64_t seed, uint32_t layer,
                       const StepCounters* counters) = 0;

  // Overwrites y (B, N, D) with x (B, C, H, W)'s patches (kernels/common/image_shapes.h
  // PatchShape: y[i] = x[s.patch_source(i)]), a copy in x's dtype.
  virtual void patchify(const PatchShape& s, ConstView x, View y) = 0;
  // Its backward, the inverse permutation: overwrites dx (B, C, H, W) with
  // dx[s.patch_source(i)] = dy[i].
  virtual void unpatchify(const PatchShape& s, ConstView dy, View dx) = 0;

  // Overwrites dst (n, C, H, W) fp32 with the random crop + flip of src (same shape, fp32;
  // never modified) for epoch `epoch` (kernels/common/augment.h). Runs between epochs,
  // eagerly, like the shuffle.
  virtual void augment_crop_flip(const AugmentSpec& spec, const float* src, float* dst,
                                 uint64_t seed, uint32_t epoch) = 0;

  // ---- Sequences (language models): activations (B, T, C) row-major, rows = B * T. ----
  // ---- Unless said otherwise the views of one op share one dtype, fp32 or bf16. ----

  // The current step's autoregressive batch from the resident corpus (n_tokens int32):
  // overwrites inputs (B, T) and targets (B, T), int32, with row r's window of
  // kernels/common/batch_window.h, start = batch_window_start(seed, step, first_row + r,
  // n_tokens, T) (first_row: this rank's first row of the global batch; 0 on one process)
  // where step = (uint32) counters->step (the 0-based optimizer step, read on the device,
  // so a captured step replays with the next step's windows): inputs[r][t] =
  // corpus[start + t], targets[r][t] = corpus[start + t + 1]. B >= 0 and n_tokens > T >= 0
  // (otherwise a programming error). fill_batch_windows (same header) is the host-batch
  // baseline's copy of this op.
  virtual void batch_windows(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                             const StepCounters* counters, int64_t B, int64_t T,
                             int64_t first_row, int32_t* inputs, int32_t* targets) = 0;

  // Overwrites y (B*T, C) = wte[ids[i]] + wpe[i % T] for row i: token plus learned position
  // embedding (fp32 tables; the sum in fp32, rounded once into y's dtype). ids int32 in [0, V).
  virtual void embedding_forward(const int32_t* ids, const float* wte, const float* wpe, View y,
                                 int64_t rows, int64_t T, int64_t C) = 0;
  // Accumulates dwte (V, C) += for each token v the sum of dy's rows whose id is v, in row
  // order, and dwpe (T, C) += for each position t the sum of dy's rows t, T + t, 2T + t, ...
  // in that order (dwpe may be null). No atomics: the order is fixed by the ids alone (CUDA
  // gathers each token's rows through a workspace: embedding_workspace_bytes).
  virtual size_t embedding_workspace_bytes(int64_t rows, int64_t V) const {
    (void)rows;
    (void)V;
    return 0;
  }
  virtual void embedding_backward(const int32_t* ids, ConstView dy, float* dwte, float* dwpe,
                                  int64_t rows, int64_t T, int64_t C, int64_t V,
                                  void* workspace) = 0;

  // LayerNorm over the last dimension of x (N, C): overwrites y = (x - mean) * rstd * gamma
  // + beta (beta may be null) with each row's mean and rstd = 1 / sqrt(biased var + eps),
  // computed in fp32 from sums in double in column order, saved (N, fp32) for backward.
  virtual void layernorm_forward(ConstView x, const float* gamma, const float* beta, View y,
                                 float* mean, float* rstd, int64_t N, int64_t C, float eps) = 0;
  // Overwrites dx (may be empty) and accumulates dgamma, dbeta (C; dbeta may be null): the
  // column sums over rows in an order fixed by N (CPU: rows in order; CUDA: fixed row chunks
  // through the workspace, added in chunk order).
  virtual size_t layernorm_workspace_bytes(int64_t N, int64_t C) const {
    (void)N;
    (void)C;
    return 0;
  }
  virtual void layernorm_backward(ConstView dy, ConstView x, const float* gamma,
                                  const float* mean, const float* rstd, View dx, float* dgamma,
                                  float* dbeta, int64_t N, int64_t C, void* workspace) = 0;

  // A ViT's token assembly: overwrites y (B, N + 1, C) with y[b][0] = cls + pos[0] and
  // y[b][1 + i] = x[b][i] + pos[1 + i] for x (B, N, C); cls (C) and pos (N + 1, C) fp32, the
  // sum in fp32 rounded once into y's dtype (x's). Its backward is copy_token_rows (dx)
  // and bias_grad (dpos over the batch; dcls over the batch of token 0's rows).
  virtual void class_token_forward(ConstView x, const float* cls, const float* pos, View y,
                                   int64_t B, int64_t N, int64_t C) = 0;
  // For each b < B and t < count: dst[b][dst_t0 + t] = src[b][src_t0 + t], rows of C
  // elements, src (B, src_T, C) and dst (B, dst_T, C) of one dtype; dst's other rows are
  // left as they are. (Selecting the class token, routing gradients around it.)
  virtual void copy_token_rows(ConstView src, int64_t src_T, int64_t src_t0, View dst,
                               int64_t dst_T, int64_t dst_t0, int64_t count, int64_t B,
                               int64_t C) = 0;

  // Multi-head self-attention's core, causal (GPT) or not (ViT). qkv (B, T, 3C) holds q, k,
  // v as consecutive blocks of C per row, each split into nh heads of hd = C / nh
  // (nanoGPT's layout). Per head: att = softmax(q k^T / sqrt(hd), future positions masked
  // when causal) in fp32, kept in att (B, nh, T, T, fp32; masked entries 0) for backward;
  // out (B, T, C) = att v, heads concatenated. workspace: attention_workspace_bytes.
  //
  // att holds attention_saved_floats(B, T, nh, dtype) floats: by default B * nh * T * T,
  // the probabilities above. A backend may keep something smaller there and then att does
  // not hold the probabilities (only its own backward reads it): CUDA's bf16 path (a fused
  // flash-style kernel, kernels/cuda/flash_attention.cu) keeps each query row's log-sum-exp
  // of the scaled, masked scores, B * nh * T floats.
  virtual int64_t attention_saved_floats(int64_t B, int64_t T, int64_t nh, DType dtype) const {
    (void)dtype;
    return sat_mul({B, nh, T, T});
  }
  // The longest sequence this backend's attention can plan (0 = no limit of its own).
  virtual int64_t attention_max_context() const { return 0; }
  virtual size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                           DType dtype) const {
    (void)B;
    (void)T;
    (void)C;
    (void)nh;
    (void)dtype;
    return 0;
  }
  virtual void attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                                 int64_t C, int64_t nh, bool causal, void* workspace) = 0;
  // Overwrites dqkv (B, T, 3C) from dout (B, T, C), the forward's qkv and att (the same
  // `causal`).
  virtual void attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                  int64_t B, int64_t T, int64_t C, int64_t nh, bool causal,
                                  void* workspace) = 0;

  // Global-norm gradient clipping as torch's clip_grad_norm_: each parameter's 2-norm (its
  // squares summed in double, in element order on the CPU, in a fixed tree on CUDA), total =
  // the 2-norm of those; then every gradient element is multiplied by
  // min(1, max_norm / (total + 1e-6)) (in fp32, also when it is 1). g is the flat gradient
  // arena; segments (device, n_segments + 1 offsets in floats) delimit the parameters.
  // Writes the total into *norm (device fp32) for logging. workspace:
  // clip_workspace_bytes(n_segments).
  virtual size_t clip_workspace_bytes(int64_t n_segments) const {
    (void)n_segments;
    return 0;
  }
  virtual void clip_grad_norm(float* g, const int64_t* segments, int64_t n_segments,
                              float max_norm, float* norm, void* workspace) = 0;

  // Data parallelism (parallel/data_parallel_sync.h), on one rank's slice g: elements
  // [lo, lo + n) of the flat gradient arena, already summed over the ranks.
  // slice_mean_sumsq divides g by `ranks` in place (the mean; a division, as torch's DDP);
  // then, when segments (device, n_segments + 1 offsets of the whole arena) is not null,
  // writes each segment's sum of squares over the slice's part of it into sumsq[p]
  // (double; element order on the CPU, a fixed tree on CUDA; 0 where the slice misses p).
  virtual void slice_mean_sumsq(float* g, int64_t lo, int64_t n, float ranks,
                                const int64_t* segments, int64_t n_segments, double* sumsq) = 0;
  // clip_slice: every rank's sumsq (ranks x n_segments, rank-major, device) -> segment p's
  // sum of squares = the ranks' values added in rank order; then kernels/common/clip.h's
  // segment norms, total (segment order) and coefficient, written to *coef (device fp32);
  // g (n floats) *= coef.
  virtual void clip_slice(float* g, int64_t n, const double* sumsq, int64_t ranks,
                          int64_t n_segments, float max_norm, float* coef) = 0;

  // ---- Data ----

  // Overwrites dst(rows, row_elems) with rows perm[batch_in_epoch * rows + r], r < rows,
  // of the resident data set src(count, row_elems): the current step's batch. src fp32 ->
  // dst fp32 or bf16 (BF16Policy's boundary cast); src int32 -> dst int32 (labels).
  virtual void gather_rows(ConstView src, const int32_t* perm, int64_t rows, int64_t row_elems,
                           const StepCounters* counters, View dst) = 0;
  // Overwrites perm(n) with the Philox permutation of epoch `epoch` (docs/rng.md).
  // `workspace` holds shuffle_workspace_bytes(n) bytes (planned by the caller, like every
  // buffer); an Error when the backend cannot shuffle n samples (the plan must not go on).
  virtual Result<size_t> shuffle_workspace_bytes(int64_t n) const = 0;
  virtual void shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm,
                       void* workspace) = 0;

  // Whether the backend stores bf16 (BF16Policy, DESIGN.md rule 6). Without it, an op
  // given a bf16 view stops the process; the DatasetTrainer checks this first.
  virtual bool supports_bf16() const { return false; }

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
