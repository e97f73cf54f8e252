// CudaOps' element-wise ops, bias_act, act_forward, act_backward, act_backward_saved,
// add, add_relu_backward and cast (contracts: kernels/op_list.inc). Each element is
// written by exactly one thread with the shared scalar math of kernels/common/math.h, so
// results never depend on the launch shape. The kernels are written once for fp32 and
// bf16 storage (vec8.cuh): fp32 math, bf16 rounding by kernels/common/bf16.h; the
// launchers dispatch once on the views' dtype. Both move groups of 8 elements (one
// 16-byte access per bf16 operand, two per fp32 one) when every buffer is 16-byte aligned,
// and the same bits either way. bias_act's column index takes 32-bit math below 2^31
// elements (index.cuh).
#include <initializer_list>
#include <type_traits>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/index.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/cuda/vec8.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

// y(M,N) = act(acc + bias), dact (fp32, may be null) = act' at acc + bias as Out stores it
// (math.h act_forward_with_grad): fp32 math, In / Out storage.
// fp32 runs it in place (acc == y: each thread reads its group before writing it); bf16
// reads the fp32 GEMM result and stores bf16; 8 elements per thread when the buffers are
// 16-byte aligned. I: the index type (index.cuh), n = M * N.
template <class In, class Out, class I>
__global__ void bias_act_kernel(const In* acc, const float* bias, Out* y, float* dact, I n,
                                Divider<I> N, Act act, bool vec8) {
  // Element math, once for both paths: z = acc + bias[j], out = act(z), g = act'(z).
  auto bias_act_at = [bias, act, dact](float a, I j, float& g, float& out) {
    const float z = a + (bias ? bias[j] : 0.0f);
    out = dact ? act_forward_with_grad<Out>(act, z, &g) : act_forward(act, z);
  };
  I done = 0;
  if (vec8) {
    const I groups = n / kVec;
    for (I g = first_index<I>(); g < groups; g += index_stride<I>()) {
      float va[kVec], vg[kVec], vy[kVec];
      load8(acc, g, va);
      I j = N.mod(g * kVec);  // column of the group's first element
      for (int k = 0; k < kVec; ++k) {
        bias_act_at(va[k], j, vg[k], vy[k]);
        if (++j == N.value()) j = 0;
      }
      if (dact) store8(dact, g, vg);
      store8(y, g, vy);
    }
    done = groups * kVec;
  }
  for (I i = done + first_index<I>(); i < n; i += index_stride<I>()) {
    float g, out;
    bias_act_at(load_f32(acc[i]), N.mod(i), g, out);  // acc[i] is read before y[i] is written
    if (dact) dact[i] = g;
    store_f32(y[i], out);
  }
}

template <class T>
__global__ void act_forward_kernel(const T* x, T* y, int64_t n, Act act, bool vec8) {
  map_elements(n, vec8, y, [act](float v, float, float) { return act_forward(act, v); }, x);
}

// dx = dy * act'(pre, post); either of pre/post may be null (the activation says which).
template <class T>
__global__ void act_backward_kernel(const T* dy, const T* pre, const T* post, T* dx, int64_t n,
                                    Act act, bool vec8) {
  map_elements(
      n, vec8, dx, [act](float g, float p, float q) { return g * act_grad(act, p, q); }, dy,
      pre, post);
}

// dx = dy * dact (fp32), rounded once to T. In place too (dx == dy): each thread reads its
// elements before writing them.
template <class T>
__global__ void act_backward_saved_kernel(const T* dy, const float* dact, T* dx, int64_t n,
                                          bool vec8) {
  int64_t done = 0;
  if (vec8) {
    const int64_t groups = n / kVec;
    for (int64_t g = global_thread(); g < groups; g += grid_stride()) {
      float vd[kVec], vg[kVec], vx[kVec];
      load8(dy, g, vd);
      load8(dact, g, vg);
      for (int k = 0; k < kVec; ++k) vx[k] = vd[k] * vg[k];
      store8(dx, g, vx);
    }
    done = groups * kVec;
  }
  for (int64_t i = done + global_thread(); i < n; i += grid_stride())
    store_f32(dx[i], load_f32(dy[i]) * dact[i]);
}

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t n, bool vec8) {
  map_elements(n, vec8, y, [](float u, float v, float) { return u + v; }, a, b);
}

// dx = ReLU's gradient from post of a + b as add stores it (math.h add_relu_grad).
template <class T>
__global__ void add_relu_backward_kernel(const T* a, const T* b, const T* post, T* dx,
                                         int64_t n, bool vec8) {
  map_elements(
      n, vec8, dx, [](float u, float v, float q) { return add_relu_grad<T>(u, v, q); }, a, b,
      post);
}

// y = x converted (fp32 -> bf16 rounds to nearest even, bf16 -> fp32 is exact).
template <class In, class Out>
__global__ void cast_kernel(const In* x, Out* y, int64_t n, bool vec8) {
  map_elements(n, vec8, y, [](float v, float, float) { return v; }, x);
}

// Groups of 8 when every buffer allows it (aligned16_or_null: absent operands do not
// constrain). fp32 took scalar loops until the first H200 run, where the ReLU stream
// probe moved 1.9 TB/s against torch's 4.0 (not yet measured since).
template <class T>
bool use_vec8(std::initializer_list<const void*> buffers) {
  bool vec8 = true;
  for (const void* p : buffers) vec8 = vec8 && aligned16_or_null(p);
  return vec8;
}

