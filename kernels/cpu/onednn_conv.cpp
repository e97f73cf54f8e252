#include "kernels/cpu/onednn_conv.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/bf16_conv3x3_rows.h"
#include "kernels/cpu/bf16_conv3x3_wgrad.h"
#include "kernels/cpu/f32_conv3x3_rows.h"
#include "kernels/cpu/onednn_conv_pass.h"
#include "kernels/cpu/onednn_engine.h"
#include "kernels/cpu/streaming_store.h"

namespace noeira {

namespace {

using onednn::ConvArg;

// oneDNN wraps inputs as non-const.
template <class T>
void* in(const T* p) {
  return const_cast<T*>(p);
}

enum class PassKind : uint8_t { kForward, kBackwardData, kBackwardWeights };
constexpr PassKind kPasses[] = {PassKind::kForward, PassKind::kBackwardData,
                                PassKind::kBackwardWeights};

const onednn::ConvPass& pass_of(const onednn::SlabConv& c, PassKind p) {
  switch (p) {
    case PassKind::kForward:
      return c.forward;
    case PassKind::kBackwardData:
      return c.backward_data;
    default:
      return c.backward_weights;
  }
}

// A planned shape and its workspace, from an aligned base:
//   [partials: slabs x (dw, db)] [shared: each pass's reordered weights, per slab size]
//   [one area per thread: reordered activations and gradients, scratchpads]
struct ConvPlan {
  onednn::SlabConv slab[2];  // [0]: full slabs (or the whole batch); [1]: a shorter last one
  int kinds = 1;             // 2 when the last slab is shorter
  bool own_wgrad = false;    // backward-weights by bf16_conv3x3_wgrad.h, not oneDNN
  bool wgrad_tiles = false;  // ... on its AMX kernel (its area's size depends on it)
  // Forward / backward-data by f32_conv3x3_rows.h or bf16_conv3x3_rows.h on the nchw
  // operands, not oneDNN; the pass packs the weights at packed_at in the shared region
  // first (bf16: each thread's area holds an image's channel pairs). backward() then runs
  // the two passes one after the other (not fused_backward).
  bool rows_forward = false, rows_data = false;
  size_t packed_at = 0;
  // Both backward passes read dy in one inner layout: backward() copies it once per slab,
  // backward-weights then running in the area after backward-data's.
  bool fused_backward = false;
  int64_t full_images = 0, slabs = 0;
  int64_t partial_floats = 0;  // one slab's partial dw, then db
  size_t partials_bytes = 0, shared_bytes = 0, area_bytes = 0;
  size_t shared_at[2][3] = {};  // [slab kind][pass]
  size_t bytes = 0;             // all of it, plus room to align the base

  int kind(int64_t images) const { return images == full_images ? 0 : 1; }
  static std::byte* base(void* ws) { return onednn::align_up(ws); }
  float* partials(void* ws) const { return reinterpret_cast<float*>(base(ws)); }
  // The slab from image b0's own partial dw [+ db].
  float* partial(void* ws, int64_t b0) const {
    return partials(ws) + (b0 / full_images) * partial_floats;
  }
  std::byte* shared(void* ws, int kind, PassKind p) const {
    return base(ws) + partials_bytes + shared_at[kind][static_cast<int>(p)];
  }
  template <class W>  // float (fp32 kernel) or uint32_t (bf16 weight pairs)
  W* packed(void* ws) const {
    return reinterpret_cast<W*>(base(ws) + partials_bytes + packed_at);
  }
  std::byte* area(void* ws, int thread) const {
    return base(ws) + partials_bytes + shared_bytes + area_bytes * static_cast<size_t>(thread);
  }
};

// Whether a slab size's backward passes read dy in the same inner layout, each copying it
// into its own area (so backward-data's copy can serve backward-weights).
bool shares_dy_layout(const onednn::SlabConv& c) {
  const onednn::ConvOperand* d = c.backward_data.operand(DNNL_ARG_DIFF_DST);
  const onednn::ConvOperand* w = c.backward_weights.operand(DNNL_ARG_DIFF_DST);
  return d && w && d->reordered() && w->reordered() && d->scope == onednn::Scope::kSlab &&
         w->scope == onednn::Scope::kSlab && d->inner == w->inner;
}

// out[i] += partial 0 + partial 1 + ... in slab order, whatever the thread count.
void add_partials(int threads, const float* partials, int64_t slabs, int64_t slab_stride,
                  int64_t offset, int64_t n, float* out) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float sum = partials[offset + i];
    for (int64_t s = 1; s < slabs; ++s) sum += partials[s * slab_stride + offset + i];
    out[i] += sum;
  }
}

