// Helpers for [gpu] tests: a CUDA backend, device arrays moved through its stream, random
// inputs (fp32 and bf16) and error measures. CUDA builds only.
#pragma once
#if defined(NOEIRA_WITH_CUDA)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_stream.h"
#include "tests/support/views.h"

namespace noeira::test {

// flash: bf16 attention through the flash kernels at every T (CudaOptions::flash_attention).
inline Backend gpu_backend(bool tf32 = true, bool flash = false) {
  Result<Backend> r = make_cuda_backend(CudaOptions{.tf32 = tf32, .flash_attention = flash});
  if (!r) FAIL("make_cuda_backend: " << r.error().message);
  return std::move(r).value();
}

// The backend's ops as CudaOps, for what only CUDA has (plans, cuBLASLt counts).
inline CudaOps& cuda_ops(Backend& gpu) {
  auto* ops = dynamic_cast<CudaOps*>(gpu.ops.get());
  REQUIRE(ops != nullptr);
  return *ops;
}

// n elements of T on the device, allocated through the backend's allocator (zero-filled)
// and copied through its stream. Destroy before the backend.
template <class T>
class DeviceArray {
 public:
  DeviceArray(Backend& b, size_t n) : b_(b), n_(n) {
    Result<void*> p = b_.allocator->allocate(std::max<size_t>(n, 1) * sizeof(T), "test");
    if (!p) FAIL(p.error().message);
    p_ = static_cast<T*>(*p);
  }
  DeviceArray(Backend& b, const std::vector<T>& host) : DeviceArray(b, host.size()) {
    upload(host);
  }
  ~DeviceArray() { b_.allocator->release(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return p_; }
  size_t size() const { return n_; }
  // As an op operand: from `offset`, the rest of the array or `n` elements.
  View view(int64_t offset = 0, int64_t n = -1) const {
    return {p_ + offset, n >= 0 ? n : static_cast<int64_t>(n_) - offset};
  }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() == n_);
    b_.stream->copy_to_device(p_, host.data(), n_ * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    b_.stream->copy_to_host(host.data(), p_, n_ * sizeof(T));
    return host;
  }

 private:
  Backend& b_;
  size_t n_;
  T* p_ = nullptr;
};

// The backend's reduction workspace (bias_grad's partial sums), planned here as the
// DatasetTrainer plans it, bound for the scope. Destroy before the backend.
class BoundReductionWorkspace {
 public:
  explicit BoundReductionWorkspace(Backend& b)
      : b_(b), bytes_(b.stream->reduction_workspace_bytes()) {
    REQUIRE(bytes_ > 0);
    Result<void*> p = b_.allocator->allocate(bytes_, "reduction workspace");
    if (!p) FAIL(p.error().message);
    p_ = *p;
    const Status bound = b_.stream->bind_reduction_workspace(p_, bytes_);
    if (!bound) FAIL(bound.error().message);
  }
  ~BoundReductionWorkspace() {
    (void)b_.stream->bind_reduction_workspace(nullptr, 0);
    b_.allocator->release(p_);
  }
  BoundReductionWorkspace(const BoundReductionWorkspace&) = delete;
  BoundReductionWorkspace& operator=(const BoundReductionWorkspace&) = delete;

 private:
  Backend& b_;
  size_t bytes_;
  void* p_ = nullptr;
};

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return v;
}

inline std::vector<int32_t> random_labels(size_t n, int32_t classes, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int32_t> u(0, classes - 1);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = u(g);
  return v;
}

// Normwise relative error ||got - want||_2 / ||want||_2 (0 when both are zero). A
// reduction summed in another order differs per element by rounding, which a per-element
// relative error would blow up wherever the exact value is near zero; the normwise error
// measures the same rounding against the size of the result.
inline double rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double diff = 0.0, ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    diff += d * d;
    ref += static_cast<double>(want[i]) * want[i];
  }
  if (ref == 0.0) return std::sqrt(diff);
  return std::sqrt(diff / ref);
}

// GEMM bound with TF32 (10-bit mantissa inputs): 1e-3 normwise once a dot product is long
// enough for the rounding of its K products to average out; a short one (K < 32) keeps
// the error of a single product, up to about 2^-10 per operand.
inline double tf32_tolerance(int64_t K) { return K >= 32 ? 1e-3 : 4e-3; }

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

inline bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return std::memcmp(&x, &y, sizeof x) == 0;
         });
}

// ---- bf16 (BF16Policy) ----

// The bf16 bits of each value, rounded to nearest even (kernels/common/bf16.h).
inline std::vector<bf16_t> to_bf16(const std::vector<float>& v) {
  std::vector<bf16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = f32_to_bf16(v[i]);
  return b;
}

// Each value widened to fp32 (exact for bf16).
template <class T>
std::vector<float> to_f32(const std::vector<T>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = load_f32(v[i]);
  return f;
}

// bf16 values of uniform random fp32 in [lo, hi).
inline std::vector<bf16_t> random_bf16(size_t n, uint32_t seed, float lo = -1.0f,
                                       float hi = 1.0f) {
  return to_bf16(random_floats(n, seed, lo, hi));
}

inline bool has_nan(const std::vector<float>& v) {
  return std::any_of(v.begin(), v.end(), [](float x) { return std::isnan(x); });
}

// Fraction of positions where the two bf16 vectors hold the same bits.
inline double same_bits_fraction(const std::vector<bf16_t>& a, const std::vector<bf16_t>& b) {
  REQUIRE(a.size() == b.size());
  if (a.empty()) return 1.0;
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(a.size());
}

// A device workspace of `bytes` (8-byte units: the allocator aligns every buffer), and its
// host counterpart for the CPU reference.
struct DeviceWorkspace {
  DeviceWorkspace(Backend& b, size_t bytes) : a(b, bytes / sizeof(double) + 1) {}
  void* get() const { return a.get(); }
  DeviceArray<double> a;
};

inline std::vector<double> host_workspace(size_t bytes) {
  return std::vector<double>(bytes / sizeof(double) + 1, 0.0);
}

}  // namespace noeira::test
#endif
