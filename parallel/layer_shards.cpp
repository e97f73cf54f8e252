#include "parallel/layer_shards.h"

#include <algorithm>

#include "nn/sequential.h"

namespace noeira {

namespace {

// Regions of a sharded arena keep the full arena's address phase modulo this many floats
// (256 bytes, the planner's default alignment).
constexpr int64_t kPhase = 64;

// The first offset >= cursor that is congruent to `first` modulo kPhase.
int64_t place(int64_t cursor, int64_t first) {
  const int64_t shift = ((first - cursor) % kPhase + kPhase) % kPhase;
  return cursor + shift;
}

}  // namespace

Result<std::unique_ptr<LayerShards>> LayerShards::plan(const Module& model,
                                                       const ParamRegistry& params, int64_t padded,
                                                       int stage, Communicator& comm) {
  const auto* seq = dynamic_cast<const Sequential*>(&model);
  if (!seq) return make_error("ZeRO-2/3 shard a model layer by layer and need a Sequential of layers");
  std::unique_ptr<LayerShards> s(new LayerShards());
  s->comm_ = &comm;
  s->stage_ = stage;
  s->slice_ = padded / comm.size();
  const auto& all = params.all();
  for (size_t i = 0; i < seq->size(); ++i) {
    s->layers_.push_back(seq->children()[i].second.get());
    const auto [lo, hi] = seq->child_params(i);
    if (lo == hi) continue;
    const auto first = static_cast<int64_t>(all[lo].value.offset / sizeof(float));
    s->buckets_.push_back({seq->children()[i].second.get(), s->buckets_.empty() ? 0 : first, 0});
  }
  if (s->buckets_.empty()) return make_error("ZeRO-2/3: the model has no parameters to shard");
  // Each bucket runs to the next one's first float; the last to the end of the padding.
  for (size_t b = 0; b < s->buckets_.size(); ++b) {
    const int64_t end = b + 1 < s->buckets_.size() ? s->buckets_[b + 1].first : padded;
    s->buckets_[b].count = end - s->buckets_[b].first;
  }
  for (size_t b = 1; b < s->buckets_.size(); ++b)
    s->window_floats_ = std::max(s->window_floats_, s->buckets_[b].count);
  const int64_t r = comm.rank();
  s->slice_at_ = place(0, r * s->slice_);
  s->resident_at_ = place(s->slice_at_ + s->slice_, s->buckets_[0].first);
  s->window_at_ = s->resident_at_ + s->buckets_[0].count;
  // The window's start moves with each bucket's phase: kPhase floats of slack.
  s->arena_floats_ = s->window_at_ + (s->window_floats_ > 0 ? s->window_floats_ + kPhase : 0);
  return s;
}

void LayerShards::bind(Arenas& arenas, Stream& stream) {
  arenas_ = &arenas;
  stream_ = &stream;
}

float* LayerShards::grad_slice() const {
  return static_cast<float*>(arenas_->memory(MemCategory::kGrads)) +
         (stage_ >= 2 ? slice_at_ : comm_->rank() * slice_);
}

float* LayerShards::param_slice() const {
  return static_cast<float*>(arenas_->memory(MemCategory::kParams)) +
         (stage_ >= 3 ? slice_at_ : comm_->rank() * slice_);
}

float* LayerShards::grad_bucket(int b) const {
  auto* g = static_cast<float*>(arenas_->memory(MemCategory::kGrads));
  return g + (stage_ >= 2 ? region(b) : buckets_[static_cast<size_t>(b)].first);
}

void LayerShards::window_slices() {
  if (stage_ < 2) return;
  const size_t first = static_cast<size_t>(comm_->rank() * slice_) * sizeof(float);
  arenas_->set_window(MemCategory::kGrads, grad_slice(), first);
  if (stage_ >= 3) arenas_->set_window(MemCategory::kParams, param_slice(), first);
}

bool LayerShards::is_layer(const Module& layer) const {
  return std::find(layers_.begin(), layers_.end(), &layer) != layers_.end();
}

int LayerShards::bucket_of(const Module& layer) const {
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (buckets_[b].layer == &layer) return static_cast<int>(b);
  return -1;
}

int64_t LayerShards::region(int b) const {
  if (b <= 0) return resident_at_;
  return place(window_at_, buckets_[static_cast<size_t>(b)].first);
}

void LayerShards::window(MemCategory c, int b) const {
  const Bucket& k = buckets_[static_cast<size_t>(std::max(b, 0))];
  float* mem = static_cast<float*>(arenas_->memory(c)) + region(b);
  arenas_->set_window(c, mem, static_cast<size_t>(k.first) * sizeof(float));
}

void LayerShards::gather_params(int b) const {
  const Bucket& k = buckets_[static_cast<size_t>(std::max(b, 0))];
  float* mem = static_cast<float*>(arenas_->memory(MemCategory::kParams)) + region(b);
  comm_->all_gather(param_slice(), mem, k.first, k.count, slice_);
  comm_->join();  // the layer runs on what was gathered
}

void LayerShards::before_forward(const Module& layer) {
  if (stage_ < 3 || !is_layer(layer)) return;
  const int b = bucket_of(layer);
  if (b >= 0) gather_params(b);
  if (b == 0) resident_gathered_for_backward_ = false;
  window(MemCategory::kParams, b);
}

void LayerShards::before_backward(const Module& layer) {
  if (!is_layer(layer)) return;
  const int b = bucket_of(layer);
  if (stage_ >= 3) {
    // The resident bucket is gathered again once per backward, by its first user there.
    if (b > 0) {
      gather_params(b);
    } else if (!resident_gathered_for_backward_) {
      gather_params(0);
      resident_gathered_for_backward_ = true;
    }
    window(MemCategory::kParams, b);
  }
  if (stage_ < 2) return;
  // The resident bucket was zeroed with the whole arena at the start of the step; the
  // window is zeroed once the previous bucket's exchange has read it.
  if (b > 0) {
    comm_->join();
    stream_->fill_zero(static_cast<float*>(arenas_->memory(MemCategory::kGrads)) + region(b),
                       static_cast<size_t>(buckets_[static_cast<size_t>(b)].count) * sizeof(float));
  }
  window(MemCategory::kGrads, b);
}

void LayerShards::after_backward(const Module& layer) {
  const int b = bucket_of(layer);
  if (b < 0) return;
  const Bucket& k = buckets_[static_cast<size_t>(b)];
  comm_->reduce_scatter_sum(grad_bucket(b), k.first, k.count, grad_slice(), slice_);
}

}  // namespace noeira
