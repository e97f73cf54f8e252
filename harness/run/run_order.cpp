#include "harness/run/run_order.h"

namespace noeira {

const char* run_order_name(RunOrder order) {
  return order == RunOrder::kBlocked ? "blocked" : "interleaved";
}

std::optional<RunOrder> parse_run_order(std::string_view name) {
  if (name == "interleaved") return RunOrder::kInterleaved;
  if (name == "blocked") return RunOrder::kBlocked;
  return std::nullopt;
}

std::vector<RunSlot> plan_run_order(size_t ours, size_t twin_modes, const std::vector<uint64_t>& seeds,
                                    RunOrder order) {
  std::vector<RunSlot> slots;
  if (order == RunOrder::kInterleaved) {
    for (uint64_t seed : seeds) {
      for (size_t v = 0; v < ours; ++v) slots.push_back({false, v, seed});
      for (size_t m = 0; m < twin_modes; ++m) slots.push_back({true, m, seed});
    }
    return slots;
  }
  for (size_t v = 0; v < ours; ++v)
    for (uint64_t seed : seeds) slots.push_back({false, v, seed});
  for (size_t m = 0; m < twin_modes; ++m)
    for (uint64_t seed : seeds) slots.push_back({true, m, seed});
  return slots;
}

}  // namespace noeira
