// CudaOps::shuffle (contract: kernels/op_list.inc), the per-epoch permutation on the
// device: Philox sort keys (kernels/common/philox.h), then cub's LSD radix sort of (key,
// index) pairs over all 64 key bits. LSD radix sort is stable, so equal keys keep
// ascending indices: the result equals the CPU's std::stable_sort of the same keys,
// element for element.
//
// Workspace layout (planned by the caller, never allocated here), each part 256-byte
// aligned: keys_in (n u64) | keys_out (n u64) | values_in (n i32) | cub temp storage.
// The sorted values go straight into perm, so no values_out buffer is needed.
#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <string>

#include "kernels/common/philox.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace noeira {

namespace cuda {

namespace {

__global__ void shuffle_keys_kernel(uint64_t seed, uint32_t epoch, int64_t n, uint64_t* keys,
                                    int32_t* values) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    keys[i] = shuffle_key(seed, epoch, static_cast<uint32_t>(i));
    values[i] = static_cast<int32_t>(i);
  }
}

constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// cub's temporary storage for n pairs (a size query: nothing runs).
cudaError_t cub_temp_bytes(int64_t n, size_t* bytes) {
  *bytes = 0;
  return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, static_cast<const uint64_t*>(nullptr),
                                         static_cast<uint64_t*>(nullptr),
                                         static_cast<const int32_t*>(nullptr),
                                         static_cast<int32_t*>(nullptr), static_cast<int>(n));
}

struct ShuffleLayout {
  uint64_t* keys_in;
  uint64_t* keys_out;
  int32_t* values_in;
  void* temp;
};

ShuffleLayout layout(void* workspace, int64_t n) {
  auto base = reinterpret_cast<uintptr_t>(workspace);
  base = (base + kAlign - 1) / kAlign * kAlign;
  const size_t keys = align_up(static_cast<size_t>(n) * sizeof(uint64_t));
  const size_t values = align_up(static_cast<size_t>(n) * sizeof(int32_t));
  ShuffleLayout l;
  l.keys_in = reinterpret_cast<uint64_t*>(base);
  l.keys_out = reinterpret_cast<uint64_t*>(base + keys);
  l.values_in = reinterpret_cast<int32_t*>(base + 2 * keys);
  l.temp = reinterpret_cast<void*>(base + 2 * keys + values);
  return l;
}

cudaError_t launch_shuffle(cudaStream_t stream, uint64_t seed, uint32_t epoch, int64_t n,
                           int32_t* perm, void* workspace) {
  if (n == 0) return cudaSuccess;
  if (n < 0 || n > INT_MAX || !workspace) return cudaErrorInvalidValue;
  size_t temp = 0;
  if (const cudaError_t e = cub_temp_bytes(n, &temp); e != cudaSuccess) return e;
  const ShuffleLayout l = layout(workspace, n);
  shuffle_keys_kernel<<<grid_for(n), kBlock, 0, stream>>>(seed, epoch, n, l.keys_in, l.values_in);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return cub::DeviceRadixSort::SortPairs(l.temp, temp, l.keys_in, l.keys_out, l.values_in, perm,
                                         static_cast<int>(n), 0, 64, stream);
}

}  // namespace

Result<size_t> shuffle_workspace_bytes(int64_t n) {
  if (n == 0) return size_t{0};  // nothing to sort
  if (n < 0 || n > INT_MAX)
    return make_error("shuffle of " + std::to_string(n) +
                      " samples: the GPU shuffle sorts 0 to 2147483647 (INT_MAX) samples, "
                      "cub's offsets being int; use a smaller training set");
  size_t temp = 0;
  if (const cudaError_t e = cub_temp_bytes(n, &temp); e != cudaSuccess) {
    (void)cudaGetLastError();  // a failed query must not be blamed on a later op
    return make_error("shuffle of " + std::to_string(n) +
                      " samples: cub::DeviceRadixSort::SortPairs could not size its temporary "
                      "storage (" + std::string(cudaGetErrorName(e)) + ": " +
                      cudaGetErrorString(e) + "); check nvidia-smi, or use --target cpu");
  }
  return kAlign /* to align the base */ + 2 * align_up(static_cast<size_t>(n) * sizeof(uint64_t)) +
         align_up(static_cast<size_t>(n) * sizeof(int32_t)) + align_up(temp);
}

}  // namespace cuda

Result<size_t> CudaOps::shuffle_workspace_bytes(int64_t n) const {
  return cuda::shuffle_workspace_bytes(n);
}

void CudaOps::shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm, void* workspace) {
  OpScope scope(*state_, "shuffle");
  check(cuda::launch_shuffle(stream_, seed, epoch, n, perm, workspace),
        "shuffle (keys kernel + cub::DeviceRadixSort::SortPairs)");
}

}  // namespace noeira
