// Elementwise kernels: activations, add, casts, optimizer updates, the step counter. Each
// element is written by exactly one thread with the shared scalar math of
// kernels/common/math.h, so results never depend on the launch shape. The activation,
// add and cast kernels are written once for fp32 and bf16 storage (vec8.cuh): fp32 math,
// bf16 rounding by kernels/common/bf16.h; their launchers dispatch on the views' dtype.
#include <initializer_list>
#include <type_traits>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/vec8.cuh"
#include "kernels/dispatch.h"

namespace noeira::cuda {

namespace {

// y(M,N) = act(acc + bias), pre (may be null) = acc + bias: fp32 math, In / Out storage.
// fp32 runs it in place (acc == y, scalar); bf16 reads the fp32 GEMM result and stores
// bf16, 8 elements per thread when the buffers are 16-byte aligned.
template <class In, class Out>
__global__ void bias_act_kernel(const In* acc, const float* bias, Out* y, Out* pre, int64_t M,
                                int64_t N, Act act, bool vec8) {
  const int64_t n = M * N;
  // Element math, once for both paths: z = acc + bias[j], out = act(z).
  auto bias_act_at = [bias, act](float a, int64_t j, float& z, float& out) {
    z = a + (bias ? bias[j] : 0.0f);
    out = act_forward(act, z);
  };
  int64_t done = 0;
  if (vec8) {
    const int64_t groups = n / kVec;
    for (int64_t g = global_thread(); g < groups; g += grid_stride()) {
      float va[kVec], vz[kVec], vy[kVec];
      load8(acc, g, va);
      int64_t j = (g * kVec) % N;  // column of the group's first element
      for (int k = 0; k < kVec; ++k) {
        bias_act_at(va[k], j, vz[k], vy[k]);
        if (++j == N) j = 0;
      }
      if (pre) store8(pre, g, vz);
      store8(y, g, vy);
    }
    done = groups * kVec;
  }
  for (int64_t i = done + global_thread(); i < n; i += grid_stride()) {
    float z, out;
    bias_act_at(load_f32(acc[i]), i % N, z, out);  // acc[i] is read before y[i] is written
    if (pre) store_f32(pre[i], z);
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

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t n, bool vec8) {
  map_elements(n, vec8, y, [](float u, float v, float) { return u + v; }, a, b);
}

// y = x converted (fp32 -> bf16 rounds to nearest even, bf16 -> fp32 is exact).
template <class In, class Out>
__global__ void cast_kernel(const In* x, Out* y, int64_t n, bool vec8) {
  map_elements(n, vec8, y, [](float v, float, float) { return v; }, x);
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

// Adam with a per-element weight-decay mask (AdamHyper::decay_mask, n floats): the masked
// update of kernels/common/math.h (adam_update_masked) in the decoupled and L2 modes; no
// decay at all needs no mask. A separate kernel, so the unmasked path keeps its code and
// bits. vec4: the five buffers are 16-byte aligned.
template <bool kDecoupled, bool kL2>
__global__ void adam_masked_kernel(float* __restrict__ p, const float* __restrict__ g,
                                   float* __restrict__ m, float* __restrict__ v,
                                   const float* __restrict__ mask, int64_t n, AdamHyper h,
                                   const StepCounters* counters, bool vec4) {
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
      const float4 kk = reinterpret_cast<const float4*>(mask)[i];
      adam_update_masked<kDecoupled, kL2>(pp.x, gg.x, mm.x, vv.x, kk.x, s);
      adam_update_masked<kDecoupled, kL2>(pp.y, gg.y, mm.y, vv.y, kk.y, s);
      adam_update_masked<kDecoupled, kL2>(pp.z, gg.z, mm.z, vv.z, kk.z, s);
      adam_update_masked<kDecoupled, kL2>(pp.w, gg.w, mm.w, vv.w, kk.w, s);
      reinterpret_cast<float4*>(p)[i] = pp;
      reinterpret_cast<float4*>(m)[i] = mm;
      reinterpret_cast<float4*>(v)[i] = vv;
    }
    done = n4 * 4;
  }
  for (int64_t i = done + global_thread(); i < n; i += grid_stride())
    adam_update_masked<kDecoupled, kL2>(p[i], g[i], m[i], v[i], mask[i], s);
}

// SGD over flat buffers; the learning rate of step counters->step + 1 (its schedule) is
// computed once per block from the device counter, like Adam's step.
__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g,
                           float* __restrict__ buf, int64_t n, SgdHyper h,
                           const StepCounters* counters, bool vec4) {
  __shared__ SgdStepScalars s;
  if (threadIdx.x == 0) s = sgd_step_scalars(h, counters->step + 1);
  __syncthreads();
  int64_t done = 0;
  if (vec4) {
    const int64_t n4 = n / 4;
    for (int64_t i = global_thread(); i < n4; i += grid_stride()) {
      float4 pp = reinterpret_cast<float4*>(p)[i];
      const float4 gg = reinterpret_cast<const float4*>(g)[i];
      float4 bb = reinterpret_cast<float4*>(buf)[i];
      sgd_update(pp.x, gg.x, bb.x, s);
      sgd_update(pp.y, gg.y, bb.y, s);
      sgd_update(pp.z, gg.z, bb.z, s);
      sgd_update(pp.w, gg.w, bb.w, s);
      reinterpret_cast<float4*>(p)[i] = pp;
      reinterpret_cast<float4*>(buf)[i] = bb;
    }
    done = n4 * 4;
  }
  for (int64_t i = done + global_thread(); i < n; i += grid_stride())
    sgd_update(p[i], g[i], buf[i], s);
}

__global__ void advance_kernel(StepCounters* counters) {
  counters->step += 1;
  counters->batch_in_epoch += 1;
}

}  // namespace

