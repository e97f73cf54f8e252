// One convolution pass (forward, backward-data or backward-weights) over a slab of a
// fixed number of images, as oneDNN runs it: the primitive, and for each operand the
// interface's layout (nchw / oihw / x) and the one the primitive chose, with the reorder
// between them when they differ. Internal to onednn_conv.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/cpu/channel_blocks.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_engine.h"

namespace noeira::onednn {

enum class Flow : uint8_t { kIn, kOut };
// Activations and gradients are per slab; the weights a pass reads are shared by all its
// slabs, so they are reordered once per call.
enum class Scope : uint8_t { kSlab, kShared };

struct ConvOperand {
  int arg = 0;  // DNNL_ARG_*
  Flow flow = Flow::kIn;
  Scope scope = Scope::kSlab;
  dnnl::memory::desc plain, inner;  // the interface's layout; the primitive's
  dnnl::primitive reorder;          // plain -> inner (kIn) or inner -> plain (kOut)
  dnnl::memory::desc reorder_scratch;
  size_t offset = 0;  // of the inner copy: in a thread's area (kSlab) or the shared area
  // nchw <-> nChw16c or nhwc with C a multiple of 16: our copies (channel_blocks.h) into
  // or out of this layout rather than oneDNN's reorder; none otherwise.
  std::optional<ChannelLayout> channel_blocks;
  bool reordered() const { return inner != plain; }
};

// A plain operand pointer, by DNNL_ARG_*; an absent operand's pointer is ignored.
struct ConvArg {
  int arg = 0;
  void* data = nullptr;
};

class ConvPass {
 public:
  ConvPass() = default;
  ConvPass(dnnl::primitive primitive, dnnl::memory::desc scratch,
           std::vector<ConvOperand> operands);

  // Bytes of the inner copies of shared operands; of a thread's area (inner copies of
  // slab operands, then the largest scratchpad of the primitive and its reorders).
  size_t shared_bytes() const { return shared_bytes_; }
  size_t thread_bytes() const { return thread_bytes_; }

  // Reorders the shared inputs into `shared` (once per call, before the slabs), using
  // `area` for scratch.
  void prepare(dnnl::stream& stream, std::byte* shared, std::byte* area,
               std::span<const ConvArg> args) const;
  // One slab on this thread: inputs reordered in, the primitive, outputs reordered out.
  // `given`, when not null, names an input already in its inner layout (at given->data),
  // which is then read there instead of reordered. `stream_out`: the activation outputs
  // (y, dx) copied out with streaming stores (streaming_store.h) where our copies apply.
  // `dx_out`, when not null: dx (DNNL_ARG_DIFF_SRC) leaves through it (channel_blocks.h
  // ReluGradOut, pointers at the slab's first image), in our copy out where there is one,
  // else in place after the primitive.
  void run(dnnl::stream& stream, std::byte* shared, std::byte* area,
           std::span<const ConvArg> args, const ConvArg* given = nullptr,
           bool stream_out = false, const ReluGradOut* dx_out = nullptr) const;
  // The operand for DNNL_ARG_* `arg`, or null.
  const ConvOperand* operand(int arg) const;
  // Where run() leaves slab operand `arg`'s inner copy in `area` (it stays there until the
  // area's next use), or null when that operand is not reordered.
  std::byte* inner_copy(int arg, std::byte* area) const;

 private:
  dnnl::primitive primitive_;
  dnnl::memory::desc scratch_;
  std::vector<ConvOperand> operands_;
  size_t shared_bytes_ = 0, thread_bytes_ = 0, scratch_at_ = 0;
};

// The three passes for slabs of `images` images of `shape` with activations and weights
// of `dtype` (fp32 or bf16; weight gradients fp32), each created under one thread;
// dnnl::error when oneDNN cannot make one. Without `backward_weights` (a shape whose weight
// gradient our own kernel takes, bf16_conv3x3_wgrad.h) that pass stays an empty ConvPass:
// no primitive is made for it and it needs no workspace.
struct SlabConv {
  ConvPass forward, backward_data, backward_weights;
};
SlabConv make_slab_conv(const ConvShape& shape, int64_t images, DType dtype,
                        bool backward_weights);

}  // namespace noeira::onednn
