#include "harness/twin/parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/report/number_format.h"

namespace noeira {

std::string parity_line(const nlohmann::json& p) {
  auto dev = [](const nlohmann::json& v) {
    return v.is_number() ? format_number("%.2e", v.get<double>()) : std::string("non-finite");
  };
  std::string line = "parity (fp32, first " + std::to_string(p["steps"].get<int64_t>()) +
                     " steps from our step-0 weights and batches): max rel. deviation " +
                     dev(p["max_rel_dev"]) + " (bound " +
                     format_number("%.0e", p["bound"].get<double>()) + ", the recipe's)";
  if (p.contains("early_steps"))
    line += ", first " + std::to_string(p["early_steps"].get<int64_t>()) + " steps " +
            dev(p["early_max_rel_dev"]) + " (bound " +
            format_number("%.0e", p["early_bound"].get<double>()) + ")";
  return line + ": " + (p["passed"].get<bool>() ? "PASS" : "FAIL");
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

  TwinRequest q;
  q.python = twin.python;
  q.recipe = twin.recipe;
  q.data_dir = twin.data_dir;
  q.dataset = twin.dataset;
  q.device = twin.device;
  q.mode = "eager";
  q.dtype = "fp32";
  q.seed = seed;
  q.epochs = 1;
  q.max_steps = steps;
  q.warmup = 1;
  q.threads = twin.threads;
  q.init_checkpoint = ckpt;
  q.timeout_seconds = twin.timeout_seconds;
  q.log = twin.log_dir / "twin-parity.log";
  std::fprintf(stderr, "  parity: twin from our step-0 weights, %lld steps ...\n",
               static_cast<long long>(steps));
  const TwinOutcome r = run_twin(q);
  if (!r.ok || !r.available) {
    out.note = "parity failed: " + r.reason;
    return out;
  }
  std::vector<double> theirs;
  for (const auto& v : r.result["losses"]) theirs.push_back(v.is_number() ? v.get<double>() : NAN);
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
  const bool finite = std::isfinite(max_dev);
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  bool passed = finite && max_dev <= recipe.parity_bound;
  out.json = {{"steps", steps},
              {"max_rel_dev", number(max_dev)},
              {"bound", recipe.parity_bound},
              {"ours", ours},
              {"twin", theirs}};
  if (recipe.parity_early_steps > 0) {
    const double early = max_dev_over(static_cast<size_t>(recipe.parity_early_steps));
    out.json["early_steps"] = recipe.parity_early_steps;
    out.json["early_max_rel_dev"] = number(early);
    out.json["early_bound"] = recipe.parity_early_bound;
    passed = passed && early <= recipe.parity_early_bound;
  }
  out.json["passed"] = passed;
  return out;
}

}  // namespace noeira
