// ComputeDAG: topological order, access analysis, FLOPs and the structural hash.
#include <wm/ir/compute_dag.h>
#include <wm/ir/printer.h>
#include <wm/ir/visitor.h>
#include <wm/support/error.h>
#include <wm/support/hash.h>

#include <functional>
#include <sstream>
#include <unordered_set>

namespace wm::ir {

namespace {

// Tensors read by e, each once, in order of first appearance.
std::vector<Tensor> readTensors(const Expr& e) {
  std::vector<Tensor> out;
  std::unordered_set<const OperationNode*> seen;
  postOrderVisit(e, [&](const Expr& x) {
    if (auto* r = x.as<TensorReadNode>())
      if (seen.insert(r->tensor.get()).second) out.push_back(r->tensor);
  });
  return out;
}

// FLOPs of one evaluation of e. Index expressions (inside reads) and integer or boolean
// arithmetic are not counted; float arithmetic, float comparisons and math calls are 1 each.
int64_t exprFlops(const Expr& e) {
  switch (e.kind()) {
  case ExprKind::IntImm:
  case ExprKind::FloatImm:
  case ExprKind::Var:
  case ExprKind::TensorRead:
  case ExprKind::BufferLoad: return 0;
  case ExprKind::Binary: {
    auto* n = e.as<BinaryNode>();
    return (isFloat(n->dtype) ? 1 : 0) + exprFlops(n->a) + exprFlops(n->b);
  }
  case ExprKind::Compare: {
    auto* n = e.as<CompareNode>();
    return (isFloat(n->a.dtype()) ? 1 : 0) + exprFlops(n->a) + exprFlops(n->b);
  }
  case ExprKind::Logical: {
    auto* n = e.as<LogicalNode>();
    return exprFlops(n->a) + exprFlops(n->b);
  }
  case ExprKind::Not: return exprFlops(e.as<NotNode>()->a);
  case ExprKind::Select: {
    auto* n = e.as<SelectNode>();
    return exprFlops(n->cond) + std::max(exprFlops(n->t), exprFlops(n->f));
  }
  case ExprKind::Cast: return exprFlops(e.as<CastNode>()->value);
  case ExprKind::Call: {
    int64_t f = 1;
    for (auto& a : e.as<CallNode>()->args) f += exprFlops(a);
    return f;
  }
  }
  return 0;
}

// Hashes an expression; variables by their axis position, reads by producer position.
struct ExprHasher {
  const std::unordered_map<const VarNode*, int>& axisPos;
  const ComputeDAG& dag;
  StableHasher& h;

