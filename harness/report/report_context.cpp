#include "harness/report/report_context.h"

#include "harness/report/number_format.h"
#include "harness/results/partial_results.h"

namespace noeira {

namespace {

using nlohmann::json;

std::string text_at(const json& j, const char* key) {
  const auto it = j.is_object() ? j.find(key) : j.end();
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return "";
}

std::string gib(const json& j, const char* key) {
  const auto it = j.is_object() ? j.find(key) : j.end();
  if (it == j.end() || !it->is_number()) return "";
  return format_number("%.1f GiB", it->get<double>() / (1024.0 * 1024.0 * 1024.0));
}

std::string join(const std::vector<std::string>& parts, const char* sep = ", ") {
  std::string out;
  for (const std::string& p : parts)
    if (!p.empty()) out += (out.empty() ? "" : sep) + p;
  return out;
}

// A CUDA version as CUDA reports it (12040) as "12.4"; other text as is.
std::string cuda_version(const std::string& v) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return v;
  const long n = std::stol(v);
  return std::to_string(n / 1000) + "." + std::to_string((n % 1000) / 10);
}

std::string host_field(const HostRecord& h) {
  return join({text_at(h.recorded, "hostname"), h.os,
               gib(h.recorded, "memory_bytes").empty() ? "" : gib(h.recorded, "memory_bytes") + " RAM"});
}

std::string cpu_field(const HostRecord& h) {
  std::string s = h.cpu_model.empty() ? "unknown CPU" : h.cpu_model;
  const std::string id = text_at(h.recorded, "cpu_id");
  if (!id.empty() && s.find(id) == std::string::npos) s += " (" + id + ")";
  s += ", " + std::to_string(h.cores) + " cores";
  std::vector<std::string> features;
  if (const auto f = h.recorded.find("cpu_features"); f != h.recorded.end() && f->is_object())
    for (const auto& [key, name] : {std::pair{"avx2", "AVX2"}, {"avx512f", "AVX-512"},
                                    {"avx512_bf16", "AVX-512 BF16"}, {"amx_bf16", "AMX-BF16"}})
      if (const auto v = f->find(key); v != f->end() && v->is_boolean() && v->get<bool>())
        features.emplace_back(name);
  if (!features.empty()) s += "; " + join(features);
  return s;
}

std::string cpu_kernels_field(const BuildRecord& b) {
  std::vector<std::string> parts;
  if (b.has_openblas) parts.push_back("OpenBLAS " + b.openblas_core);
  if (b.has_onednn) {
    std::string dn = "oneDNN " + b.onednn_version + " " + b.onednn_isa;
    if (const auto o = b.recorded.find("onednn"); o != b.recorded.end() && o->is_object()) {
      const std::string cap = text_at(*o, "max_cpu_isa_env");
      if (!cap.empty()) dn += " (ONEDNN_MAX_CPU_ISA=" + cap + ")";
    }
    parts.push_back(dn);
  }
  if (const std::string isa = text_at(b.recorded, "cpu_loops_isa"); !isa.empty())
    parts.push_back("our loops " + isa);
  return parts.empty() ? "-" : join(parts);
}

std::string build_field(const BuildRecord& b) {
  auto flag = [&](const char* key, const char* yes, const char* no) -> std::string {
    const auto it = b.recorded.find(key);
    if (it == b.recorded.end() || !it->is_boolean()) return "";
    return it->get<bool>() ? yes : no;
  };
  const std::string s = join({text_at(b.recorded, "compiler"), text_at(b.recorded, "build_type"),
                              flag("cuda_built", "with CUDA", "without CUDA"),
                              flag("mpi_built", "with MPI", "")});
  return s.empty() ? "-" : s;
}

std::string device_field(const DeviceRecord& d) {
  if (!d.available) return "none (" + (d.reason.empty() ? std::string("no reason recorded") : d.reason) + ")";
  const std::string memory = gib(d.recorded, "memory_bytes");
  return join({d.name.empty() ? "unnamed GPU" : d.name, d.sm.empty() ? "" : "sm " + d.sm, memory});
}

std::string cuda_field(const DeviceRecord& d) {
  const std::string s =
      join({d.driver.empty() ? "" : "driver " + cuda_version(d.driver),
            d.runtime.empty() ? "" : "runtime " + cuda_version(d.runtime),
            text_at(d.recorded, "cublaslt").empty() ? "" : "cuBLASLt " + text_at(d.recorded, "cublaslt"),
            text_at(d.recorded, "cupti").empty() ? "" : "CUPTI " + text_at(d.recorded, "cupti")});
  return s.empty() ? "-" : s;
}

std::string twin_field(const TwinContext& t) {
  if (!t.available) return "unavailable (" + t.reason.value_or("no reason recorded") + ")";
  return "torch " + t.torch_version.value_or("?") + (t.python.empty() ? "" : " (" + t.python + ")");
}

// The twin's math libraries as its probe reported them (probes.twin.math.summary).
std::string twin_math_field(const Optional<json>& probes) {
  if (!probes || !probes->is_object()) return "-";
  const auto twin = probes->find("twin");
  if (twin == probes->end() || !twin->is_object()) return "-";
  if (const auto m = twin->find("math"); m != twin->end() && m->is_object()) {
    const std::string s = text_at(*m, "summary");
    if (!s.empty()) return s;
  }
  return "-";
}

}  // namespace

const std::string& ReportContext::field(const std::string& name) const {
  static const std::string kNone;
  for (const EnvField& f : fields)
    if (f.name == name) return f.value;
  return kNone;
}

ReportContext report_context(const std::string& path, const ResultsRecord& results) {
  const ContextRecord& c = results.context;
  ReportContext rc;
  rc.source = path;
  rc.created = results.created_utc;
  rc.command_line = c.command_line;
  rc.partial = partial_summary(results);
  rc.git = c.git_sha.substr(0, 12);  // as `git log --oneline` abbreviates it
  if (rc.git.empty()) rc.git = "unknown";
  rc.git_dirty = c.git_dirty;
  if (c.git_dirty) rc.git += " (dirty)";
  rc.warnings = c.warnings.value_or(std::vector<std::string>{});
  rc.probes = c.probes;
  rc.fields = {{"host", host_field(c.host)},
               {"CPU", cpu_field(c.host)},
               {"CPU math kernels", cpu_kernels_field(c.build)},
               {"build", build_field(c.build)},
               {"device", device_field(c.device)},
               {"driver / CUDA", cuda_field(c.device)},
               {"git", rc.git},
               {"twin", twin_field(c.twin)},
               {"twin math kernels", twin_math_field(c.probes)}};
  return rc;
}

}  // namespace noeira
