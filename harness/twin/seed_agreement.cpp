#include "harness/twin/seed_agreement.h"

#include <cmath>
#include <sstream>

#include "harness/run/variant.h"
#include "harness/run/stats.h"

namespace noeira {

Nullable<SeedAgreementRecord> seed_agreement(const std::vector<VariantRecord>& variants,
                                             const std::string& dtype) {
  const VariantRecord *ours = nullptr, *twin = nullptr;
  const std::string mine = Variant{dtype == "bf16" ? DType::kBF16 : DType::kF32}.name();
  for (const VariantRecord& v : variants) {
    if (v.name == mine && v.ran()) ours = &v;
    if (v.name == "twin:eager" && v.ran()) twin = &v;
  }
  if (!ours || !twin) return std::nullopt;
  const std::vector<double> a = ours->seed_scores(SeedScore::kTestLoss), b = twin->seed_scores(SeedScore::kTestLoss);
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const WelchResult w = welch_t_test(a, b);
  const bool agree = !(w.p < 0.05);
  std::ostringstream note;
  note << "final test loss, ours " << mean(a) << " ± " << sample_std(a) << " vs twin " << mean(b)
       << " ± " << sample_std(b) << " over " << a.size() << "/" << b.size() << " seeds: "
       << (agree ? "agree within seed noise" : "differ beyond seed noise") << " (p "
       << (agree ? ">= 0.05" : "< 0.05") << ")";
  return SeedAgreementRecord{"Welch two-sided t-test on final test loss, alpha 0.05", note.str(),
                             std::isfinite(w.t) ? w.t : 0.0, w.p, agree};
}

}  // namespace noeira
