#include "kernels/profiling/op_category.h"

#include <array>
#include <utility>

namespace noeira {

namespace {

constexpr std::array<const char*, kOpCategoryCount> kNames = {
    "gemm",      "convolution", "attention", "normalisation", "activation", "embedding",
    "loss",      "optimizer",   "data",      "copy",          "other"};

// Every compute op of kernels/op_list.inc (tests/unit/test_op_profiler.cpp checks that
// none is missing).
constexpr std::pair<std::string_view, OpCategory> kOps[] = {
    {"gemm", OpCategory::kGemm},
    {"linear_forward", OpCategory::kGemm},
    {"linear_backward_data", OpCategory::kGemm},
    {"linear_backward_params", OpCategory::kGemm},
    {"bias_act", OpCategory::kActivation},
    {"act_forward", OpCategory::kActivation},
    {"act_backward", OpCategory::kActivation},
    {"act_backward_saved", OpCategory::kActivation},
    {"add", OpCategory::kActivation},
    {"add_relu_backward", OpCategory::kActivation},
    {"cast", OpCategory::kCopy},
    {"bias_grad", OpCategory::kGemm},
    {"softmax_xent", OpCategory::kLoss},
    {"mse", OpCategory::kLoss},
    {"adam", OpCategory::kOptimizer},
    {"sgd", OpCategory::kOptimizer},
    {"conv2d_plan", OpCategory::kConvolution},
    {"conv2d_forward", OpCategory::kConvolution},
    {"conv2d_backward_data", OpCategory::kConvolution},
    {"conv2d_backward_weights", OpCategory::kConvolution},
    {"conv2d_backward", OpCategory::kConvolution},
    {"maxpool2d_forward", OpCategory::kActivation},
    {"maxpool2d_backward", OpCategory::kActivation},
    {"avgpool2d_forward", OpCategory::kActivation},
    {"avgpool2d_backward", OpCategory::kActivation},
    {"batchnorm_forward_train", OpCategory::kNormalisation},
    {"batchnorm_forward_eval", OpCategory::kNormalisation},
    {"batchnorm_backward", OpCategory::kNormalisation},
    {"batchnorm_relu_backward", OpCategory::kNormalisation},
    {"batchnorm_stats", OpCategory::kNormalisation},
    {"batchnorm_forward_from_stats", OpCategory::kNormalisation},
    {"batchnorm_backward_stats", OpCategory::kNormalisation},
    {"batchnorm_backward_from_stats", OpCategory::kNormalisation},
    {"sum_over_ranks", OpCategory::kNormalisation},  // synchronised BatchNorm's statistics
    {"shortcut_forward", OpCategory::kCopy},
    {"shortcut_backward", OpCategory::kCopy},
    {"dropout", OpCategory::kActivation},
    {"patchify", OpCategory::kEmbedding},
    {"unpatchify", OpCategory::kEmbedding},
    {"augment_crop_flip", OpCategory::kData},
    {"batch_windows", OpCategory::kData},
    {"embedding_forward", OpCategory::kEmbedding},
    {"embedding_backward", OpCategory::kEmbedding},
    {"layernorm_forward", OpCategory::kNormalisation},
    {"layernorm_backward", OpCategory::kNormalisation},
    {"class_token_forward", OpCategory::kEmbedding},
    {"copy_token_rows", OpCategory::kCopy},
    {"attention_forward", OpCategory::kAttention},
    {"attention_backward", OpCategory::kAttention},
    {"clip_grad_norm", OpCategory::kOptimizer},
    {"slice_mean_sumsq", OpCategory::kOptimizer},
    {"clip_slice", OpCategory::kOptimizer},
    {"gather_rows", OpCategory::kData},
    {"shuffle", OpCategory::kData},
    {"advance", OpCategory::kData},
    // The Stream's work inside a step (kernels/stream.h).
    {"fill_zero", OpCategory::kCopy},
};

}  // namespace

const char* op_category_name(OpCategory c) {
  const size_t i = static_cast<size_t>(c);
  return i < kNames.size() ? kNames[i] : "other";
}

OpCategory op_category_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<OpCategory>(i);
  return OpCategory::kOther;
}

OpCategory op_category_of(std::string_view op) {
  for (const auto& [name, category] : kOps)
    if (name == op) return category;
  return OpCategory::kOther;
}

}  // namespace noeira
