// What ProfilingOps records of an op call from its arguments: the work (OpCost: FLOPs
// and operand bytes) and, on a profile's first step, a short text of its shapes.
//
// Bytes: the views' elements times their storage size (what the op reads and writes of
// its operands, once each; fp32 side buffers passed as plain pointers are counted only
// where an op's formula below knows their size). FLOPs: the matrix products and
// convolutions (2 per multiply-add), attention's two products per direction (its full
// T x T square; causal kernels may skip half), zero elsewhere: the table reports those
// categories in GB/s.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "kernels/common/image_shapes.h"
#include "kernels/ops.h"
#include "kernels/profiling/op_profiler.h"
#include "kernels/view.h"

namespace noeira::op_cost {

inline double view_bytes(const ConstView& v) {
  return v.empty() ? 0.0 : static_cast<double>(v.n) * static_cast<double>(dtype_size(v.dtype));
}

template <class T>
double arg_bytes(const T& a) {
  if constexpr (std::is_same_v<T, View> || std::is_same_v<T, ConstView>)
    return view_bytes(a);
  else if constexpr (std::is_same_v<T, BatchNormEpilogue>)
    return view_bytes(a.residual);
  else if constexpr (std::is_same_v<T, ConvDxEpilogue>)
    return view_bytes(a.residual) + view_bytes(a.relu_post);
  else
    return 0.0;
}

// Bytes only; an op with a formula below has its own overload, picked by its tag type.
template <class Tag, class... A>
OpCost of(Tag, const A&... a) {
  return OpCost{0.0, (0.0 + ... + arg_bytes(a))};
}

// One tag per op of the list (gemm_tag, ...).
#define NOEIRA_OP(ret, name, params, args) struct name##_tag {};
#define NOEIRA_QUERY(ret, name, params, args)
#include "kernels/op_list.inc"

// C (M, N) = op(A) op(B), K deep.
template <class... Rest>
OpCost of(gemm_tag, bool, bool, int64_t M, int64_t N, int64_t K, float, const ConstView& A, int64_t,
          const ConstView& B, const Rest&...) {
  return OpCost{2.0 * M * N * K, view_bytes(A) + view_bytes(B) + 4.0 * M * N};
}
template <class... Rest>
OpCost of(linear_forward_tag, const ConstView& x, const ConstView& W, const float*, const View& y,
          const View& dact, float*, int64_t M, int64_t N, int64_t K, const Rest&...) {
  return OpCost{2.0 * M * N * K, view_bytes(x) + view_bytes(W) + view_bytes(y) + view_bytes(dact)};
}
template <class... Rest>
OpCost of(linear_backward_data_tag, const ConstView& dz, const ConstView& W, const View& dx,
          float*, int64_t M, int64_t N, int64_t K, const ConstView& dact,
          const Rest&...) {
  return OpCost{2.0 * M * N * K,
                view_bytes(dz) + view_bytes(W) + view_bytes(dx) + view_bytes(dact)};
}
template <class... Rest>
OpCost of(linear_backward_params_tag, const ConstView& dz, const ConstView& x, float*, float*,
          int64_t M, int64_t N, int64_t K, const Rest&...) {
  return OpCost{2.0 * M * N * K, view_bytes(dz) + view_bytes(x) + 4.0 * N * K};
}

inline double conv_flops(const ConvShape& s) {
  return 2.0 * static_cast<double>(s.y_elems()) * static_cast<double>(s.in_channels) *
         static_cast<double>(s.kernel_h * s.kernel_w);
}
template <class... Rest>
OpCost of(conv2d_forward_tag, const ConvShape& s, const Rest&... r) {
  return OpCost{conv_flops(s), (0.0 + ... + arg_bytes(r))};
}
template <class... Rest>
OpCost of(conv2d_backward_data_tag, const ConvShape& s, const Rest&... r) {
  return OpCost{conv_flops(s), (0.0 + ... + arg_bytes(r))};
}
template <class... Rest>
OpCost of(conv2d_backward_weights_tag, const ConvShape& s, const ConstView& x, const ConstView& dy,
          const Rest&...) {
  return OpCost{conv_flops(s), view_bytes(x) + view_bytes(dy) + 4.0 * s.w_elems()};
}
// Both passes (dx empty: backward-weights alone), with dx's epilogue operands.
template <class... Rest>
OpCost of(conv2d_backward_tag, const ConvShape& s, const ConstView& x, const ConstView& dy,
          const ConstView& w, const View& dx, const ConvDxEpilogue& epi, const Rest&...) {
  return OpCost{(dx.empty() ? 1.0 : 2.0) * conv_flops(s),
                view_bytes(x) + view_bytes(dy) + view_bytes(w) + view_bytes(dx) +
                    arg_bytes(epi) + 4.0 * s.w_elems()};
}

// Q K^T and P V, each 2 B T T C (nh heads of C / nh); backward: four such products (bf16
// runs them on bf16 tensor cores on CUDA too: kernels/cuda/attention_bf16.cu). att, the
// saved fp32 probabilities (B nh T T), is written by the forward and read by the backward
// (the CPU's and CUDA's GEMM paths; CUDA's flash kernels keep B nh T floats there, so their
// budget counts more bytes than they move).
inline double attention_saved_bytes(int64_t B, int64_t T, int64_t nh) {
  return 4.0 * static_cast<double>(B) * static_cast<double>(nh) * static_cast<double>(T) *
         static_cast<double>(T);
}
template <class... Rest>
OpCost of(attention_forward_tag, const ConstView& qkv, const View& out, float*, int64_t B, int64_t T,
          int64_t C, int64_t nh, const Rest&...) {
  return OpCost{4.0 * B * T * T * C,
                view_bytes(qkv) + view_bytes(out) + attention_saved_bytes(B, T, nh)};
}
template <class... Rest>
OpCost of(attention_backward_tag, const ConstView& dout, const ConstView& qkv, const float*,
          const View& dqkv, int64_t B, int64_t T, int64_t C, int64_t nh, const Rest&...) {
  return OpCost{8.0 * B * T * T * C, view_bytes(dout) + view_bytes(qkv) + view_bytes(dqkv) +
                                         attention_saved_bytes(B, T, nh)};
}

// Reads p, g, m, v and writes p, m, v (fp32).
template <class... Rest>
OpCost of(adam_tag, float*, const float*, float*, float*, int64_t n, const Rest&...) {
  return OpCost{0.0, 28.0 * static_cast<double>(n)};
}
template <class... Rest>
OpCost of(sgd_tag, float*, const float*, float*, int64_t n, const Rest&...) {
  return OpCost{0.0, 20.0 * static_cast<double>(n)};
}

// ---- Shape text: "x:bf16[8192] M=64 ..." from the argument names and values. ----

inline std::string shape_text(const ConvShape& s) {
  return "conv " + std::to_string(s.batch) + "x" + std::to_string(s.in_channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + " -> " +
         std::to_string(s.out_channels) + " k" + std::to_string(s.kernel_h) + " s" +
         std::to_string(s.stride);
}
inline std::string shape_text(const PoolShape& s) {
  return "pool " + std::to_string(s.batch) + "x" + std::to_string(s.channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + " k" + std::to_string(s.kernel_h);
}
inline std::string shape_text(const NormShape& s) {
  return "norm " + std::to_string(s.batch) + "x" + std::to_string(s.channels) + "x" +
         std::to_string(s.spatial);
}
inline std::string shape_text(const ShortcutShape& s) {
  return "shortcut " + std::to_string(s.batch) + "x" + std::to_string(s.in_channels) + " -> " +
         std::to_string(s.out_channels);
}
inline std::string shape_text(const PatchShape& s) {
  return "patch " + std::to_string(s.batch) + "x" + std::to_string(s.channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + " p" + std::to_string(s.patch);
}

template <class T>
void append_arg(std::string& out, std::string_view name, const T& v) {
  const auto sep = [&] {
    if (!out.empty()) out += ' ';
  };
  if constexpr (std::is_same_v<T, View> || std::is_same_v<T, ConstView>) {
    if (v.empty()) return;
    sep();
    out.append(name).append(":").append(dtype_name(v.dtype)).append("[").append(std::to_string(v.n)) += ']';
  } else if constexpr (std::is_same_v<T, BatchNormEpilogue>) {
    append_arg(out, "residual", v.residual);
    if (v.act == Act::kReLU) sep(), out += "+relu";
    if (v.act == Act::kGELU) sep(), out += "+gelu";
  } else if constexpr (std::is_same_v<T, ConvDxEpilogue>) {
    append_arg(out, "residual", v.residual);
    append_arg(out, "relu_post", v.relu_post);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    sep();
    out.append(name).append("=").append(std::to_string(v));
  } else if constexpr (std::is_same_v<T, ConvShape> || std::is_same_v<T, PoolShape> ||
                       std::is_same_v<T, NormShape> || std::is_same_v<T, ShortcutShape> ||
                       std::is_same_v<T, PatchShape>) {
    sep();
    out += shape_text(v);
  }
}

// `names`: the op's argument list as written in kernels/op_list.inc, "(x, W, b)".
template <class... A>
std::string describe(std::string_view names, const A&... a) {
  std::string out;
  if (names.size() >= 2) names = names.substr(1, names.size() - 2);
  const auto next_name = [&names]() {
    const size_t comma = names.find(',');
    std::string_view n = names.substr(0, comma);
    names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
    while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
    return n;
  };
  (append_arg(out, next_name(), a), ...);
  return out;
}

}  // namespace noeira::op_cost
