#include "harness/env/baseline_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "harness/env/host_info.h"
#include "harness/twin/twin.h"
#include "kernels/common/bf16.h"
#include "kernels/backend.h"

namespace noeira {

namespace {

// Every figure is the best of timed repetitions after one untimed call: the probe asks
// what the library can do, and the best repetition is the one least disturbed by the
// machine's other work. At least kMinReps, until kMinSeconds have passed, at most kMaxReps.
// With min_timing_s > 0 a timing repeats the call for at least that long (a cache-sized
// stream takes microseconds: one call would time the clock and the thread fork/join).
constexpr int kMinReps = 3, kMaxReps = 20;
constexpr double kMinSeconds = 0.1;

template <class F>
double best_rate(F&& call, Stream& queue, double work, double min_timing_s = 0.0) {
  using Clock = std::chrono::steady_clock;
  const auto timed = [&](int calls) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) call();
    queue.synchronize();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  timed(1);
  int calls = 1;
  if (min_timing_s > 0.0) {
    const double one = std::max(timed(1), 1e-9);
    calls = static_cast<int>(std::clamp(std::ceil(min_timing_s / one), 1.0, 1e7));
  }
  double best = 0.0, spent = 0.0;
  for (int r = 0; r < kMaxReps && (r < kMinReps || spent < kMinSeconds); ++r) {
    const double dt = timed(calls);
    spent += dt;
    if (dt > 0.0) best = std::max(best, work * calls / dt);
  }
  return best;
}

struct ProbeBuffers {
  Arenas arenas;
  float *a32 = nullptr, *b32 = nullptr, *c = nullptr, *x = nullptr, *y = nullptr;
  bf16_t *a16 = nullptr, *b16 = nullptr;
};

// Plans and allocates the probe's buffers on the backend's device (plan, then allocate
// once): n x n GEMM operands and two stream arrays of ns floats, either left out when 0;
// fills the inputs with small values of both signs (no denormals, no zeros that a kernel
// could skip).
Result<ProbeBuffers> make_buffers(Backend& be, int64_t n, int64_t ns) {
  const int64_t nn = n * n;
  MemoryPlan plan;
  Slot a32, b32, c, a16, b16, x, y;
  if (nn > 0) {
    a32 = plan.reserve(MemCategory::kWorkspace, Shape{nn}, DType::kF32);
    b32 = plan.reserve(MemCategory::kWorkspace, Shape{nn}, DType::kF32);
    c = plan.reserve(MemCategory::kWorkspace, Shape{nn}, DType::kF32);
    a16 = plan.reserve(MemCategory::kWorkspace, Shape{nn}, DType::kBF16);
    b16 = plan.reserve(MemCategory::kWorkspace, Shape{nn}, DType::kBF16);
  }
  if (ns > 0) {
    x = plan.reserve(MemCategory::kWorkspace, Shape{ns}, DType::kF32);
    y = plan.reserve(MemCategory::kWorkspace, Shape{ns}, DType::kF32);
  }
  Result<Arenas> arenas = Arenas::allocate(plan, *be.allocator);
  if (!arenas) return arenas.error();
  ProbeBuffers p;
  p.arenas = std::move(*arenas);
  std::vector<float> f(static_cast<size_t>(std::max(nn + 1, ns)));
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 16.0f;
  Stream& stream = *be.stream;
  if (nn > 0) {
    p.a32 = p.arenas.as<float>(a32), p.b32 = p.arenas.as<float>(b32), p.c = p.arenas.as<float>(c);
    p.a16 = p.arenas.as<bf16_t>(a16), p.b16 = p.arenas.as<bf16_t>(b16);
    std::vector<bf16_t> h(static_cast<size_t>(nn));
    for (size_t i = 0; i < h.size(); ++i) h[i] = f32_to_bf16(f[i]);
    stream.copy_to_device(p.a32, f.data(), static_cast<size_t>(nn) * 4);
    stream.copy_to_device(p.b32, f.data() + 1, static_cast<size_t>(nn) * 4);
    stream.copy_to_device(p.a16, h.data(), static_cast<size_t>(nn) * 2);
    stream.copy_to_device(p.b16, h.data(), static_cast<size_t>(nn) * 2);
  }
  if (ns > 0) {
    p.x = p.arenas.as<float>(x), p.y = p.arenas.as<float>(y);
    stream.copy_to_device(p.x, f.data(), static_cast<size_t>(ns) * 4);
  }
  stream.synchronize();
  return p;
}

// y = max(x, 0) over ns floats: one read and one write stream of 4-byte elements.
double stream_rate(Ops& ops, Stream& queue, const float* x, float* y, int64_t ns, double min_timing_s = 0.0) {
  return best_rate([&] { ops.act_forward(ConstView(x, ns), View(y, ns), Act::kReLU); }, queue,
                   2.0 * 4.0 * static_cast<double>(ns), min_timing_s);
}

// n^3 GEMMs, fp32 and bf16 (0 where the backend has no bf16 matmul: oneDNN below AVX-512).
GemmRates gemm_rates(Ops& ops, Stream& queue, const ProbeBuffers& p, int64_t n) {
  const double flops = 2.0 * n * n * n;
  GemmRates g;
  g.fp32 = best_rate(
      [&] { ops.gemm(false, false, n, n, n, 1.0f, ConstView(p.a32, n * n), n, ConstView(p.b32, n * n), n, 0.0f, p.c, n); },
      queue, flops);
  if (ops.supports_bf16())
    g.bf16 = best_rate(
        [&] { ops.gemm(false, false, n, n, n, 1.0f, ConstView(p.a16, n * n), n, ConstView(p.b16, n * n), n, 0.0f, p.c, n); },
        queue, flops);
  return g;
}

nlohmann::json probe_row(Backend& be, ProbeBuffers& p, ProbeShape shape, const nlohmann::json& threads) {
  const int64_t ns = int64_t{shape.stream_mib} * 1024 * 1024 / 4;
  const GemmRates g = gemm_rates(*be.ops, *be.stream, p, shape.gemm_n);
  const double stream = stream_rate(*be.ops, *be.stream, p.x, p.y, ns);
  return {{"threads", threads},
          {"gemm_fp32_gflops", g.fp32 * 1e-9},
          {"gemm_bf16_gflops", g.bf16 > 0.0 ? nlohmann::json(g.bf16 * 1e-9) : nlohmann::json()},
          {"stream_gbs", stream * 1e-9}};
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
  return buf;
}

const nlohmann::json* row_for(const nlohmann::json& side, const nlohmann::json& threads) {
  const auto rows = side.find("rows");
  if (rows == side.end() || !rows->is_array()) return nullptr;
  for (const nlohmann::json& r : *rows)
    if (r.is_object() && r.value("threads", nlohmann::json()) == threads) return &r;
  return nullptr;
}

double figure(const nlohmann::json& row, const char* key) {
  const auto v = row.find(key);
  return v != row.end() && v->is_number() ? v->get<double>() : -1.0;
}

std::string threads_text(const nlohmann::json& t) {
  if (!t.is_number_integer()) return "on the device";
  const int n = t.get<int>();
  return "at " + std::to_string(n) + (n == 1 ? " thread" : " threads");
}

std::string math_of(const nlohmann::json& side) {
  const auto m = side.find("math");
  if (m == side.end() || !m->is_object()) return "";
  return m->value("summary", "");
}

struct Kind {
  const char* key;
  const char* what;   // "fp32 GEMM"
  const char* unit;   // "GFLOP/s"
  const char* which;  // the ratios it biases
};
constexpr Kind kKinds[] = {{"gemm_fp32_gflops", "fp32 GEMM", "GFLOP/s", "fp32"},
                           {"gemm_bf16_gflops", "bf16 GEMM", "GFLOP/s", "bf16"},
                           {"stream_gbs", "streaming bandwidth", "GB/s", "memory-bound"}};

}  // namespace

