#include "kernels/cpu/onednn_conv_pass.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "kernels/cpu/channel_blocks.h"

namespace noeira::onednn {

namespace {

using md = dnnl::memory::desc;
using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Layouts inside oneDNN, chosen from the shape alone (a choice by timing would make the
// bits depend on the machine's load). Measured on one AVX-512 core, 8-image slabs, B=128,
// reorders included, blocked (nChw16c, JIT direct kernels) against plain (im2col + JIT
// GEMM): blocked is 1.5-4x faster in forward and backward-weights for every 3x3 shape
// tried (1x1 stride 2: about equal), e.g. (32,16,16)->32 k3: forward 4.9 vs 12.3 ms,
// backward-data 4.4 vs 16.3 ms, backward-weights 4.7 vs 17.9 ms. Backward-data of a first layer
// (Cin 1 or 3, padded to 16 channels when blocked) is faster plain: (1,28,28)->32 k3: 6.4 vs 2.0
// ms. Plain layouts also make oneDNN's GEMM malloc its packing buffers for every image.
// bf16 takes the same choice (not timed separately).
bool blocked_backward_data(const ConvShape& s) { return s.in_channels >= 4; }

// fp32 direct stride-1 convolutions from 16 channels to 16 run on nhwc, for 16 channels
// the same bytes as nChw16c (our copies move the same bytes, by their channels-last path):
// oneDNN then takes its brgemm forward kernel and an nhwc backward-weights one. One AVX-512
// core, 8-image slabs of (16, 32x32) -> 16 k3, three passes 12.1 -> 11.3 ms (forward 4.4 ->
// 3.9, backward-weights 3.8 -> 3.5; backward-data, on nhwc too so that both backward passes
// share one copy of dy, 2% slower); a resnet20 step's convolutions 2-4% faster. At 32
// channels, or strided (16 -> 32), within 3% either way, so those stay blocked. Only where
// oneDNN runs AVX-512 (its brgemm kernels), and only where every pass then gets a JIT
// kernel (not its GEMM-based or reference ones); on AVX-512 CPUs without AMX the 3x3
// stride-1 'same' ones are Winograd's anyway. NOEIRA_CONV_NHWC16=0 keeps them blocked (A/B
// timing, the bits of older builds; recorded in results files as build.onednn).
bool nhwc_16_channels(const ConvShape& s, DType dtype) {
  if (const char* v = std::getenv("NOEIRA_CONV_NHWC16"); v != nullptr && std::string_view(v) == "0")
    return false;
  return dtype == DType::kF32 && s.in_channels == 16 && s.out_channels == 16 && s.stride == 1 &&
         runs_avx512();
}

// Whether oneDNN picked one of its JIT kernels, not its GEMM-based ("gemm:jit",
// "x64:gemm:jit") or reference ("ref:any") fallback.
bool jit_kernel(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("gemm:", 0) != 0 && impl.find(":gemm:") == std::string::npos &&
         impl.rfind("ref", 0) != 0;
}

// inner's layout where it is plain's dims and type in nChw16c or nhwc with whole blocks of
// 16 channels; none where our copies do not apply.
std::optional<ChannelLayout> channel_layout(const md& plain, const md& inner) {
  const dims d = plain.dims();
  if (d.size() != 4 || plain != md(d, plain.data_type(), tag::nchw)) return std::nullopt;
  if (!channel_blocks_apply(d[1], dnnl::memory::data_type_size(plain.data_type())))
    return std::nullopt;
  if (inner == md(d, plain.data_type(), tag::nChw16c)) return ChannelLayout::kBlocks16;
  if (inner == md(d, plain.data_type(), tag::nhwc)) return ChannelLayout::kChannelsLast;
  return std::nullopt;
}

ConvOperand operand(int arg, Flow flow, Scope scope, const md& plain, const md& inner) {
  ConvOperand o;
  o.arg = arg, o.flow = flow, o.scope = scope, o.plain = plain, o.inner = inner;
  if (o.reordered()) o.channel_blocks = channel_layout(plain, inner);
  if (o.reordered() && !o.channel_blocks) {
    const dnnl::engine& e = cpu_engine();
    const dnnl::reorder::primitive_desc pd =
        flow == Flow::kIn
            ? dnnl::reorder::primitive_desc(e, plain, e, inner, user_scratchpad_attr())
            : dnnl::reorder::primitive_desc(e, inner, e, plain, user_scratchpad_attr());
    o.reorder = dnnl::reorder(pd);
    o.reorder_scratch = pd.scratchpad_desc();
  }
  return o;
}

void* find(std::span<const ConvArg> args, int arg) {
  for (const ConvArg& a : args)
    if (a.arg == arg) return a.data;
  return nullptr;
}

// Output operand o's plain memory at `plain` through `out` in place, once oneDNN (its
// primitive or its reorder) has written it.
void relu_grad_after(const ConvOperand& o, dnnl::stream& stream, void* plain,
                     const ReluGradOut& out) {
  stream.wait();
  const dims d = o.plain.dims();  // (N, C, H, W)
  relu_grad_in_place(plain, d[0] * d[1] * d[2] * d[3],
                     dnnl::memory::data_type_size(o.plain.data_type()), out);
}

// `out`: an output's way out (ConvPass::run's dx_out), or null.
void reorder(const ConvOperand& o, dnnl::stream& stream, const dnnl::memory& from,
             const dnnl::memory& to, std::byte* scratch, bool stream_out = false,
             const ReluGradOut* out = nullptr) {
  if (o.channel_blocks) {
    const dims d = o.plain.dims();  // (N, C, H, W)
    const size_t bytes = dnnl::memory::data_type_size(o.plain.data_type());
    if (o.flow == Flow::kIn)
      nchw_to_channel_blocks(from.get_data_handle(), to.get_data_handle(), d[0], d[1],
                             d[2] * d[3], bytes, *o.channel_blocks);
    else
      channel_blocks_to_nchw(from.get_data_handle(), to.get_data_handle(), d[0], d[1],
                             d[2] * d[3], bytes, *o.channel_blocks, stream_out, out);
    return;
  }
  o.reorder.execute(
      stream, {{DNNL_ARG_FROM, from},
               {DNNL_ARG_TO, to},
               {DNNL_ARG_SCRATCHPAD, dnnl::memory(o.reorder_scratch, cpu_engine(), scratch)}});
  if (out) relu_grad_after(o, stream, to.get_data_handle(), *out);
}

}  // namespace

ConvPass::ConvPass(dnnl::primitive primitive, dnnl::memory::desc scratch,
                   std::vector<ConvOperand> operands)
    : primitive_(std::move(primitive)),
      scratch_(std::move(scratch)),
      operands_(std::move(operands)) {
  size_t scratch_bytes = scratch_.get_size();
  for (ConvOperand& o : operands_) {
    if (!o.reordered()) continue;
    size_t& bytes = o.scope == Scope::kShared ? shared_bytes_ : thread_bytes_;
    o.offset = bytes;
    bytes += align_up(o.inner.get_size());
    scratch_bytes = std::max(scratch_bytes, o.reorder_scratch.get_size());
  }
  scratch_at_ = thread_bytes_;  // reorders and the primitive run one after another
  thread_bytes_ += align_up(scratch_bytes);
}

void ConvPass::prepare(dnnl::stream& stream, std::byte* shared, std::byte* area,
                       std::span<const ConvArg> args) const {
  OneThread one;
  const dnnl::engine& e = cpu_engine();
  for (const ConvOperand& o : operands_) {
    if (o.scope != Scope::kShared || o.flow != Flow::kIn || !o.reordered()) continue;
    reorder(o, stream, dnnl::memory(o.plain, e, find(args, o.arg)),
            dnnl::memory(o.inner, e, shared + o.offset), area + scratch_at_);
  }
  stream.wait();
}

const ConvOperand* ConvPass::operand(int arg) const {
  for (const ConvOperand& o : operands_)
    if (o.arg == arg) return &o;
  return nullptr;
}

std::byte* ConvPass::inner_copy(int arg, std::byte* area) const {
  const ConvOperand* o = operand(arg);
  return o && o->reordered() && o->scope == Scope::kSlab ? area + o->offset : nullptr;
}

void ConvPass::run(dnnl::stream& stream, std::byte* shared, std::byte* area,
                   std::span<const ConvArg> args, const ConvArg* given, bool stream_out,
                   const ReluGradOut* dx_out) const {
  OneThread one;
  const dnnl::engine& e = cpu_engine();
  std::byte* scratch = area + scratch_at_;
  std::unordered_map<int, dnnl::memory> exec;
  for (const ConvOperand& o : operands_) {
    if (given && o.arg == given->arg) {
      exec.emplace(o.arg, dnnl::memory(o.inner, e, given->data));
      continue;
    }
    dnnl::memory plain(o.plain, e, find(args, o.arg));
    if (!o.reordered()) {
      exec.emplace(o.arg, plain);
      continue;
    }
    dnnl::memory inner(o.inner, e, (o.scope == Scope::kShared ? shared : area) + o.offset);
    if (o.flow == Flow::kIn && o.scope == Scope::kSlab) reorder(o, stream, plain, inner, scratch);
    exec.emplace(o.arg, inner);
  }
  exec.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_, e, scratch));
  primitive_.execute(stream, exec);
  for (const ConvOperand& o : operands_) {
    const ReluGradOut* out = o.arg == DNNL_ARG_DIFF_SRC ? dx_out : nullptr;
    if (o.flow == Flow::kOut && o.reordered()) {
      reorder(o, stream, exec.at(o.arg), dnnl::memory(o.plain, e, find(args, o.arg)), scratch,
              stream_out && (o.arg == DNNL_ARG_DST || o.arg == DNNL_ARG_DIFF_SRC), out);
    } else if (o.flow == Flow::kOut && out) {  // oneDNN wrote dx in place
      relu_grad_after(o, stream, find(args, o.arg), *out);
    }
  }
  stream.wait();
}

