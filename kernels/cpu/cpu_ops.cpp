// CpuOps' construction (the oneDNN GEMM and convolution objects its ops share) and its
// contract failure. The ops: one file per op in this folder (cpu_ops.h).
#include "kernels/cpu/cpu_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_matmul.h"

namespace noeira {

// oneDNN has a bf16 matmul for this CPU (Bf16Gemm).
bool CpuOps::supports_bf16() const { return Bf16Gemm::unavailable_reason().empty(); }

CpuOps::CpuOps(int threads)
    : threads_(std::max(1, threads)),
      gemm_(std::make_unique<OnednnGemm>(threads_)),
      bf16_gemm_(std::make_unique<Bf16Gemm>(threads_)),
      conv_(std::make_unique<OnednnConv>(threads_)) {}

CpuOps::~CpuOps() = default;

void cpu_op_failed(const char* op, const Error& e) {
  std::fflush(stdout);
  std::fprintf(stderr, "noeira: internal error: %s: %s\n", op, e.message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace noeira
