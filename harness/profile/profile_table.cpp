#include "harness/profile/profile_table.h"

#include <cstdio>
#include <vector>

#include "harness/report/text_table.h"

namespace noeira {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// GFLOP/s where FLOPs are counted, else GB/s; "" for no time.
std::string rate(const ProfileCategoryRecord& c) {
  if (c.ms_per_step <= 0) return "";
  if (c.flops_per_step > 0) return fixed(c.flops_per_step / c.ms_per_step / 1e6, 1) + " GFLOP/s";
  if (c.bytes_per_step > 0) return fixed(c.bytes_per_step / c.ms_per_step / 1e6, 1) + " GB/s";
  return "";
}

std::string share(double ms, double step_ms) {
  return step_ms > 0 ? fixed(100.0 * ms / step_ms, 1) + "%" : "";
}

}  // namespace

std::string render_profile_table(const ProfileRecord& p) {
  std::vector<const ProfileSideRecord*> sides;
  std::string out;
  for (const ProfileSideRecord& s : p.sides) {
    if (s.available)
      sides.push_back(&s);
    else
      out += s.side + ": not profiled (" + s.reason + ")\n";
  }
  if (sides.empty()) return out;
  std::vector<std::string> header = {"category"};
  for (const ProfileSideRecord* s : sides) {
    header.push_back(s->side + " ms/step");
    header.push_back("share");
    header.push_back("rate");
  }
  TableRows t = {header};
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  const ProfileSideRecord& first = *sides.front();
  for (const ProfileCategoryRecord& c : first.categories) {
    bool any = false;
    for (const ProfileSideRecord* s : sides)
      if (const ProfileCategoryRecord* sc = s->category(c.category); sc && sc->ms_per_step > 0) any = true;
    if (!any) continue;
    std::vector<std::string> row = {c.category};
    for (const ProfileSideRecord* s : sides) {
      const ProfileCategoryRecord* sc = s->category(c.category);
      const double ms = sc ? sc->ms_per_step : 0.0;
      row.push_back(fixed(ms, 3));
      row.push_back(share(ms, s->step_ms));
      row.push_back(sc ? rate(*sc) : "");
    }
    t.push_back(row);
  }
  std::vector<std::string> attributed = {"attributed"}, rest = {"unattributed"}, step = {"step (measured)"};
  for (const ProfileSideRecord* s : sides) {
    attributed.insert(attributed.end(), {fixed(s->attributed_ms, 3), share(s->attributed_ms, s->step_ms), ""});
    rest.insert(rest.end(), {fixed(s->unattributed_ms(), 3), share(s->unattributed_ms(), s->step_ms), ""});
    step.insert(step.end(), {fixed(s->step_ms, 3), "100%", s->clock});
  }
  t.push_back(attributed);
  t.push_back(rest);
  t.push_back(step);
  out += "where the step's time goes (" + std::to_string(p.steps) + " steps after " +
         std::to_string(p.warmup) + " warm-up, " + std::to_string(p.threads) + " threads; rates: " +
         "our FLOPs and operand bytes per category, for every side; a convolution's FLOPs " +
         "are the direct count, so Winograd shapes show an effective rate)\n" +
         render_text_table(t, right);
  for (const ProfileSideRecord* s : sides) {
    out += "\ntop ops, " + s->side + ":\n";
    TableRows ops = {{"op", "category", "ms/step", "calls/step", "shapes"}};
    size_t shown = 0;
    for (const ProfileOpRecord& o : s->top_ops) {
      if (++shown > 10) break;
      ops.push_back({o.op, o.category, fixed(o.ms_per_step, 3), fixed(o.calls_per_step, 1),
                   o.shape.size() > 70 ? o.shape.substr(0, 67) + "..." : o.shape});
    }
    out += render_text_table(ops, {false, false, true, true, false});
    if (!s->unmapped.empty()) {
      out += "  in \"other\" (no category for these names):";
      for (const std::string& u : s->unmapped) out += " " + u + ";";
      out += "\n";
    }
  }
  return out;
}

}  // namespace noeira
