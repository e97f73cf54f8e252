// CudnnConv's set-up and planning (cudnn_conv.h): the handle, each shape's descriptors,
// and the heuristic's first deterministic algorithm per pass. The passes are in
// cudnn_conv.cpp.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "kernels/common/conv_shape_check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_conv_plan.h"
#include "kernels/cuda/channel_sum.h"

namespace noeira::cuda {

namespace {

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default math";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op math";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op math with conversion";
    case CUDNN_FMA_MATH: return "FMA math";
  }
  return "? math";
}

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

const char* algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

const char* algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: return "?";
  }
}

// The algorithms cuDNN documents as non-deterministic (atomics), refused even if a perf
// entry claimed otherwise.
bool known_nondeterministic(cudnnConvolutionFwdAlgo_t) { return false; }
bool known_nondeterministic(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
}
bool known_nondeterministic(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

// An Error naming the bad field (kernels/common/conv_shape_check.h, as the CPU), plus the
// limits of cuDNN's int descriptors.
Status check_shape(const ConvShape& s, DType dtype) {
  const std::string what = describe(s, dtype);
  NOEIRA_TRY(check_conv_geometry(s, what));
  if (dtype != DType::kF32 && dtype != DType::kBF16)
    return make_error(std::string("convolutions take fp32 or bf16 activations, not ") +
                      dtype_name(dtype) + ", in " + what);
  for (int64_t v : {s.x_elems(), s.y_elems(), s.w_elems(), s.pad, s.stride})
    if (v > INT_MAX)
      return make_error("cuDNN's descriptors take sizes below 2^31 elements; split the batch of " +
                        what);
  return {};
}

}  // namespace

std::string error_text(cudnnStatus_t s) {
  return std::string(cudnnGetErrorString(s)) + " (cudnnStatus_t " +
         std::to_string(static_cast<int>(s)) + ")";
}