// Elements of an image of x and of y, and of dw.
struct ConvSizes {
  int64_t x_image, y_image, w_size;
};
// The bytes of n elements of T.
template <class T>
size_t bytes_of(int64_t n) {
  return static_cast<size_t>(n) * sizeof(T);
}

ConvSizes sizes_of(const ConvShape& s) {
  return {s.in_channels * s.height * s.width, s.out_channels * s.out_height() * s.out_width(),
          s.out_channels * s.in_channels * s.kernel_h * s.kernel_w};
}

// dx's way out for the slab at image b0 (the images' pointers moved), or null without one.
template <class T>
const ReluGradOut* slab_out(const ConvSizes& z, const T* res, const T* post, int64_t b0,
                            ReluGradOut& at) {
  if (!post) return nullptr;
  at = ReluGradOut{res + b0 * z.x_image, post + b0 * z.x_image};
  return &at;
}

// The plain operands of backward-data's slab from image b0.
template <class T>
std::array<ConvArg, 3> data_args(const ConvSizes& z, const T* dy, const T* w, T* dx, int64_t b0) {
  return {{{DNNL_ARG_DIFF_DST, in(dy + b0 * z.y_image)},
           {DNNL_ARG_WEIGHTS, in(w)},
           {DNNL_ARG_DIFF_SRC, dx + b0 * z.x_image}}};
}

// The plain operands of backward-weights' slab from image b0, its partial dw [+ db] at part
// (db computed even when the caller's is null).
template <class T>
std::array<ConvArg, 4> weights_args(const ConvShape& s, const ConvSizes& z, const T* x,
                                    const T* dy, float* part, int64_t b0) {
  return {{{DNNL_ARG_SRC, in(x + b0 * z.x_image)},
           {DNNL_ARG_DIFF_DST, in(dy + b0 * z.y_image)},
           {DNNL_ARG_DIFF_WEIGHTS, part},
           {DNNL_ARG_DIFF_BIAS, s.has_bias ? part + z.w_size : nullptr}}};
}

// dw (and db when not null) += the plan's slab partials (slabs, w_size [+ Cout]), in slab
// order.
void add_weight_partials(int threads, const ConvPlan& plan, void* ws, const ConvShape& s,
                         float* dw, float* db) {
  const float* partials = plan.partials(ws);
  const int64_t w_size = sizes_of(s).w_size;
  add_partials(threads, partials, plan.slabs, plan.partial_floats, 0, w_size, dw);
  if (db)
    add_partials(threads, partials, plan.slabs, plan.partial_floats, w_size, s.out_channels, db);
}

}  // namespace

struct OnednnConv::Impl {
  int threads = 1;
  using Key = std::pair<ConvShape, DType>;
  std::map<Key, std::unique_ptr<ConvPlan>> plans;  // map: plans stay put
  std::vector<dnnl::stream> streams;                     // one per thread

