// CudaOps' token + position embedding (contracts: kernels/op_list.inc). Nothing here
// uses floating-point atomics: every reduction's order is fixed by the ids.
//
// Forward: one thread per element of y, 32-bit indices below 2^31 elements
// (kernels/common/fast_divmod.h); an id outside [0, V) is not checked against V (the op
// has no V) but a negative one writes NaN rather than reading out of bounds.
//
// Backward. dwte: the rows are sorted by token with cub's LSD radix sort of (id, row)
// pairs, which is stable, so each token's rows stay in row order (an id outside [0, V) is
// keyed V and skipped); then the chunked order of kernels/common/embedding_sum.h (the
// CPU's): pass 1, block (window j, column tile) sums the chunks starting at sorted
// positions [jK, jK + K), each into dwte (a token's only chunk) or its partial slot; pass
// 2, block (j, tile) adds the slots of the longer token starting in window j into dwte.
// A token's longest serial chain is K rows plus one add per chunk, not all its rows (GPT's
// space token: ~2,500). dwpe: one thread per (t, c) sums rows t, T + t, ... in order in
// fp32 and adds once. The grids depend on rows and C only (blocks without work exit), so
// a captured step replays them. rows <= INT_MAX (int32 keys and row numbers).
//
// Workspace (embedding_workspace_bytes, each part 256-byte aligned after aligning the
// base): keys_in (rows i32) | keys_out (rows i32) | rows_in (rows i32) | rows_out (rows
// i32) | partials (emb_partial_slots(rows) x C f32) | cub's temporary storage; 0 bytes
// when cub's size query fails (the op then reports the missing workspace).
#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cmath>
#include <string>

#include "kernels/common/embedding_sum.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/index.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// y (rows, C) = wte[id] + wpe[r % T]; I: the index type (index.cuh).
template <class T, class I>
__global__ void embedding_forward_kernel(const int32_t* ids, const float* wte, const float* wpe,
                                         T* y, I n, Divider<I> C, Divider<I> T_) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    const I r = C.div(i), c = i - r * C.value();
    const int32_t id = ids[r];
    const int64_t w = static_cast<int64_t>(T_.mod(r)) * C.value() + c;
    const float v = id >= 0 ? wte[static_cast<int64_t>(id) * C.value() + c] + wpe[w]
                            : NAN;  // a bad id: NaN, never a stray read
    store_f32(y[i], v);
  }
}

// keys = id (V for an id outside [0, V): sorted last, skipped), values = row.
__global__ void embedding_keys_kernel(const int32_t* ids, int64_t rows, int64_t V,
                                      int32_t* keys, int32_t* values) {
  for (int64_t i = global_thread(); i < rows; i += grid_stride()) {
    const int32_t id = ids[i];
    keys[i] = id >= 0 && id < V ? id : static_cast<int32_t>(V);
    values[i] = static_cast<int32_t>(i);
  }
}

// Pass 1 and pass 2 of the token sums: block (window, column tile), one column per thread
// and tile (kernels/common/embedding_sum.h; blocks with no chunk exit).
template <class T>
__global__ void embedding_chunk_sums_kernel(const int32_t* keys, const int32_t* order,
                                            const T* dy, float* dwte, float* partials,
                                            int64_t rows, int64_t C, int64_t V) {
  emb_chunk_sums(keys, order, dy, dwte, partials, rows, C, V, blockIdx.x,
                 static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x,
                 static_cast<int64_t>(gridDim.y) * blockDim.x);
}

__global__ void embedding_chunk_totals_kernel(const int32_t* keys, const float* partials,
                                              float* dwte, int64_t rows, int64_t C,
                                              int64_t V) {
  emb_chunk_totals(keys, partials, dwte, rows, C, V, blockIdx.x,
                   static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x,
                   static_cast<int64_t>(gridDim.y) * blockDim.x);
}

