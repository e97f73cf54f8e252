// Results that survive a stopped run: `run` rewrites its results file (atomically) after
// every finished seed with status "partial", and with "complete" at the end, so a kill at
// any point leaves a valid file in which every finished seed is a run and every other
// planned seed is listed in its variant's pending_seeds (results/SCHEMA.md).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/results/records.h"
#include "nn/error.h"

namespace noeira {

// A variant about to run: every seed pending.
void plan_seeds(VariantRecord& variant, const std::vector<uint64_t>& seeds);
// A seed of the variant finished: its run recorded, the seed no longer pending, the
// summary refreshed.
void record_run(VariantRecord& variant, RunRecord run);
// The variant will not run its remaining seeds for a reason of its own (an error, the
// twin unavailable): they are not pending, the error or reason says why.
void drop_pending(VariantRecord& variant);

// One sentence on what a partial file holds, e.g. "partial results (stopped by SIGINT):
// mlp eager 1 of 3 seeds; twin:eager not run"; "" for a complete file.
std::string partial_summary(const ResultsRecord& results);

// The results file of one run, written whole each time (and validated: write_results).
class ResultsWriter {
 public:
  explicit ResultsWriter(std::filesystem::path path) : path_(std::move(path)) {}
  // Marks `results` (status, stopped_by: the signal's name, or null while still running)
  // and writes it, so the caller's copy says what the file says.
  Status write_partial(ResultsRecord& results, const std::string& stopped_by = "") const;
  Status write_complete(ResultsRecord& results) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace noeira
