// Our variants, typed: a point of the matrix `run` times (nvbench's typed axes). Each
// axis is a list of values; their product is the matrix, and a point that cannot run
// here says why (nvbench's state.skip("reason")) instead of being tested for by name.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/dtype.h"
#include "models/family.h"
#include "nn/error.h"

namespace noeira {

// Where a step's batch is built: on the device (inside a captured graph too), or on the
// host and copied in (the baseline of the device-built batch).
enum class BatchSource { kDevice, kHost };

struct Variant {
  DType dtype = DType::kF32;  // kF32, or kBF16: bf16 autocast with fp32 master weights
  bool graph = false;         // the step captured once as a CUDA graph and replayed
  BatchSource batch = BatchSource::kDevice;

  // "eager", "graph", "bf16", "bf16+graph", "host-batch": the results' variant names.
  std::string name() const;
  // "fp32" | "bf16", as results record a variant's precision.
  std::string dtype_name() const;
  bool operator==(const Variant&) const = default;
};

// The values of each axis. The host-built batch is a baseline of the device-built one, so
// it is measured at one point only, fp32 and eager: the product crosses it with nothing.
struct VariantAxes {
  std::vector<DType> dtype = {DType::kF32};
  std::vector<bool> graph = {false, true};
  std::vector<BatchSource> batch = {BatchSource::kDevice};
};

// Every point of the axes' product, in table order (batch, then dtype, then graph).
std::vector<Variant> axis_product(const VariantAxes& axes);

// The default matrix: fp32 eager and graph; bf16 runs add the bf16 points (the fp32 ones
// are their baseline); a family with a host-built baseline adds it.
VariantAxes default_axes(DType requested, const FamilyTraits& family);

// Why a point cannot run: on this target it is listed in the results as unavailable with
// the reason; a point the model's family does not have is refused when asked for.
struct Skip {
  enum class Kind { kTarget, kFamily };
  Kind kind = Kind::kTarget;
  std::string reason;
};

// Where the matrix runs: the target and the model (whose family decides its axes).
struct MatrixPlace {
  bool gpu = false;
  FamilyTraits family;
  std::string model;
};

std::optional<Skip> skip_reason(const Variant& v, const MatrixPlace& where);

struct PlannedVariant {
  Variant variant;
  std::optional<Skip> skip;  // nullopt: it runs
};

// The matrix: `names` (--variants, parsed once) or, when empty, the default axes at
// `dtype`, each point with its skip. Errors, for the command line: a name that is no
// point of any matrix, a point the model's family does not have.
Result<std::vector<PlannedVariant>> plan_variants(const std::vector<std::string>& names,
                                                  DType dtype, const MatrixPlace& where);

}  // namespace noeira
