#include "harness/run/variant.h"

namespace noeira {

namespace {

// Every variant there is: all values of every axis.
VariantAxes every_axis() {
  return {{DType::kF32, DType::kBF16}, {false, true}, {BatchSource::kDevice, BatchSource::kHost}};
}

std::string known_names() {
  std::string s;
  for (const Variant& v : axis_product(every_axis())) s += (s.empty() ? "" : ", ") + v.name();
  return s;
}

}  // namespace

std::string Variant::name() const {
  if (batch == BatchSource::kHost) return "host-batch";
  if (dtype == DType::kBF16) return graph ? "bf16+graph" : "bf16";
  return graph ? "graph" : "eager";
}

std::string Variant::dtype_name() const { return dtype == DType::kBF16 ? "bf16" : "fp32"; }

std::vector<Variant> axis_product(const VariantAxes& axes) {
  std::vector<Variant> out;
  for (BatchSource b : axes.batch)
    for (DType d : axes.dtype)
      for (bool g : axes.graph) {
        const Variant v{d, g, b};
        if (b == BatchSource::kHost && (d != DType::kF32 || g)) continue;  // a baseline's one point
        out.push_back(v);
      }
  return out;
}

VariantAxes default_axes(DType requested, const FamilyTraits& family) {
  VariantAxes axes;
  if (requested == DType::kBF16) axes.dtype.push_back(DType::kBF16);
  if (family.host_batch) axes.batch.push_back(BatchSource::kHost);
  return axes;
}

std::optional<Skip> skip_reason(const Variant& v, const MatrixPlace& where) {
  if (v.batch == BatchSource::kHost && !where.family.host_batch)
    return Skip{Skip::Kind::kFamily,
                "host-batch is a gpt-family variant (the batch built on the host); model " +
                    where.model + " gathers its batches on the device"};
  if (v.graph && !where.gpu) return Skip{Skip::Kind::kTarget, "CUDA graphs need the gpu target"};
  return std::nullopt;
}

Result<std::vector<PlannedVariant>> plan_variants(const std::vector<std::string>& names,
                                                  DType dtype, const MatrixPlace& where) {
  std::vector<Variant> points;
  if (names.empty()) {
    points = axis_product(default_axes(dtype, where.family));
  } else {
    const std::vector<Variant> every = axis_product(every_axis());
    for (const std::string& n : names) {
      auto it = every.begin();
      while (it != every.end() && it->name() != n) ++it;
      if (it == every.end())
        return make_error("--variants: unknown variant '" + n + "'; known: " + known_names() +
                          " (gpt family)");
      if (const auto skip = skip_reason(*it, where); skip && skip->kind == Skip::Kind::kFamily)
        return make_error("--variants: " + skip->reason);
      points.push_back(*it);
    }
  }
  std::vector<PlannedVariant> planned;
  for (const Variant& v : points) planned.push_back({v, skip_reason(v, where)});
  return planned;
}

}  // namespace noeira
