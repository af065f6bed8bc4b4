// The loop state: stages, copy-on-write, consumers, printing.
#include <wm/ir/printer.h>
#include <wm/ir/visitor.h>
#include <wm/schedule/state.h>
#include <wm/support/error.h>

#include <algorithm>
#include <functional>
#include <sstream>

namespace wm::sched {

const char* computeLocName(ComputeLoc l) {
  switch (l) {
  case ComputeLoc::Root: return "root";
  case ComputeLoc::Inlined: return "inlined";
  case ComputeLoc::At: return "at";
  }
  return "?";
}

const char* annotationName(Annotation a) {
  switch (a) {
#define WM_X(n, s)                                                                                 \
  case Annotation::n: return s;
    WM_ANNOTATIONS(WM_X)
#undef WM_X
  }
  return "?";
}

bool parseAnnotation(const std::string& s, Annotation* out) {
#define WM_X(n, str)                                                                               \
  if (s == str) {                                                                                  \
    *out = Annotation::n;                                                                          \
    return true;                                                                                   \
  }
  WM_ANNOTATIONS(WM_X)
#undef WM_X
  return false;
}

bool isThreadBinding(Annotation a) {
  switch (a) {
  case Annotation::VThread:
  case Annotation::BlockX:
  case Annotation::BlockY:
  case Annotation::BlockZ:
  case Annotation::ThreadX:
  case Annotation::ThreadY:
  case Annotation::ThreadZ: return true;
  default: return false;
  }
}

const char* stepTag(const Step& s) {
  static const char* tags[] = {
#define WM_X(n, t) t,
      WM_STEP_KINDS(WM_X)
#undef WM_X
          "?"};
  return tags[s.index()];
}

int stepStage(const Step& s) {
  return std::visit(
      [](const auto& x) -> int {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>)
          return -1;
        else
          return x.stage;
      },
      s);
}

int StageNode::leafPosition(int iterId) const {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i] == iterId) return static_cast<int>(i);
  return -1;
}

bool StageNode::transformed() const {
  if (!relations.empty()) return true;
  for (int i = 0; i < numLeaves(); ++i) {
    if (leaves[i] != i) return true;
    if (iters[leaves[i]].annotation != Annotation::None) return true;
    if (iters[leaves[i]].autoUnrollMaxStep >= 0) return true;
  }
  return false;
}

bool StageNode::spatialTransformed() const {
  for (auto& r : relations)
    for (int p : r.parents)
      if (iters[p].kind == IterKind::Spatial) return true;
  for (int i = 0; i < numSpatialRoot; ++i)
    if (iters[i].annotation != Annotation::None || iters[i].autoUnrollMaxStep >= 0) return true;
  return false;
}

StageNode makeStage(const ir::Tensor& op) {
  StageNode st;
  st.op = op;
  if (op->isPlaceholder()) return st;
  for (auto& a : op->axes) st.iters.push_back({a.var.name(), a.extent, IterKind::Spatial});
  for (auto& a : op->reduceAxes) st.iters.push_back({a.var.name(), a.extent, IterKind::Reduce});
  st.numSpatialRoot = static_cast<int>(op->axes.size());
  st.numRoot = static_cast<int>(st.iters.size());
  for (int i = 0; i < st.numRoot; ++i) st.leaves.push_back(i);
  return st;
}

State::State(const ir::ComputeDAG& dag) : dag_(std::make_shared<ir::ComputeDAG>(dag)) {
  for (auto& op : dag.ops()) stages_.push_back(std::make_shared<StageNode>(makeStage(op)));
}

StageNode& State::mutableStage(int i) {
  auto& p = stages_.at(i);
  if (p.use_count() > 1) p = std::make_shared<StageNode>(*p);
  return *p;
}

void State::insertStage(int pos, StageNode s) {
  WM_CHECK(pos >= 0 && pos <= numStages()) << "insertStage at " << pos;
  for (int i = 0; i < numStages(); ++i)
    if (stage(i).attachStage >= pos) mutableStage(i).attachStage++;
  if (s.attachStage >= pos) s.attachStage++;
  stages_.insert(stages_.begin() + pos, std::make_shared<StageNode>(std::move(s)));
}

int State::stageOf(const ir::OperationNode* op) const {
  for (int i = 0; i < numStages(); ++i)
    if (stages_[i]->op.get() == op) return i;
  return -1;
}

namespace {
bool reads(const ir::OperationNode& consumer, const ir::OperationNode* producer) {
  if (!consumer.isCompute()) return false;
  bool found = false;
  ir::postOrderVisit(consumer.body, [&](const ir::Expr& e) {
    if (auto* r = e.as<ir::TensorReadNode>(); r && r->tensor.get() == producer) found = true;
  });
  return found;
}
} // namespace

std::vector<int> State::consumers(int i) const {
  std::vector<int> out;
  const auto* op = stage(i).op.get();
  for (int j = 0; j < numStages(); ++j)
    if (reads(*stage(j).op, op)) out.push_back(j);
  return out;
}

std::vector<int> State::effectiveConsumers(int i) const {
  std::vector<int> out;
  for (int c : consumers(i)) {
    if (stage(c).loc == ComputeLoc::Inlined) {
      for (int e : effectiveConsumers(c))
        if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
    } else if (std::find(out.begin(), out.end(), c) == out.end()) {
      out.push_back(c);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool State::concrete() const {
  for (auto& st : stages_)
    for (int id : st->leaves)
      if (st->iters[id].extent <= 0) return false;
  return true;
}

std::string State::toString() const {
  std::ostringstream os;
  // Root stages in order; attached stages printed inside their target loop.
  std::vector<std::vector<std::pair<int, int>>> attached(numStages()); // at stage: (iterId, stage)
  for (int i = 0; i < numStages(); ++i)
    if (stage(i).loc == ComputeLoc::At)
      attached[stage(i).attachStage].push_back({stage(i).attachIter, i});
  std::function<void(int, int)> printStage = [&](int s, int indent) {
    const auto& st = stage(s);
    std::string pad(indent * 2, ' ');
    if (st.isPlaceholder()) {
      os << pad << "placeholder " << st.op->name << "\n";
      return;
    }
    if (st.loc == ComputeLoc::Inlined) {
      os << pad << st.op->name << " (inlined)\n";
      return;
    }
    int depth = indent;
    for (int pos = 0; pos < st.numLeaves(); ++pos) {
      const auto& it = st.leaf(pos);
      os << std::string(depth * 2, ' ') << "for " << it.name << " (0," << it.extent << ")";
      if (it.kind == IterKind::Reduce) os << " reduce";
      if (it.annotation != Annotation::None) os << " " << annotationName(it.annotation);
      if (it.autoUnrollMaxStep >= 0) os << " auto_unroll_max_step=" << it.autoUnrollMaxStep;
      os << "\n";
      ++depth;
      for (auto& [iterId, child] : attached[s])
        if (iterId == st.leaves[pos]) printStage(child, depth);
    }
    os << std::string(depth * 2, ' ') << st.op->name;
    if (st.scope != ir::MemScope::Global) os << " (" << ir::memScopeName(st.scope) << ")";
    os << " = ...\n";
  };
  for (int i = 0; i < numStages(); ++i)
    if (stage(i).loc != ComputeLoc::At) printStage(i, 0);
  return os.str();
}

} // namespace wm::sched
