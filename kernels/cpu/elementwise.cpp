// CpuOps' element-wise ops (contracts: kernels/op_list.inc). Each dispatches once on its views'
// dtype to a loop written once for fp32 and bf16 storage; the math is fp32. The activations
// and add write in blocks (streaming_store.h write_blocks), streamed when the output is
// large.
#include <type_traits>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/streaming_store.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Calls f with the activation as a compile-time constant, so the loops inside carry no
// per-element switch and vectorise. The arithmetic is act_forward / act_grad's.
template <class F>
void with_act(Act act, const F& f) {
  switch (act) {
    case Act::kReLU: f(std::integral_constant<Act, Act::kReLU>{}); break;
    case Act::kGELU: f(std::integral_constant<Act, Act::kGELU>{}); break;
    default: f(std::integral_constant<Act, Act::kNone>{}); break;
  }
}

// Calls f with `on` as a compile-time bool (for optional buffers).
template <class F>
void with_flag(bool on, const F& f) {
  if (on) f(std::true_type{});
  else f(std::false_type{});
}

template <class In, class Out>
void bias_act_impl(int threads, const In* acc, const float* bias, Out* y, float* dact, int64_t M,
                   int64_t N, Act act) {
  with_act(act, [&](auto a) {
    constexpr Act kAct = decltype(a)::value;
    with_flag(dact != nullptr, [&](auto has_dact) {
      with_flag(bias != nullptr, [&](auto has_bias) {
        const In* ac = acc;  // local copies: see act_backward_impl
        const float* b = bias;
        Out* out = y;
        float* da = dact;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
        for (int64_t i = 0; i < M; ++i) {
#pragma omp simd
          for (int64_t j = 0; j < N; ++j) {
            const float z = load_f32(ac[i * N + j]) + (has_bias ? b[j] : 0.0f);
            if constexpr (decltype(has_dact)::value)
              store_f32(out[i * N + j], act_forward_with_grad<Out>(kAct, z, &da[i * N + j]));
            else
              store_f32(out[i * N + j], act_forward(kAct, z));
          }
        }
      });
    });
  });
}

// ReLU's results are exact in the storage type: store_exact (kernels/common/bf16.h).
template <class T, Act kAct>
void store_act_result(T& dst, float v) {
  if constexpr (kAct == Act::kReLU) store_exact(dst, v);
  else store_f32(dst, v);
}

template <class T>
void act_forward_impl(int threads, const T* x, T* y, int64_t n, Act act) {
  with_act(act, [&](auto a) {
    constexpr Act kAct = decltype(a)::value;
    write_blocks(threads, y, n, [x](int64_t i0, int64_t k, T* __restrict out) {
      const T* __restrict in = x + i0;
      for (int64_t i = 0; i < k; ++i)
        store_act_result<T, kAct>(out[i], act_forward(kAct, load_f32(in[i])));
    });
  });
}

template <class T>
void act_backward_impl(int threads, const T* dy, const T* pre, const T* post, T* dx, int64_t n,
                       Act act) {
  with_act(act, [&](auto a) {
    with_flag(pre != nullptr, [&](auto has_pre) {
      with_flag(post != nullptr, [&](auto has_post) {
        write_blocks(threads, dx, n, [=](int64_t i0, int64_t k, T* __restrict out) {
          // Local copies: a pointer read through the closure may alias dx and would be
          // reloaded every iteration, which stops vectorisation.
          const T* __restrict d = dy + i0;
          const T* __restrict pr = has_pre ? pre + i0 : nullptr;
          const T* __restrict po = has_post ? post + i0 : nullptr;
          for (int64_t i = 0; i < k; ++i) {
            const float p = has_pre ? load_f32(pr[i]) : 0.0f;
            const float q = has_post ? load_f32(po[i]) : 0.0f;
            store_act_result<T, decltype(a)::value>(
                out[i], load_f32(d[i]) * act_grad(decltype(a)::value, p, q));
          }
        });
      });
    });
  });
}

template <class T>
void act_backward_saved_impl(int threads, const T* dy, const float* dact, T* dx, int64_t n) {
  write_blocks(threads, dx, n, [dy, dact](int64_t i0, int64_t k, T* __restrict out) {
    const T* __restrict d = dy + i0;
    const float* __restrict g = dact + i0;
    for (int64_t i = 0; i < k; ++i) store_f32(out[i], load_f32(d[i]) * g[i]);
  });
}

template <class T>
void add_impl(int threads, const T* a, const T* b, T* y, int64_t n) {
  write_blocks(threads, y, n, [a, b](int64_t i0, int64_t k, T* __restrict out) {
    const T* __restrict p = a + i0;
    const T* __restrict q = b + i0;
    for (int64_t i = 0; i < k; ++i) store_f32(out[i], load_f32(p[i]) + load_f32(q[i]));
  });
}

