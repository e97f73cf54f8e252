#include "harness/micro/op_benchmarks.h"

#include <algorithm>
#include <map>
#include <utility>

#include "harness/micro/micro_roofline.h"

namespace noeira {

namespace {

// Benchmarks run grouped by op, in this order (then by first appearance).
constexpr const char* kOpOrder[] = {
    "act_forward",          "act_backward",       "act_backward_saved", "add_relu_backward",
    "bias_act",             "linear_backward_params", "linear_backward_data",
    "layernorm_forward",    "layernorm_backward", "batchnorm_forward_train",
    "batchnorm_backward",   "batchnorm_relu_backward", "attention_forward",  "attention_backward",
    "maxpool2d_forward",    "maxpool2d_backward", "avgpool2d_forward",
    "avgpool2d_backward",   "shortcut_forward",   "shortcut_backward",  "conv2d_forward",
    "conv2d_backward_data", "conv2d_backward_weights", "conv2d_backward", "cast"};

size_t op_rank(const std::string& op) {
  const auto* it = std::find(std::begin(kOpOrder), std::end(kOpOrder), op);
  return static_cast<size_t>(it - std::begin(kOpOrder));
}

struct Entry {
  OpCase c;
  std::vector<std::pair<std::string, int>> uses;  // (recipe, calls per step)
  size_t first = 0;                               // order of first appearance
};

void register_entry(const std::shared_ptr<MicroShared>& sh, const Entry& e) {
  std::string recipes, label = "per step:";
  for (const auto& [recipe, calls] : e.uses) {
    recipes += (recipes.empty() ? "" : "+") + recipe;
    label += " " + recipe + " x" + std::to_string(calls);
  }
  const std::string name = e.c.op + "/" + recipes + "/" + e.c.shape;
  const OpCase c = e.c;
  benchmark::RegisterBenchmark(name.c_str(), [sh, name, c, label](benchmark::State& state) {
    bool fresh = false;
    const std::vector<void*>* p = micro_buffers(state, *sh, name, c.buffers, &fresh);
    if (!p) return;
    // One untimed call on fresh buffers: whatever a backend creates at a shape's first
    // call is not timed (Google Benchmark may time a single iteration).
    if (fresh && c.prepare) c.prepare(*sh->ops, *p);
    if (fresh) c.call(*sh->ops, *p);
    const double seconds = timed_loop(state, [&] { c.call(*sh->ops, *p); });
    report_work(state, c.work, sh->roofline, seconds, label);
  })->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

int register_op_benchmarks(const std::shared_ptr<MicroShared>& sh,
                           const std::vector<TracedStep>& steps) {
  std::map<std::string, Entry> entries;  // by OpCase::key()
  for (const TracedStep& t : steps)
    for (size_t i = 0; i < t.step.cases.size(); ++i) {
      const OpCase& c = t.step.cases[i];
      auto [it, fresh] = entries.try_emplace(c.key());
      if (fresh) {
        it->second.first = entries.size();
        it->second.c = c;
      }
      it->second.uses.emplace_back(t.recipe, t.step.calls[i]);
    }
  std::vector<const Entry*> order;
  for (const auto& [key, e] : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    const size_t ra = op_rank(a->c.op), rb = op_rank(b->c.op);
    return ra != rb ? ra < rb : a->first < b->first;
  });
  for (const Entry* e : order) register_entry(sh, *e);
  return static_cast<int>(order.size());
}

}  // namespace noeira
