// CPU attention's GEMMs (kernels/cpu/attention.cpp runs them, each (batch, head) pair on
// one thread).
//
// The GEMMs (DESIGN.md rule 3): one oneDNN matmul primitive per product and shape, created
// single-threaded (onednn::OneThread) outside any parallel region and cached for the
// process, with per-thread memory objects whose data handles are set per call (a Plan per
// (threads, T, hd, causal, heads); attention_workspace_bytes makes it, so a model's plan
// creates everything before the first step and the passes allocate nothing). Each call is
// one product for `heads` heads at once, a batched matmul over heads laid out a fixed
// stride apart: at T = 64 a head's product is ~0.26 MFLOP (~2.5 us on one core), and
// oneDNN's cost per call (~0.8 us, measured as one call per head against one per 16 heads)
// was a sixth of the forward and a fifth of the backward. Each runs
// single-threaded inside the parallel region, each thread with its own stream and its own
// scratchpad (user scratchpad mode, in the workspace). A primitive's reduction order
// depends on its shape only, never on the thread that runs it or how many run. One caller
// at a time per Plan (its streams and memory objects are shared), as for OnednnGemm.
//
// Row blocking for causality: rows i of S = q k^T are cut into fixed blocks of kRowBlock;
// block [i0, i1) needs keys j < i1 only, so each block is its own GEMM over the first i1
// columns (likewise for att v, dout v^T, dS k), and dV, dK, whose rows j take sums over
// i >= j, start their sums at the block's first row. The cuts depend on T only. Without
// the mask (causal = false) one block spans all T rows and keys.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

namespace noeira::cpu_attention {

// Rows of S per causal block (fixed, so results never depend on the thread count).
inline constexpr int64_t kRowBlock = 64;

// The twin's scale: 1 / sqrt(hd) in double, rounded to fp32.
inline float attention_scale(int64_t hd) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
}

// Row-major C(M,N) = alpha op(A)(M,K) op(B)(K,N) for each of a batch of heads, C not read.
struct Gemm {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul primitive;
};

// One thread's execution arguments for one Gemm: memory objects made once, their data
// handles set per call (no allocation per call).
struct Exec {
  dnnl::memory a, b, c, scratch;
  std::unordered_map<int, dnnl::memory> args;
};

// A Gemm of a plan with an Exec per thread.
struct Slot {
  const Gemm* gemm = nullptr;
  std::vector<Exec> exec;  // [thread]
};

// Every product of `heads` (b, h) pairs for sequence length T and head size hd, each
// pair's operands one head matrix (T x hd, T * hd apart) or one T x T matrix
// (T * T apart) after the last pair's: index [blk] is
// the row block blk (rows [blk * kRowBlock, min(T, (blk + 1) * kRowBlock))), which sees
// keys [0, key_end(blk)); key block blk's dV, dK sum rows [grad_begin(blk), T).
struct Plan {
  int64_t T = 0, hd = 0, blocks = 0, heads = 1;
  bool causal = true;
  std::vector<Slot> s;    // S[rows, :i1] = scale q[rows] k[:i1]^T
  std::vector<Slot> o;    // out[rows] = att[rows, :i1] v[:i1]
  std::vector<Slot> da;   // datt[rows, :i1] = dout[rows] v[:i1]^T
  std::vector<Slot> dq;   // dq[rows] = dS[rows, :i1] k[:i1]
  std::vector<Slot> dk;   // dk[rows] = dS[i0:, rows]^T q[i0:]
  std::vector<Slot> dv;   // dv[rows] = att[i0:, rows]^T dout[i0:]  (dk's shape)
  size_t scratch_bytes = 0;            // the largest scratchpad, aligned
  std::vector<dnnl::stream*> streams;  // one per thread
};

// Row blocks exist for the mask: without it one block spans every row (vit-tiny's T = 65
// ran a 64-row and a 1-row GEMM per product, twice the calls).
inline int64_t row_blocks(int64_t T, bool causal) {
  return causal ? (T + kRowBlock - 1) / kRowBlock : 1;
}
inline int64_t block_begin(int64_t blk) { return blk * kRowBlock; }
inline int64_t block_end(const Plan& p, int64_t blk) {
  return p.causal ? std::min(p.T, (blk + 1) * kRowBlock) : p.T;
}
inline int64_t key_end(const Plan& p, int64_t blk) {
  return p.causal ? block_end(p, blk) : p.T;
}
inline int64_t grad_begin(const Plan& p, int64_t blk) { return p.causal ? block_begin(blk) : 0; }
// Keys row i attends to: [0, visible(i)).
inline int64_t visible(const Plan& p, int64_t i) { return p.causal ? i + 1 : p.T; }

// The plan for (threads, T, hd, causal, heads): created the first time with every primitive,
// memory object and stream for `threads`, then looked up. Outside parallel regions only.
// One caller at a time (streams and memory objects are shared). A oneDNN failure stops the
// process.
const Plan& plan_of(const char* op, int threads, int64_t T, int64_t hd, bool causal,
                    int64_t heads);

// Runs slot's GEMM single-threaded on the calling thread (inside the parallel region): A,
// B, C point at the first head's matrices.
void run(const Slot& slot, int thread, dnnl::stream& stream, void* scratch, const float* A,
         const float* B, float* C);

}  // namespace noeira::cpu_attention
