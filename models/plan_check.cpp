#include "models/plan_check.h"

#include "models/family.h"

namespace noeira {

Result<MemoryPlan> plan_recipe_model(Module& model, const Recipe& recipe, Ops& ops) {
  MemoryPlan memory;
  ParamRegistry params;
  int64_t scratch = 0;
  size_t workspace = 0;
  double flops = 0;
  const bool ids = family_traits(recipe).language_model;  // token ids in, (T) per sample
  PlanContext pc{memory, params, recipe.batch, false, "", NoAMP,
                 ids ? DType::kI32 : DType::kF32, &scratch, &ops, &workspace, 0, &flops};
  try {
    model.plan(pc, recipe.input_shape);
  } catch (const PlanError& e) {
    return make_error(e.what());
  }
  memory.reserve(MemCategory::kActivations, recipe.input_shape.with_batch(recipe.batch),
                 pc.in_dtype);
  memory.reserve(MemCategory::kWorkspace, Shape{scratch}, DType::kF32);
  memory.reserve_bytes(MemCategory::kWorkspace, workspace);
  return memory;
}

}  // namespace noeira
