#include "kernels/cpu/cpu_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "kernels/common/bf16.h"
#include "kernels/common/philox.h"
#include "kernels/cpu/bf16_gemm.h"

namespace noeira {

CpuOps::CpuOps(int threads)
    : threads_(std::max(1, threads)), bf16_gemm_(std::make_unique<Bf16Gemm>()) {
  openblas_set_num_threads(1);  // we parallelise above OpenBLAS; see the header
}

CpuOps::~CpuOps() = default;

namespace {

// Runs slab(m0, rows) over fixed 64-row slabs of C, spread over OpenMP threads. The
// slabs do not depend on the thread count, so neither do the results.
template <class Slab>
void for_each_row_slab(int threads, int64_t M, const Slab& slab) {
  const int64_t slabs = (M + kCpuGemmSlabRows - 1) / kCpuGemmSlabRows;
#pragma omp parallel for num_threads(threads) schedule(static) if (slabs > 1)
  for (int64_t s = 0; s < slabs; ++s) {
    const int64_t m0 = s * kCpuGemmSlabRows;
    slab(m0, std::min(kCpuGemmSlabRows, M - m0));
  }
}

}  // namespace

void CpuOps::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                  float* C, int64_t ldc) {
  for_each_row_slab(threads_, M, [&](int64_t m0, int64_t rows) {
    // Row m of op(A) starts at A + m*lda (no transpose) or A + m (transposed).
    const float* a = trans_a ? A + m0 : A + m0 * lda;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(rows),
                static_cast<blasint>(N), static_cast<blasint>(K), alpha, a,
                static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C + m0 * ldc,
                static_cast<blasint>(ldc));
  });
}

// ---- Element-wise ops, written once for fp32 and bf16 storage (fp32 math). ----
namespace {

// Calls f with the activation as a compile-time constant, so the loops inside carry no
// per-element switch and vectorise. The arithmetic is act_forward / act_grad's.
template <class F>
void with_act(Act act, const F& f) {
  switch (act) {
    case Act::kReLU: f(std::integral_constant<Act, Act::kReLU>{}); break;
    case Act::kGELU: f(std::integral_constant<Act, Act::kGELU>{}); break;
    default: f(std::integral_constant<Act, Act::kNone>{}); break;
  }
}

// Calls f with `on` as a compile-time bool (for optional buffers).
template <class F>
void with_flag(bool on, const F& f) {
  if (on) f(std::true_type{});
  else f(std::false_type{});
}

template <class In, class Out>
void bias_act_impl(int threads, const In* acc, const float* bias, Out* y, Out* pre, int64_t M,
                   int64_t N, Act act) {
  with_act(act, [&](auto a) {
    with_flag(pre != nullptr, [&](auto has_pre) {
      with_flag(bias != nullptr, [&](auto has_bias) {
        const In* ac = acc;  // local copies: see act_backward_impl
        const float* b = bias;
        Out* out = y;
        Out* pr = pre;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < M; ++i) {
#pragma omp simd
          for (int64_t j = 0; j < N; ++j) {
            const float z = load_f32(ac[i * N + j]) + (has_bias ? b[j] : 0.0f);
            if constexpr (decltype(has_pre)::value) store_f32(pr[i * N + j], z);
            store_f32(out[i * N + j], act_forward(decltype(a)::value, z));
          }
        }
      });
    });
  });
}

template <class T>
void act_forward_impl(int threads, const T* x, T* y, int64_t n, Act act) {
  with_act(act, [&](auto a) {
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) store_f32(y[i], act_forward(decltype(a)::value, load_f32(x[i])));
  });
}

template <class T>
void act_backward_impl(int threads, const T* dy, const T* pre, const T* post, T* dx, int64_t n,
                       Act act) {
  with_act(act, [&](auto a) {
    with_flag(pre != nullptr, [&](auto has_pre) {
      with_flag(post != nullptr, [&](auto has_post) {
        // Local copies: a pointer read through the closure may alias dx and would be
        // reloaded every iteration, which stops vectorisation.
        const T* __restrict d = dy;
        const T* __restrict pr = pre;
        const T* __restrict po = post;
        T* __restrict out = dx;
#pragma omp parallel for simd num_threads(threads) schedule(static)
        for (int64_t i = 0; i < n; ++i) {
          const float p = has_pre ? load_f32(pr[i]) : 0.0f;
          const float q = has_post ? load_f32(po[i]) : 0.0f;
          store_f32(out[i], load_f32(d[i]) * act_grad(decltype(a)::value, p, q));
        }
      });
    });
  });
}

template <class T>
void bias_grad_impl(int threads, const T* dy, float* db, int64_t M, int64_t N) {
  // Each column summed over rows in order: one thread owns a column.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t j = 0; j < N; ++j) {
    float s = 0.0f;
    for (int64_t i = 0; i < M; ++i) s += load_f32(dy[i * N + j]);
    db[j] += s;
  }
}

