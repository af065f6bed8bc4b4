// The `ansor` cost model (see cost_model.h): XGBoost through its C API.
#include <wm/costmodel/ansor_features.h>
#include <wm/costmodel/cost_model.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/rng.h>

#include <xgboost/c_api.h>

#include <cmath>
#include <limits>
#include <map>

namespace wm::costmodel {

const OptionTable<AnsorModelOptions>& ansorModelOptionTable() {
  using A = AnsorModelOptions;
  static const OptionTable<A> t = {
      {"xgb_min_samples", "--xgb-min-samples",
       "ansor: predictions are random until this many samples", &A::minSamples, 0, 1e9},
      {"xgb_rounds", "--xgb-rounds", "ansor: boosting rounds per retraining", &A::rounds, 1, 1e6},
      {"xgb_max_depth", "--xgb-max-depth", "ansor: tree depth", &A::maxDepth, 1, 64},
      {"xgb_eta", "--xgb-eta", "ansor: learning rate", &A::eta, 0, 1},
      {"xgb_gamma", "--xgb-gamma", "ansor: minimum loss reduction of a split", &A::gamma, 0, 1e9},
      {"xgb_min_child_weight", "--xgb-min-child-weight", "ansor: minimum child weight",
       &A::minChildWeight, 0, 1e9},
  };
  return t;
}

namespace {

void xgCheck(int rc, const char* what) {
  if (rc != 0) throw InternalError(std::string("XGBoost ") + what + ": " + XGBGetLastError());
}

struct Sample {
  std::string task;
  std::vector<FeatureRow> rows;
  double cost; // <= 0: failed
};

class AnsorModel : public CostModel {
public:
  explicit AnsorModel(AnsorModelOptions o) : opts_(o), rng_(o.seed) {}
  ~AnsorModel() override {
    if (booster_) XGBoosterFree(booster_);
  }
  std::string name() const override { return "ansor"; }

  void update(const std::vector<MeasuredRecord>& records) override {
    for (auto& r : records) {
      if (!r.dag) continue;
      auto rep = sched::replay(*r.dag, r.steps);
      if (!rep.error.empty()) continue;
      std::vector<FeatureRow> rows;
      try {
        rows = extractAnsorFeatures(lower::lower(rep.state));
      } catch (const std::exception&) {
        continue;
      }
      if (rows.empty()) continue;
      samples_.push_back({r.taskKey, std::move(rows), r.cost});
    }
    int valid = 0;
    for (auto& s : samples_) valid += s.cost > 0 && std::isfinite(s.cost);
    if (valid >= opts_.minSamples) train();
  }

  std::vector<double> predict(const std::string&,
                              const std::vector<sched::State>& states) override {
    std::vector<double> out(states.size());
    if (!booster_) {
      for (auto& v : out) v = rng_.uniform01();
      return out;
    }
    std::vector<float> data;
    std::vector<size_t> owner;
    for (size_t i = 0; i < states.size(); ++i) {
      std::vector<FeatureRow> rows;
      try {
        rows = extractAnsorFeatures(lower::lower(states[i]));
      } catch (const std::exception&) {
        out[i] = -std::numeric_limits<double>::infinity(); // failed extraction
        continue;
      }
      for (auto& r : rows) {
        data.insert(data.end(), r.begin(), r.end());
        owner.push_back(i);
      }
    }
    if (owner.empty()) return out;
    DMatrixHandle m;
    xgCheck(XGDMatrixCreateFromMat(data.data(), owner.size(), kAnsorFeatures, std::nanf(""), &m),
            "matrix");
    bst_ulong n;
    const float* pred;
    xgCheck(XGBoosterPredict(booster_, m, 0, 0, 0, &n, &pred), "predict");
    for (bst_ulong r = 0; r < n; ++r)
      if (std::isfinite(out[owner[r]])) out[owner[r]] += pred[r]; // pack-sum
    XGDMatrixFree(m);
    return out;
  }

private:
  void train() {
    std::map<std::string, double> best;
    for (auto& s : samples_)
      if (s.cost > 0 && std::isfinite(s.cost)) {
        auto it = best.find(s.task);
        if (it == best.end() || s.cost < it->second) best[s.task] = s.cost;
      }
    std::vector<float> data;
    std::vector<size_t> group; // sample of each row
    std::vector<double> label;
    for (size_t i = 0; i < samples_.size(); ++i) {
      auto& s = samples_[i];
      label.push_back(s.cost > 0 && std::isfinite(s.cost) ? best[s.task] / s.cost : 0.0);
      for (auto& r : s.rows) {
        data.insert(data.end(), r.begin(), r.end());
        group.push_back(i);
      }
    }
    DMatrixHandle m;
    xgCheck(XGDMatrixCreateFromMat(data.data(), group.size(), kAnsorFeatures, std::nanf(""), &m),
            "matrix");
    if (booster_) XGBoosterFree(booster_);
    booster_ = nullptr;
    xgCheck(XGBoosterCreate(&m, 1, &booster_), "create");
    auto set = [&](const char* k, const std::string& v) {
      xgCheck(XGBoosterSetParam(booster_, k, v.c_str()), k);
    };
    set("max_depth", std::to_string(opts_.maxDepth));
    set("eta", std::to_string(opts_.eta));
    set("gamma", std::to_string(opts_.gamma));
    set("min_child_weight", std::to_string(opts_.minChildWeight));
    set("nthread", "1");
    set("seed", std::to_string(opts_.seed % 2147483647));
    set("verbosity", "0");
    std::vector<float> grad(group.size()), hess(group.size());
    for (int it = 0; it < opts_.rounds; ++it) {
      bst_ulong n;
      const float* pred;
      xgCheck(XGBoosterPredict(booster_, m, 0, 0, 1, &n, &pred), "predict");
      std::vector<double> sum(samples_.size(), 0.0);
      for (bst_ulong r = 0; r < n; ++r) sum[group[r]] += pred[r];
      // Pack-sum squared error, weighted by the label (Ansor's), with a floor so that failed
      // programs (label 0) are still pushed towards 0.
      for (size_t r = 0; r < group.size(); ++r) {
        size_t g = group[r];
        double w = std::max(label[g], 0.05);
        grad[r] = static_cast<float>(2 * w * (sum[g] - label[g]));
        hess[r] = static_cast<float>(2 * w);
      }
      xgCheck(XGBoosterBoostOneIter(booster_, m, grad.data(), hess.data(), grad.size()), "boost");
    }
    XGDMatrixFree(m);
  }

  AnsorModelOptions opts_;
  Rng rng_;
  std::vector<Sample> samples_;
  BoosterHandle booster_ = nullptr;
};

} // namespace

std::unique_ptr<CostModel> makeAnsorModel(const AnsorModelOptions& opts) {
  return std::make_unique<AnsorModel>(opts);
}

} // namespace wm::costmodel
