// CpuOps::shuffle (contract: kernels/op_list.inc): Philox keys, then std::stable_sort of
// the indices by key, so equal keys keep ascending indices (as CUDA's radix sort does).
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/common/philox.h"
#include "kernels/cpu/cpu_ops.h"

namespace noeira {

Result<size_t> CpuOps::shuffle_workspace_bytes(int64_t n) const {
  // perm is int32 and the Philox key takes a uint32 index.
  if (n < 0 || n > INT32_MAX)
    return make_error("shuffle of " + std::to_string(n) +
                      " samples: the shuffle handles 0 to 2147483647 samples (int32 "
                      "permutation); use a smaller training set");
  return static_cast<size_t>(n) * sizeof(uint64_t);
}

void CpuOps::shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm, void* workspace) {
  uint64_t* keys = static_cast<uint64_t*>(workspace);
  for (int64_t i = 0; i < n; ++i) {
    keys[i] = shuffle_key(seed, epoch, static_cast<uint32_t>(i));
    perm[i] = static_cast<int32_t>(i);
  }
  std::stable_sort(perm, perm + n, [keys](int32_t a, int32_t b) { return keys[a] < keys[b]; });
}

}  // namespace noeira
