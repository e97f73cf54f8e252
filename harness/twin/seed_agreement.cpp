#include "harness/twin/seed_agreement.h"

#include <cmath>
#include <sstream>

#include "harness/results/results_access.h"
#include "harness/run/stats.h"

namespace noeira {

nlohmann::json seed_agreement(const nlohmann::json& variants, const std::string& dtype) {
  const nlohmann::json *ours = nullptr, *twin = nullptr;
  const std::string mine = dtype == "bf16" ? "bf16" : "eager";
  for (const auto& v : variants) {
    if (v["name"] == mine && variant_ran(v)) ours = &v;
    if (v["name"] == "twin:eager" && variant_ran(v)) twin = &v;
  }
  if (!ours || !twin) return nullptr;
  const std::vector<double> a = seed_scores(*ours, "test_loss"), b = seed_scores(*twin, "test_loss");
  if (a.size() < 2 || b.size() < 2) return nullptr;
  const WelchResult w = welch_t_test(a, b);
  const bool agree = !(w.p < 0.05);
  std::ostringstream note;
  note << "final test loss, ours " << mean(a) << " ± " << sample_std(a) << " vs twin " << mean(b)
       << " ± " << sample_std(b) << " over " << a.size() << "/" << b.size() << " seeds: "
       << (agree ? "agree within seed noise" : "differ beyond seed noise") << " (p "
       << (agree ? ">= 0.05" : "< 0.05") << ")";
  return {{"test", "Welch two-sided t-test on final test loss, alpha 0.05"},
          {"statistic", std::isfinite(w.t) ? nlohmann::json(w.t) : nlohmann::json(0.0)},
          {"p_value", w.p},
          {"agree", agree},
          {"note", note.str()}};
}

}  // namespace noeira
