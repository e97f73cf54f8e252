// The categories a profile groups op time into (noeira-bench profile, docs/profiling.md),
// the same for ours and the twin's (reference/twin/profile_categories.py maps torch's aten
// ops into these names). Each op of kernels/op_list.inc belongs to one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace noeira {

enum class OpCategory : uint8_t {
  kGemm,           // matrix products (linear layers, heads)
  kConvolution,    // conv2d forward and both backwards
  kAttention,      // scaled-dot-product attention, its softmax
  kNormalisation,  // LayerNorm, BatchNorm
  kActivation,     // GELU/ReLU/tanh, bias + activation, residual adds, dropout, pooling
  kEmbedding,      // token/position embeddings, class token, patches
  kLoss,           // softmax cross-entropy, MSE
  kOptimizer,      // Adam/AdamW/SGD, gradient clipping
  kData,           // the batch build (gathers, shuffles, windows, augmentation)
  kCopy,           // casts, copies, fills
  kOther,          // anything unlisted (by name in the top-ops table)
};
inline constexpr size_t kOpCategoryCount = 11;

// "gemm", "convolution", ... "other": the names in tables, results and traces.
const char* op_category_name(OpCategory c);
// The category of a name from op_category_name; kOther for any other text.
OpCategory op_category_from_name(std::string_view name);
// The category of one of our ops (kernels/op_list.inc), by op name; kOther if unlisted.
OpCategory op_category_of(std::string_view op);

}  // namespace noeira
