// Elementwise kernels: activations, add, optimizer updates, the step counter. Each
// element is written by exactly one thread with the shared scalar math of
// kernels/common/math.h, so results never depend on the launch shape.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace noeira::cuda {

namespace {

// y(M,N) = act(y + bias) in place; pre (may be null) = y + bias.
__global__ void bias_act_kernel(float* y, float* pre, const float* bias, int64_t M, int64_t N,
                                Act act) {
  const int64_t n = M * N;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const float z = y[i] + (bias ? bias[i % N] : 0.0f);
    if (pre) pre[i] = z;
    y[i] = act_forward(act, z);
  }
}

__global__ void act_forward_kernel(const float* x, float* y, int64_t n, Act act) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = act_forward(act, x[i]);
}

// dx = dy * act'(pre, post); either of pre/post may be null (the activation says which).
__global__ void act_backward_kernel(const float* dy, const float* pre, const float* post,
                                    float* dx, int64_t n, Act act) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    dx[i] = dy[i] * act_grad(act, pre ? pre[i] : 0.0f, post ? post[i] : 0.0f);
}

__global__ void add_kernel(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = a[i] + b[i];
}

// C(M,N), row stride ldc: C = beta * C; beta == 0 writes zeros (BLAS: C is not read).
__global__ void scale_rows_kernel(float* C, int64_t M, int64_t N, int64_t ldc, float beta) {
  const int64_t n = M * N;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    float& c = C[(i / N) * ldc + i % N];
    c = beta == 0.0f ? 0.0f : beta * c;
  }
}

// Adam over flat buffers. The step comes from the device counter (read once per block),
// never from a kernel argument, so a captured graph replays correctly at every step.
// vec4: the four buffers are 16-byte aligned; float4 over the first n/4*4 elements.
__global__ void adam_kernel(float* __restrict__ p, const float* __restrict__ g,
                            float* __restrict__ m, float* __restrict__ v, int64_t n,
                            AdamHyper h, const StepCounters* counters, bool vec4) {
  __shared__ AdamStepScalars s;
  if (threadIdx.x == 0) s = adam_step_scalars(h, counters->step + 1);
  __syncthreads();
  int64_t done = 0;
  if (vec4) {
    const int64_t n4 = n / 4;
    for (int64_t i = global_thread(); i < n4; i += grid_stride()) {
      float4 pp = reinterpret_cast<float4*>(p)[i];
      const float4 gg = reinterpret_cast<const float4*>(g)[i];
      float4 mm = reinterpret_cast<float4*>(m)[i];
      float4 vv = reinterpret_cast<float4*>(v)[i];
      adam_update(pp.x, gg.x, mm.x, vv.x, h, s);
      adam_update(pp.y, gg.y, mm.y, vv.y, h, s);
      adam_update(pp.z, gg.z, mm.z, vv.z, h, s);
      adam_update(pp.w, gg.w, mm.w, vv.w, h, s);
      reinterpret_cast<float4*>(p)[i] = pp;
      reinterpret_cast<float4*>(m)[i] = mm;
      reinterpret_cast<float4*>(v)[i] = vv;
    }
    done = n4 * 4;
  }
  for (int64_t i = done + global_thread(); i < n; i += grid_stride())
    adam_update(p[i], g[i], m[i], v[i], h, s);
}

__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g,
                           float* __restrict__ buf, int64_t n, SgdHyper h, bool vec4) {
  int64_t done = 0;
  if (vec4) {
    const int64_t n4 = n / 4;
    for (int64_t i = global_thread(); i < n4; i += grid_stride()) {
      float4 pp = reinterpret_cast<float4*>(p)[i];
      const float4 gg = reinterpret_cast<const float4*>(g)[i];
      float4 bb = reinterpret_cast<float4*>(buf)[i];
      sgd_update(pp.x, gg.x, bb.x, h);
      sgd_update(pp.y, gg.y, bb.y, h);
      sgd_update(pp.z, gg.z, bb.z, h);
      sgd_update(pp.w, gg.w, bb.w, h);
      reinterpret_cast<float4*>(p)[i] = pp;
      reinterpret_cast<float4*>(buf)[i] = bb;
    }
    done = n4 * 4;
  }
  for (int64_t i = done + global_thread(); i < n; i += grid_stride())
    sgd_update(p[i], g[i], buf[i], h);
}

__global__ void advance_kernel(StepCounters* counters) {
  counters->step += 1;
  counters->batch_in_epoch += 1;
}

}  // namespace

cudaError_t launch_bias_act(cudaStream_t stream, float* y, float* pre, const float* bias,
                            int64_t M, int64_t N, Act act) {
  if (M * N == 0) return cudaSuccess;
  bias_act_kernel<<<grid_for(M * N), kBlock, 0, stream>>>(y, pre, bias, M, N, act);
  return cudaGetLastError();
}

cudaError_t launch_act_forward(cudaStream_t stream, const float* x, float* y, int64_t n, Act act) {
  if (n == 0) return cudaSuccess;
  act_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, y, n, act);
  return cudaGetLastError();
}

cudaError_t launch_act_backward(cudaStream_t stream, const float* dy, const float* pre,
                                const float* post, float* dx, int64_t n, Act act) {
  if (n == 0) return cudaSuccess;
  act_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(dy, pre, post, dx, n, act);
  return cudaGetLastError();
}

cudaError_t launch_add(cudaStream_t stream, const float* a, const float* b, float* y, int64_t n) {
  if (n == 0) return cudaSuccess;
  add_kernel<<<grid_for(n), kBlock, 0, stream>>>(a, b, y, n);
  return cudaGetLastError();
}

cudaError_t launch_scale_rows(cudaStream_t stream, float* C, int64_t M, int64_t N, int64_t ldc,
                              float beta) {
  if (M * N == 0 || beta == 1.0f) return cudaSuccess;
  scale_rows_kernel<<<grid_for(M * N), kBlock, 0, stream>>>(C, M, N, ldc, beta);
  return cudaGetLastError();
}

cudaError_t launch_adam(cudaStream_t stream, float* p, const float* g, float* m, float* v,
                        int64_t n, const AdamHyper& h, const StepCounters* counters) {
  if (n == 0) return cudaSuccess;
  const bool vec4 = aligned16(p) && aligned16(g) && aligned16(m) && aligned16(v);
  const int64_t work = vec4 ? n / 4 + n % 4 : n;
  adam_kernel<<<grid_for(work), kBlock, 0, stream>>>(p, g, m, v, n, h, counters, vec4);
  return cudaGetLastError();
}

cudaError_t launch_sgd(cudaStream_t stream, float* p, const float* g, float* buf, int64_t n,
                       const SgdHyper& h) {
  if (n == 0) return cudaSuccess;
  const bool vec4 = aligned16(p) && aligned16(g) && aligned16(buf);
  const int64_t work = vec4 ? n / 4 + n % 4 : n;
  sgd_kernel<<<grid_for(work), kBlock, 0, stream>>>(p, g, buf, n, h, vec4);
  return cudaGetLastError();
}

cudaError_t launch_advance(cudaStream_t stream, StepCounters* counters) {
  advance_kernel<<<1, 1, 0, stream>>>(counters);
  return cudaGetLastError();
}

cudaError_t check_kernel_image() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, advance_kernel);
}

}  // namespace noeira::cuda
