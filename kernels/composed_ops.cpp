#include "kernels/composed_ops.h"

namespace noeira {

void composed_linear_forward(Ops& ops, ConstView x, ConstView W, const float* b, View y,
                             View dact, float* acc, int64_t M, int64_t N, int64_t K, Act act) {
  float* product = y.dtype == DType::kF32 ? y.as<float>() : acc;
  ops.gemm(false, true, M, N, K, 1.0f, x, K, W, K, 0.0f, product, N);
  // In place for fp32 y, where there is nothing else to do without a bias or activation.
  if (product != y.data || b || act != Act::kNone || !dact.empty())
    ops.bias_act(product, b, y, dact, M, N, act);
}

void composed_linear_backward_data(Ops& ops, ConstView dz, ConstView W, View dx, float* acc,
                                   int64_t M, int64_t N, int64_t K) {
  float* product = dx.dtype == DType::kF32 ? dx.as<float>() : acc;
  ops.gemm(false, false, M, K, N, 1.0f, dz, N, W, K, 0.0f, product, K);
  if (product != dx.data) ops.cast(ConstView{product, M * K}, dx);
}

void composed_linear_backward_params(Ops& ops, ConstView dz, ConstView x, float* dW, float* db,
                                     int64_t M, int64_t N, int64_t K, bool overwrite_dw) {
  ops.gemm(true, false, N, K, M, 1.0f, dz, N, x, K, overwrite_dw ? 0.0f : 1.0f, dW, K);
  if (db) ops.bias_grad(dz, db, M, N);
}

}  // namespace noeira
