// A backend is one device's compute ops (kernels/ops.h), its stream (kernels/stream.h:
// copies, waiting, capture, timers; the ops run on it) and its allocator. The CPU backend
// is always built; the CUDA backend exists only in builds with NOEIRA_WITH_CUDA.
#pragma once
#include <memory>
#include <string>

#include "kernels/ops.h"
#include "kernels/allocator.h"
#include "kernels/stream.h"
#include "kernels/common/error.h"

namespace noeira {

struct Backend {
  std::unique_ptr<Ops> ops;
  std::unique_ptr<Stream> stream;  // the queue ops run on; shares the device state with them
  std::unique_ptr<Allocator> allocator;
  std::string description;  // e.g. "cpu (oneDNN, 2 threads)"
};

Result<Backend> make_backend(Device device, int threads);

// 0 means "all cores this process may use".
int default_thread_count();

const char* device_name(Device d);

}  // namespace noeira