// dwpe[t, c] += sum over b in order of dy[(b T + t), c], fp32 from 0.0f.
template <class T>
__global__ void embedding_position_sums_kernel(const T* dy, float* dwpe, int64_t rows,
                                               int64_t T_, int64_t C) {
  const int64_t n = T_ * C;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t t = i / C, c = i - t * C;
    float s = 0.0f;
    for (int64_t r = t; r < rows; r += T_) s += load_f32(dy[r * C + c]);
    dwpe[i] += s;
  }
}

// Bits that hold every key 0 .. V.
int key_bits(int64_t V) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) <= V) ++bits;
  return bits;
}

// cub's temporary storage for sorting `rows` (int32, int32) pairs on key_bits(V) bits, as
// the launch sorts (a size query: nothing runs). One pass (V < 256) needs no double buffers.
cudaError_t cub_temp_bytes(int64_t rows, int64_t V, size_t* bytes) {
  *bytes = 0;
  return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, static_cast<const int32_t*>(nullptr),
                                         static_cast<int32_t*>(nullptr),
                                         static_cast<const int32_t*>(nullptr),
                                         static_cast<int32_t*>(nullptr), static_cast<int>(rows), 0,
                                         key_bits(V));
}

struct EmbLayout {
  int32_t *keys_in, *keys_out, *rows_in, *rows_out;
  float* partials;
  void* temp;
};

size_t partials_bytes(int64_t rows, int64_t C) {
  return align_up(static_cast<size_t>(emb_partial_slots(rows)) * static_cast<size_t>(C) *
                  sizeof(float));
}

EmbLayout emb_layout(void* workspace, int64_t rows, int64_t C) {
  auto base = reinterpret_cast<uintptr_t>(workspace);
  base = (base + kAlign - 1) / kAlign * kAlign;
  const size_t part = align_up(static_cast<size_t>(rows) * sizeof(int32_t));
  EmbLayout l;
  l.keys_in = reinterpret_cast<int32_t*>(base);
  l.keys_out = reinterpret_cast<int32_t*>(base + part);
  l.rows_in = reinterpret_cast<int32_t*>(base + 2 * part);
  l.rows_out = reinterpret_cast<int32_t*>(base + 3 * part);
  l.partials = reinterpret_cast<float*>(base + 4 * part);
  l.temp = reinterpret_cast<void*>(base + 4 * part + partials_bytes(rows, C));
  return l;
}

cudaError_t launch_embedding_forward(cudaStream_t stream, const int32_t* ids, const float* wte,
                                     const float* wpe, View y, int64_t rows, int64_t T,
                                     int64_t C) {
  const char* op = "embedding_forward";
  expect_elems(op, rows * C, {y});
  if (rows * C == 0) return cudaSuccess;
  if (T <= 0) return cudaErrorInvalidValue;
  return dispatch_float(op, {y}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    return with_index(rows * C, [&](auto index) {
      using I = typename decltype(index)::type;
      embedding_forward_kernel<<<grid_for(rows * C), kBlock, 0, stream>>>(
          ids, wte, wpe, y.as<S>(), static_cast<I>(rows * C), Divider<I>(C), Divider<I>(T));
      return cudaGetLastError();
    });
  });
}

size_t embedding_workspace_bytes(int64_t rows, int64_t V, int64_t C) {
  if (rows <= 0 || rows > INT_MAX || V < 0 || V >= INT_MAX || C < 0) return 0;
  size_t temp = 0;
  if (cub_temp_bytes(rows, V, &temp) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed query must not be blamed on a later op
    return 0;
  }
  return kAlign + 4 * align_up(static_cast<size_t>(rows) * sizeof(int32_t)) +
         partials_bytes(rows, C) + align_up(temp);
}