namespace {

// fp32 launches keep their scalar loops; bf16 ones move 16-byte groups when every buffer
// allows it (aligned16_or_null: absent operands do not constrain).
template <class T>
bool use_vec8(std::initializer_list<const void*> buffers) {
  bool vec8 = std::is_same<T, bf16_t>::value;
  for (const void* p : buffers) vec8 = vec8 && aligned16_or_null(p);
  return vec8;
}

}  // namespace

cudaError_t launch_bias_act(cudaStream_t stream, const float* acc, const float* bias, View y,
                            View pre, int64_t M, int64_t N, Act act) {
  const char* op = "bias_act";
  expect_elems(op, M * N, {y, pre});
  const int64_t n = M * N;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y, pre}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool vec8 = use_vec8<T>({acc, y.data, pre.data});
    bias_act_kernel<<<grid_for(map_work(n, vec8)), kBlock, 0, stream>>>(
        acc, bias, y.as<T>(), pre.as<T>(), M, N, act, vec8);
    return cudaGetLastError();
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
  // The masked update where a mask is given and there is decay to mask; the host knows
  // the mode (h.decoupled, h.weight_decay), as adam_step_scalars does on the device.
  const bool decoupled = h.decoupled;
  const bool l2 = !decoupled && static_cast<float>(h.weight_decay) != 0.0f;
  if (h.decay_mask && (decoupled || l2)) {
    const bool vec4m = vec4 && aligned16(h.decay_mask);
    const int64_t work = vec4m ? n / 4 + n % 4 : n;
    if (decoupled)
      adam_masked_kernel<true, false><<<grid_for(work), kBlock, 0, stream>>>(
          p, g, m, v, h.decay_mask, n, h, counters, vec4m);
    else
      adam_masked_kernel<false, true><<<grid_for(work), kBlock, 0, stream>>>(
          p, g, m, v, h.decay_mask, n, h, counters, vec4m);
    return cudaGetLastError();
  }
  const int64_t work = vec4 ? n / 4 + n % 4 : n;
  adam_kernel<<<grid_for(work), kBlock, 0, stream>>>(p, g, m, v, n, h, counters, vec4);
  return cudaGetLastError();
}

cudaError_t launch_sgd(cudaStream_t stream, float* p, const float* g, float* buf, int64_t n,
                       const SgdHyper& h, const StepCounters* counters) {
  if (n == 0) return cudaSuccess;
  const bool vec4 = aligned16(p) && aligned16(g) && aligned16(buf);
  const int64_t work = vec4 ? n / 4 + n % 4 : n;
  sgd_kernel<<<grid_for(work), kBlock, 0, stream>>>(p, g, buf, n, h, counters, vec4);
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
