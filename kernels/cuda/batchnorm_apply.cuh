// BatchNorm's per-element kernels (batchnorm.cu; math: kernels/common/norm.h): one thread
// per element of x (B, C, S), channel c = (i / S) % C in the index type the shape allows
// (index.cuh: 32-bit multiply-shift below 2^31 elements). Each element is computed by
// itself, so the launch shape never changes a bit. The forwards apply the epilogue
// (kernels/ops.h BatchNormEpilogue) per element: residual null or x's shape, act uniform.
#pragma once
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/image_shapes.h"
#include "kernels/common/math.h"
#include "kernels/common/norm.h"
#include "kernels/cuda/index.cuh"

namespace noeira::cuda {

// The epilogue of element i: y, then residual[i] added and act, rounded as separate ops.
template <class T, class I>
__device__ float bn_epilogue(float y, const T* residual, Act act, I i) {
  return batchnorm_epilogue<T>(y, residual != nullptr, residual ? load_f32(residual[i]) : 0.0f,
                               act);
}

// y = act(gamma (x - mean) invstd + beta [+ residual]), stats[c] = (mean, invstd).
template <class T, class I>
__global__ void bn_apply_train_kernel(const T* x, const float2* stats, const float* gamma,
                                      const float* beta, const T* residual, Act act, T* y, I n,
                                      Divider<I> C, Divider<I> S) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    const I c = C.mod(S.div(i));
    const float2 st = stats[c];
    const float v = batchnorm_apply(load_f32(x[i]), st.x, st.y, gamma ? gamma[c] : 1.0f,
                                    beta ? beta[c] : 0.0f);
    store_f32(y[i], bn_epilogue(v, residual, act, i));
  }
}

template <class T, class I>
__global__ void bn_apply_eval_kernel(const T* x, const float* gamma, const float* beta,
                                     const float* running_mean, const float* running_var,
                                     float eps, const T* residual, Act act, T* y, I n,
                                     Divider<I> C, Divider<I> S) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    const I c = C.mod(S.div(i));
    const float v = batchnorm_eval(load_f32(x[i]), running_mean[c], running_var[c], eps,
                                   gamma ? gamma[c] : 1.0f, beta ? beta[c] : 0.0f);
    store_f32(y[i], bn_epilogue(v, residual, act, i));
  }
}

// The gradient the backward works on at element i: dy[i], or, with relu_post
// (batchnorm_relu_backward), ReLU's gradient of it as act_backward computes it,
// dy * act_grad(kReLU, -, relu_post). The factor is 0 or 1: the product is exact, what
// act_backward would have stored.
template <class T, class I>
__device__ float bn_relu_grad(const T* dy, const T* relu_post, I i) {
  const float g = load_f32(dy[i]);
  return relu_post ? g * act_grad(Act::kReLU, 0.0f, load_f32(relu_post[i])) : g;
}

// grad_means[c] = (mean of dy, mean of dy * xhat); relu_post null or as bn_relu_grad.
template <class T, class I>
__global__ void bn_apply_backward_kernel(const T* dy, const T* relu_post, const T* x,
                                         const float* gamma, const float* save_mean,
                                         const float* save_invstd, const float2* grad_means,
                                         T* dx, I n, Divider<I> C, Divider<I> S) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    const I c = C.mod(S.div(i));
    const float2 m = grad_means[c];
    store_f32(dx[i], batchnorm_dx(bn_relu_grad(dy, relu_post, i), load_f32(x[i]), save_mean[c],
                                  save_invstd[c], gamma ? gamma[c] : 1.0f, m.x, m.y));
  }
}

// The launches over s.elems() > 0 elements (errors: cudaGetLastError after).
template <class T>
void bn_apply_train(cudaStream_t stream, const NormShape& s, const T* x, const float2* stats,
                    const float* gamma, const float* beta, const T* residual, Act act, T* y) {
  const int64_t n = s.elems();
  with_index(n, [&](auto index) {
    using I = typename decltype(index)::type;
    bn_apply_train_kernel<<<grid_for(n), kBlock, 0, stream>>>(
        x, stats, gamma, beta, residual, act, y, static_cast<I>(n), Divider<I>(s.channels),
        Divider<I>(s.spatial));
  });
}

template <class T>
void bn_apply_eval(cudaStream_t stream, const NormShape& s, const T* x, const float* gamma,
                   const float* beta, const float* running_mean, const float* running_var,
                   float eps, const T* residual, Act act, T* y) {
  const int64_t n = s.elems();
  with_index(n, [&](auto index) {
    using I = typename decltype(index)::type;
    bn_apply_eval_kernel<<<grid_for(n), kBlock, 0, stream>>>(
        x, gamma, beta, running_mean, running_var, eps, residual, act, y, static_cast<I>(n),
        Divider<I>(s.channels), Divider<I>(s.spatial));
  });
}

template <class T>
void bn_apply_backward(cudaStream_t stream, const NormShape& s, const T* dy, const T* relu_post,
                       const T* x, const float* gamma, const float* save_mean,
                       const float* save_invstd, const float2* grad_means, T* dx) {
  const int64_t n = s.elems();
  with_index(n, [&](auto index) {
    using I = typename decltype(index)::type;
    bn_apply_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(
        dy, relu_post, x, gamma, save_mean, save_invstd, grad_means, dx, static_cast<I>(n),
        Divider<I>(s.channels), Divider<I>(s.spatial));
  });
}

}  // namespace noeira::cuda
