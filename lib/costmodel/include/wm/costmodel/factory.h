// Cost models by name: the one place that knows every model and how it is made from the
// options (`tune --cost-model`, `eval-model --model`, the YAML of `bench`).
#pragma once

#include <wm/costmodel/cost_model.h>
#include <wm/costmodel/world_model.h>
#include <wm/support/options.h>
#include <wm/target/target.h>

#include <memory>
#include <string>

namespace wm::costmodel {

struct CostModelOptions {
  std::string name = "random"; ///< random | ansor | wm
  std::string init =
      "default";     ///< wm: "default" (the shipped checkpoint), "none" (fresh) or a path
  uint64_t seed = 0; ///< set from the tuner's seed
  AnsorModelOptions ansor;
  WorldModelOptions wm;
};
/// Keys and flags of the model choice (--cost-model, --init); the models' own options have
/// their tables (ansorModelOptionTable, worldModelOptionTable).
const OptionTable<CostModelOptions>& costModelOptionTable();

/// Whether this build has the world model (libtorch).
bool haveWorldModel();

/// --init as a checkpoint path: "default" is the shipped checkpoint (empty, with a warning,
/// when there is none), "none" is empty (fresh weights); a path must exist (UserError).
std::string resolveWorldModelInit(const std::string& init);

/// The model o.name names, for the target; UserError for an unknown name or a model this
/// build lacks.
std::unique_ptr<CostModel> makeCostModel(const CostModelOptions& o, const target::Target& t);

} // namespace wm::costmodel