  Result<size_t> plan(const ConvShape& s, DType dtype) {
    NOEIRA_TRY(validate(s));
    if (dtype != DType::kF32 && dtype != DType::kBF16)
      return make_error(describe_conv(s, dtype) + ": activations must be f32 or bf16");
    auto it = plans.find(Key{s, dtype});
    if (it != plans.end()) return it->second->bytes;
    auto p = std::make_unique<ConvPlan>();
    p->full_images = conv_slab_images(s);
    p->slabs = (s.batch + p->full_images - 1) / p->full_images;
    const int64_t last_images = s.batch - (p->slabs - 1) * p->full_images;
    // Where our kernel takes the weight gradient, oneDNN's pass for it is not made.
    p->own_wgrad = bf16_wgrad_applies(s, dtype);
    p->wgrad_tiles = p->own_wgrad && bf16_wgrad_on_tiles(s);
    p->rows_forward = f32_conv_rows_forward(s, dtype) || bf16_conv_rows_forward(s, dtype);
    p->rows_data = s.input_grad && (f32_conv_rows_backward_data(s, dtype) ||
                                    bf16_conv_rows_backward_data(s, dtype));
    try {
      p->slab[0] = onednn::make_slab_conv(s, p->full_images, dtype, !p->own_wgrad);
      if (last_images != p->full_images) {
        p->slab[1] = onednn::make_slab_conv(s, last_images, dtype, !p->own_wgrad);
        p->kinds = 2;
      }
    } catch (const dnnl::error& e) {
      return make_error("oneDNN cannot create the " + describe_conv(s, dtype) + ": " + e.what());
    }
    p->partial_floats = s.out_channels * s.in_channels * s.kernel_h * s.kernel_w +
                        (s.has_bias ? s.out_channels : 0);
    p->partials_bytes =
        onednn::align_up(static_cast<size_t>(p->slabs * p->partial_floats) * sizeof(float));
    for (int k = 0; k < p->kinds; ++k)
      for (PassKind pass : kPasses) {
        const onednn::ConvPass& c = pass_of(p->slab[k], pass);
        p->shared_at[k][static_cast<int>(pass)] = p->shared_bytes;
        p->shared_bytes += onednn::align_up(c.shared_bytes());
        p->area_bytes = std::max(p->area_bytes, onednn::align_up(c.thread_bytes()));
      }
    if (p->rows_forward || p->rows_data) {
      p->packed_at = p->shared_bytes;
      p->shared_bytes += onednn::align_up(
          dtype == DType::kF32 ? bytes_of<float>(f32_conv_rows_packed_floats(s))
                               : bytes_of<uint32_t>(bf16_conv_rows_packed_words(s)));
      if (dtype == DType::kBF16)
        p->area_bytes = std::max(p->area_bytes, onednn::align_up(bf16_conv_rows_area_bytes(s)));
    }
    if (p->own_wgrad)
      p->area_bytes = std::max(p->area_bytes, onednn::align_up(bf16_wgrad_area_bytes(
                                                  s, p->full_images, p->wgrad_tiles)));
    p->fused_backward = !p->own_wgrad && !p->rows_data;
    for (int k = 0; k < p->kinds; ++k) p->fused_backward &= shares_dy_layout(p->slab[k]);
    if (p->fused_backward)
      for (int k = 0; k < p->kinds; ++k)
        p->area_bytes = std::max(p->area_bytes,
                                 onednn::align_up(p->slab[k].backward_data.thread_bytes()) +
                                     onednn::align_up(p->slab[k].backward_weights.thread_bytes()));
    p->bytes = onednn::kAlign + p->partials_bytes + p->shared_bytes +
               p->area_bytes * static_cast<size_t>(threads);
    const size_t bytes = p->bytes;
    plans.emplace(Key{s, dtype}, std::move(p));
    return bytes;
  }

  Result<const ConvPlan*> planned(const ConvShape& s, DType dtype, void* workspace,
                                  size_t size) const {
    auto it = plans.find(Key{s, dtype});
    if (it == plans.end())
      return make_error(describe_conv(s, dtype) +
                        " was not planned: call workspace_bytes(shape, dtype) first");
    if (!workspace || size < it->second->bytes)
      return make_error("the workspace for " + describe_conv(s, dtype) + " holds " +
                        std::to_string(workspace ? size : 0) + " bytes; it needs " +
                        std::to_string(it->second->bytes));
    // Nested inside another region, every slab would see thread 0 and share its area.
    if (omp_in_parallel())
      return make_error(describe_conv(s, dtype) + ": called inside an OpenMP parallel region");
    return it->second.get();
  }

