#include "harness/results/partial_results.h"

#include <algorithm>

#include "harness/results/results.h"
#include "harness/results/summary.h"

namespace noeira {

void plan_seeds(VariantRecord& variant, const std::vector<uint64_t>& seeds) {
  variant.pending_seeds = seeds;
}

void record_run(VariantRecord& variant, RunRecord run) {
  if (variant.pending_seeds) std::erase(*variant.pending_seeds, run.seed);
  variant.runs.push_back(std::move(run));
  variant.summary = summarize_runs(variant.runs);
}

void drop_pending(VariantRecord& variant) {
  if (variant.pending_seeds) variant.pending_seeds->clear();
}

std::string partial_summary(const ResultsRecord& results) {
  if (!results.partial()) return "";
  std::string s = "partial results";
  if (results.stopped_by && *results.stopped_by)
    s += " (stopped by " + **results.stopped_by + ")";
  else
    s += " (the run did not finish: killed, or still running)";
  std::string parts;
  for (const BenchmarkRecord& b : results.benchmarks)
    for (const VariantRecord& v : b.variants) {
      if (!v.pending_seeds || v.pending_seeds->empty()) continue;
      const size_t done = v.runs.size(), planned = done + v.pending_seeds->size();
      parts += (parts.empty() ? "" : "; ") + b.model + " " + v.name + " " +
               (done ? std::to_string(done) + " of " + std::to_string(planned) + " seeds"
                     : std::string("not run"));
    }
  return s + (parts.empty() ? "" : ": " + parts);
}

Status ResultsWriter::write_partial(ResultsRecord& results, const std::string& stopped_by) const {
  results.status = "partial";
  results.stopped_by.emplace();  // null: still running (a kill leaves it so)
  if (!stopped_by.empty()) results.stopped_by->emplace(stopped_by);
  return write_results(path_, results);
}

Status ResultsWriter::write_complete(ResultsRecord& results) const {
  results.status = "complete";
  results.stopped_by.emplace();
  return write_results(path_, results);
}

}  // namespace noeira
