#include "kernels/cpu/cpu_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/common/philox.h"

namespace noeira {

CpuOps::CpuOps(int threads) : threads_(std::max(1, threads)) {
  openblas_set_num_threads(1);  // we parallelise above OpenBLAS; see the header
}

void CpuOps::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                  float* C, int64_t ldc) {
  const int64_t slabs = (M + kCpuGemmSlabRows - 1) / kCpuGemmSlabRows;
#pragma omp parallel for num_threads(threads_) schedule(static) if (slabs > 1)
  for (int64_t s = 0; s < slabs; ++s) {
    const int64_t m0 = s * kCpuGemmSlabRows;
    const int64_t rows = std::min(kCpuGemmSlabRows, M - m0);
    // Row m of op(A) starts at A + m*lda (no transpose) or A + m (transposed).
    const float* a = trans_a ? A + m0 : A + m0 * lda;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(rows),
                static_cast<blasint>(N), static_cast<blasint>(K), alpha, a,
                static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C + m0 * ldc,
                static_cast<blasint>(ldc));
  }
}

void CpuOps::bias_act(float* y, float* pre, const float* bias, int64_t M, int64_t N, Act act) {
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < M; ++i) {
    float* row = y + i * N;
    float* pre_row = pre ? pre + i * N : nullptr;
    for (int64_t j = 0; j < N; ++j) {
      const float z = row[j] + (bias ? bias[j] : 0.0f);
      if (pre_row) pre_row[j] = z;
      row[j] = noeira::act_forward(act, z);
    }
  }
}

void CpuOps::act_forward(const float* x, float* y, int64_t n, Act act) {
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = noeira::act_forward(act, x[i]);
}

void CpuOps::act_backward(const float* dy, const float* pre, const float* post, float* dx,
                          int64_t n, Act act) {
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    dx[i] = dy[i] * act_grad(act, pre ? pre[i] : 0.0f, post ? post[i] : 0.0f);
}

void CpuOps::bias_grad(const float* dy, float* db, int64_t M, int64_t N) {
  // Each column summed over rows in order: one thread owns a column.
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t j = 0; j < N; ++j) {
    float s = 0.0f;
    for (int64_t i = 0; i < M; ++i) s += dy[i * N + j];
    db[j] += s;
  }
}

void CpuOps::add(const float* a, const float* b, float* y, int64_t n) {
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void CpuOps::softmax_xent(const float* logits, const int32_t* labels, int64_t B, int64_t C,
                          float* dlogits, LossStats* stats, float* loss_history,
                          const StepCounters* counters) {
  double loss_sum = 0.0;
  int64_t correct = 0;
  const float inv_b = 1.0f / static_cast<float>(B);
  for (int64_t i = 0; i < B; ++i) {
    const float* z = logits + i * C;
    int64_t argmax = 0;
    float zmax = z[0];
    for (int64_t j = 1; j < C; ++j)
      if (z[j] > zmax) zmax = z[j], argmax = j;
    float sum = 0.0f;
    for (int64_t j = 0; j < C; ++j) sum += std::exp(z[j] - zmax);
    const int32_t y = labels[i];
    loss_sum += static_cast<double>(std::log(sum) + zmax - z[y]);
    correct += (argmax == y);
    if (dlogits) {
      const float inv_sum = 1.0f / sum;
      float* d = dlogits + i * C;
      for (int64_t j = 0; j < C; ++j)
        d[j] = (std::exp(z[j] - zmax) * inv_sum - (j == y ? 1.0f : 0.0f)) * inv_b;
    }
  }
  stats->loss_sum += loss_sum;
  stats->correct += correct;
  stats->count += B;
  if (loss_history) loss_history[counters->batch_in_epoch] = static_cast<float>(loss_sum / B);
}

void CpuOps::mse(const float* pred, const float* target, int64_t B, int64_t D, float* dpred,
                 LossStats* stats, float* loss_history, const StepCounters* counters) {
  const int64_t n = B * D;
  const float scale = 2.0f / static_cast<float>(n);
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = pred[i] - target[i];
    sq += static_cast<double>(d) * d;
    if (dpred) dpred[i] = scale * d;
  }
  // Per-sample loss = mean over its D outputs, so loss_sum / count is the mean loss.
  stats->loss_sum += sq / static_cast<double>(D);
  stats->count += B;
  if (loss_history) loss_history[counters->batch_in_epoch] = static_cast<float>(sq / n);
}

void CpuOps::adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
                  const StepCounters* counters) {
  const AdamStepScalars s = adam_step_scalars(h, counters->step + 1);
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) adam_update(p[i], g[i], m[i], v[i], h, s);
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

size_t CpuOps::shuffle_workspace_bytes(int64_t n) const {
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