std::string describe(const ConvShape& s, DType dtype) {
  return "conv " + std::to_string(s.batch) + "x" + std::to_string(s.in_channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + " -> " +
         std::to_string(s.out_channels) + " channels, " + std::to_string(s.kernel_h) + "x" +
         std::to_string(s.kernel_w) + " kernel, stride " + std::to_string(s.stride) + ", pad " +
         std::to_string(s.pad) + (s.has_bias ? ", bias, " : ", no bias, ") + dtype_name(dtype);
}


namespace {

#define NOEIRA_CUDNN_PLAN(call)                                                           \
  do {                                                                                    \
    const cudnnStatus_t noeira_cudnn_s_ = (call);                                         \
    if (noeira_cudnn_s_ != CUDNN_STATUS_SUCCESS)                                          \
      return make_error(std::string(#call) + " failed (" + error_text(noeira_cudnn_s_) + \
                        ") planning the " + what);                                        \
  } while (0)

Status make_descs(const ConvShape& s, cudnnDataType_t type, CudnnConv::Plan::Descs& d,
                  const std::string& what) {
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  NOEIRA_CUDNN_PLAN(cudnnCreateTensorDescriptor(&d.x));
  NOEIRA_CUDNN_PLAN(cudnnCreateTensorDescriptor(&d.y));
  NOEIRA_CUDNN_PLAN(cudnnCreateFilterDescriptor(&d.w));
  NOEIRA_CUDNN_PLAN(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, type, i(s.batch),
                                               i(s.in_channels), i(s.height), i(s.width)));
  NOEIRA_CUDNN_PLAN(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, type, i(s.batch),
                                               i(s.out_channels), i(s.out_height()),
                                               i(s.out_width())));
  NOEIRA_CUDNN_PLAN(cudnnSetFilter4dDescriptor(d.w, type, CUDNN_TENSOR_NCHW, i(s.out_channels),
                                               i(s.in_channels), i(s.kernel_h), i(s.kernel_w)));
  return {};
}

// A cross-correlation (what torch calls convolution) with fp32 compute, asking for `math`.
Status make_conv(const ConvShape& s, cudnnMathType_t math, cudnnConvolutionDescriptor_t& conv,
                 const std::string& what) {
  const int pad = static_cast<int>(s.pad), stride = static_cast<int>(s.stride);
  NOEIRA_CUDNN_PLAN(cudnnCreateConvolutionDescriptor(&conv));
  NOEIRA_CUDNN_PLAN(cudnnSetConvolution2dDescriptor(conv, pad, pad, stride, stride, 1, 1,
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  NOEIRA_CUDNN_PLAN(cudnnSetConvolutionMathType(conv, math));
  return {};
}

// What a pass asks cuDNN for, and what it accepts back: fp32 without TF32 takes FMA math
// only; everything else takes FMA, default or tensor-op math, never a conversion to fp16.
struct MathPolicy {
  cudnnMathType_t request;
  bool tensor_ops;  // results with tensor-op math acceptable
};

MathPolicy math_policy(bool fp32_data, bool tf32) {
  if (fp32_data && !tf32) return {CUDNN_FMA_MATH, false};
  return {CUDNN_TENSOR_OP_MATH, true};
}

// The first usable entry of cuDNN's heuristic ranking: supported, deterministic, within
// the workspace cap, with an acceptable math type. -1 when none is; `seen` lists the
// rejected ones for the error message.
template <class Perf>
int choose(const Perf* perf, int n, const MathPolicy& policy, std::string* seen) {
  for (int i = 0; i < n; ++i) {
    const Perf& p = perf[i];
    std::string why;
    if (p.status != CUDNN_STATUS_SUCCESS)
      why = "unsupported";
    else if (p.determinism != CUDNN_DETERMINISTIC || known_nondeterministic(p.algo))
      why = "non-deterministic";
    else if (p.memory > CudnnConv::kMaxPassWorkspace)
      why = std::to_string(p.memory >> 20) + " MiB workspace";
    else if (p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
             (p.mathType == CUDNN_TENSOR_OP_MATH && !policy.tensor_ops))
      why = math_name(p.mathType);
    if (why.empty()) return i;
    if (seen) *seen += std::string(seen->empty() ? "" : ", ") + algo_name(p.algo) + " " + why;
  }
  return -1;
}

// The math type a chosen algorithm runs with: its own, except that fp32 without TF32 is
// pinned to FMA math (a default-math entry would allow TF32 on sm_80+).
cudnnMathType_t run_math(cudnnMathType_t chosen, const MathPolicy& policy) {
  return policy.tensor_ops ? chosen : CUDNN_FMA_MATH;
}

// The three passes' heuristic and workspace queries, over one set of descriptors.
struct FwdApi {
  using Algo = cudnnConvolutionFwdAlgo_t;
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr const char* kName = "forward";
  static cudnnStatus_t max_count(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionForwardAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t get(cudnnHandle_t h, const CudnnConv::Plan::Descs& d,
                           cudnnConvolutionDescriptor_t c, int max, int* found, Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, c, d.y, max, found, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const CudnnConv::Plan::Descs& d,
                                 cudnnConvolutionDescriptor_t c, Algo a, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, c, d.y, a, bytes);
  }
};

struct DataApi {
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr const char* kName = "backward-data";
  static cudnnStatus_t max_count(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t get(cudnnHandle_t h, const CudnnConv::Plan::Descs& d,
                           cudnnConvolutionDescriptor_t c, int max, int* found, Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, c, d.x, max, found, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const CudnnConv::Plan::Descs& d,
                                 cudnnConvolutionDescriptor_t c, Algo a, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, c, d.x, a, bytes);
  }
};

struct FilterApi {
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr const char* kName = "backward-weights";
  static cudnnStatus_t max_count(cudnnHandle_t h, int* n) {
    return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, n);
  }
  static cudnnStatus_t get(cudnnHandle_t h, const CudnnConv::Plan::Descs& d,
                           cudnnConvolutionDescriptor_t c, int max, int* found, Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, c, d.w, max, found, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const CudnnConv::Plan::Descs& d,
                                 cudnnConvolutionDescriptor_t c, Algo a, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, c, d.w, a, bytes);
  }
};

// Plans one pass over descriptors d: its convolution descriptor (asking for policy's
// math), the heuristic's first usable algorithm with its math type and workspace. True
// when one was found; false, with the rejected ones appended to *seen, when none is.
template <class Api>
Result<bool> plan_pass(cudnnHandle_t h, const ConvShape& s, const CudnnConv::Plan::Descs& d,
                       const MathPolicy& policy, CudnnConv::Plan::Pass<typename Api::Algo>& pass,
                       std::string* seen, const std::string& what) {
  if (pass.conv) {  // a second try: a fresh descriptor
    cudnnDestroyConvolutionDescriptor(pass.conv);
    pass.conv = nullptr;
  }
  NOEIRA_TRY(make_conv(s, policy.request, pass.conv, what));
  int max = 0, found = 0;
  NOEIRA_CUDNN_PLAN(Api::max_count(h, &max));
  std::vector<typename Api::Perf> perf(static_cast<size_t>(max > 0 ? max : 1));
  NOEIRA_CUDNN_PLAN(Api::get(h, d, pass.conv, max, &found, perf.data()));
  const int i = choose(perf.data(), found, policy, seen);
  if (i < 0) return false;
  pass.algo = perf[static_cast<size_t>(i)].algo;
  pass.math = run_math(perf[static_cast<size_t>(i)].mathType, policy);
  NOEIRA_CUDNN_PLAN(cudnnSetConvolutionMathType(pass.conv, pass.math));
  NOEIRA_CUDNN_PLAN(Api::workspace(h, d, pass.conv, pass.algo, &pass.cudnn_bytes));
  return true;
}

std::string no_algorithm(const char* pass, const std::string& what, const std::string& seen) {
  return std::string("cuDNN has no deterministic ") + pass + " algorithm for the " + what +
         " (heuristic ranking: " + (seen.empty() ? "empty" : seen) +
         "); bf16 convolutions need sm_80 or newer; otherwise use --target cpu";
}

}  // namespace

