// Featurization of the world model (no libtorch here): per-stage features of the initial
// program, per-step action features, hardware features.
#include <wm/costmodel/world_model.h>
#include <wm/schedule/steps.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <type_traits>

namespace wm::costmodel {

const char* const kWorldModelLayout = "wm-stage26-action52-hw12-loop28-v2";

namespace {

float lg(double x, double scale) {
  return static_cast<float>(std::log2(std::max(0.0, x) + 1.0) / scale);
}

template <class... Ts> struct Overloaded : Ts... { using Ts::operator()...; };
template <class... Ts> Overloaded(Ts...) -> Overloaded<Ts...>;

} // namespace

HardwareFeatures HardwareFeatures::of(const target::Target& t) {
  HardwareFeatures h;
  h.gpu = t.isGpu();
  h.cores = t.cores;
  h.vectorBits = t.vectorBytes * 8;
  h.l1KiB = static_cast<double>(t.l1Bytes) / 1024;
  h.l2KiB = static_cast<double>(t.l2Bytes) / 1024;
  h.l3KiB = static_cast<double>(t.l3Bytes) / 1024;
  h.ghz = t.ghz;
  if (h.gpu) {
    h.sms = t.gpu.sms;
    h.maxThreadsPerBlock = t.gpu.maxThreadsPerBlock;
    h.sharedKiB = t.gpu.sharedBytesPerBlock / 1024;
    h.registersPerBlock = t.gpu.registersPerBlock;
    h.warpSize = t.gpu.warpSize;
  }
  return h;
}

const OptionTable<WorldModelOptions>& worldModelOptionTable() {
  using W = WorldModelOptions;
  static const OptionTable<W> t = {
      {"wm_latent", "--wm-latent", "wm: latent size", &W::latent, 1, 4096},
      {"wm_hidden", "--wm-hidden", "wm: hidden width", &W::hidden, 2, 4096},
      {"wm_transition",
       "--wm-transition",
       "wm: transition network",
       &W::transition,
       {"mlp", "gru"}},
      {"wm_lr", "--wm-lr", "wm: Adam learning rate", &W::lr, 1e-12, 1e3},
      {"wm_regression", "--wm-regression", "wm: weight of the regression term", &W::regression, 0,
       1e6},
      {"wm_dynamics", "--wm-dynamics",
       "wm: weight of the dynamics objective (the loop state after each step from its latent)",
       &W::dynamics, 0, 1e6},
      {"wm_steps_per_update", "--wm-steps-per-update", "wm: training steps after each round",
       &W::stepsPerUpdate, 0, 1e7},
      {"wm_batch_tasks", "--wm-batch-tasks", "wm: tasks per training batch", &W::batchTasks, 1,
       1e6},
      {"wm_batch_per_task", "--wm-batch-per-task", "wm: samples per task in a batch",
       &W::batchPerTask, 2, 100000},
      {"wm_threads", "--wm-threads",
       "wm: libtorch threads (scores are reproducible for a fixed count)", &W::threads, 1, 1024},
  };
  return t;
}

std::vector<float> HardwareFeatures::vector() const {
  return {gpu ? 1.f : 0.f,
          lg(cores, 8),
          lg(vectorBits, 10),
          lg(l1KiB, 12),
          lg(l2KiB, 16),
          lg(l3KiB, 18),
          static_cast<float>(ghz / 5.0),
          lg(sms, 8),
          lg(maxThreadsPerBlock, 11),
          lg(sharedKiB, 10),
          lg(registersPerBlock, 17),
          lg(warpSize, 6)};
}

std::vector<float> stageFeatures(const ir::ComputeDAG& dag) {
  std::vector<float> f;
  for (size_t i = 0; i < dag.size(); ++i) {
    const auto& op = dag.op(static_cast<int>(i));
    int ii = static_cast<int>(i);
    std::vector<float> r(kStageDim, 0.f);
    r[0] = op.isPlaceholder();
    r[1] = op.isCompute() && !op.hasReduction();
    r[2] = op.reduce == ir::ReduceKind::Sum;
    r[3] = op.reduce == ir::ReduceKind::Max || op.reduce == ir::ReduceKind::Min;
    r[4] = dag.isOutput(ii);
    if (op.isCompute()) {
      r[5] = dag.isStrictlyInlineable(ii);
      r[6] = dag.needsMultiLevelTiling(ii);
    }
    double elems = static_cast<double>(op.numElements());
    double red = 1;
    for (auto& a : op.reduceAxes) red *= static_cast<double>(a.extent);
    double flops = static_cast<double>(dag.flops(ii));
    double written = elems * static_cast<double>(ir::storageBytes(op.dtype)), read = 0;
    for (int p : dag.producers(ii))
      read += static_cast<double>(dag.op(p).numElements() * ir::storageBytes(dag.op(p).dtype));
    r[7] = lg(elems, 24);
    r[8] = lg(red, 16);
    r[9] = lg(flops, 32);
    r[10] = lg(written, 30);
    r[11] = lg(read, 30);
    r[12] = lg(flops / std::max(1.0, written + read), 8);
    r[13] = static_cast<float>(op.shape.size()) / 6.f;
    r[14] = static_cast<float>(op.reduceAxes.size()) / 4.f;
    for (size_t d = 0; d < 6 && d < op.shape.size(); ++d)
      r[15 + d] = lg(static_cast<double>(op.shape[op.shape.size() - 1 - d]), 12);
    for (size_t d = 0; d < 3 && d < op.reduceAxes.size(); ++d)
      r[21 + d] = lg(static_cast<double>(op.reduceAxes[d].extent), 12);
    r[24] = static_cast<float>(dag.producers(ii).size()) / 4.f;
    r[25] = static_cast<float>(dag.consumers(ii).size()) / 4.f;
    f.insert(f.end(), r.begin(), r.end());
  }
  return f;
}

std::vector<float> actionFeatures(const std::vector<sched::Step>& steps, size_t i, int numStages) {
  using namespace sched;
  std::vector<float> r(kActionDim, 0.f);
  const Step& s = steps[i];
  // [0, 15): step kind one-hot (14 kinds, monostate last)
  r[s.index()] = 1.f;
  // [15, 26): annotation one-hot
  // [26, 52): numeric arguments
  float ns = static_cast<float>(std::max(1, numStages));
  r[26] = static_cast<float>(stepStage(s)) / ns;
  auto lengths = [&](const std::vector<int64_t>& ls, bool innerToOuter) {
    int64_t prod = 1;
    for (size_t k = 0; k < 4; ++k) {
      if (k < ls.size()) {
        r[30 + k] = ls[k] > 0 ? lg(static_cast<double>(ls[k]), 8) : -1.f;
        prod *= std::max<int64_t>(1, ls[k]);
      }
    }
    r[34] = static_cast<float>(ls.size()) / 4.f;
    if (!ls.empty()) { // the innermost and outermost given parts, wherever they sit in the list
      r[50] = ls.back() > 0 ? lg(static_cast<double>(ls.back()), 8) : -1.f;
      r[51] = ls.front() > 0 ? lg(static_cast<double>(ls.front()), 8) : -1.f;
    }
    r[35] = innerToOuter;
    r[36] = lg(static_cast<double>(prod), 12);
  };
  std::visit(
      Overloaded{
          [&](const AnnotationStep& a) {
            r[15 + static_cast<int>(a.annotation)] = 1.f;
            r[27] = static_cast<float>(a.iter) / 8.f;
          },
          [&](const FuseStep& a) {
            r[27] = a.iters.empty() ? 0.f : static_cast<float>(a.iters[0]) / 8.f;
            r[38] = static_cast<float>(a.iters.size()) / 4.f;
          },
          [&](const PragmaStep& a) {
            r[27] = static_cast<float>(a.iter) / 8.f;
            r[37] = lg(static_cast<double>(a.value), 11);
          },
          [&](const ReorderStep& a) {
            r[39] = static_cast<float>(a.order.size()) / 8.f;
            int moved = 0;
            for (size_t k = 0; k < a.order.size(); ++k) moved += a.order[k] != static_cast<int>(k);
            r[40] = static_cast<float>(moved) / 8.f;
          },
          [&](const SplitStep& a) {
            r[27] = static_cast<float>(a.iter) / 8.f;
            r[28] = lg(static_cast<double>(a.extent), 12);
            lengths(a.lengths, a.innerToOuter);
          },
          [&](const FollowSplitStep& a) {
            r[27] = static_cast<float>(a.iter) / 8.f;
            r[41] = static_cast<float>(a.nSplit) / 4.f;
            // the factors it follows (a dependency between actions made explicit)
            if (a.srcStep >= 0 && static_cast<size_t>(a.srcStep) < i)
              if (auto* src = std::get_if<SplitStep>(&steps[static_cast<size_t>(a.srcStep)])) {
                std::vector<int64_t> ls(
                    src->lengths.begin(),
                    src->lengths.begin() +
                        std::min<size_t>(src->lengths.size(),
                                         static_cast<size_t>(std::max(0, a.nSplit - 1))));
                lengths(ls, src->innerToOuter);
              }
          },
          [&](const FollowFusedSplitStep& a) {
            r[27] = static_cast<float>(a.iter) / 8.f;
            r[42] = static_cast<float>(a.level) / 4.f;
            r[43] = a.factorOrNparts;
            int64_t prod = 1;
            for (int src : a.srcSteps)
              if (src >= 0 && static_cast<size_t>(src) < i)
                if (auto* sp = std::get_if<SplitStep>(&steps[static_cast<size_t>(src)]))
                  if (static_cast<size_t>(a.level) < sp->lengths.size())
                    prod *= std::max<int64_t>(1, sp->lengths[a.level]);
            r[36] = lg(static_cast<double>(prod), 12);
          },
          [&](const StorageAlignStep& a) {
            r[27] = static_cast<float>(a.iter) / 8.f;
            r[44] = lg(static_cast<double>(a.factor), 8);
          },
          [&](const ComputeAtStep& a) {
            r[29] = static_cast<float>(a.targetStage) / ns;
            r[45] = static_cast<float>(a.targetIter) / 8.f;
            r[46] = static_cast<float>(a.targetStage - a.stage) / ns;
          },
          [&](const ComputeInlineStep&) {},
          [&](const ComputeRootStep&) {},
          [&](const CacheReadStep& a) {
            r[47 + std::min(2, static_cast<int>(a.scope))] = 1.f;
            r[38] = static_cast<float>(a.readers.size()) / 4.f;
          },
          [&](const CacheWriteStep& a) { r[47 + std::min(2, static_cast<int>(a.scope))] = 1.f; },
          [&](const RfactorStep& a) {
            r[27] = static_cast<float>(a.iter) / 8.f;
            r[45] = static_cast<float>(a.factorIter) / 8.f;
          },
          [&](const std::monostate&) {},
      },
      s);
  return r;
}

namespace {

/// The root axis a loop derives from, following the innermost parent of fuses.
int rootOf(const sched::StageNode& st, int id) {
  for (int guard = 0; id >= st.numRoot && guard < 64; ++guard) {
    int parent = -1;
    for (auto& r : st.relations)
      if (std::find(r.children.begin(), r.children.end(), id) != r.children.end()) {
        parent = r.parents.empty() ? -1 : r.parents.back();
        break;
      }
    if (parent < 0) return -1;
    id = parent;
  }
  return id < st.numRoot ? id : -1;
}

int64_t extentOf(const sched::Iterator& it) {
  return std::max<int64_t>(1, it.extent);
}

} // namespace

std::vector<float> loopFeatures(const sched::State& state, int cores) {
  using namespace sched;
  int n = state.numStages();
  cores = std::max(1, cores);
  // iterations and parallel degree of the loops around each stage (an attached stage runs
  // inside its target's loops up to the attach point)
  std::vector<double> outerIters(static_cast<size_t>(n), 1), outerPar(static_cast<size_t>(n), 1);
  std::vector<int64_t> outerUnroll(static_cast<size_t>(n), 0);
  for (int i = n - 1; i >= 0; --i) { // targets come after the stages computed at them
    const StageNode& st = state.stage(i);
    if (st.loc != ComputeLoc::At || st.attachStage <= i || st.attachStage >= n) continue;
    const StageNode& t = state.stage(st.attachStage);
    auto ts = static_cast<size_t>(st.attachStage);
    double it = outerIters[ts], par = outerPar[ts];
    int64_t unroll = outerUnroll[ts];
    int pos = t.leafPosition(st.attachIter);
    for (int k = 0; k <= pos && k < t.numLeaves(); ++k) {
      const Iterator& l = t.leaf(k);
      it *= static_cast<double>(extentOf(l));
      if (l.annotation == Annotation::Parallel || isThreadBinding(l.annotation))
        par *= static_cast<double>(extentOf(l));
      unroll = std::max(unroll, l.autoUnrollMaxStep);
    }
    outerIters[static_cast<size_t>(i)] = it;
    outerPar[static_cast<size_t>(i)] = par;
    outerUnroll[static_cast<size_t>(i)] = unroll;
  }
  std::vector<float> mean(kLoopPerStage, 0.f), main(kLoopPerStage, 0.f);
  double mainIters = -1;
  int computed = 0;
  for (int i = 0; i < n; ++i) {
    const StageNode& st = state.stage(i);
    if (st.isPlaceholder() || st.loc == ComputeLoc::Inlined) continue;
    auto si = static_cast<size_t>(i);
    double iters = outerIters[si], par = outerPar[si], tile = 1;
    int64_t vec = 0, unroll = outerUnroll[si];
    bool contiguous = false, reduceSeen = false;
    int reduceLeaves = 0;
    for (int k = 0; k < st.numLeaves(); ++k) {
      const Iterator& l = st.leaf(k);
      double e = static_cast<double>(extentOf(l));
      iters *= e;
      if (l.annotation == Annotation::Parallel || isThreadBinding(l.annotation)) par *= e;
      if (l.annotation == Annotation::Vectorize) {
        vec = extentOf(l);
        contiguous = rootOf(st, st.leaves[static_cast<size_t>(k)]) == st.numSpatialRoot - 1;
      }
      unroll = std::max(unroll, l.autoUnrollMaxStep);
      if (l.kind == IterKind::Reduce) {
        reduceSeen = true;
        ++reduceLeaves;
        tile = 1;
      } else if (reduceSeen) {
        tile *= e;
      }
    }
    double waves = std::ceil(par / cores);
    std::vector<float> r(kLoopPerStage, 0.f);
    r[0] = lg(par, 12);
    r[1] = static_cast<float>(par / (waves * cores));
    r[2] = lg(static_cast<double>(vec), 6);
    r[3] = contiguous ? 1.f : 0.f;
    const Iterator* inner = st.numLeaves() ? &st.leaf(st.numLeaves() - 1) : nullptr;
    r[4] = inner ? lg(static_cast<double>(extentOf(*inner)), 8) : 0.f;
    r[5] = inner && inner->kind == IterKind::Reduce ? 1.f : 0.f;
    r[6] = lg(static_cast<double>(std::max<int64_t>(0, unroll)), 11);
    r[7] = static_cast<float>(st.numLeaves()) / 16.f;
    r[8] = st.loc == ComputeLoc::At ? 1.f : 0.f;
    r[9] = st.scope != ir::MemScope::Global ? 1.f : 0.f;
    r[10] = reduceSeen ? lg(tile, 10) : 0.f;
    r[11] = lg(iters / std::max(1.0, par), 24);
    r[12] = lg(iters, 30);
    r[13] = static_cast<float>(reduceLeaves) / 8.f;
    for (int k = 0; k < kLoopPerStage; ++k)
      mean[static_cast<size_t>(k)] += r[static_cast<size_t>(k)];
    ++computed;
    if (iters >= mainIters) {
      mainIters = iters;
      main = r;
    }
  }
  for (auto& v : mean) v /= static_cast<float>(std::max(1, computed));
  main.insert(main.end(), mean.begin(), mean.end());
  return main;
}

std::vector<int64_t> initialOpOfSteps(const std::vector<sched::Step>& steps, size_t n,
                                      int numStages) {
  using namespace sched;
  std::vector<int64_t> origin(static_cast<size_t>(std::max(0, numStages)));
  for (size_t k = 0; k < origin.size(); ++k) origin[k] = static_cast<int64_t>(k);
  auto last = static_cast<int64_t>(std::max(0, numStages - 1));
  std::vector<int64_t> out;
  out.reserve(std::min(n, steps.size()));
  for (size_t i = 0; i < n && i < steps.size(); ++i) {
    int s = stepStage(steps[i]);
    bool known = s >= 0 && static_cast<size_t>(s) < origin.size();
    int64_t op = known ? origin[static_cast<size_t>(s)] : std::clamp<int64_t>(s, 0, last);
    out.push_back(op);
    if (!known) continue;
    // where the step puts its new stage (steps.cpp): a cache-read copy after the producer, a
    // cache-write local stage and an rfactor stage before the stage they split off
    if (std::holds_alternative<CacheReadStep>(steps[i]))
      origin.insert(origin.begin() + s + 1, op);
    else if (std::holds_alternative<CacheWriteStep>(steps[i]) ||
             std::holds_alternative<RfactorStep>(steps[i]))
      origin.insert(origin.begin() + s, op);
  }
  return out;
}

std::string defaultWorldModelCheckpoint() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("WMTUNE_MODELS")) dirs.push_back(env);
#ifdef WM_SOURCE_MODELS_DIR
  dirs.push_back(WM_SOURCE_MODELS_DIR);
#endif
  for (auto& d : dirs) {
    fs::path p = fs::path(d) / "wm-cpu-x86_64.pt";
    if (fs::exists(p)) return p.string();
  }
  return "";
}

} // namespace wm::costmodel
