// The records of harness/results/records.h to and from JSON, the measurements: runs,
// variants, benchmarks (the file's frame: results/context_json.cpp). These two files are
// the one place that knows the results file's keys (results/SCHEMA.md). Objects are
// std::map-backed, so keys come out sorted whatever the order they are set in here.
#include "harness/results/json_fields.h"
#include "harness/results/records.h"

namespace noeira {

using namespace json_fields;

namespace {

// ---- Writing ----

json timer_json(const TimerStats& s) {
  return {{"median_ms", s.median_ms}, {"q1_ms", s.q1_ms}, {"q3_ms", s.q3_ms},
          {"cv", number_or_null(s.cv)}, {"n", s.n}};
}

json timer_json(const TimerRecord& t) {
  json j = timer_json(t.stats);
  j["samples_ms"] = t.samples_ms;
  if (t.sum_samples_ms) j["sum_samples_ms"] = *t.sum_samples_ms;
  return j;
}

template <class T>
json timers_json(const TimerSet<T>& t) {
  json out = json::object();
  for (TimerKind k : {TimerKind::kWall, TimerKind::kDevice, TimerKind::kEvent})
    out[timer_name(k)] = t[k] ? timer_json(*t[k]) : json(nullptr);
  return out;
}

json overhead_stats_json(const CuptiOverheadStats& o) {
  return {{"wall_on_ms", o.wall_on_ms}, {"wall_off_ms", o.wall_off_ms},
          {"ratio", number_or_null(o.ratio)}};
}

json score_json(const Nullable<ScoreStats>& s) {
  if (!s) return nullptr;
  return {{"mean", number_or_null(s->mean)}, {"std", number_or_null(s->std)}, {"n", s->n},
          {"olympic_mean", number_or_null(s->olympic_mean)}};
}

json twin_impl_json(const TwinImpl& t) {
  json out = json::object();
  for (const auto& [key, v] : {std::pair{"torch_version", &t.torch_version}, {"adam_impl", &t.adam_impl},
                               {"attention_impl", &t.attention_impl}, {"compile_impl", &t.compile_impl}})
    if (*v) out[key] = **v;
  if (t.compiled_graphs) out["compiled_graphs"] = *t.compiled_graphs;
  if (t.graph_breaks) out["graph_breaks"] = *t.graph_breaks;
  return out;
}

json parity_json(const ParityRecord& p) {
  json j = {{"steps", p.steps}, {"max_rel_dev", number_or_null(p.max_rel_dev)}, {"bound", p.bound},
            {"ours", numbers_or_nulls(p.ours)}, {"twin", numbers_or_nulls(p.twin)}, {"passed", p.passed}};
  if (p.early) {
    j["early_steps"] = p.early->steps;
    j["early_max_rel_dev"] = number_or_null(p.early->max_rel_dev);
    j["early_bound"] = p.early->bound;
  }
  return j;
}

json seed_agreement_json(const SeedAgreementRecord& s) {
  return {{"test", s.test}, {"statistic", s.statistic}, {"p_value", s.p_value}, {"agree", s.agree},
          {"note", s.note}};
}

// ---- Reading ----

TimerStats stats_from(const json& t) {
  return {t.at("median_ms").get<double>(), t.at("q1_ms").get<double>(), t.at("q3_ms").get<double>(),
          number(t, "cv"), t.at("n").get<int64_t>()};
}

TimerRecord timer_from(const json& t) {
  TimerRecord r;
  r.samples_ms = numbers(t.at("samples_ms"));
  r.stats = stats_from(t);
  if (const json* sum = field(t, "sum_samples_ms"); sum && sum->is_array()) r.sum_samples_ms = numbers(*sum);
  return r;
}

template <class T>
TimerSet<T> timers_from(const json& timers, T (*read)(const json&)) {
  TimerSet<T> set;
  for (TimerKind k : {TimerKind::kWall, TimerKind::kDevice, TimerKind::kEvent})
    if (const json* t = field(timers, timer_name(k)); t && t->is_object()) set[k] = read(*t);
  return set;
}

CuptiOverheadStats overhead_stats_from(const json& o) {
  return {o.at("wall_on_ms").get<double>(), o.at("wall_off_ms").get<double>(), number(o, "ratio")};
}

Nullable<ScoreStats> score_from(const json& s) {
  if (!s.is_object()) return std::nullopt;
  return ScoreStats{number(s, "mean"), number(s, "std"), s.at("n").get<int64_t>(),
                    number(s, "olympic_mean")};
}

TwinImpl twin_impl_from(const json& t) {
  return {string(t, "torch_version"), string(t, "adam_impl"), string(t, "attention_impl"),
          string(t, "compile_impl"), integer(t, "compiled_graphs"), integer(t, "graph_breaks")};
}

ClockReading clock_from(const json& c) {
  ClockReading r;
  r.available = field(c, "available") && c.at("available").is_boolean() && c.at("available").get<bool>();
  r.why = string(c, "why").value_or("");
  if (const auto sm = integer(c, "sm_mhz")) r.sm_mhz = static_cast<unsigned>(*sm);
  if (const auto mem = integer(c, "mem_mhz")) r.mem_mhz = static_cast<unsigned>(*mem);
  if (const json* bits = field(c, "reasons"); bits && bits->is_number_unsigned()) r.reasons = bits->get<uint64_t>();
  if (const json* a = field(c, "active"); a && a->is_array())
    for (const json& name : *a)
      if (name.is_string()) r.active.push_back(name.get<std::string>());
  return r;
}

ParityRecord parity_from(const json& p) {
  ParityRecord r;
  r.steps = p.at("steps").get<int64_t>();
  r.max_rel_dev = number(p, "max_rel_dev");
  r.bound = p.at("bound").get<double>();
  r.passed = p.at("passed").get<bool>();
  r.ours = numbers_or_nulls(p.at("ours"));
  r.twin = numbers_or_nulls(p.at("twin"));
  if (p.contains("early_steps"))
    r.early = ParityRecord::Early{p.at("early_steps").get<int64_t>(), number(p, "early_max_rel_dev"),
                                  p.at("early_bound").get<double>()};
  return r;
}

SeedAgreementRecord seed_agreement_from(const json& s) {
  return {s.at("test").get<std::string>(), s.at("note").get<std::string>(),
          s.at("statistic").get<double>(), s.at("p_value").get<double>(), s.at("agree").get<bool>()};
}

// ---- Run order and machine load ----

json cpu_load_json(const CpuLoadWindow& w) {
  return {{"steal_fraction", number_or_null(w.steal_fraction)},
          {"loadavg_1m_start", number_or_null(w.loadavg_start)},
          {"loadavg_1m_end", number_or_null(w.loadavg_end)}};
}

CpuLoadWindow cpu_load_from(const json& j) {
  return {number(j, "steal_fraction"), number(j, "loadavg_1m_start"), number(j, "loadavg_1m_end")};
}

// fp32_basis: absent in files written before it (their fp32 was the CUDA cores' rate).
PeakFlops peak_from(const json& p) {
  const std::string basis = text(p, "fp32_basis");
  return {number(p, "fp32"), number(p, "bf16"), text(p, "device"), basis.empty() ? "fp32" : basis};
}

}  // namespace

void to_json(json& j, const ClockReading& r) {
  if (!r.available) {
    j = {{"available", false}, {"why", r.why}};
    return;
  }
  j = {{"available", true}, {"sm_mhz", r.sm_mhz}, {"mem_mhz", r.mem_mhz},
       {"reasons", r.reasons}, {"active", r.active}};
}


void to_json(json& j, const CuptiOverhead& o) {
  j = overhead_stats_json(o.stats);
  j["samples_on_ms"] = o.samples_on_ms;
}

void to_json(json& j, const RunRecord& r) {
  j = {{"seed", r.seed},
       {"timers", timers_json(r.timers)},
       {"test_top1", number_or_null(r.test_top1)},
       {"test_loss", number_or_null(r.test_loss)},
       {"train_loss", number_or_null(r.train_loss)},
       {"losses", numbers_or_nulls(r.losses)},
       {"steps", r.steps}};
  if (r.cupti_overhead) j["cupti_overhead"] = *r.cupti_overhead ? json(**r.cupti_overhead) : json(nullptr);
  if (r.planned_flops_per_step) j["planned_flops_per_step"] = *r.planned_flops_per_step;
  if (r.note) j["note"] = *r.note;
  if (r.compile_seconds) j["compile_seconds"] = number_or_null(*r.compile_seconds);
  if (r.twin_impl) j["twin_impl"] = twin_impl_json(*r.twin_impl);
  if (r.sequence) j["sequence"] = *r.sequence;
  if (r.cpu_load) j["cpu_load"] = cpu_load_json(*r.cpu_load);
  // Memory, time to target, energy (harness/results/resource_records.h).
  if (r.memory) j["memory"] = memory_json(*r.memory);
  if (r.time_to_target) j["time_to_target"] = time_to_target_json(*r.time_to_target);
  if (r.energy) j["energy"] = energy_json(*r.energy);
}

void from_json(const json& j, RunRecord& r) {
  r.seed = j.at("seed").get<uint64_t>();
  r.timers = timers_from<TimerRecord>(j.at("timers"), timer_from);
  r.test_top1 = number(j, "test_top1");
  r.test_loss = number(j, "test_loss");
  r.train_loss = number(j, "train_loss");
  r.losses = numbers_or_nulls(j.at("losses"));
  r.steps = j.at("steps").get<int64_t>();
  if (j.contains("cupti_overhead")) {
    const json& o = j.at("cupti_overhead");
    r.cupti_overhead = o.is_object() ? Nullable<CuptiOverhead>(CuptiOverhead{
                                           overhead_stats_from(o), numbers(o.at("samples_on_ms"))})
                                     : std::nullopt;
  }
  if (const auto f = number(j, "planned_flops_per_step")) r.planned_flops_per_step = *f;
  r.note = string(j, "note");
  if (j.contains("compile_seconds") && (j.at("compile_seconds").is_null() || j.at("compile_seconds").is_number()))
    r.compile_seconds = number(j, "compile_seconds");
  if (const json* t = field(j, "twin_impl"); t && t->is_object()) r.twin_impl = twin_impl_from(*t);
  r.sequence = integer(j, "sequence");
  if (const json* c = field(j, "cpu_load"); c && c->is_object()) r.cpu_load = cpu_load_from(*c);
  // Memory, time to target, energy (harness/results/resource_records.h).
  if (const json* m = field(j, "memory")) r.memory = memory_from(*m);
  if (const json* t = field(j, "time_to_target")) r.time_to_target = time_to_target_from(*t);
  if (const json* e = field(j, "energy")) r.energy = energy_from(*e);
}

void to_json(json& j, const VariantSummary& s) {
  j = {{"timers", timers_json(s.timers)},
       {"cupti_overhead", s.cupti_overhead ? overhead_stats_json(*s.cupti_overhead) : json(nullptr)},
       {"test_top1", score_json(s.test_top1)},
       {"test_loss", score_json(s.test_loss)}};
}

void to_json(json& j, const VariantRecord& v) {
  j = {{"name", v.name},         {"impl", v.impl},
       {"dtype", v.dtype},       {"target", v.target},
       {"available", v.available}, {"unavailable_reason", string_or_null(v.unavailable_reason)},
       {"error", string_or_null(v.error)}, {"runs", v.runs},
       {"summary", v.summary}};
  if (v.pending_seeds) j["pending_seeds"] = *v.pending_seeds;
  if (v.clocks)
    j["clocks"] = {{"before", v.clocks->before}, {"after", v.clocks->after}, {"warning", v.clocks->warning}};
}

void from_json(const json& j, VariantRecord& v) {
  v.name = j.at("name").get<std::string>();
  v.impl = j.at("impl").get<std::string>();
  v.dtype = j.at("dtype").get<std::string>();
  v.target = j.at("target").get<std::string>();
  v.available = j.at("available").get<bool>();
  v.unavailable_reason = string(j, "unavailable_reason");
  v.error = string(j, "error");
  v.runs = j.at("runs").get<std::vector<RunRecord>>();
  const json& s = j.at("summary");
  v.summary.timers = timers_from<TimerStats>(s.at("timers"), stats_from);
  if (const json* o = field(s, "cupti_overhead"); o && o->is_object()) v.summary.cupti_overhead = overhead_stats_from(*o);
  v.summary.test_top1 = score_from(s.at("test_top1"));
  v.summary.test_loss = score_from(s.at("test_loss"));
  if (j.contains("pending_seeds")) v.pending_seeds = j.at("pending_seeds").get<std::vector<uint64_t>>();
  if (const json* c = field(j, "clocks"); c && c->is_object())
    v.clocks = VariantClocks{clock_from(c->value("before", json())), clock_from(c->value("after", json())),
                             text(*c, "warning")};
}



void to_json(json& j, const BenchmarkRecord& b) {
  j = {{"model", b.model},
       {"dataset", b.dataset},
       {"recipe", b.recipe},
       {"recipe_hash", b.recipe_hash},
       {"variants", b.variants},
       {"parity", b.parity ? parity_json(*b.parity) : json(nullptr)},
       {"seed_agreement", b.seed_agreement ? seed_agreement_json(*b.seed_agreement) : json(nullptr)}};
  if (b.tokens_per_step) j["tokens_per_step"] = *b.tokens_per_step;
  if (b.flops_per_step) j["flops_per_step"] = *b.flops_per_step;
  if (b.peak_flops) {
    json& p = j["peak_flops"] = {{"device", b.peak_flops->device},
                                 {"fp32_basis", b.peak_flops->fp32_basis}};
    if (b.peak_flops->fp32) p["fp32"] = *b.peak_flops->fp32;
    if (b.peak_flops->bf16) p["bf16"] = *b.peak_flops->bf16;
  }
  if (b.profile) j["profile"] = profile_json(*b.profile);
}

void from_json(const json& j, BenchmarkRecord& b) {
  b.model = j.at("model").get<std::string>();
  b.dataset = j.at("dataset").get<std::string>();
  b.recipe = j.at("recipe");
  b.recipe_hash = j.at("recipe_hash").get<std::string>();
  b.variants = j.at("variants").get<std::vector<VariantRecord>>();
  if (const json* p = field(j, "parity")) b.parity = parity_from(*p);
  if (const json* s = field(j, "seed_agreement")) b.seed_agreement = seed_agreement_from(*s);
  b.tokens_per_step = integer(j, "tokens_per_step");
  if (const auto f = number(j, "flops_per_step")) b.flops_per_step = *f;
  if (const json* p = field(j, "peak_flops"); p && p->is_object()) b.peak_flops = peak_from(*p);
  if (const json* p = field(j, "profile"); p && p->is_object()) b.profile = profile_from(*p);
}

}  // namespace noeira