namespace {

// The passes of a slab in oneDNN's layouts (nhwc: in nhwc, or nothing where some pass would
// not run a JIT kernel there).
std::optional<SlabConv> make_slab_conv(const ConvShape& s, int64_t images, DType dtype,
                                       dnnl::algorithm algorithm, bool with_weights, bool nhwc) {
  OneThread one;  // oneDNN picks its kernels and blocking for the thread count it sees now
  const dnnl::engine& e = cpu_engine();
  // Activations and weights in `dtype`; bias and the weight gradients always fp32 (the
  // bf16 kernels accumulate in fp32 and round a bf16 output once).
  const dt act = dtype == DType::kBF16 ? dt::bf16 : dt::f32;
  const md src(dims{images, s.in_channels, s.height, s.width}, act, tag::nchw);
  const md wei(dims{s.out_channels, s.in_channels, s.kernel_h, s.kernel_w}, act, tag::oihw);
  const md dwei(dims{s.out_channels, s.in_channels, s.kernel_h, s.kernel_w}, dt::f32, tag::oihw);
  const md dst(dims{images, s.out_channels, s.out_height(), s.out_width()}, act, tag::nchw);
  const md bias = s.has_bias ? md(dims{s.out_channels}, dt::f32, tag::x) : md();
  // The layouts oneDNN may pick (any), or nhwc activations.
  const auto any = [](const md& d) { return md(d.dims(), d.data_type(), tag::any); };
  const auto inner = [&](const md& activation) {
    return nhwc ? md(activation.dims(), activation.data_type(), tag::nhwc) : any(activation);
  };
  const dims strides{s.stride, s.stride};
  const dims pad{s.pad, s.pad};  // left and right alike; oneDNN rounds down as PyTorch does
  const dnnl::primitive_attr attr = user_scratchpad_attr();
  const auto training = dnnl::prop_kind::forward_training;
  using Fwd = dnnl::convolution_forward;
  using BwdData = dnnl::convolution_backward_data;
  using BwdWeights = dnnl::convolution_backward_weights;

  const Fwd::primitive_desc fwd(
      Fwd::desc(training, algorithm, inner(src), any(wei), bias, inner(dst), strides, pad, pad), attr,
      e);
  // Backward-data's hint is a forward in backward-data's own layouts.
  const bool blocked = blocked_backward_data(s);
  const auto data = [&](const md& d) { return blocked ? any(d) : d; };
  const auto data_act = [&](const md& d) { return blocked ? inner(d) : d; };
  const Fwd::primitive_desc data_hint =
      blocked ? fwd
              : Fwd::primitive_desc(
                    Fwd::desc(training, algorithm, src, wei, bias, dst, strides, pad, pad), attr, e);
  const BwdData::primitive_desc bwd_data(
      BwdData::desc(algorithm, data_act(src), data(wei), data_act(dst), strides, pad, pad), attr, e,
      data_hint);

  std::vector<ConvOperand> f{
      operand(DNNL_ARG_SRC, Flow::kIn, Scope::kSlab, src, fwd.src_desc()),
      operand(DNNL_ARG_WEIGHTS, Flow::kIn, Scope::kShared, wei, fwd.weights_desc()),
      operand(DNNL_ARG_DST, Flow::kOut, Scope::kSlab, dst, fwd.dst_desc())};
  std::vector<ConvOperand> d{
      operand(DNNL_ARG_DIFF_DST, Flow::kIn, Scope::kSlab, dst, bwd_data.diff_dst_desc()),
      operand(DNNL_ARG_WEIGHTS, Flow::kIn, Scope::kShared, wei, bwd_data.weights_desc()),
      operand(DNNL_ARG_DIFF_SRC, Flow::kOut, Scope::kSlab, src, bwd_data.diff_src_desc())};
  if (s.has_bias)
    f.push_back(operand(DNNL_ARG_BIAS, Flow::kIn, Scope::kShared, bias, fwd.bias_desc()));
  if (nhwc && !(jit_kernel(fwd) && jit_kernel(bwd_data))) return std::nullopt;
  SlabConv c;
  c.forward = ConvPass(Fwd(fwd), fwd.scratchpad_desc(), std::move(f));
  c.backward_data = ConvPass(BwdData(bwd_data), bwd_data.scratchpad_desc(), std::move(d));
  if (!with_weights) return c;
  const BwdWeights::primitive_desc bwd_weights(
      BwdWeights::desc(algorithm, inner(src), any(dwei), bias, inner(dst), strides, pad, pad), attr, e,
      fwd);
  if (nhwc && !jit_kernel(bwd_weights)) return std::nullopt;
  std::vector<ConvOperand> w{
      operand(DNNL_ARG_SRC, Flow::kIn, Scope::kSlab, src, bwd_weights.src_desc()),
      operand(DNNL_ARG_DIFF_DST, Flow::kIn, Scope::kSlab, dst, bwd_weights.diff_dst_desc()),
      operand(DNNL_ARG_DIFF_WEIGHTS, Flow::kOut, Scope::kSlab, dwei,
              bwd_weights.diff_weights_desc())};
  if (s.has_bias)
    w.push_back(
        operand(DNNL_ARG_DIFF_BIAS, Flow::kOut, Scope::kSlab, bias, bwd_weights.diff_bias_desc()));
  c.backward_weights =
      ConvPass(BwdWeights(bwd_weights), bwd_weights.scratchpad_desc(), std::move(w));
  return c;
}

}  // namespace

