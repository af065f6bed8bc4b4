// The world-model evaluator (DESIGN.md §4), behind the CostModel interface. The initial program
// of a task is encoded once (per-stage features, pooled); each candidate's schedule steps are
// rolled forward in a latent space by a small transition network (z' = z + f([z, e(a)]), or a
// GRU cell); candidates are ranked from the final latent, the pooled actions and hardware
// features. Scoring never lowers a candidate: candidates of one call are put in a trie of
// their step sequences, and each shared prefix is rolled out once, depth by depth, batched.
//
// libtorch lives in worldmodel.cpp only; this header and the featurization
// (worldmodel_features.cpp) do not include it.
#pragma once

#include <wm/costmodel/cost_model.h>
#include <wm/support/options.h>
#include <wm/target/target.h>

#include <memory>
#include <string>
#include <vector>

namespace wm::costmodel {

/// What the ranking head knows about the machine. CPU: cores, vector bits, cache sizes,
/// frequency; GPU: SMs, threads per block, shared memory, registers, warp size.
struct HardwareFeatures {
  bool gpu = false;
  int cores = 1, vectorBits = 512;
  double l1KiB = 32, l2KiB = 1024, l3KiB = 32768, ghz = 3.0;
  int sms = 0, maxThreadsPerBlock = 0, sharedKiB = 0, registersPerBlock = 0, warpSize = 0;
  /// What the target says (nothing drifts: the clock is the nominal one).
  static HardwareFeatures of(const target::Target& t);
  std::vector<float> vector() const; ///< normalized, kHardwareDim values
};

/// Feature layout version: checkpoints record it and are refused when it differs.
extern const char* const kWorldModelLayout;
constexpr int kStageDim = 26, kActionDim = 52, kHardwareDim = 12;
/// Loop-state features: kLoopPerStage values for the stage doing the most iterations, then
/// their mean over the computed (not inlined) stages.
constexpr int kLoopPerStage = 14, kLoopDim = 2 * kLoopPerStage;

/// Per-stage features of a DAG (one row per op, kStageDim each).
std::vector<float> stageFeatures(const ir::ComputeDAG& dag);
/// One action's features (kActionDim); `steps` gives follow splits their source's factors.
std::vector<float> actionFeatures(const std::vector<sched::Step>& steps, size_t i, int numStages);
/// What the steps made of the loops, read from the final state (no lowering): per stage the
/// parallel degree and its balance over `cores`, vector width and whether the vector loop
/// walks the output's innermost axis, innermost loop, unrolling, the spatial tile inside the
/// reduction, iterations per thread; kLoopDim values.
std::vector<float> loopFeatures(const sched::State& state, int cores);
/// For each of the first `n` steps, the initial op (row of stageFeatures) of the stage it acts
/// on. Steps name stages of the state they apply to, and cache_read, cache_write and rfactor
/// insert stages, so a later step's stage index is not the op's index: a stage made by one of
/// them belongs to the op it was made from.
std::vector<int64_t> initialOpOfSteps(const std::vector<sched::Step>& steps, size_t n,
                                      int numStages);

struct WorldModelOptions {
  int latent = 64;                ///< latent size d
  int hidden = 128;               ///< hidden width of every MLP
  std::string transition = "mlp"; ///< "mlp" (residual) or "gru"
  double lr = 1e-3;               ///< Adam
  double weightDecay = 1e-6;
  double regression = 0.1; ///< weight of the MSE term beside the pairwise ranking loss
  /// weight of the dynamics objective: predict from each latent z_t the loop-state features of
  /// the state after step t (0: ranking only; 0.1 and 1 lowered held-out ranking on the
  /// pre-training data, docs/world-model.md)
  double dynamics = 0;
  int stepsPerUpdate = 60;               ///< Adam steps after each measurement round (online)
  int batchTasks = 4, batchPerTask = 64; ///< a training batch: tasks × samples per task
  int maxSteps = 96;                     ///< longer step lists are cut (rare)
  /// libtorch threads for scoring and training. Fixed, not "all cores": BLAS results depend on
  /// the thread count, and the same seed must give the same scores on any machine load.
  int threads = 1;
  uint64_t seed = 0;
  std::string init; ///< checkpoint to start from; empty: fresh weights
};
/// Keys and flags (--wm-*) of the world model's options.
const OptionTable<WorldModelOptions>& worldModelOptionTable();

class WorldModel : public CostModel {
public:
  WorldModel(const WorldModelOptions& opts, const HardwareFeatures& hw);
  ~WorldModel() override;
  std::string name() const override { return "wm"; }
  /// Online: adds the records to the training set and trains stepsPerUpdate steps.
  void update(const std::vector<MeasuredRecord>& records) override;
  std::vector<double> predict(const std::string& taskKey,
                              const std::vector<sched::State>& states) override;

  /// Offline: add samples, then train().
  void addSamples(const std::vector<MeasuredRecord>& records);
  /// Trains `steps` Adam steps on the samples so far; returns the mean loss of the last 10.
  double train(int steps);
  int numSamples() const;
  /// The dynamics objective on the records (no training): the mean squared error between the
  /// loop-state features predicted from each latent z_t and those of the state after step t.
  /// Their tasks are registered with no samples (training skips them).
  double dynamicsError(const std::vector<MeasuredRecord>& records);
  int numTasks() const;
  /// Scores step lists of one task directly (what predict does after taking the steps).
  std::vector<double> score(const ir::ComputeDAG& dag,
                            const std::vector<std::vector<sched::Step>>& steps);
  /// Versioned checkpoint (format, feature layout, sizes, weights).
  void save(const std::string& path) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The checkpoint shipped for this CPU class (`models/` in the source tree, or $WMTUNE_MODELS);
/// empty when there is none.
std::string defaultWorldModelCheckpoint();

} // namespace wm::costmodel
