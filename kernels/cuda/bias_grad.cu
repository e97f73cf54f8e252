// CudaOps::bias_grad (contract: kernels/op_list.inc): db(N) += column sums of dy(M,N),
// fp32 or bf16 dy, in the fixed order of kernels/common/column_sum.h, without
// floating-point atomics (DESIGN.md rule 3). The rows are cut into chunks whose partials
// go through the reduction workspace the caller bound (CudaStream::bind_reduction_workspace,
// kColumnSumWorkspaceBytes); unbound, or smaller, the sum runs as one chunk (parallel over
// columns only: slower for large M, other rounding).
#include <cstdio>

#include "kernels/common/bf16.h"
#include "kernels/common/column_sum.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

// ---- bias gradient ----
// The order of kernels/common/column_sum.h. A block covers 32 columns (threadIdx.x) of
// one row chunk (blockIdx.y) with kColumnSumLanes row lanes (threadIdx.y); each warp reads
// 32 consecutive columns of a row, so loads are coalesced, and the chunks spread one
// column's rows over many SMs. One chunk adds its partial to db directly; several write
// theirs to the planned partial buffer and column_sum_finish_kernel adds them in order.
constexpr int kBiasCols = 32;

template <class T>
__global__ void column_sum_chunks_kernel(const T* dy, int64_t M, int64_t N, int64_t col0,
                                         int64_t cols, ColumnSumPlan plan, float* db,
                                         float* partials) {
  __shared__ float lane_sum[kColumnSumLanes][kBiasCols + 1];  // +1: no bank conflicts
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c = blockIdx.y;
  const int64_t jl = static_cast<int64_t>(blockIdx.x) * kBiasCols + tx;  // column in pass
  const int64_t j = col0 + jl;
  float s = 0.0f;
  if (jl < cols) {
    const int64_t end = plan.end(c, M);
#pragma unroll 4
    for (int64_t i = plan.begin(c) + ty; i < end; i += kColumnSumLanes)
      s += load_f32(dy[i * N + j]);
  }
  lane_sum[ty][tx] = s;
  __syncthreads();
  for (int h = kColumnSumLanes / 2; h > 0; h /= 2) {
    if (ty < h) lane_sum[ty][tx] += lane_sum[ty + h][tx];
    __syncthreads();
  }
  if (ty != 0 || jl >= cols) return;
  if (plan.chunks == 1)
    db[j] += lane_sum[0][tx];
  else
    partials[c * cols + jl] = lane_sum[0][tx];
}

// db[col0 + jl] += p[0][jl] + p[1][jl] + ... (chunk order), partials (chunks, cols).
__global__ void column_sum_finish_kernel(const float* partials, int64_t chunks, int64_t cols,
                                         int64_t col0, float* db) {
  for (int64_t jl = global_thread(); jl < cols; jl += grid_stride()) {
    float total = partials[jl];
    for (int64_t c = 1; c < chunks; ++c) total += partials[c * cols + jl];
    db[col0 + jl] += total;
  }
}

// Without a partial buffer (or one smaller than kColumnSumWorkspaceBytes) the sum runs
// as one chunk: the same code, parallel over columns only.
template <class T>
cudaError_t bias_grad_launch(cudaStream_t stream, const T* dy, float* db, int64_t M, int64_t N,
                             float* partials, size_t partial_bytes) {
  if (N == 0) return cudaSuccess;
  const bool chunked = partials && partial_bytes >= kColumnSumWorkspaceBytes;
  const ColumnSumPlan plan = column_sum_plan(M, chunked ? kColumnSumMaxChunks : 1);
  const dim3 block(kBiasCols, kColumnSumLanes);
  // One chunk needs no partials, so one launch covers every column; several go through
  // the partial buffer kColumnSumPassCols columns at a time.
  const int64_t pass_cols = plan.chunks == 1 ? N : kColumnSumPassCols;
  for (int64_t col0 = 0; col0 < N; col0 += pass_cols) {
    const int64_t cols = N - col0 < pass_cols ? N - col0 : pass_cols;
    const dim3 grid(static_cast<unsigned>((cols + kBiasCols - 1) / kBiasCols),
                    static_cast<unsigned>(plan.chunks));
    column_sum_chunks_kernel<<<grid, block, 0, stream>>>(dy, M, N, col0, cols, plan, db,
                                                         partials);
    if (plan.chunks > 1)
      column_sum_finish_kernel<<<grid_for(cols), kBlock, 0, stream>>>(partials, plan.chunks, cols,
                                                                      col0, db);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t launch_bias_grad(cudaStream_t stream, ConstView dy, float* db, int64_t M, int64_t N,
                             float* partials, size_t partial_bytes) {
  const char* op = "bias_grad";
  expect_elems(op, M * N, {dy});
  return dispatch_float(op, {dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    return bias_grad_launch(stream, dy.as<T>(), db, M, N, partials, partial_bytes);
  });
}

}  // namespace

}  // namespace cuda

float* CudaOps::bias_grad_partials(int64_t M) {
  if (state_->reduction_workspace()) return state_->reduction_workspace();
  // Say once that a caller did not plan the workspace, where it costs speed.
  if (!warned_unbound_ && column_sum_plan(M, kColumnSumMaxChunks).chunks > 1) {
    warned_unbound_ = true;
    std::fprintf(stderr,
                 "noeira: %s over %lld rows runs as one chunk: no reduction workspace is bound "
                 "(plan Stream::reduction_workspace_bytes() and call bind_reduction_workspace)\n",
                 state_->op() ? state_->op() : "bias_grad", static_cast<long long>(M));
  }
  return nullptr;
}

void CudaOps::bias_grad(ConstView dy, float* db, int64_t M, int64_t N) {
  OpScope scope(*state_, "bias_grad");
  check(cuda::launch_bias_grad(stream_, dy, db, M, N, bias_grad_partials(M),
                               state_->reduction_workspace_bytes()),
        "bias_grad kernels");
}

}  // namespace noeira
