// CudaOps' image ops (contracts in kernels/ops.h): convolutions through cuDNN
// (cudnn_conv.h), pooling, BatchNorm, the shortcut, dropout, a ViT's patches and
// augmentation through our kernels (image_kernels.h). Each op names itself for error messages, checks its shape
// (a bad one is a programming error: it stops the process, or fails the capture), and
// enqueues on the backend's stream.
#include <cstdint>
#include <string>

#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/image_kernels.h"
#include "kernels/cuda/op_scope.h"

namespace noeira {

namespace {

std::string describe(const PoolShape& s) {
  return "pool " + std::to_string(s.batch) + "x" + std::to_string(s.channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + ", " +
         std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) + " window, stride " +
         std::to_string(s.stride) + ", pad " + std::to_string(s.pad);
}

// Empty when the shape is valid, else what is wrong with it.
std::string pool_problem(const PoolShape& s, bool argmax) {
  if (s.batch < 0 || s.channels < 0 || s.height <= 0 || s.width <= 0 || s.kernel_h <= 0 ||
      s.kernel_w <= 0 || s.stride <= 0 || s.pad < 0)
    return "invalid " + describe(s);
  if (s.out_height() <= 0 || s.out_width() <= 0)
    return "the window is larger than the padded input in " + describe(s);
  if (argmax && s.height * s.width > INT32_MAX)
    return "the argmax (int32) cannot index the planes of " + describe(s);
  return {};
}

std::string norm_problem(const NormShape& s) {
  if (s.batch < 0 || s.channels < 0 || s.spatial < 0)
    return "invalid batchnorm shape " + std::to_string(s.batch) + "x" +
           std::to_string(s.channels) + "x" + std::to_string(s.spatial);
  return {};
}

// BatchNorm's workspace holds doubles: an Error text unless it is there and 16-byte aligned.
std::string workspace_problem(const NormShape& s, const void* workspace) {
  if (s.elems() == 0) return {};
  if (!workspace)
    return "no workspace; plan batchnorm_workspace_bytes(shape) bytes and pass them";
  if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
    return "the workspace must be 16-byte aligned (the memory plan aligns to 256)";
  return {};
}

std::string shortcut_problem(const ShortcutShape& s) {
  if (s.batch < 0 || s.in_channels < 0 || s.height <= 0 || s.width <= 0 || s.stride <= 0 ||
      s.out_channels < s.in_channels)
    return "invalid shortcut " + std::to_string(s.batch) + "x" + std::to_string(s.in_channels) +
           "x" + std::to_string(s.height) + "x" + std::to_string(s.width) + " -> " +
           std::to_string(s.out_channels) + " channels, stride " + std::to_string(s.stride);
  return {};
}

std::string patch_problem(const PatchShape& s) {
  if (s.batch < 0 || s.channels < 0 || s.height < 0 || s.width < 0 || s.patch <= 0 ||
      s.height % s.patch != 0 || s.width % s.patch != 0)
    return "invalid patches of " + std::to_string(s.batch) + "x" + std::to_string(s.channels) +
           "x" + std::to_string(s.height) + "x" + std::to_string(s.width) + " images, patch " +
           std::to_string(s.patch) + " (H and W must be multiples of the patch size)";
  return {};
}

}  // namespace

// ---- Convolutions ----

Result<size_t> CudaOps::conv2d_plan(const ConvShape& s, DType dtype) {
  if (capturing_)
    return make_error("conv2d_plan: a CUDA graph is being captured; plan every convolution "
                      "before begin_capture");
  if (!conv_) {
    Result<std::unique_ptr<cuda::CudnnConv>> c = cuda::CudnnConv::create(stream_, tf32());
    if (!c) return make_error("target gpu: " + c.error().message);
    conv_ = std::move(c).value();
  }
  return conv_->plan(s, dtype);
}

std::string CudaOps::conv2d_plan_description(const ConvShape& s, DType dtype) const {
  return conv_ ? conv_->describe_plan(s, dtype) : std::string();
}

void CudaOps::conv2d_forward(const ConvShape& s, ConstView x, ConstView w, const float* bias,
                             View y, void* workspace, size_t workspace_bytes) {
  OpScope scope(*this, "conv2d_forward");
  if (!conv_) return fail("no convolution was planned; call conv2d_plan first");
  if (Status st = conv_->forward(s, x, w, bias, y, workspace, workspace_bytes); !st)
    fail(st.error().message);
}

void CudaOps::conv2d_backward_data(const ConvShape& s, ConstView dy, ConstView w, View dx,
                                   void* workspace, size_t workspace_bytes) {
  OpScope scope(*this, "conv2d_backward_data");
  if (!conv_) return fail("no convolution was planned; call conv2d_plan first");
  if (Status st = conv_->backward_data(s, dy, w, dx, workspace, workspace_bytes); !st)
    fail(st.error().message);
}

void CudaOps::conv2d_backward_weights(const ConvShape& s, ConstView x, ConstView dy, float* dw,
                                      float* db, void* workspace, size_t workspace_bytes) {
  OpScope scope(*this, "conv2d_backward_weights");
  if (!conv_) return fail("no convolution was planned; call conv2d_plan first");
  if (Status st = conv_->backward_weights(s, x, dy, dw, db, workspace, workspace_bytes); !st)
    fail(st.error().message);
}

// ---- Pooling ----

void CudaOps::maxpool2d_forward(const PoolShape& s, ConstView x, View y, int32_t* argmax) {
  OpScope scope(*this, "maxpool2d_forward");
  if (const std::string p = pool_problem(s, true); !p.empty()) return fail(p);
  check(cuda::launch_maxpool2d_forward(stream_, s, x, y, argmax), "maxpool_forward_kernel");
}

void CudaOps::maxpool2d_backward(const PoolShape& s, ConstView dy, const int32_t* argmax,
                                 View dx) {
  OpScope scope(*this, "maxpool2d_backward");
  if (const std::string p = pool_problem(s, true); !p.empty()) return fail(p);
  check(cuda::launch_maxpool2d_backward(stream_, s, dy, argmax, dx), "maxpool_backward_kernel");
}

void CudaOps::avgpool2d_forward(const PoolShape& s, ConstView x, View y) {
  OpScope scope(*this, "avgpool2d_forward");
  if (const std::string p = pool_problem(s, false); !p.empty()) return fail(p);
  check(cuda::launch_avgpool2d_forward(stream_, s, x, y), "avgpool_forward_kernel");
}

void CudaOps::avgpool2d_backward(const PoolShape& s, ConstView dy, View dx) {
  OpScope scope(*this, "avgpool2d_backward");
  if (const std::string p = pool_problem(s, false); !p.empty()) return fail(p);
  check(cuda::launch_avgpool2d_backward(stream_, s, dy, dx), "avgpool_backward_kernel");
}

// ---- BatchNorm ----

size_t CudaOps::batchnorm_workspace_bytes(const NormShape& s) const {
  return cuda::batchnorm_workspace_bytes(s);
}

void CudaOps::batchnorm_forward_train(const NormShape& s, ConstView x, const float* gamma,
                                      const float* beta, const BatchNormHyper& h, View y,
                                      float* save_mean, float* save_invstd, float* running_mean,
                                      float* running_var, void* workspace) {
  OpScope scope(*this, "batchnorm_forward_train");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_forward_train(stream_, s, x, gamma, beta, h, y, save_mean,
                                             save_invstd, running_mean, running_var, workspace),
        "batchnorm forward kernels");
}

