// `noeira-bench compare`'s work: two results files, or two suite directories file by file,
// judged by the gate (harness/gate/compare_gate.h) and printed as tables.
#pragma once
#include <string>

namespace noeira {

struct CompareOptions {
  // BASE and NEW: results files, or suite directories (every results file of BASE against
  // the same file in NEW).
  std::string base_path, new_path;
  std::string max_slowdown = "5%";
  double alpha = 0.05;
  std::string timer = "auto";
  bool ignore_device = false;
  bool allow_missing = false;
};

// Prints the comparison and returns the exit code: kExitOk, kExitFailure on a regression
// (or a variant missing without allow_missing), kExitUsage on unusable input.
int run_compare(const CompareOptions& o);

}  // namespace noeira