cudaError_t launch_embedding_backward(cudaStream_t stream, const int32_t* ids, ConstView dy,
                                      float* dwte, float* dwpe, int64_t rows, int64_t T,
                                      int64_t C, int64_t V, void* workspace) {
  const char* op = "embedding_backward";
  expect_elems(op, rows * C, {dy});
  if (rows * C == 0) return cudaSuccess;
  // The workspace serves dwte's sort only: dwpe alone needs none (as CudaOps checks).
  if (T <= 0 || rows > INT_MAX || V < 0 || V >= INT_MAX || (dwte && !workspace))
    return cudaErrorInvalidValue;
  size_t temp = 0;
  if (dwte) {
    if (const cudaError_t e = cub_temp_bytes(rows, V, &temp); e != cudaSuccess) return e;
  }
  const EmbLayout l = dwte ? emb_layout(workspace, rows, C) : EmbLayout{};
  return dispatch_float(op, {dy}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    if (dwte) {
      embedding_keys_kernel<<<grid_for(rows), kBlock, 0, stream>>>(ids, rows, V, l.keys_in,
                                                                   l.rows_in);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
      if (const cudaError_t e = cub::DeviceRadixSort::SortPairs(
              l.temp, temp, l.keys_in, l.keys_out, l.rows_in, l.rows_out,
              static_cast<int>(rows), 0, key_bits(V), stream);
          e != cudaSuccess)
        return e;
      // rows <= INT_MAX: at most 2^25 windows, within gridDim.x's 2^31 - 1.
      const dim3 grid(static_cast<unsigned>(emb_windows(rows)),
                      static_cast<unsigned>(emb_col_tiles(C)));
      const unsigned threads = static_cast<unsigned>(kEmbCols);
      embedding_chunk_sums_kernel<<<grid, threads, 0, stream>>>(
          l.keys_out, l.rows_out, dy.as<S>(), dwte, l.partials, rows, C, V);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
      embedding_chunk_totals_kernel<<<grid, threads, 0, stream>>>(l.keys_out, l.partials, dwte,
                                                                  rows, C, V);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
    if (dwpe) {
      embedding_position_sums_kernel<<<grid_for(T * C), kBlock, 0, stream>>>(dy.as<S>(), dwpe, rows,
                                                                         T, C);
    }
    return cudaGetLastError();
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::embedding_forward(const int32_t* ids, const float* wte, const float* wpe, View y,
                                int64_t rows, int64_t T, int64_t C) {
  OpScope scope(*state_, "embedding_forward");
  if (rows < 0 || C < 0 || (rows > 0 && T <= 0)) {
    fail("invalid shape rows " + std::to_string(rows) + ", T " + std::to_string(T) + ", C " +
         std::to_string(C));
    return;
  }
  check(cuda::launch_embedding_forward(stream_, ids, wte, wpe, y, rows, T, C),
        "embedding_forward_kernel");
}

size_t CudaOps::embedding_workspace_bytes(int64_t rows, int64_t V, int64_t C) const {
  return cuda::embedding_workspace_bytes(rows, V, C);
}

void CudaOps::embedding_backward(const int32_t* ids, ConstView dy, float* dwte, float* dwpe,
                                 int64_t rows, int64_t T, int64_t C, int64_t V,
                                 void* workspace) {
  OpScope scope(*state_, "embedding_backward");
  if (rows < 0 || C < 0 || V < 0 || V >= INT32_MAX || rows > INT32_MAX ||
      (rows > 0 && T <= 0)) {
    fail("invalid shape rows " + std::to_string(rows) + ", T " + std::to_string(T) + ", C " +
         std::to_string(C) + ", V " + std::to_string(V) +
         " (the GPU sorts at most 2147483647 rows by int32 token ids)");
    return;
  }
  if (rows * C > 0 && dwte && !workspace) {
    fail("no workspace; plan embedding_workspace_bytes(rows, V, C) bytes and pass them");
    return;
  }
  check(cuda::launch_embedding_backward(stream_, ids, dy, dwte, dwpe, rows, T, C, V, workspace),
        "embedding_backward (keys kernel, cub::DeviceRadixSort::SortPairs, sum kernels)");
}

}  // namespace noeira