Result<std::unique_ptr<CudnnConv>> CudnnConv::create(cudaStream_t stream, bool tf32) {
  const size_t version = cudnnGetVersion();
  if (version / 10000 != CUDNN_MAJOR)
    return make_error("cuDNN " + std::to_string(version) + " was loaded, but this build needs " +
                      "cuDNN " + std::to_string(CUDNN_MAJOR) +
                      ".x (libcudnn.so." + std::to_string(CUDNN_MAJOR) +
                      "); install it with the CUDA toolkit or use --target cpu");
  std::unique_ptr<CudnnConv> c(new CudnnConv());
  c->stream_ = stream;
  c->tf32_ = tf32;
  if (const cudnnStatus_t s = cudnnCreate(&c->handle_); s != CUDNN_STATUS_SUCCESS) {
    c->handle_ = nullptr;
    (void)cudaGetLastError();
    return make_error("cudnnCreate failed (" + error_text(s) +
                      "); check that cuDNN 9 (libcudnn*.so.9, with libcudnn_cnn and the engine "
                      "libraries) sits next to the CUDA toolkit and matches the driver, or use "
                      "--target cpu");
  }
  if (const cudnnStatus_t s = cudnnSetStream(c->handle_, stream); s != CUDNN_STATUS_SUCCESS)
    return make_error("cudnnSetStream failed (" + error_text(s) + ")");
  return c;
}

CudnnConv::~CudnnConv() {
  plans_.clear();
  if (handle_) cudnnDestroy(handle_);
}

