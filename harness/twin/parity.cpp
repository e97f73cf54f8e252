#include "harness/twin/parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/report/number_format.h"

namespace noeira {

std::string parity_line(const ParityRecord& p) {
  auto dev = [](const Nullable<double>& v) {
    return v ? format_number("%.2e", *v) : std::string("non-finite");
  };
  std::string line = "parity (fp32, first " + std::to_string(p.steps) +
                     " steps from our step-0 weights and batches): max rel. deviation " +
                     dev(p.max_rel_dev) + " (bound " + format_number("%.0e", p.bound) +
                     ", the recipe's)";
  if (p.early)
    line += ", first " + std::to_string(p.early->steps) + " steps " + dev(p.early->max_rel_dev) +
            " (bound " + format_number("%.0e", p.early->bound) + ")";
  return line + ": " + (p.passed ? "PASS" : "FAIL");
}

ParityOutcome run_parity(const Recipe& recipe, const DataSplit& data, const BenchSettings& st,
                         uint64_t seed, const TwinPlan& twin, int64_t steps) {
  ParityOutcome out;
  if (!twin.unavailable.empty()) {
    out.note = "parity skipped: " + twin.unavailable;
    return out;
  }
  TrainerOptions o;
  o.device = st.device;
  o.threads = st.threads;
  o.seed = seed;
  steps = std::min(steps, steps_per_epoch(recipe, data));
  o.total_steps = steps;  // the twin's run is `steps` long too: same schedule
  Result<std::unique_ptr<TrainerCore>> made = make_trainer(recipe, data, o);
  if (!made) {
    out.note = "parity failed: " + made.error().message;
    return out;
  }
  TrainerCore& t = **made;
  const auto ckpt = twin.log_dir / "parity-step0.ckpt";
  if (Status s = t.save_checkpoint(ckpt); !s) {
    out.note = "parity failed: " + s.error().message;
    return out;
  }
  t.begin_epoch();
  for (int64_t i = 0; i < steps; ++i) t.train_step();
  const std::vector<float> ours = t.end_epoch(false).step_losses;

  // From our step-0 weights, eager fp32, the parity steps only.
  TwinRequest q = twin.request("eager", seed, "twin-parity.log");
  q.dtype = "fp32";
  q.epochs = 1;
  q.max_steps = steps;
  q.warmup = 1;
  q.init_checkpoint = ckpt;
  q.target_metric.clear();
  std::fprintf(stderr, "  parity: twin from our step-0 weights, %lld steps ...\n",
               static_cast<long long>(steps));
  const TwinOutcome r = run_twin(q);
  if (!r.ok || !r.available) {
    out.note = "parity failed: " + r.reason;
    return out;
  }
  std::vector<double> theirs;
  for (const Nullable<double>& v : r.reply.losses) theirs.push_back(v ? *v : NAN);
  if (theirs.size() < ours.size()) {
    out.note = "parity failed: the twin reported " + std::to_string(theirs.size()) +
               " losses for " + std::to_string(ours.size()) + " steps";
    return out;
  }
  // The largest relative deviation over the first n steps (infinite once one is not finite).
  auto max_dev_over = [&](size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n && i < ours.size(); ++i) {
      const double dev = std::abs(static_cast<double>(ours[i]) - theirs[i]) / std::abs(theirs[i]);
      m = std::isfinite(dev) ? std::max(m, dev) : INFINITY;
    }
    return m;
  };
  const double max_dev = max_dev_over(ours.size());
  theirs.resize(ours.size());
  ParityRecord& p = out.record.emplace();
  p.steps = steps;
  p.max_rel_dev = finite_or_null(max_dev);
  p.bound = recipe.parity_bound;
  for (float l : ours) p.ours.push_back(finite_or_null(l));
  for (double l : theirs) p.twin.push_back(finite_or_null(l));
  p.passed = std::isfinite(max_dev) && max_dev <= recipe.parity_bound;
  if (recipe.parity_early_steps > 0) {
    const double early = max_dev_over(static_cast<size_t>(recipe.parity_early_steps));
    p.early = ParityRecord::Early{recipe.parity_early_steps, finite_or_null(early),
                                  recipe.parity_early_bound};
    p.passed = p.passed && early <= recipe.parity_early_bound;
  }
  return out;
}

}  // namespace noeira