template <class T>
void add_relu_backward_impl(int threads, const T* a, const T* b, const T* post, T* dx,
                            int64_t n) {
  write_blocks(threads, dx, n, [a, b, post](int64_t i0, int64_t k, T* __restrict out) {
    const T* __restrict p = a + i0;
    const T* __restrict q = b + i0;
    const T* __restrict po = post + i0;
    for (int64_t i = 0; i < k; ++i)
      store_act_result<T, Act::kReLU>(
          out[i], add_relu_grad<T>(load_f32(p[i]), load_f32(q[i]), load_f32(po[i])));
  });
}

template <class In, class Out>
void cast_impl(int threads, const In* x, Out* y, int64_t n) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) store_f32(y[i], load_f32(x[i]));
}

}  // namespace

template <class Out>
void bias_act_rows(const float* acc, const float* bias, Out* y, float* dact, int64_t rows,
                   int64_t N, Act act) {
  bias_act_impl(1, acc, bias, y, dact, rows, N, act);
}
template void bias_act_rows(const float*, const float*, float*, float*, int64_t, int64_t, Act);
template void bias_act_rows(const float*, const float*, bf16_t*, float*, int64_t, int64_t, Act);

// dx = dy * dact for dy, the product as dx's dtype stores it: act_backward_saved's element.
// In place for fp32 (product == dx): the one pointer, read before it is written.
template <class T>
void act_backward_saved_rows(const float* product, const float* dact, T* dx, int64_t n) {
  const float* __restrict g = dact;
  if constexpr (std::is_same_v<T, float>) {
    if (product == dx) {
      float* __restrict d = dx;
      for (int64_t i = 0; i < n; ++i) d[i] = d[i] * g[i];
      return;
    }
  }
  const float* __restrict in = product;
  T* __restrict out = dx;
  for (int64_t i = 0; i < n; ++i) store_f32(out[i], stored_as<T>(in[i]) * g[i]);
}
template void act_backward_saved_rows(const float*, const float*, float*, int64_t);
template void act_backward_saved_rows(const float*, const float*, bf16_t*, int64_t);

void CpuOps::bias_act(const float* acc, const float* bias, View y, View dact, int64_t M,
                      int64_t N, Act act) {
  const char* op = "bias_act";
  expect_elems(op, M * N, {y, dact});
  if (!dact.empty()) expect_dtype(op, DType::kF32, {dact});
  dispatch_float(op, {y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bias_act_impl(threads_, acc, bias, y.as<T>(), dact.empty() ? nullptr : dact.as<float>(), M,
                  N, act);
  });
}

void CpuOps::act_forward(ConstView x, View y, Act act) {
  const char* op = "act_forward";
  expect_elems(op, y.n, {x});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    act_forward_impl(threads_, x.as<T>(), y.as<T>(), y.n, act);
  });
}

void CpuOps::act_backward(ConstView dy, ConstView pre, ConstView post, View dx, Act act) {
  const char* op = "act_backward";
  expect_elems(op, dx.n, {dy, pre, post});
  dispatch_float(op, {dx, dy, pre, post}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    act_backward_impl(threads_, dy.as<T>(), pre.as<T>(), post.as<T>(), dx.as<T>(), dx.n, act);
  });
}

void CpuOps::act_backward_saved(ConstView dy, ConstView dact, View dx) {
  const char* op = "act_backward_saved";
  if (dx.n > 0 && (dy.empty() || dact.empty()))
    cpu_op_failed(op, make_error("needs both dy and dact"));
  expect_elems(op, dx.n, {dy, dact});
  expect_dtype(op, DType::kF32, {dact});
  dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    act_backward_saved_impl(threads_, dy.as<T>(), dact.as<float>(), dx.as<T>(), dx.n);
  });
}

void CpuOps::add(ConstView a, ConstView b, View y) {
  const char* op = "add";
  expect_elems(op, y.n, {a, b});
  dispatch_float(op, {y, a, b}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    add_impl(threads_, a.as<T>(), b.as<T>(), y.as<T>(), y.n);
  });
}

void CpuOps::add_relu_backward(ConstView a, ConstView b, ConstView post, View dx) {
  const char* op = "add_relu_backward";
  expect_elems(op, dx.n, {a, b, post});
  dispatch_float(op, {dx, a, b, post}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    add_relu_backward_impl(threads_, a.as<T>(), b.as<T>(), post.as<T>(), dx.as<T>(), dx.n);
  });
}

void CpuOps::cast(ConstView x, View y) {
  const char* op = "cast";
  expect_elems(op, y.n, {x});
  dispatch_float_pair(op, x.dtype, y.dtype, [&](auto from, auto to) {
    using In = typename decltype(from)::type;
    using Out = typename decltype(to)::type;
    cast_impl(threads_, x.as<In>(), y.as<Out>(), y.n);
  });
}

}  // namespace noeira
