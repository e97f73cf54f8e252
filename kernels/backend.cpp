#include "kernels/backend.h"

#include <sched.h>

#include <thread>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/cpu_stream.h"
#if defined(NOEIRA_WITH_CUDA)
#include "kernels/cuda/cuda_backend.h"
#endif

namespace noeira {

const char* device_name(Device d) { return d == Device::kGpu ? "gpu" : "cpu"; }

int default_thread_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Result<Backend> make_backend(Device device, int threads) {
  if (device == Device::kGpu) {
#if defined(NOEIRA_WITH_CUDA)
    return make_cuda_backend();
#else
    return make_error("target gpu: this noeira-bench was built without CUDA; rebuild with "
                      "-DNOEIRA_CUDA=ON on a machine with the CUDA toolkit, or use --target cpu");
#endif
  }
  if (threads <= 0) threads = default_thread_count();
  Backend b;
  b.ops = std::make_unique<CpuOps>(threads);
  b.stream = std::make_unique<CpuStream>(threads);
  b.allocator = std::make_unique<HostAllocator>();
  b.description = "cpu (oneDNN, " + std::to_string(threads) + " thread" +
                  (threads == 1 ? "" : "s") + ")";
  return b;
}

}  // namespace noeira