void CudaOps::batchnorm_forward_eval(const NormShape& s, ConstView x, const float* gamma,
                                     const float* beta, const float* running_mean,
                                     const float* running_var, const BatchNormHyper& h, View y) {
  OpScope scope(*this, "batchnorm_forward_eval");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_forward_eval(stream_, s, x, gamma, beta, running_mean,
                                            running_var, h, y),
        "bn_apply_eval_kernel");
}

void CudaOps::batchnorm_backward(const NormShape& s, ConstView dy, ConstView x,
                                 const float* gamma, const float* save_mean,
                                 const float* save_invstd, View dx, float* dgamma, float* dbeta,
                                 void* workspace) {
  OpScope scope(*this, "batchnorm_backward");
  if (const std::string p = norm_problem(s); !p.empty()) return fail(p);
  if (const std::string p = workspace_problem(s, workspace); !p.empty()) return fail(p);
  check(cuda::launch_batchnorm_backward(stream_, s, dy, x, gamma, save_mean, save_invstd, dx,
                                        dgamma, dbeta, workspace),
        "batchnorm backward kernels");
}

// ---- Shortcut, dropout, augmentation ----

void CudaOps::shortcut_forward(const ShortcutShape& s, ConstView x, View y) {
  OpScope scope(*this, "shortcut_forward");
  if (const std::string p = shortcut_problem(s); !p.empty()) return fail(p);
  check(cuda::launch_shortcut_forward(stream_, s, x, y), "shortcut_forward_kernel");
}

void CudaOps::shortcut_backward(const ShortcutShape& s, ConstView dy, View dx) {
  OpScope scope(*this, "shortcut_backward");
  if (const std::string p = shortcut_problem(s); !p.empty()) return fail(p);
  check(cuda::launch_shortcut_backward(stream_, s, dy, dx), "shortcut_backward_kernel");
}

void CudaOps::dropout(ConstView x, View y, float p, uint64_t seed, uint32_t layer,
                      const StepCounters* counters) {
  OpScope scope(*this, "dropout");
  if (!(p >= 0.0f && p < 1.0f))
    return fail("the drop probability " + std::to_string(p) + " is outside [0, 1)");
  check(cuda::launch_dropout(stream_, x, y, p, seed, layer, counters), "dropout_kernel");
}

// ---- Patches ----

void CudaOps::patchify(const PatchShape& s, ConstView x, View y) {
  OpScope scope(*this, "patchify");
  if (const std::string p = patch_problem(s); !p.empty()) return fail(p);
  if (s.elems() > 0 && (x.empty() || y.empty())) return fail("a missing operand (x or y)");
  check(cuda::launch_patchify(stream_, s, x, y), "patchify_kernel");
}

void CudaOps::unpatchify(const PatchShape& s, ConstView dy, View dx) {
  OpScope scope(*this, "unpatchify");
  if (const std::string p = patch_problem(s); !p.empty()) return fail(p);
  if (s.elems() > 0 && (dy.empty() || dx.empty())) return fail("a missing operand (dy or dx)");
  check(cuda::launch_unpatchify(stream_, s, dy, dx), "unpatchify_kernel");
}

void CudaOps::augment_crop_flip(const AugmentSpec& spec, const float* src, float* dst,
                                uint64_t seed, uint32_t epoch) {
  OpScope scope(*this, "augment_crop_flip");
  if (spec.channels < 0 || spec.channels > AugmentSpec::kMaxChannels || spec.count < 0 ||
      spec.height < 0 || spec.width < 0 || spec.pad < 0)
    return fail("invalid augmentation of " + std::to_string(spec.count) + "x" +
                std::to_string(spec.channels) + "x" + std::to_string(spec.height) + "x" +
                std::to_string(spec.width) + " images (pad " + std::to_string(spec.pad) +
                "; at most " + std::to_string(AugmentSpec::kMaxChannels) + " channels)");
  check(cuda::launch_augment_crop_flip(stream_, spec, src, dst, seed, epoch), "augment_kernel");
}

}  // namespace noeira
