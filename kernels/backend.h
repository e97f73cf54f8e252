// A backend is the pair (ops, allocator) for one device. The CPU backend is always
// built; the CUDA backend exists only in builds with NOEIRA_WITH_CUDA.
#pragma once
#include <memory>
#include <string>

#include "kernels/ops.h"
#include "kernels/allocator.h"
#include "kernels/common/error.h"

namespace noeira {

struct Backend {
  std::unique_ptr<Ops> ops;
  std::unique_ptr<Allocator> allocator;
  std::string description;  // e.g. "cpu (oneDNN, 2 threads)"
};

Result<Backend> make_backend(Device device, int threads);

// 0 means "all cores this process may use".
int default_thread_count();

const char* device_name(Device d);

}  // namespace noeira