  // A pass's shared inputs (the weights) reordered once per slab size; `first`: the first
  // slab's plain operands.
  template <class First>
  Status prepare(const ConvPlan& plan, PassKind p, void* ws, const First& first) {
    try {
      for (int k = 0; k < plan.kinds; ++k)
        pass_of(plan.slab[k], p)
            .prepare(streams[0], plan.shared(ws, k, p), plan.area(ws, 0), first);
    } catch (const dnnl::error& e) {
      return make_error(std::string("oneDNN failed: ") + e.what());
    }
    return {};
  }

  // Runs one pass over the batch: the shared inputs (weights) reordered once per slab
  // size, then the slabs spread over the threads. args(b0) names the plain operands of
  // the slab starting at image b0; `stream_out`: see ConvPass::run; out(b0, at): the
  // slab's dx_out for ConvPass::run, or null.
  template <class Args, class Out>
  Status run(const ConvPlan& plan, PassKind p, int64_t batch, void* ws, const Args& args,
             bool stream_out, const Out& out) {
    NOEIRA_TRY(prepare(plan, p, ws, args(0)));
    return onednn::for_each_slab(threads, batch, plan.full_images,
                                 [&](int thread, int64_t b0, int64_t images) {
                                   const int k = plan.kind(images);
                                   ReluGradOut at;
                                   pass_of(plan.slab[k], p)
                                       .run(streams[static_cast<size_t>(thread)],
                                            plan.shared(ws, k, p), plan.area(ws, thread), args(b0),
                                            nullptr, stream_out, out(b0, at));
                                 });
  }
  template <class Args>
  Status run(const ConvPlan& plan, PassKind p, int64_t batch, void* ws, const Args& args,
             bool stream_out = false) {
    return run(plan, p, batch, ws, args, stream_out,
               [](int64_t, ReluGradOut&) -> const ReluGradOut* { return nullptr; });
  }

};

OnednnConv::OnednnConv(int threads)
    : threads_(std::max(1, threads)), impl_(std::make_unique<Impl>()) {
  impl_->threads = threads_;
  impl_->streams = onednn::make_streams(threads_);
}

OnednnConv::~OnednnConv() = default;

Result<size_t> OnednnConv::workspace_bytes(const ConvShape& s, DType dtype) {
  return impl_->plan(s, dtype);
}

bool OnednnConv::fuses_backward(const ConvShape& s, DType dtype) const {
  const auto it = impl_->plans.find(Impl::Key{s, dtype});
  return it != impl_->plans.end() && it->second->fused_backward;
}

template <class T>
Status OnednnConv::forward(const ConvShape& s, const T* x, const T* w, const float* bias, T* y,
                           void* workspace, size_t workspace_size) {
  auto found = impl_->planned(s, DTypeOf<T>::value, workspace, workspace_size);
  if (!found) return found.error();
  if ((bias != nullptr) != s.has_bias)
    return make_error("forward: the bias pointer does not match has_bias in " + describe_conv(s));
  const ConvSizes z = sizes_of(s);
  const ConvPlan& plan = **found;
  if (plan.rows_forward) {
    if constexpr (std::is_same_v<T, float>) {
      float* packed = plan.packed<float>(workspace);
      f32_conv_rows_pack_forward(s, w, packed);
      return onednn::for_each_slab(impl_->threads, s.batch, plan.full_images,
                                   [&](int, int64_t b0, int64_t images) {
                                     f32_conv_rows_forward_slab(s, images, x + b0 * z.x_image,
                                                                packed, y + b0 * z.y_image);
                                   });
    } else {
      uint32_t* packed = plan.packed<uint32_t>(workspace);
      bf16_conv_rows_pack_forward(s, w, packed);
      return onednn::for_each_slab(impl_->threads, s.batch, plan.full_images,
                                   [&](int thread, int64_t b0, int64_t images) {
                                     bf16_conv_rows_forward_slab(
                                         s, images, x + b0 * z.x_image, packed,
                                         y + b0 * z.y_image, plan.area(workspace, thread));
                                   });
    }
  }
  return impl_->run(
      **found, PassKind::kForward, s.batch, workspace,
      [&](int64_t b0) {
        return std::array<ConvArg, 4>{{{DNNL_ARG_SRC, in(x + b0 * z.x_image)},
                                       {DNNL_ARG_WEIGHTS, in(w)},
                                       {DNNL_ARG_BIAS, in(bias)},
                                       {DNNL_ARG_DST, y + b0 * z.y_image}}};
      },
      streams(bytes_of<T>(s.batch * z.y_image)));
}

