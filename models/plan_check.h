// A recipe's model planned as a trainer plans it (every buffer's shape and offset at the
// recipe's batch, the backend answering plan-time queries), without data and without
// allocating: for the fuzz target over recipes and for tests of what a recipe's sizes do.
#pragma once
#include "kernels/ops.h"
#include "models/recipe.h"
#include "nn/memory_plan.h"
#include "nn/module.h"

namespace noeira {

// The plan of `model` (built from `recipe`) plus the input batch, or the module's
// PlanError as an Error. A plan whose sizes passed 64 bits comes back marked overflowed.
Result<MemoryPlan> plan_recipe_model(Module& model, const Recipe& recipe, Ops& ops);

}  // namespace noeira
