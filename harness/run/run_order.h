// The order in which `run` takes its runs. Interleaved (the default): seed by seed, each of
// our variants, then each of the twin's modes (ours s0, twin s0, ours s1, twin s1, ...),
// so a change in the machine's load during the run lands on both sides of a ratio rather
// than on one. Blocked (--order blocked, the old order): every seed of our first variant,
// then of the next, ..., then every seed of each twin mode.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace noeira {

enum class RunOrder { kInterleaved, kBlocked };
const char* run_order_name(RunOrder order);  // "interleaved" | "blocked"
std::optional<RunOrder> parse_run_order(std::string_view name);

struct RunSlot {
  bool twin = false;    // false: one of our variants
  size_t variant = 0;   // index into our runnable variants, or into the twin's modes
  uint64_t seed = 0;
  bool operator==(const RunSlot&) const = default;
};

// Every (variant, seed) of `ours` variants and `twin_modes` twin modes over `seeds`, in
// the order they run.
std::vector<RunSlot> plan_run_order(size_t ours, size_t twin_modes, const std::vector<uint64_t>& seeds,
                                    RunOrder order);

}  // namespace noeira