template <class T>
Status OnednnConv::backward_data(const ConvShape& s, const T* dy, const T* w, T* dx,
                                 void* workspace, size_t workspace_size, const T* residual,
                                 const T* relu_post) {
  auto found = impl_->planned(s, DTypeOf<T>::value, workspace, workspace_size);
  if (!found) return found.error();
  const ConvSizes z = sizes_of(s);
  const ConvPlan& plan = **found;
  if (plan.rows_data) {
    if constexpr (std::is_same_v<T, float>) {
      float* packed = plan.packed<float>(workspace);
      f32_conv_rows_pack_backward_data(s, w, packed);
      return onednn::for_each_slab(impl_->threads, s.batch, plan.full_images,
                                   [&](int, int64_t b0, int64_t images) {
                                     ReluGradOut at;
                                     f32_conv_rows_backward_data_slab(
                                         s, images, dy + b0 * z.y_image, packed,
                                         dx + b0 * z.x_image,
                                         slab_out(z, residual, relu_post, b0, at));
                                   });
    } else {
      uint32_t* packed = plan.packed<uint32_t>(workspace);
      bf16_conv_rows_pack_backward_data(s, w, packed);
      return onednn::for_each_slab(impl_->threads, s.batch, plan.full_images,
                                   [&](int thread, int64_t b0, int64_t images) {
                                     ReluGradOut at;
                                     bf16_conv_rows_backward_data_slab(
                                         s, images, dy + b0 * z.y_image, packed,
                                         dx + b0 * z.x_image,
                                         slab_out(z, residual, relu_post, b0, at),
                                         plan.area(workspace, thread));
                                   });
    }
  }
  return impl_->run(
      **found, PassKind::kBackwardData, s.batch, workspace,
      [&](int64_t b0) { return data_args(z, dy, w, dx, b0); },
      streams(bytes_of<T>(s.batch * z.x_image)),
      [&](int64_t b0, ReluGradOut& at) { return slab_out(z, residual, relu_post, b0, at); });
}

template <class T>
Status OnednnConv::backward_weights(const ConvShape& s, const T* x, const T* dy, float* dw,
                                    float* db, void* workspace, size_t workspace_size) {
  auto found = impl_->planned(s, DTypeOf<T>::value, workspace, workspace_size);
  if (!found) return found.error();
  const ConvPlan& plan = **found;
  if (db && !s.has_bias)
    return make_error("backward_weights: a db pointer for a shape without bias in " +
                      describe_conv(s));
  const ConvSizes z = sizes_of(s);
  bool own = false;  // bf16_conv3x3_wgrad.h's kernel: bf16, no bias
  if constexpr (std::is_same_v<T, bf16_t>) own = plan.own_wgrad;
  const Status ran =
      own ? onednn::for_each_slab(impl_->threads, s.batch, plan.full_images,
                                  [&]([[maybe_unused]] int thread, [[maybe_unused]] int64_t b0,
                                      [[maybe_unused]] int64_t images) {
                                    if constexpr (std::is_same_v<T, bf16_t>)
                                      bf16_wgrad_slab(s, images, x + b0 * z.x_image,
                                                      dy + b0 * z.y_image,
                                                      plan.partial(workspace, b0),
                                                      plan.area(workspace, thread),
                                                      plan.wgrad_tiles);
                                  })
      : impl_->run(plan, PassKind::kBackwardWeights, s.batch, workspace, [&](int64_t b0) {
          return weights_args(s, z, x, dy, plan.partial(workspace, b0), b0);
        });
  if (!ran) return ran;
  add_weight_partials(impl_->threads, plan, workspace, s, dw, db);
  return {};
}

