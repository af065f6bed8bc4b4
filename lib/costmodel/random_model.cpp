// The `random` cost model: seeded uniform scores; learns nothing.
#include <wm/costmodel/cost_model.h>
#include <wm/support/rng.h>

namespace wm::costmodel {

namespace {
class RandomModel : public CostModel {
public:
  explicit RandomModel(uint64_t seed) : rng_(seed) {}
  std::string name() const override { return "random"; }
  void update(const std::vector<MeasuredRecord>&) override {}
  std::vector<double> predict(const std::string&,
                              const std::vector<sched::State>& states) override {
    std::vector<double> out;
    for (size_t i = 0; i < states.size(); ++i) out.push_back(rng_.uniform01());
    return out;
  }

private:
  Rng rng_;
};
} // namespace

std::unique_ptr<CostModel> makeRandomModel(uint64_t seed) {
  return std::make_unique<RandomModel>(seed);
}

} // namespace wm::costmodel
