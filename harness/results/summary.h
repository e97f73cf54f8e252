// What a variant's runs add up to (results/SCHEMA.md): a timer from its samples, the CUPTI
// overhead of a traced pass, and the summary pooled over seeds; and the variant records a
// run starts from.
#pragma once
#include <string>
#include <vector>

#include "harness/results/records.h"

namespace noeira {

// The timer of `samples_ms` with their statistics; null for no samples.
Nullable<TimerRecord> timer_record(const std::vector<double>& samples_ms);

// runs[].cupti_overhead: host ms/step with CUPTI tracing on (the traced pass) against off
// (the run's wall samples); null without samples on either side.
Nullable<CuptiOverhead> cupti_overhead(const std::vector<double>& wall_on_ms,
                                       const std::vector<double>& wall_off_ms);

// variants[].summary from its runs: timers pooled across seeds, seed statistics, and the
// CUPTI overhead over the pooled samples of the runs that have one (null where none has).
VariantSummary summarize_runs(const std::vector<RunRecord>& runs);

// A variant with no runs yet: available, no error, an empty summary.
VariantRecord new_variant(const std::string& name, const std::string& impl,
                          const std::string& dtype, const std::string& target);

// One of our variants that cannot run here (`why`).
VariantRecord unavailable_variant(const std::string& name, const std::string& dtype,
                                  const std::string& target, const std::string& why);

}  // namespace noeira
