// The two devices a backend can target. Tensors (nn/tensor.h), allocators and backends
// (kernels/backend.h) say which one their memory lives on.
#pragma once
#include <cstdint>

namespace noeira {

enum class Device : uint8_t { kCpu, kGpu };

}  // namespace noeira