SlabConv make_slab_conv(const ConvShape& s, int64_t images, DType dtype, bool backward_weights) {
  if (winograd_applies(s, dtype)) {
    try {
      return *make_slab_conv(s, images, dtype, dnnl::algorithm::convolution_winograd,
                             backward_weights, false);
    } catch (const dnnl::error&) {
      // No Winograd kernel for this CPU (oneDNN's need AVX-512): the direct ones below.
    }
  }
  const auto direct = dnnl::algorithm::convolution_direct;
  if (nhwc_16_channels(s, dtype))
    if (std::optional<SlabConv> c = make_slab_conv(s, images, dtype, direct, backward_weights, true))
      return std::move(*c);
  return *make_slab_conv(s, images, dtype, direct, backward_weights, false);
}

}  // namespace noeira::onednn

namespace noeira {

bool winograd_applies(const ConvShape& s, DType dtype) {
  // NOEIRA_WINOGRAD=0: direct kernels everywhere (A/B timing, bits of older builds).
  if (const char* v = std::getenv("NOEIRA_WINOGRAD"); v != nullptr && std::string_view(v) == "0")
    return false;
  // Where oneDNN runs AMX, its direct kernels were the faster ones at 32x32 images: one
  // Emerald Rapids core, a ResNet-20 fp32 step's three passes at (16, 32x32) took 107 ms
  // direct against 151 Winograd, at (32, 16x16) 67 against 72, at (64, 8x8) 58 against 45.
  // Once the convolutions' outputs were streamed (streaming_store.h), Winograd won at 16x16
  // too: one Xeon model-167 core, (32, 16x16)'s passes in the step, alternated, forward
  // 19.6-20.2 -> 17.9-18.3 ms, backward 39.0-39.4 -> 36.6 (two threads: forward 9.6-10.4 ->
  // 9.1-9.4, backward 19.1-20.4 -> 18.9-19.4).
  if (onednn::runs_amx() && s.height * s.width > kAmxWinogradMaxPixels) return false;
  return dtype == DType::kF32 && s.kernel_h == 3 && s.kernel_w == 3 && s.stride == 1 &&
         s.pad == 1 && s.in_channels % 16 == 0 && s.out_channels % 16 == 0;
}

}  // namespace noeira
