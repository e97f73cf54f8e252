// The records of harness/results/records.h to and from JSON: the one place that knows
// the results file's keys (results/SCHEMA.md). Objects are std::map-backed, so keys come
// out sorted whatever the order they are set in here.
#include <cmath>

#include "harness/results/records.h"

namespace noeira {

using nlohmann::json;

namespace {

// ---- Writing ----

// NaN and infinities cannot be written in JSON: null, as the schema says.
json number_or_null(const Nullable<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

json string_or_null(const Nullable<std::string>& s) { return s ? json(*s) : json(nullptr); }

json numbers_or_nulls(const std::vector<Nullable<double>>& values) {
  json a = json::array();
  for (const Nullable<double>& v : values) a.push_back(number_or_null(v));
  return a;
}

json stats_json(const TimerStats& s) {
  return {{"median_ms", s.median_ms}, {"q1_ms", s.q1_ms}, {"q3_ms", s.q3_ms},
          {"cv", number_or_null(s.cv)}, {"n", s.n}};
}

template <class T>
json timers_json(const TimerSet<T>& t) {
  json out = json::object();
  for (TimerKind k : {TimerKind::kWall, TimerKind::kDevice, TimerKind::kEvent})
    out[timer_name(k)] = t[k] ? json(*t[k]) : json(nullptr);
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

// ---- Reading: validated fields as they are, the rest leniently ----

// obj[key] when present and not null, else nullptr.
const json* field(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

Nullable<double> number(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return v && v->is_number() ? Nullable<double>(v->get<double>()) : std::nullopt;
}

Optional<int64_t> integer(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return v && v->is_number_integer() ? Optional<int64_t>(v->get<int64_t>()) : std::nullopt;
}

Nullable<std::string> string(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return v && v->is_string() ? Nullable<std::string>(v->get<std::string>()) : std::nullopt;
}

// A value as a label: a string as it is, another value as JSON text, "" when absent.
std::string text(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  return !v ? "" : v->is_string() ? v->get<std::string>() : v->dump();
}

std::vector<double> numbers(const json& a) {
  std::vector<double> out;
  if (a.is_array())
    for (const json& x : a)
      if (x.is_number()) out.push_back(x.get<double>());
  return out;
}

std::vector<Nullable<double>> numbers_or_nulls(const json& a) {
  std::vector<Nullable<double>> out;
  if (a.is_array())
    for (const json& x : a) out.push_back(x.is_number() ? Nullable<double>(x.get<double>()) : std::nullopt);
  return out;
}

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

PeakFlops peak_from(const json& p) { return {number(p, "fp32"), number(p, "bf16"), text(p, "device")}; }

TwinContext twin_context_from(const json& t) {
  return {t.at("python").get<std::string>(), string(t, "torch_version"), t.at("available").get<bool>(),
          string(t, "reason")};
}

ContextRecord context_from(const json& c) {
  ContextRecord r;
  r.command_line = c.at("command_line").get<std::string>();
  r.git_sha = c.at("git_sha").get<std::string>();
  r.git_dirty = c.at("git_dirty").get<bool>();
  r.host = host_record(c.at("host"));
  r.build = build_record(c.at("build"));
  r.device = device_record(c.at("device"));
  r.twin = twin_context_from(c.at("twin"));
  if (const json* p = field(c, "probes"); p && p->is_object()) r.probes = *p;
  if (const json* w = field(c, "warnings"); w && w->is_array()) {
    r.warnings.emplace();
    for (const json& line : *w)
      if (line.is_string()) r.warnings->push_back(line.get<std::string>());
  }
  return r;
}

ConfigRecord config_from(const json& c) {
  const json& s = c.at("stopping");
  return {c.at("target").get<std::string>(), c.at("dtype").get<std::string>(),
          c.at("seeds").get<std::vector<uint64_t>>(), c.at("steps").get<int64_t>(),
          c.at("warmup").get<int64_t>(), c.at("threads").get<int64_t>(), c.at("quick").get<bool>(),
          {s.at("min_samples").get<int64_t>(), s.at("max_rel_noise").get<double>(),
           s.at("max_seconds").get<double>()}};
}

}  // namespace

HostRecord host_record(const json& host) {
  return {text(host, "cpu_model"), text(host, "os"), integer(host, "cores").value_or(0), host};
}

BuildRecord build_record(const json& build) {
  BuildRecord r;
  r.recorded = build;
  r.git_sha = text(build, "git_sha");
  if (const json* dirty = field(build, "git_dirty"); dirty && dirty->is_boolean()) r.git_dirty = dirty->get<bool>();
  if (const json* ob = field(build, "openblas"); ob && ob->is_object()) {
    r.has_openblas = true;
    r.openblas_core = text(*ob, "core");
  }
  if (const json* dn = field(build, "onednn"); dn && dn->is_object()) {
    r.has_onednn = true;
    r.onednn_version = text(*dn, "version");
    r.onednn_isa = text(*dn, "isa");
  }
  return r;
}

DeviceRecord device_record(const json& device) {
  const json* available = field(device, "available");
  return {available && available->is_boolean() && available->get<bool>(),
          text(device, "name"), text(device, "reason"), text(device, "sm"),
          text(device, "driver"), text(device, "runtime"), device};
}

void to_json(json& j, const ClockReading& r) {
  if (!r.available) {
    j = {{"available", false}, {"why", r.why}};
    return;
  }
  j = {{"available", true}, {"sm_mhz", r.sm_mhz}, {"mem_mhz", r.mem_mhz},
       {"reasons", r.reasons}, {"active", r.active}};
}

void to_json(json& j, const TimerStats& s) { j = stats_json(s); }

void to_json(json& j, const TimerRecord& t) {
  j = stats_json(t.stats);
  j["samples_ms"] = t.samples_ms;
  if (t.sum_samples_ms) j["sum_samples_ms"] = *t.sum_samples_ms;
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

void to_json(json& j, const ParityRecord& p) {
  j = {{"steps", p.steps}, {"max_rel_dev", number_or_null(p.max_rel_dev)}, {"bound", p.bound},
       {"ours", numbers_or_nulls(p.ours)}, {"twin", numbers_or_nulls(p.twin)}, {"passed", p.passed}};
  if (p.early) {
    j["early_steps"] = p.early->steps;
    j["early_max_rel_dev"] = number_or_null(p.early->max_rel_dev);
    j["early_bound"] = p.early->bound;
  }
}

void to_json(json& j, const SeedAgreementRecord& s) {
  j = {{"test", s.test}, {"statistic", s.statistic}, {"p_value", s.p_value}, {"agree", s.agree},
       {"note", s.note}};
}

void to_json(json& j, const BenchmarkRecord& b) {
  j = {{"model", b.model},
       {"dataset", b.dataset},
       {"recipe", b.recipe},
       {"recipe_hash", b.recipe_hash},
       {"variants", b.variants},
       {"parity", b.parity ? json(*b.parity) : json(nullptr)},
       {"seed_agreement", b.seed_agreement ? json(*b.seed_agreement) : json(nullptr)}};
  if (b.tokens_per_step) j["tokens_per_step"] = *b.tokens_per_step;
  if (b.flops_per_step) j["flops_per_step"] = *b.flops_per_step;
  if (b.peak_flops) {
    json& p = j["peak_flops"] = {{"device", b.peak_flops->device}};
    if (b.peak_flops->fp32) p["fp32"] = *b.peak_flops->fp32;
    if (b.peak_flops->bf16) p["bf16"] = *b.peak_flops->bf16;
  }
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
}

void to_json(json& j, const ContextRecord& c) {
  j = {{"command_line", c.command_line},
       {"git_sha", c.git_sha},
       {"git_dirty", c.git_dirty},
       {"host", c.host.recorded},
       {"build", c.build.recorded},
       {"device", c.device.recorded},
       {"twin",
        {{"python", c.twin.python},
         {"torch_version", string_or_null(c.twin.torch_version)},
         {"available", c.twin.available},
         {"reason", string_or_null(c.twin.reason)}}}};
  if (c.probes) j["probes"] = *c.probes;
  if (c.warnings) j["warnings"] = *c.warnings;
}

void to_json(json& j, const ResultsRecord& r) {
  const StoppingRecord& s = r.config.stopping;
  j = {{"schema_version", r.schema_version},
       {"tool", r.tool},
       {"tool_version", r.tool_version},
       {"created_utc", r.created_utc},
       {"context", r.context},
       {"config",
        {{"target", r.config.target},
         {"dtype", r.config.dtype},
         {"seeds", r.config.seeds},
         {"steps", r.config.steps},
         {"warmup", r.config.warmup},
         {"threads", r.config.threads},
         {"quick", r.config.quick},
         {"stopping",
          {{"min_samples", s.min_samples}, {"max_rel_noise", s.max_rel_noise}, {"max_seconds", s.max_seconds}}}}},
       {"benchmarks", r.benchmarks}};
  if (r.status) j["status"] = *r.status;
  if (r.stopped_by) j["stopped_by"] = string_or_null(*r.stopped_by);
}

void from_json(const json& j, ResultsRecord& r) {
  r.schema_version = j.at("schema_version").get<int64_t>();
  r.tool = j.at("tool").get<std::string>();
  r.tool_version = j.at("tool_version").get<std::string>();
  r.created_utc = j.at("created_utc").get<std::string>();
  r.context = context_from(j.at("context"));
  r.config = config_from(j.at("config"));
  r.benchmarks = j.at("benchmarks").get<std::vector<BenchmarkRecord>>();
  r.status = string(j, "status");
  if (j.contains("stopped_by")) r.stopped_by = string(j, "stopped_by");
}

}  // namespace noeira
