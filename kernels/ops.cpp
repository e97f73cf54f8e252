// The ops interface's default compositions and its contract errors (kernels/dispatch.h).
#include "kernels/ops.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/dispatch.h"

namespace noeira {

namespace {

[[noreturn]] void contract_broken(const char* op, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "noeira: internal error: %s: %s\n", op, what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

void unsupported_dtype(const char* op, DType dtype) {
  contract_broken(op, std::string("no kernel for dtype ") + dtype_name(dtype));
}

void unsupported_dtypes(const char* op, DType from, DType to) {
  contract_broken(op, std::string("no kernel from dtype ") + dtype_name(from) + " to " +
                          dtype_name(to));
}

void mixed_dtypes(const char* op, DType first, DType other) {
  contract_broken(op, std::string("operands mix dtypes ") + dtype_name(first) + " and " +
                          dtype_name(other));
}

void wrong_elems(const char* op, int64_t expected, int64_t got) {
  contract_broken(op, "a view holds " + std::to_string(got) + " elements where the op's shape "
                      "says " + std::to_string(expected));
}

void Ops::linear_forward(ConstView x, ConstView W, const float* b, View y, View pre, float* acc,
                         int64_t M, int64_t N, int64_t K, Act act) {
  float* product = y.dtype == DType::kF32 ? y.as<float>() : acc;
  gemm(false, true, M, N, K, 1.0f, x, K, W, K, 0.0f, product, N);
  // In place for fp32 y, where there is nothing else to do without a bias or activation.
  if (product != y.data || b || act != Act::kNone) bias_act(product, b, y, pre, M, N, act);
}

void Ops::linear_backward_params(ConstView dz, ConstView x, float* dW, float* db, int64_t M,
                                 int64_t N, int64_t K) {
  gemm(true, false, N, K, M, 1.0f, dz, N, x, K, 1.0f, dW, K);
  if (db) bias_grad(dz, db, M, N);
}

}  // namespace noeira