Result<nlohmann::json> run_our_probe(Device device, int threads) {
  if (threads <= 0) threads = default_thread_count();
  nlohmann::json rows = nlohmann::json::array();
  std::vector<int> counts = {1};
  if (device == Device::kCpu && threads > 1) counts.push_back(threads);
  std::string math;
  for (int t : counts) {
    Result<Backend> be = make_backend(device, t);
    if (!be) return be.error();
    Result<ProbeBuffers> p = make_buffers(*be, probe_shape(device).gemm_n,
                                          int64_t{probe_shape(device).stream_mib} * 1024 * 1024 / 4);
    if (!p) return p.error();
    rows.push_back(probe_row(*be, *p, probe_shape(device),
                             device == Device::kCpu ? nlohmann::json(t) : nlohmann::json()));
    math = be->description;
  }
  if (device == Device::kCpu) {
    const nlohmann::json dnn = build_info()["onednn"];
    math = "oneDNN " + dnn.value("version", std::string("?")) + " (" + dnn.value("isa", std::string("?")) + ")";
  }
  return nlohmann::json{{"rows", rows}, {"math", {{"summary", math}}}};
}

Result<double> run_stream_probe(Device device, int threads, int64_t array_bytes, double min_timing_s) {
  if (threads <= 0) threads = default_thread_count();
  Result<Backend> be = make_backend(device, threads);
  if (!be) return be.error();
  if (array_bytes <= 0) array_bytes = int64_t{probe_shape(device).stream_mib} * 1024 * 1024;
  const int64_t ns = std::max<int64_t>(array_bytes / 4, 1);
  Result<ProbeBuffers> p = make_buffers(*be, 0, ns);
  if (!p) return p.error();
  return stream_rate(*be->ops, *be->stream, p->x, p->y, ns, min_timing_s);
}

