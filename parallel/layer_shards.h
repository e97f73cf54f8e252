// Data parallelism layer by layer (DESIGN.md section 2): the flat parameter and gradient
// arenas cut into one bucket per layer (a child of the model's top-level Sequential that
// has parameters), and the hooks that exchange a layer's state around its use. Every
// stage reduce-scatters a layer's gradient bucket into the owners' slices as soon as the
// layer's backward is done (Communicator::reduce_scatter_sum over the bucket's range: the
// same element order as a whole-buffer call, so the same bits); on the GPU that exchange
// overlaps the backward of the layers before it.
//
//   DDP, ZeRO-1: the full gradient arena; the bucket is reduced in place.
//   ZeRO-2 (gradients sharded): the rank keeps its gradient slice; a layer's gradients are
//     written into a bucket window before its backward.
//   ZeRO-3 (parameters sharded too): the rank keeps its parameter slice; a layer's
//     parameters are all-gathered into a window before its forward and again before its
//     backward.
//
// Windows: the first layer's bucket (GPT's wte and wpe) is resident for the whole step,
// because the tied LM head, a layer without parameters of its own, reads and accumulates
// into it at the other end of the model; every other bucket uses one window sized for the
// largest (on the GPU the compute stream waits for the window's last exchange before
// reusing it). A layer without parameters runs with the resident window. Each arena a rank
// allocates for a sharded category is [slice | resident bucket | window], each placed so
// that its addresses have the alignment the full arena would give them (mod 256 bytes).
#pragma once
#include <memory>
#include <vector>

#include "parallel/communicator.h"
#include "nn/layer_hooks.h"
#include "nn/module.h"

namespace noeira {

class LayerShards final : public LayerHooks {
 public:
  struct Bucket {
    const Module* layer = nullptr;
    int64_t first = 0, count = 0;  // floats of the flat arenas, alignment gaps included
  };

  // model must be a Sequential (as build_gpt makes it); padded = the arenas' floats, a
  // multiple of comm.size(); stage 0 to 3.
  static Result<std::unique_ptr<LayerShards>> plan(const Module& model, const ParamRegistry& params,
                                                   int64_t padded, int stage, Communicator& comm);

  // Floats a rank allocates for each sharded arena (gradients from stage 2; parameters too
  // at stage 3).
  int64_t arena_floats() const { return arena_floats_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  int64_t window_floats() const { return window_floats_; }
  // After allocation: the arenas whose windows the hooks move, and the stream that zeroes
  // them.
  void bind(Arenas& arenas, Stream& stream);
  // The rank's slices: elements [rank * slice, (rank + 1) * slice) of the flat arenas.
  float* grad_slice() const;
  float* param_slice() const;  // stage 3
  // Stages 2 and 3: point the gradient (and, at stage 3, parameter) slots at the slices:
  // the optimizer step, which touches only the own slice, runs on them.
  void window_slices();

  void before_forward(const Module& layer) override;
  void before_backward(const Module& layer) override;
  void after_backward(const Module& layer) override;

 private:
  LayerShards() = default;
  // Whether layer is a child of the top-level Sequential (the hooks ignore the children
  // of nested ones), and its bucket (-1: a layer without parameters of its own).
  bool is_layer(const Module& layer) const;
  int bucket_of(const Module& layer) const;
  // Where bucket b (or the resident one for b < 0) lives in a sharded arena, in floats.
  int64_t region(int b) const;
  // Bucket b's gradients as the layer wrote them (a window, or the full arena).
  float* grad_bucket(int b) const;
  void window(MemCategory c, int b) const;
  void gather_params(int b) const;

  Communicator* comm_ = nullptr;
  Arenas* arenas_ = nullptr;
  Stream* stream_ = nullptr;
  int stage_ = 2;
  int64_t slice_ = 0;
  std::vector<const Module*> layers_;
  std::vector<Bucket> buckets_;  // buckets_[0] is the resident one
  int64_t slice_at_ = 0, resident_at_ = 0, window_at_ = 0, window_floats_ = 0, arena_floats_ = 0;
  bool resident_gathered_for_backward_ = false;
};

}  // namespace noeira