Result<size_t> CudnnConv::plan(const ConvShape& s, DType dtype) {
  NOEIRA_TRY(check_shape(s, dtype));
  const Key key{s, dtype};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second->bytes;
  const std::string what = describe(s, dtype);
  auto p = std::make_unique<Plan>();
  const bool bf16 = dtype == DType::kBF16;
  NOEIRA_TRY(make_descs(s, bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT, p->native, what));
  if (bf16) NOEIRA_TRY(make_descs(s, CUDNN_DATA_FLOAT, p->wide, what));

  {  // cuDNN's output size must be ours (it rounds down, as torch and image_shapes.h do)
    struct Probe {
      cudnnConvolutionDescriptor_t d = nullptr;
      ~Probe() {
        if (d) cudnnDestroyConvolutionDescriptor(d);
      }
    } probe;
    NOEIRA_TRY(make_conv(s, CUDNN_DEFAULT_MATH, probe.d, what));
    int n = 0, c = 0, h = 0, w = 0;
    const cudnnStatus_t st =
        cudnnGetConvolution2dForwardOutputDim(probe.d, p->native.x, p->native.w, &n, &c, &h, &w);
    if (st != CUDNN_STATUS_SUCCESS)
      return make_error("cudnnGetConvolution2dForwardOutputDim failed (" + error_text(st) +
                        ") for the " + what);
    if (n != s.batch || c != s.out_channels || h != s.out_height() || w != s.out_width())
      return make_error("cuDNN computes a " + std::to_string(h) + "x" + std::to_string(w) +
                        " output for the " + what + ", not " + std::to_string(s.out_height()) +
                        "x" + std::to_string(s.out_width()));
  }

  // Forward and backward-data run natively unless bf16 needs otherwise (the forward's
  // bias; no native algorithm); backward-weights is widened for every bf16 plan.
  const MathPolicy native_policy = math_policy(!bf16, tf32_);
  const MathPolicy wide_policy = math_policy(true, true);  // exact on bf16 values
  const auto plan_one = [&](auto api, auto& pass, bool widen) -> Status {
    using Api = decltype(api);
    std::string seen;
    pass.widened = widen;
    Result<bool> found = plan_pass<Api>(handle_, s, widen ? p->wide : p->native,
                                        widen ? wide_policy : native_policy, pass, &seen, what);
    if (!found) return found.error();
    if (!*found && bf16 && !widen) {  // no native bf16 algorithm: the widened fp32 one
      pass.widened = true;
      found = plan_pass<Api>(handle_, s, p->wide, wide_policy, pass, &seen, what);
      if (!found) return found.error();
    }
    if (!*found) return make_error(no_algorithm(Api::kName, what, seen));
    return {};
  };
  NOEIRA_TRY(plan_one(FwdApi{}, p->fwd, bf16 && s.has_bias));
  if (s.input_grad) NOEIRA_TRY(plan_one(DataApi{}, p->data, false));
  NOEIRA_TRY(plan_one(FilterApi{}, p->filter, bf16));

  // The workspace layout of cudnn_conv_plan.h.
  const size_t x32 = f32_bytes(s.x_elems()), w32 = f32_bytes(s.w_elems()),
               y32 = f32_bytes(s.y_elems());
  p->fwd.cudnn_offset = p->fwd.widened ? x32 + w32 + y32 : 0;
  p->data.cudnn_offset = p->data.widened ? y32 + w32 + x32 : 0;
  p->filter.cudnn_offset = p->filter.widened ? x32 + y32 : 0;
  size_t need = channel_partials_bytes(s.out_channels, s.batch * s.out_height() * s.out_width());
  for (size_t end : {p->fwd.cudnn_offset + p->fwd.cudnn_bytes,
                     p->data.cudnn_offset + p->data.cudnn_bytes,
                     p->filter.cudnn_offset + p->filter.cudnn_bytes})
    need = std::max(need, end);
  p->bytes = conv_align_up(need) + kAlign;
  const size_t bytes = p->bytes;
  plans_.emplace(key, std::move(p));
  return bytes;
}

std::string CudnnConv::describe_plan(const ConvShape& s, DType dtype) const {
  const auto it = plans_.find(Key{s, dtype});
  if (it == plans_.end()) return {};
  const Plan& p = *it->second;
  const auto pass = [](const char* name, const char* algo, const auto& ps) {
    return std::string(name) + " " + algo + " (" + math_name(ps.math) + ", " +
           std::to_string(ps.cudnn_bytes) + " B" + (ps.widened ? ", widened to fp32" : "") + ")";
  };
  return pass("fwd", algo_name(p.fwd.algo), p.fwd) + ", " +
         (s.input_grad ? pass("bwd-data", algo_name(p.data.algo), p.data) : "bwd-data none") +
         ", " +
         pass("bwd-weights", algo_name(p.filter.algo), p.filter) + "; workspace " +
         std::to_string(p.bytes) + " B";
}

}  // namespace noeira::cuda