Result<GemmRates> run_gemm_probe(Device device, int threads) {
  if (threads <= 0) threads = default_thread_count();
  Result<Backend> be = make_backend(device, threads);
  if (!be) return be.error();
  const int64_t n = probe_shape(device).gemm_n;
  Result<ProbeBuffers> p = make_buffers(*be, n, 0);
  if (!p) return p.error();
  return gemm_rates(*be->ops, *be->stream, *p, n);
}

nlohmann::json measure_baseline_probes(Device device, int threads, const std::string& twin_python,
                                       const std::filesystem::path& log_dir, double timeout_seconds) {
  if (threads <= 0) threads = default_thread_count();
  nlohmann::json probes = {{"gemm_n", probe_shape(device).gemm_n},
                           {"stream_mib", probe_shape(device).stream_mib},
                           {"method", "best of 3-20 timed repetitions (at least 0.1 s) after one untimed call"}};
  if (device == Device::kCpu) probes["peak"] = cpu_peak_estimate(host_info());
  Result<nlohmann::json> ours = run_our_probe(device, threads);
  probes["ours"] = ours ? *ours : nlohmann::json{{"error", ours.error().message}};
  if (!twin_python.empty())
    probes["twin"] = run_twin_probe(twin_python, device == Device::kGpu ? "cuda" : "cpu", threads,
                                    log_dir / "twin-probe.log", timeout_seconds);
  return probes;
}

nlohmann::json cpu_peak_estimate(const nlohmann::json& host) {
  const double mhz = host.value("cpu_mhz", 0.0);
  const auto f = host.find("cpu_features");
  if (mhz <= 0.0 || f == host.end() || !f->is_object()) return nullptr;
  // fp32 FLOPs per cycle per core assuming two FMA pipes of the widest vector the CPU has;
  // AMD's family 25 (Zen 3 and Zen 4) has two 256-bit pipes, and Zen 4 runs a 512-bit FMA
  // as two halves: the AVX2 rate (its measured 1024^3 GEMM: 103 GFLOP/s at 2.6 GHz nominal
  // against an estimate of 166 with two 512-bit pipes).
  double fp32 = 8.0;
  std::string basis = "SSE";
  const bool half_width_512 = host.value("cpu_id", std::string()).rfind("AuthenticAMD family 25 ", 0) == 0;
  if (f->value("avx512f", false) && half_width_512) fp32 = 32.0, basis = "256-bit (AMD family 25 runs AVX-512 as two halves)";
  else if (f->value("avx512f", false)) fp32 = 64.0, basis = "AVX-512";
  else if (f->value("avx2", false)) fp32 = 32.0, basis = "AVX2";
  else if (f->value("avx", false)) fp32 = 16.0, basis = "AVX";
  double bf16 = fp32;
  std::string bf16_basis = "converted to fp32";
  if (f->value("amx_bf16", false)) bf16 = 1024.0, bf16_basis = "AMX-BF16 tiles";
  else if (f->value("avx512_bf16", false)) bf16 = 2.0 * fp32, bf16_basis = "AVX512-BF16 dot products";
  const double ghz = mhz / 1000.0;
  return {{"fp32_gflops_per_core", fp32 * ghz},
          {"bf16_gflops_per_core", bf16 * ghz},
          {"basis", basis + " FMA x2 per cycle at " + fixed(ghz) + " GHz (/proc/cpuinfo); bf16: " + bf16_basis +
                        "; an estimate, not a measurement"}};
}