template <class T>
void add_impl(int threads, const T* a, const T* b, T* y, int64_t n) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) store_f32(y[i], load_f32(a[i]) + load_f32(b[i]));
}

// Stable softmax + cross-entropy; the batch loss is summed in double, in row order.
template <class T>
void softmax_xent_impl(const T* logits, const int32_t* labels, int64_t B, int64_t C, T* dlogits,
                       LossStats* stats, float* loss_history, const StepCounters* counters) {
  double loss_sum = 0.0;
  int64_t correct = 0;
  const float inv_b = 1.0f / static_cast<float>(B);
  for (int64_t i = 0; i < B; ++i) {
    const T* z = logits + i * C;
    int64_t argmax = 0;
    float zmax = load_f32(z[0]);
    for (int64_t j = 1; j < C; ++j)
      if (load_f32(z[j]) > zmax) zmax = load_f32(z[j]), argmax = j;
    float sum = 0.0f;
    for (int64_t j = 0; j < C; ++j) sum += std::exp(load_f32(z[j]) - zmax);
    const int32_t y = labels[i];
    loss_sum += static_cast<double>(std::log(sum) + zmax - load_f32(z[y]));
    correct += (argmax == y);
    if (dlogits) {
      const float inv_sum = 1.0f / sum;
      T* d = dlogits + i * C;
      for (int64_t j = 0; j < C; ++j)
        store_f32(d[j], (std::exp(load_f32(z[j]) - zmax) * inv_sum - (j == y ? 1.0f : 0.0f)) * inv_b);
    }
  }
  stats->loss_sum += loss_sum;
  stats->correct += correct;
  stats->count += B;
  if (loss_history) loss_history[counters->batch_in_epoch] = static_cast<float>(loss_sum / B);
}

template <class T>
void mse_impl(const T* pred, const float* target, int64_t B, int64_t D, T* dpred,
              LossStats* stats, float* loss_history, const StepCounters* counters) {
  const int64_t n = B * D;
  const float scale = 2.0f / static_cast<float>(n);
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = load_f32(pred[i]) - target[i];
    sq += static_cast<double>(d) * d;
    if (dpred) store_f32(dpred[i], scale * d);
  }
  // Per-sample loss = mean over its D outputs, so loss_sum / count is the mean loss.
  stats->loss_sum += sq / static_cast<double>(D);
  stats->count += B;
  if (loss_history) loss_history[counters->batch_in_epoch] = static_cast<float>(sq / n);
}

}  // namespace

void CpuOps::bias_act(float* y, float* pre, const float* bias, int64_t M, int64_t N, Act act) {
  bias_act_impl(threads_, y, bias, y, pre, M, N, act);
}

void CpuOps::act_forward(const float* x, float* y, int64_t n, Act act) {
  act_forward_impl(threads_, x, y, n, act);
}

void CpuOps::act_backward(const float* dy, const float* pre, const float* post, float* dx,
                          int64_t n, Act act) {
  act_backward_impl(threads_, dy, pre, post, dx, n, act);
}

void CpuOps::bias_grad(const float* dy, float* db, int64_t M, int64_t N) {
  bias_grad_impl(threads_, dy, db, M, N);
}

void CpuOps::add(const float* a, const float* b, float* y, int64_t n) {
  add_impl(threads_, a, b, y, n);
}

void CpuOps::softmax_xent(const float* logits, const int32_t* labels, int64_t B, int64_t C,
                          float* dlogits, LossStats* stats, float* loss_history,
                          const StepCounters* counters) {
  softmax_xent_impl(logits, labels, B, C, dlogits, stats, loss_history, counters);
}

void CpuOps::mse(const float* pred, const float* target, int64_t B, int64_t D, float* dpred,
                 LossStats* stats, float* loss_history, const StepCounters* counters) {
  mse_impl(pred, target, B, D, dpred, stats, loss_history, counters);
}

// ---- bf16 ----

void CpuOps::gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                       const bf16_t* A, int64_t lda, const bf16_t* B, int64_t ldb, float beta,
                       float* C, int64_t ldc) {
  for_each_row_slab(threads_, M, [&](int64_t m0, int64_t rows) {
    const bf16_t* a = trans_a ? A + m0 : A + m0 * lda;
    bf16_gemm_->run(trans_a, trans_b, rows, N, K, alpha, a, lda, B, ldb, beta, C + m0 * ldc, ldc);
  });
}

