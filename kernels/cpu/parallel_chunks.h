// How many consecutive items (channels, columns) one parallel iteration takes: up to
// `most`, fewer when that leaves a thread without work, at least 1. A loop's bits must not
// depend on it (each item's arithmetic is its own); only the speed does.
#pragma once
#include <algorithm>
#include <cstdint>

namespace noeira {

inline int64_t chunk_width(int64_t items, int threads, int64_t most) {
  const int64_t per_thread = (items + threads - 1) / std::max(threads, 1);
  return std::clamp<int64_t>(per_thread, 1, most);
}

}  // namespace noeira