std::vector<std::string> probe_warnings(const nlohmann::json& probes) {
  std::vector<std::string> out;
  if (!probes.is_object()) return out;
  const auto ours = probes.find("ours"), twin = probes.find("twin");
  struct Side {
    const char* name;
    const nlohmann::json* self;
    const nlohmann::json* other;
    const char* other_name;
  };
  std::vector<Side> sides;
  const bool have_ours = ours != probes.end() && ours->is_object();
  const bool have_twin = twin != probes.end() && twin->is_object();
  if (have_ours) sides.push_back({"ours", &*ours, have_twin ? &*twin : nullptr, "the twin's"});
  if (have_twin) sides.push_back({"the twin's", &*twin, have_ours ? &*ours : nullptr, "ours"});
  const nlohmann::json peak = probes.value("peak", nlohmann::json());
  for (const Side& s : sides) {
    const auto rows = s.self->find("rows");
    if (rows == s.self->end() || !rows->is_array()) continue;
    const std::string math = math_of(*s.self);
    const std::string lib = math.empty() ? "" : " (" + math + ")";
    for (const nlohmann::json& r : *rows) {
      if (!r.is_object()) continue;
      const nlohmann::json t = r.value("threads", nlohmann::json());
      for (const Kind& k : kKinds) {
        const double v = figure(r, k.key);
        if (v < 0.0) continue;
        const std::string head = std::string(s.name) + " " + k.what + " runs at " + fixed(v) + " " + k.unit +
                                 " " + threads_text(t) + lib;
        const nlohmann::json* o = s.other ? row_for(*s.other, t) : nullptr;
        const double ov = o ? figure(*o, k.key) : -1.0;
        if (ov > 0.0 && v * 3.0 < ov) {
          out.push_back(head + ", under a third of " + s.other_name + " (" + fixed(ov) + "): " + k.which +
                        " ratios measure that, not the trainers");
          continue;
        }
        // The CPU's own peak: a figure far under it is a reference or misdetected library
        // even when the other side is just as slow.
        if (std::string(k.key) == "gemm_fp32_gflops" && t == nlohmann::json(1) && peak.is_object() &&
            peak.value("fp32_gflops_per_core", 0.0) > 0.0) {
          const double p = peak["fp32_gflops_per_core"].get<double>();
          if (v < 0.15 * p)
            out.push_back(head + ", " + fixed(100.0 * v / p) + "% of this CPU's estimated peak per core (" +
                          fixed(p) + " GFLOP/s): a reference or misdetected BLAS? fp32 ratios measure that");
        }
      }
    }
  }
  return out;
}

