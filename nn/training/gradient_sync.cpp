#include "nn/training/gradient_sync.h"

namespace noeira {

// One process: the arenas hold everything; the host copies are plain copies.

std::vector<float> GradientSync::parameter_arena_host(const SyncTarget& t) const {
  std::vector<float> whole(static_cast<size_t>(t.padded_params));
  t.stream->copy_to_host(whole.data(), t.arenas->memory(MemCategory::kParams), whole.size() * sizeof(float));
  return whole;
}

void GradientSync::set_parameter_arena(const SyncTarget& t, const std::vector<float>& whole) const {
  t.stream->copy_to_device(t.arenas->memory(MemCategory::kParams), whole.data(), whole.size() * sizeof(float));
}

std::vector<float> GradientSync::optimizer_state_host(const SyncTarget& t, const Slot& s) const {
  std::vector<float> whole(static_cast<size_t>(t.padded_params), 0.0f);
  t.stream->copy_to_host(whole.data(), t.arenas->ptr(s), s.bytes);
  return whole;
}

void GradientSync::set_optimizer_state(const SyncTarget& t, const Slot& s,
                                       const std::vector<float>& whole) const {
  t.stream->copy_to_device(t.arenas->ptr(s), whole.data(), s.bytes);
}

}  // namespace noeira