  void operator()(const Expr& e) {
    h.add(static_cast<uint64_t>(e.kind()));
    h.add(static_cast<uint64_t>(e.dtype()));
    switch (e.kind()) {
    case ExprKind::IntImm: h.addInt(e.as<IntImmNode>()->value); return;
    case ExprKind::FloatImm: h.addDouble(e.as<FloatImmNode>()->value); return;
    case ExprKind::Var: {
      auto it = axisPos.find(e.as<VarNode>());
      WM_CHECK(it != axisPos.end()) << "free variable in a hashed body";
      h.addInt(it->second);
      return;
    }
    case ExprKind::Binary: {
      auto* n = e.as<BinaryNode>();
      h.add(static_cast<uint64_t>(n->op));
      (*this)(n->a);
      (*this)(n->b);
      return;
    }
    case ExprKind::Compare: {
      auto* n = e.as<CompareNode>();
      h.add(static_cast<uint64_t>(n->op));
      (*this)(n->a);
      (*this)(n->b);
      return;
    }
    case ExprKind::Logical: {
      auto* n = e.as<LogicalNode>();
      h.add(static_cast<uint64_t>(n->op));
      (*this)(n->a);
      (*this)(n->b);
      return;
    }
    case ExprKind::Not: (*this)(e.as<NotNode>()->a); return;
    case ExprKind::Select: {
      auto* n = e.as<SelectNode>();
      (*this)(n->cond);
      (*this)(n->t);
      (*this)(n->f);
      return;
    }
    case ExprKind::Cast: (*this)(e.as<CastNode>()->value); return;
    case ExprKind::Call: {
      auto* n = e.as<CallNode>();
      h.add(static_cast<uint64_t>(n->func));
      for (auto& a : n->args) (*this)(a);
      return;
    }
    case ExprKind::TensorRead: {
      auto* n = e.as<TensorReadNode>();
      h.addInt(dag.indexOf(n->tensor.get()));
      for (auto& i : n->indices) (*this)(i);
      return;
    }
    case ExprKind::BufferLoad: WM_CHECK(false) << "buffer load in a ComputeDAG"; return;
    }
  }
};

// If index is `axis + constant` for a spatial axis of op, returns that axis' position.
int simpleAxisOf(const Expr& index, const OperationNode& op, bool* isConst) {
  *isConst = false;
  if (isConstInt(index)) {
    *isConst = true;
    return -1;
  }
  Expr base = index;
  if (auto* b = index.as<BinaryNode>()) {
    if ((b->op == BinaryOp::Add || b->op == BinaryOp::Sub) && isConstInt(b->b))
      base = b->a;
    else if (b->op == BinaryOp::Add && isConstInt(b->a))
      base = b->b;
  }
  if (auto* v = base.as<VarNode>())
    for (size_t i = 0; i < op.axes.size(); ++i)
      if (op.axes[i].var.node() == v) return static_cast<int>(i);
  return -2;
}

} // namespace

ComputeDAG::ComputeDAG(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {
  WM_CHECK(!outputs_.empty()) << "a ComputeDAG needs at least one output";
  // Depth-first post-order from the outputs; iterative to survive deep graphs.
  std::unordered_set<const OperationNode*> done;
  std::function<void(const Tensor&)> visitOp = [&](const Tensor& t) {
    if (done.count(t.get())) return;
    std::vector<std::pair<Tensor, size_t>> stack{{t, 0}};
    std::unordered_set<const OperationNode*> onStack{t.get()};
    std::unordered_map<const OperationNode*, std::vector<Tensor>> inputsOf;
    while (!stack.empty()) {
      auto& [cur, next] = stack.back();
      auto it = inputsOf.find(cur.get());
      if (it == inputsOf.end())
        it = inputsOf
                 .emplace(cur.get(),
                          cur->isCompute() ? readTensors(cur->body) : std::vector<Tensor>{})
                 .first;
      if (next < it->second.size()) {
        Tensor in = it->second[next++];
        if (done.count(in.get())) continue;
        WM_CHECK(!onStack.count(in.get())) << "cycle through tensor " << in->name;
        onStack.insert(in.get());
        stack.push_back({in, 0});
        continue;
      }
      done.insert(cur.get());
      onStack.erase(cur.get());
      index_[cur.get()] = static_cast<int>(ops_.size());
      ops_.push_back(cur);
      stack.pop_back();
    }
  };
  for (auto& o : outputs_) visitOp(o);

  size_t n = ops_.size();
  producers_.assign(n, {});
  consumers_.assign(n, {});
  reads_.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    const auto& op = *ops_[i];
    if (!op.isCompute()) continue;
    postOrderVisit(op.body, [&](const Expr& x) {
      auto* r = x.as<TensorReadNode>();
      if (!r) return;
      int p = index_.at(r->tensor.get());
      auto& lists = reads_[i];
      auto it = std::find_if(lists.begin(), lists.end(), [&](auto& e) { return e.first == p; });
      if (it == lists.end()) {
        lists.push_back({p, {}});
        it = lists.end() - 1;
      }
      it->second.push_back(r->indices);
    });
    for (auto& [p, _] : reads_[i]) producers_[i].push_back(p);
    std::sort(producers_[i].begin(), producers_[i].end());
    for (int p : producers_[i]) consumers_[p].push_back(static_cast<int>(i));
  }
}

std::vector<Tensor> ComputeDAG::placeholders() const {
  std::vector<Tensor> out;
  for (auto& t : ops_)
    if (t->isPlaceholder()) out.push_back(t);
  return out;
}

int ComputeDAG::indexOf(const OperationNode* op) const {
  auto it = index_.find(op);
  return it == index_.end() ? -1 : it->second;
}

bool ComputeDAG::isOutput(int i) const {
  for (auto& o : outputs_)
    if (o.get() == ops_.at(i).get()) return true;
  return false;
}

const std::vector<std::vector<Expr>>& ComputeDAG::reads(int consumer, int producer) const {
  static const std::vector<std::vector<Expr>> kNone;
  for (auto& [p, lists] : reads_.at(consumer))
    if (p == producer) return lists;
  return kNone;
}

bool ComputeDAG::isSimpleAccess(int consumer, int producer) const {
  const auto& op = *ops_.at(consumer);
  for (auto& idx : reads(consumer, producer)) {
    for (auto& e : idx) {
      bool isConst;
      if (simpleAxisOf(e, op, &isConst) == -2) return false;
    }
  }
  return true;
}

bool ComputeDAG::isStrictlyInlineable(int i) const {
  const auto& op = *ops_.at(i);
  if (!op.isCompute() || op.hasReduction()) return false;
  bool expensive = false;
  postOrderVisit(op.body, [&](const Expr& e) {
    if (auto* c = e.as<CallNode>(); c && c->func == MathFunc::Exp) expensive = true;
    if (e.as<SelectNode>()) expensive = true;
  });
  if (expensive) return false;
  for (int p : producers(i)) {
    for (auto& idx : reads(i, p)) {
      int last = -1;
      for (auto& e : idx) {
        bool isConst;
        int axis = simpleAxisOf(e, op, &isConst);
        if (isConst) continue;
        if (axis < 0 || axis <= last) return false; // not simple, repeated or out of order
        last = axis;
      }
    }
  }
  return true;
}

bool ComputeDAG::needsMultiLevelTiling(int i) const {
  const auto& op = *ops_.at(i);
  if (!op.isCompute()) return false;
  int missing = 0;
  for (int p : producers(i)) {
    bool anyMissing = false;
    for (auto& idx : reads(i, p)) {
      std::unordered_set<const VarNode*> used;
      for (auto& e : idx)
        postOrderVisit(e, [&](const Expr& x) {
          if (auto* v = x.as<VarNode>()) used.insert(v);
        });
      for (auto& a : op.axes)
        if (a.extent > 1 && !used.count(a.var.node())) anyMissing = true;
    }
    if (anyMissing) ++missing;
  }
  return missing >= 2 || (missing >= 1 && op.hasReduction());
}

bool ComputeDAG::isElementwiseMatch(int i, int consumer) const {
  const auto& op = *ops_.at(i);
  const auto& cons = *ops_.at(consumer);
  if (!cons.isCompute() || cons.hasReduction()) return false;
  if (consumers(i).size() != 1 || consumers(i)[0] != consumer) return false;
  if (op.shape != cons.shape) return false;
  const auto& lists = reads(consumer, i);
  if (lists.size() != 1) return false;
  for (size_t d = 0; d < lists[0].size(); ++d)
    if (lists[0][d].as<VarNode>() != cons.axes[d].var.node()) return false;
  return true;
}

int64_t ComputeDAG::flops(int i) const {
  const auto& op = *ops_.at(i);
  if (!op.isCompute()) return 0;
  int64_t perElem = exprFlops(op.body);
  int64_t iters = 1;
  if (op.hasReduction()) {
    perElem += 1; // the combine
    for (auto& r : op.reduceAxes) iters *= r.extent;
  }
  return perElem * iters * op.numElements();
}

int64_t ComputeDAG::flops() const {
  int64_t f = 0;
  for (size_t i = 0; i < ops_.size(); ++i) f += flops(static_cast<int>(i));
  return f;
}

uint64_t ComputeDAG::structuralHash() const {
  StableHasher h;
  h.add(ops_.size());
  for (auto& t : ops_) {
    const auto& op = *t;
    h.add(static_cast<uint64_t>(op.kind));
    h.add(static_cast<uint64_t>(op.dtype));
    h.add(op.shape.size());
    for (int64_t d : op.shape) h.addInt(d);
    if (!op.isCompute()) continue;
    h.add(static_cast<uint64_t>(op.reduce));
    std::unordered_map<const VarNode*, int> pos;
    for (auto& a : op.axes) pos[a.var.node()] = static_cast<int>(pos.size());
    h.add(op.reduceAxes.size());
    for (auto& a : op.reduceAxes) {
      pos[a.var.node()] = static_cast<int>(pos.size());
      h.addInt(a.extent);
    }
    ExprHasher{pos, *this, h}(op.body);
  }
  h.add(outputs_.size());
  for (auto& o : outputs_) h.addInt(indexOf(o.get()));
  return h.value();
}

std::string ComputeDAG::workloadKey() const {
  return hashToHex(structuralHash());
}

std::string ComputeDAG::toString() const {
  std::ostringstream os;
  for (auto& t : ops_) os << ir::toString(*t) << "\n";
  return os.str();
}

} // namespace wm::ir
