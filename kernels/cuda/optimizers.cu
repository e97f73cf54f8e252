// CudaOps' optimizers, adam and sgd (contracts: kernels/op_list.inc): in place over the
// flat fp32 buffers, one element per thread with kernels/common/math.h's update; float4
// accesses when every buffer is 16-byte aligned (the same bits either way). The step is
// read from the device counters, so a captured graph replays correctly at every step.
#include "kernels/common/math.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace noeira {

namespace cuda {

namespace {

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

}  // namespace

}  // namespace cuda

void CudaOps::adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
                   const StepCounters* counters) {
  OpScope scope(*state_, "adam");
  check(cuda::launch_adam(stream_, p, g, m, v, n, h, counters), "adam_kernel");
}

void CudaOps::sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h,
                  const StepCounters* counters) {
  OpScope scope(*state_, "sgd");
  check(cuda::launch_sgd(stream_, p, g, buf, n, h, counters), "sgd_kernel");
}

}  // namespace noeira
