// Cost models by name (see factory.h).
#include <wm/costmodel/factory.h>
#include <wm/support/error.h>

#include <spdlog/spdlog.h>

#include <filesystem>

namespace wm::costmodel {

const OptionTable<CostModelOptions>& costModelOptionTable() {
  using C = CostModelOptions;
  static const OptionTable<C> t = {
      {"cost_model",
       "--cost-model",
       "Cost model: random, ansor (static features + XGBoost), wm (the world model)",
       &C::name,
       {"random", "ansor", "wm"}},
      {"init", "--init",
       "wm: checkpoint to start from ('default': the shipped one; 'none': fresh weights)",
       &C::init},
  };
  return t;
}

bool haveWorldModel() {
#ifdef WM_HAVE_TORCH
  return true;
#else
  return false;
#endif
}

std::string resolveWorldModelInit(const std::string& init) {
  if (init == "none") return "";
  if (init == "default") {
    std::string p = defaultWorldModelCheckpoint();
    if (p.empty())
      spdlog::warn("no shipped world-model checkpoint found; starting from fresh weights");
    return p;
  }
  if (!std::filesystem::exists(init)) WM_USER_ERROR() << "--init " << init << ": no such file";
  return init;
}

std::unique_ptr<CostModel> makeCostModel(const CostModelOptions& o, const target::Target& t) {
  if (o.name == "random") return makeRandomModel(o.seed);
  if (o.name == "ansor") {
    AnsorModelOptions a = o.ansor;
    a.seed = o.seed;
    return makeAnsorModel(a);
  }
  if (o.name == "wm") {
#ifdef WM_HAVE_TORCH
    WorldModelOptions w = o.wm;
    w.seed = o.seed;
    w.init = resolveWorldModelInit(o.init);
    return std::make_unique<WorldModel>(w, HardwareFeatures::of(t));
#else
    WM_USER_ERROR() << "--cost-model wm needs libtorch (build with WM_WITH_TORCH=ON)";
#endif
  }
  WM_USER_ERROR() << "unknown cost model '" << o.name << "' (random, ansor, wm)";
}

} // namespace wm::costmodel