template <class T>
Status OnednnConv::backward(const ConvShape& s, const T* x, const T* dy, const T* w, T* dx,
                            float* dw, float* db, void* workspace, size_t workspace_size,
                            const T* residual, const T* relu_post) {
  auto found = impl_->planned(s, DTypeOf<T>::value, workspace, workspace_size);
  if (!found) return found.error();
  const ConvPlan& plan = **found;
  if (!dx || !plan.fused_backward) {
    NOEIRA_TRY(backward_weights(s, x, dy, dw, db, workspace, workspace_size));
    return dx ? backward_data(s, dy, w, dx, workspace, workspace_size, residual, relu_post)
              : Status{};
  }
  if (db && !s.has_bias)
    return make_error("backward: a db pointer for a shape without bias in " + describe_conv(s));
  const ConvSizes z = sizes_of(s);
  // backward-weights has no shared input to prepare (its weights are an output).
  NOEIRA_TRY(impl_->prepare(plan, PassKind::kBackwardData, workspace, data_args(z, dy, w, dx, 0)));
  const bool stream_dx = streams(bytes_of<T>(s.batch * z.x_image));
  const Status ran = onednn::for_each_slab(
      impl_->threads, s.batch, plan.full_images, [&](int thread, int64_t b0, int64_t images) {
        const int k = plan.kind(images);
        const onednn::SlabConv& c = plan.slab[k];
        dnnl::stream& stream = impl_->streams[static_cast<size_t>(thread)];
        std::byte* area = plan.area(workspace, thread);
        ReluGradOut at;
        c.backward_data.run(stream, plan.shared(workspace, k, PassKind::kBackwardData), area,
                            data_args(z, dy, w, dx, b0), nullptr, stream_dx,
                            slab_out(z, residual, relu_post, b0, at));
        // dy in the kernels' layout, as backward-data left it in its area.
        const ConvArg dy_inner{DNNL_ARG_DIFF_DST,
                               c.backward_data.inner_copy(DNNL_ARG_DIFF_DST, area)};
        c.backward_weights.run(stream, plan.shared(workspace, k, PassKind::kBackwardWeights),
                               area + onednn::align_up(c.backward_data.thread_bytes()),
                               weights_args(s, z, x, dy, plan.partial(workspace, b0), b0),
                               &dy_inner);
      });
  if (!ran) return ran;
  add_weight_partials(impl_->threads, plan, workspace, s, dw, db);
  return {};
}

// The two storage types the passes take.
#define NOEIRA_CONV_PASSES(T)                                                                   \
  template Status OnednnConv::forward<T>(const ConvShape&, const T*, const T*, const float*, T*, \
                                         void*, size_t);                                        \
  template Status OnednnConv::backward_data<T>(const ConvShape&, const T*, const T*, T*, void*,  \
                                               size_t, const T*, const T*);                     \
  template Status OnednnConv::backward_weights<T>(const ConvShape&, const T*, const T*, float*,  \
                                                  float*, void*, size_t);                       \
  template Status OnednnConv::backward<T>(const ConvShape&, const T*, const T*, const T*, T*,    \
                                          float*, float*, void*, size_t, const T*, const T*);
NOEIRA_CONV_PASSES(float)
NOEIRA_CONV_PASSES(bf16_t)
#undef NOEIRA_CONV_PASSES

}  // namespace noeira
