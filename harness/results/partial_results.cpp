#include "harness/results/partial_results.h"

#include <algorithm>

#include "harness/run/bench_runner.h"
#include "harness/results/results.h"

namespace noeira {

using nlohmann::json;

void plan_seeds(json& variant, const std::vector<uint64_t>& seeds) {
  variant["pending_seeds"] = seeds;
}

void record_run(json& variant, json run) {
  if (json* pending = variant.contains("pending_seeds") ? &variant["pending_seeds"] : nullptr) {
    const uint64_t seed = run.value("seed", uint64_t{0});
    auto& a = pending->get_ref<json::array_t&>();
    a.erase(std::remove(a.begin(), a.end(), json(seed)), a.end());
  }
  variant["runs"].push_back(std::move(run));
  variant["summary"] = summarize_runs(variant["runs"]);
}

void drop_pending(json& variant) {
  if (variant.contains("pending_seeds")) variant["pending_seeds"] = json::array();
}

bool results_partial(const json& results) {
  return results.is_object() && results.value("status", std::string("complete")) == "partial";
}

std::string partial_summary(const json& results) {
  if (!results_partial(results)) return "";
  std::string s = "partial results";
  if (const auto by = results.find("stopped_by"); by != results.end() && by->is_string())
    s += " (stopped by " + by->get<std::string>() + ")";
  else
    s += " (the run did not finish: killed, or still running)";
  std::string parts;
  for (const json& b : results.at("benchmarks"))
    for (const json& v : b.at("variants")) {
      const auto pending = v.find("pending_seeds");
      if (pending == v.end() || !pending->is_array() || pending->empty()) continue;
      const size_t done = v.at("runs").size(), planned = done + pending->size();
      parts += (parts.empty() ? "" : "; ") + b.value("model", std::string()) + " " +
               v.value("name", std::string()) + " " +
               (done ? std::to_string(done) + " of " + std::to_string(planned) + " seeds"
                     : std::string("not run"));
    }
  return s + (parts.empty() ? "" : ": " + parts);
}

Status ResultsWriter::write_partial(json& results, const std::string& stopped_by) const {
  results["status"] = "partial";
  results["stopped_by"] = stopped_by.empty() ? json(nullptr) : json(stopped_by);
  return write_results(path_, results);
}

Status ResultsWriter::write_complete(json& results) const {
  results["status"] = "complete";
  results["stopped_by"] = nullptr;
  return write_results(path_, results);
}

}  // namespace noeira