void CpuOps::cast_to_bf16(const float* x, bf16_t* y, int64_t n) {
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

void CpuOps::cast_to_f32(const bf16_t* x, float* y, int64_t n) {
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}

void CpuOps::bias_act_bf16(const float* acc, const float* bias, bf16_t* y, bf16_t* pre,
                           int64_t M, int64_t N, Act act) {
  bias_act_impl(threads_, acc, bias, y, pre, M, N, act);
}

void CpuOps::act_forward_bf16(const bf16_t* x, bf16_t* y, int64_t n, Act act) {
  act_forward_impl(threads_, x, y, n, act);
}

void CpuOps::act_backward_bf16(const bf16_t* dy, const bf16_t* pre, const bf16_t* post,
                               bf16_t* dx, int64_t n, Act act) {
  act_backward_impl(threads_, dy, pre, post, dx, n, act);
}

void CpuOps::bias_grad_bf16(const bf16_t* dy, float* db, int64_t M, int64_t N) {
  bias_grad_impl(threads_, dy, db, M, N);
}

void CpuOps::add_bf16(const bf16_t* a, const bf16_t* b, bf16_t* y, int64_t n) {
  add_impl(threads_, a, b, y, n);
}

void CpuOps::softmax_xent_bf16(const bf16_t* logits, const int32_t* labels, int64_t B,
                               int64_t C, bf16_t* dlogits, LossStats* stats,
                               float* loss_history, const StepCounters* counters) {
  softmax_xent_impl(logits, labels, B, C, dlogits, stats, loss_history, counters);
}

void CpuOps::mse_bf16(const bf16_t* pred, const float* target, int64_t B, int64_t D,
                      bf16_t* dpred, LossStats* stats, float* loss_history,
                      const StepCounters* counters) {
  mse_impl(pred, target, B, D, dpred, stats, loss_history, counters);
}

void CpuOps::gather_rows_bf16(const float* src, const int32_t* perm, int64_t rows,
                              int64_t row_elems, const StepCounters* counters, bf16_t* dst) {
  const int32_t* idx = perm + counters->batch_in_epoch * rows;
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + static_cast<int64_t>(idx[r]) * row_elems;
    for (int64_t k = 0; k < row_elems; ++k) dst[r * row_elems + k] = f32_to_bf16(s[k]);
  }
}

void CpuOps::adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
                  const StepCounters* counters) {
  const AdamStepScalars s = adam_step_scalars(h, counters->step + 1);
  // One loop per weight-decay mode: branch-free bodies that vectorise.
  auto run = [&](auto decoupled, auto l2) {
#pragma omp parallel for simd num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      adam_update_mode<decltype(decoupled)::value, decltype(l2)::value>(p[i], g[i], m[i], v[i], s);
  };
  if (s.decoupled)
    run(std::true_type{}, std::false_type{});
  else if (s.weight_decay != 0.0f)
    run(std::false_type{}, std::true_type{});
  else
    run(std::false_type{}, std::false_type{});
}

void CpuOps::sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h) {
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) sgd_update(p[i], g[i], buf[i], h);
}

void CpuOps::gather_rows(const float* src, const int32_t* perm, int64_t rows,
                         int64_t row_elems, const StepCounters* counters, float* dst) {
  const int32_t* idx = perm + counters->batch_in_epoch * rows;
  const size_t row_bytes = static_cast<size_t>(row_elems) * sizeof(float);
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * row_elems, src + static_cast<int64_t>(idx[r]) * row_elems, row_bytes);
}

void CpuOps::gather_labels(const int32_t* src, const int32_t* perm, int64_t rows,
                           const StepCounters* counters, int32_t* dst) {
  const int32_t* idx = perm + counters->batch_in_epoch * rows;
  for (int64_t r = 0; r < rows; ++r) dst[r] = src[idx[r]];
}

Result<size_t> CpuOps::shuffle_workspace_bytes(int64_t n) const {
  // perm is int32 and the Philox key takes a uint32 index.
  if (n < 0 || n > INT32_MAX)
    return make_error("shuffle of " + std::to_string(n) +
                      " samples: the shuffle handles 0 to 2147483647 samples (int32 "
                      "permutation); use a smaller training set");
  return static_cast<size_t>(n) * sizeof(uint64_t);
}

void CpuOps::shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm, void* workspace) {
  uint64_t* keys = static_cast<uint64_t*>(workspace);
  for (int64_t i = 0; i < n; ++i) {
    keys[i] = shuffle_key(seed, epoch, static_cast<uint32_t>(i));
    perm[i] = static_cast<int32_t>(i);
  }
  std::stable_sort(perm, perm + n, [keys](int32_t a, int32_t b) { return keys[a] < keys[b]; });
}

void CpuOps::advance(StepCounters* counters) {
  counters->step += 1;
  counters->batch_in_epoch += 1;
}

void CpuOps::fill_zero(void* p, size_t bytes) { std::memset(p, 0, bytes); }

void CpuOps::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  std::memcpy(dst, host_src, bytes);
}

void CpuOps::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  std::memcpy(host_dst, src, bytes);
}

}  // namespace noeira