std::vector<ProbeRow> probe_rows(const nlohmann::json& probes) {
  std::vector<ProbeRow> out;
  if (!probes.is_object()) return out;
  auto number = [](const nlohmann::json& row, const char* key) {
    const auto v = row.find(key);
    return v != row.end() && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
  };
  for (const char* name : {"ours", "twin"}) {
    const auto side = probes.find(name);
    if (side == probes.end() || !side->is_object()) continue;
    ProbeRow base;
    base.side = name;
    if (const auto m = side->find("math"); m != side->end() && m->is_object())
      if (const auto summary = m->find("summary"); summary != m->end() && summary->is_string())
        base.math = summary->get<std::string>();
    if (const auto e = side->find("error"); e != side->end()) {
      base.failed = true;
      base.error = e->is_string() ? e->get<std::string>() : "";
      out.push_back(base);
      continue;
    }
    const auto rows = side->find("rows");
    if (rows == side->end() || !rows->is_array()) continue;
    for (const nlohmann::json& r : *rows) {
      if (!r.is_object()) continue;
      ProbeRow row = base;
      if (const auto t = r.find("threads"); t != r.end() && t->is_number_integer()) row.threads = t->get<int>();
      row.gemm_fp32_gflops = number(r, "gemm_fp32_gflops");
      row.gemm_bf16_gflops = number(r, "gemm_bf16_gflops");
      row.stream_gbs = number(r, "stream_gbs");
      out.push_back(row);
    }
  }
  return out;
}

std::optional<PeakEstimate> probe_peak(const nlohmann::json& probes) {
  const auto peak = probes.is_object() ? probes.find("peak") : probes.end();
  if (!probes.is_object() || peak == probes.end() || !peak->is_object()) return std::nullopt;
  auto number = [&](const char* key) {
    const auto v = peak->find(key);
    return v != peak->end() && v->is_number() ? v->get<double>() : 0.0;
  };
  PeakEstimate e;
  e.fp32_gflops_per_core = number("fp32_gflops_per_core");
  e.bf16_gflops_per_core = number("bf16_gflops_per_core");
  if (const auto b = peak->find("basis"); b != peak->end() && b->is_string()) e.basis = b->get<std::string>();
  return e;
}

std::string render_probes(const nlohmann::json& probes) {
  std::string out;
  if (!probes.is_object()) return out;
  auto side_line = [&](const char* name, const nlohmann::json& side) {
    if (!side.is_object()) return;
    if (side.contains("error")) {
      out += std::string("  ") + name + ": probe failed: " + side.value("error", std::string("?")) + "\n";
      return;
    }
    const auto rows = side.find("rows");
    if (rows == side.end() || !rows->is_array() || rows->empty()) return;
    std::string line = std::string("  ") + name + ":";
    for (const Kind& k : kKinds) {
      std::string vals;
      for (const nlohmann::json& r : *rows) {
        const double v = figure(r, k.key);
        vals += (vals.empty() ? "" : " / ") + (v < 0.0 ? std::string("n/a") : fixed(v));
      }
      line += std::string(" ") + k.what + " " + vals + " " + k.unit + ",";
    }
    std::string ts;
    for (const nlohmann::json& r : *rows) {
      const nlohmann::json t = r.value("threads", nlohmann::json());
      ts += (ts.empty() ? "" : " / ") + (t.is_number_integer() ? std::to_string(t.get<int>()) : std::string("device"));
    }
    line.pop_back();
    const bool cpu = rows->front().value("threads", nlohmann::json()).is_number_integer();
    line += " (" + ts + (!cpu ? "" : ts == "1" ? " thread" : " threads") + ")";
    const std::string math = math_of(side);
    if (!math.empty()) line += "; " + math;
    out += line + "\n";
  };
  out += "baseline probe (GEMM " + std::to_string(probes.value("gemm_n", kCpuProbe.gemm_n)) + "^3, stream " +
         std::to_string(probes.value("stream_mib", kCpuProbe.stream_mib)) + " MiB arrays; best of repetitions):\n";
  side_line("ours", probes.value("ours", nlohmann::json()));
  side_line("twin", probes.value("twin", nlohmann::json()));
  if (const std::optional<PeakEstimate> peak = probe_peak(probes))
    out += "  CPU peak estimate per core: fp32 " + fixed(peak->fp32_gflops_per_core) + " GFLOP/s, bf16 " +
           fixed(peak->bf16_gflops_per_core) + " GFLOP/s (" + peak->basis + ")\n";
  return out;
}

}  // namespace noeira
