#include "harness/results/profile_records.h"

#include "harness/results/json_fields.h"

namespace noeira {

using nlohmann::json;
using namespace json_fields;

const ProfileCategoryRecord* ProfileSideRecord::category(const std::string& name) const {
  for (const ProfileCategoryRecord& c : categories)
    if (c.category == name) return &c;
  return nullptr;
}

json profile_json(const ProfileRecord& p) {
  json sides = json::array();
  for (const ProfileSideRecord& s : p.sides) {
    json cats = json::array(), ops = json::array();
    for (const ProfileCategoryRecord& c : s.categories)
      cats.push_back({{"category", c.category}, {"ms_per_step", c.ms_per_step},
                      {"flops_per_step", c.flops_per_step}, {"bytes_per_step", c.bytes_per_step}});
    for (const ProfileOpRecord& o : s.top_ops)
      ops.push_back({{"op", o.op}, {"shape", o.shape}, {"category", o.category},
                     {"ms_per_step", o.ms_per_step}, {"calls_per_step", o.calls_per_step}});
    sides.push_back({{"side", s.side}, {"available", s.available}, {"reason", s.reason},
                     {"clock", s.clock}, {"steps", s.steps}, {"step_ms", s.step_ms},
                     {"attributed_ms", s.attributed_ms}, {"categories", cats}, {"top_ops", ops},
                     {"unmapped", s.unmapped}, {"trace", s.trace}});
  }
  return {{"variant", p.variant}, {"warmup", p.warmup}, {"steps", p.steps},
          {"threads", p.threads}, {"sides", sides}};
}

ProfileRecord profile_from(const json& j) {
  ProfileRecord p;
  p.variant = text(j, "variant");
  p.warmup = integer(j, "warmup").value_or(0);
  p.steps = integer(j, "steps").value_or(0);
  p.threads = static_cast<int>(integer(j, "threads").value_or(0));
  if (const json* sides = field(j, "sides"); sides && sides->is_array())
    for (const json& sj : *sides) {
      ProfileSideRecord s;
      s.side = text(sj, "side");
      s.available = sj.value("available", true);
      s.reason = text(sj, "reason");
      s.clock = text(sj, "clock");
      s.steps = integer(sj, "steps").value_or(0);
      s.step_ms = number(sj, "step_ms").value_or(0);
      s.attributed_ms = number(sj, "attributed_ms").value_or(0);
      if (const json* c = field(sj, "categories"); c && c->is_array())
        for (const json& cj : *c)
          s.categories.push_back({text(cj, "category"), number(cj, "ms_per_step").value_or(0),
                                  number(cj, "flops_per_step").value_or(0),
                                  number(cj, "bytes_per_step").value_or(0)});
      if (const json* o = field(sj, "top_ops"); o && o->is_array())
        for (const json& oj : *o)
          s.top_ops.push_back({text(oj, "op"), text(oj, "shape"), text(oj, "category"),
                               number(oj, "ms_per_step").value_or(0),
                               number(oj, "calls_per_step").value_or(0)});
      if (const json* u = field(sj, "unmapped"); u && u->is_array())
        for (const json& n : *u)
          if (n.is_string()) s.unmapped.push_back(n.get<std::string>());
      s.trace = text(sj, "trace");
      p.sides.push_back(std::move(s));
    }
  return p;
}

Status check_profile(const json& j, const std::string& path) {
  if (!j.is_object()) return make_error(path + ": not an object");
  const json* sides = field(j, "sides");
  if (!sides || !sides->is_array()) return make_error(path + ".sides: missing or not an array");
  for (size_t i = 0; i < sides->size(); ++i) {
    const json& s = (*sides)[i];
    const std::string p = path + ".sides[" + std::to_string(i) + "]";
    if (!s.is_object() || !s.contains("side") || !s["side"].is_string())
      return make_error(p + ".side: missing or not a string");
    if (s.value("available", true)) {
      for (const char* key : {"step_ms", "attributed_ms"})
        if (!s.contains(key) || !s[key].is_number()) return make_error(p + "." + key + ": not a number");
      if (!s.contains("categories") || !s["categories"].is_array())
        return make_error(p + ".categories: missing or not an array");
    }
  }
  return {};
}

}  // namespace noeira