cudaError_t launch_bias_act(cudaStream_t stream, const float* acc, const float* bias, View y,
                            View dact, int64_t M, int64_t N, Act act) {
  const char* op = "bias_act";
  expect_elems(op, M * N, {y, dact});
  if (!dact.empty()) expect_dtype(op, DType::kF32, {dact});
  const int64_t n = M * N;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool vec8 = use_vec8<T>({acc, y.data, dact.data});
    float* da = dact.empty() ? nullptr : dact.as<float>();
    return with_index(n, [&](auto index) {
      using I = typename decltype(index)::type;
      bias_act_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(
          acc, bias, y.as<T>(), da, static_cast<I>(n), Divider<I>(N), act, vec8);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_act_forward(cudaStream_t stream, ConstView x, View y, Act act) {
  const char* op = "act_forward";
  expect_elems(op, y.n, {x});
  const int64_t n = y.n;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool vec8 = use_vec8<T>({x.data, y.data});
    act_forward_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(x.as<T>(), y.as<T>(),
                                                                            n, act, vec8);
    return cudaGetLastError();
  });
}

cudaError_t launch_act_backward(cudaStream_t stream, ConstView dy, ConstView pre,
                                ConstView post, View dx, Act act) {
  const char* op = "act_backward";
  expect_elems(op, dx.n, {dy, pre, post});
  const int64_t n = dx.n;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {dx, dy, pre, post}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool vec8 = use_vec8<T>({dy.data, pre.data, post.data, dx.data});
    act_backward_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(
        dy.as<T>(), pre.as<T>(), post.as<T>(), dx.as<T>(), n, act, vec8);
    return cudaGetLastError();
  });
}

cudaError_t launch_add(cudaStream_t stream, ConstView a, ConstView b, View y) {
  const char* op = "add";
  expect_elems(op, y.n, {a, b});
  const int64_t n = y.n;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y, a, b}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool vec8 = use_vec8<T>({a.data, b.data, y.data});
    add_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(a.as<T>(), b.as<T>(),
                                                                    y.as<T>(), n, vec8);
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t launch_act_backward_saved(cudaStream_t stream, ConstView dy, ConstView dact,
                                      View dx) {
  const char* op = "act_backward_saved";
  if (dx.n > 0 && (dy.empty() || dact.empty())) wrong_elems(op, dx.n, 0);
  expect_elems(op, dx.n, {dy, dact});
  expect_dtype(op, DType::kF32, {dact});
  const int64_t n = dx.n;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool vec8 = use_vec8<T>({dy.data, dact.data, dx.data});
    act_backward_saved_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(
        dy.as<T>(), dact.as<float>(), dx.as<T>(), n, vec8);
    return cudaGetLastError();
  });
}

cudaError_t launch_add_relu_backward(cudaStream_t stream, ConstView a, ConstView b,
                                     ConstView post, View dx) {
  const char* op = "add_relu_backward";
  expect_elems(op, dx.n, {a, b, post});
  const int64_t n = dx.n;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {dx, a, b, post}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool vec8 = use_vec8<T>({a.data, b.data, post.data, dx.data});
    add_relu_backward_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(
        a.as<T>(), b.as<T>(), post.as<T>(), dx.as<T>(), n, vec8);
    return cudaGetLastError();
  });
}

// Casts move 16-byte groups whenever both buffers are aligned, whatever the two types.
cudaError_t launch_cast(cudaStream_t stream, ConstView x, View y) {
  const char* op = "cast";
  expect_elems(op, y.n, {x});
  const int64_t n = y.n;
  if (n == 0) return cudaSuccess;
  return dispatch_float_pair(op, x.dtype, y.dtype, [&](auto from, auto to) {
    using In = typename decltype(from)::type;
    using Out = typename decltype(to)::type;
    const bool vec8 = aligned16(x.data) && aligned16(y.data);
    cast_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(x.as<In>(), y.as<Out>(), n,
                                                                     vec8);
    return cudaGetLastError();
  });
}

}  // namespace cuda

void CudaOps::bias_act(const float* acc, const float* bias, View y, View dact, int64_t M,
                       int64_t N, Act act) {
  OpScope scope(*state_, "bias_act");
  check(cuda::launch_bias_act(stream_, acc, bias, y, dact, M, N, act), "bias_act_kernel");
}

void CudaOps::act_forward(ConstView x, View y, Act act) {
  OpScope scope(*state_, "act_forward");
  check(cuda::launch_act_forward(stream_, x, y, act), "act_forward_kernel");
}

void CudaOps::act_backward(ConstView dy, ConstView pre, ConstView post, View dx, Act act) {
  OpScope scope(*state_, "act_backward");
  check(cuda::launch_act_backward(stream_, dy, pre, post, dx, act), "act_backward_kernel");
}

void CudaOps::act_backward_saved(ConstView dy, ConstView dact, View dx) {
  OpScope scope(*state_, "act_backward_saved");
  check(cuda::launch_act_backward_saved(stream_, dy, dact, dx), "act_backward_saved_kernel");
}

void CudaOps::add(ConstView a, ConstView b, View y) {
  OpScope scope(*state_, "add");
  check(cuda::launch_add(stream_, a, b, y), "add_kernel");
}

void CudaOps::add_relu_backward(ConstView a, ConstView b, ConstView post, View dx) {
  OpScope scope(*state_, "add_relu_backward");
  check(cuda::launch_add_relu_backward(stream_, a, b, post, dx), "add_relu_backward_kernel");
}

void CudaOps::cast(ConstView x, View y) {
  OpScope scope(*state_, "cast");
  check(cuda::launch_cast(stream_, x, y), "cast_kernel");
}

}  // namespace noeira
