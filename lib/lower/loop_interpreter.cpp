// The loop-nest interpreter (see loop_interpreter.h): statements and expressions are compiled
// once into closures over a slot array (loop variables) and a table of buffer storages.
#include <wm/ir/eval.h>
#include <wm/ir/printer.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/support/error.h>

#include <cmath>
#include <limits>
#include <unordered_map>

namespace wm::lower {

using namespace wm::ir;

namespace {

using Exec = std::function<void(double* slots)>;

class Runner : public ExprCompiler {
public:
  // Registers every buffer and loop variable before compiling, so storages never move.
  void collect(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
    case StmtKind::For: {
      auto* n = s.as<ForNode>();
      if (!slots_.count(n->var.node())) slots_[n->var.node()] = static_cast<int>(slots_.size());
      collect(n->body);
      return;
    }
    case StmtKind::Allocate: {
      auto* n = s.as<AllocateNode>();
      bufferIndex(n->buffer);
      collect(n->body);
      return;
    }
    case StmtKind::IfThenElse:
      collect(s.as<IfThenElseNode>()->then);
      collect(s.as<IfThenElseNode>()->otherwise);
      return;
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) collect(x);
      return;
    case StmtKind::Attr: collect(s.as<AttrNode>()->body); return;
    case StmtKind::Store:
    case StmtKind::Barrier: return;
    }
  }

  int bufferIndex(const Buffer& b) {
    auto it = bufIndex_.find(b.get());
    if (it != bufIndex_.end()) return it->second;
    int k = static_cast<int>(storage_.size());
    bufIndex_[b.get()] = k;
    storage_.emplace_back(static_cast<size_t>(b->allocElements()),
                          std::numeric_limits<double>::quiet_NaN());
    return k;
  }
  std::vector<double>& storage(const Buffer& b) { return storage_[bufferIndex(b)]; }
  size_t numSlots() const { return slots_.size(); }

  Exec compileStmt(const Stmt& s) {
    if (!s.defined()) return [](double*) {};
    switch (s.kind()) {
    case StmtKind::For: {
      auto* n = s.as<ForNode>();
      int slot = slots_.at(n->var.node());
      int64_t extent = n->extent;
      Exec body = compileStmt(n->body);
      return [slot, extent, body](double* sl) {
        for (int64_t i = 0; i < extent; ++i) {
          sl[slot] = static_cast<double>(i);
          body(sl);
        }
      };
    }
    case StmtKind::Store: {
      auto* n = s.as<StoreNode>();
      auto addr = compileAddress(n->buffer, n->indices);
      Fn value = compile(n->value);
      DType t = n->buffer->dtype;
      std::vector<double>* mem = &storage(n->buffer);
      return [addr, value, t, mem](double* sl) { (*mem)[addr(sl)] = roundTo(t, value(sl)); };
    }
    case StmtKind::Allocate: {
      auto* n = s.as<AllocateNode>();
      std::vector<double>* mem = &storage(n->buffer);
      Exec body = compileStmt(n->body);
      return [mem, body](double* sl) {
        std::fill(mem->begin(), mem->end(), std::numeric_limits<double>::quiet_NaN());
        body(sl);
      };
    }
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseNode>();
      Fn c = compile(n->cond);
      Exec t = compileStmt(n->then), e = compileStmt(n->otherwise);
      return [c, t, e](double* sl) {
        if (c(sl) != 0)
          t(sl);
        else
          e(sl);
      };
    }
    case StmtKind::Seq: {
      std::vector<Exec> parts;
      for (auto& x : s.as<SeqNode>()->stmts) parts.push_back(compileStmt(x));
      return [parts](double* sl) {
        for (auto& p : parts) p(sl);
      };
    }
    case StmtKind::Attr: return compileStmt(s.as<AttrNode>()->body);
    case StmtKind::Barrier: return [](double*) {}; // one thread: nothing to wait for
    }
    return [](double*) {};
  }

protected:
  Fn compileVar(const VarNode* v) override {
    auto it = slots_.find(v);
    WM_CHECK(it != slots_.end()) << "loop interpreter: variable " << v->name
                                 << " is not a loop variable in scope";
    int s = it->second;
    return [s](const double* sl) { return sl[s]; };
  }
  Fn compileBufferLoad(const BufferLoadNode* n) override {
    auto addr = compileAddress(n->buffer, n->indices);
    std::vector<double>* mem = &storage(n->buffer);
    return [addr, mem](const double* sl) { return (*mem)[addr(sl)]; };
  }

private:
  std::function<int64_t(const double*)> compileAddress(const Buffer& b,
                                                       const std::vector<Expr>& indices) {
    std::vector<Fn> idx;
    for (auto& i : indices) idx.push_back(compile(i));
    Buffer buf = b;
    return [idx, buf](const double* sl) {
      int64_t flat = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        int64_t v = static_cast<int64_t>(idx[d](sl));
        WM_CHECK(v >= 0 && v < buf->shape[d])
            << "loop interpreter: access of " << buf->name << " out of bounds: index " << v
            << " in dim " << d << " of extent " << buf->shape[d];
        flat += v * buf->strides[d];
      }
      return flat;
    };
  }

  std::unordered_map<const VarNode*, int> slots_;
  std::unordered_map<const BufferNode*, int> bufIndex_;
  std::vector<std::vector<double>> storage_;
};

} // namespace

NDArray readDense(const Buffer& b, const std::vector<double>& mem) {
  NDArray a(b->dtype, b->shape);
  std::vector<int64_t> idx(b->shape.size(), 0);
  for (int64_t flat = 0; flat < a.size(); ++flat) {
    int64_t addr = 0;
    for (size_t d = 0; d < idx.size(); ++d) addr += idx[d] * b->strides[d];
    a.values()[flat] = mem[addr];
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < b->shape[d]) break;
      idx[d] = 0;
    }
  }
  return a;
}

std::vector<NDArray> runLowered(const LoweredFunc& f, const std::vector<NDArray>& inputs) {
  WM_CHECK(inputs.size() == f.inputs.size())
      << "runLowered: " << inputs.size() << " inputs for " << f.inputs.size() << " arguments";
  Runner r;
  for (auto& b : f.inputs) r.bufferIndex(b);
  for (auto& b : f.outputs) r.bufferIndex(b);
  r.collect(f.body);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer& b = f.inputs[i];
    WM_CHECK(inputs[i].shape() == b->shape)
        << "runLowered: input " << b->name << " has the wrong shape";
    auto& mem = r.storage(b);
    // Inputs are dense row-major.
    std::copy(inputs[i].values().begin(), inputs[i].values().end(), mem.begin());
  }
  Exec body = r.compileStmt(f.body);
  std::vector<double> slots(r.numSlots() + 1, 0.0);
  body(slots.data());
  std::vector<NDArray> outs;
  for (auto& b : f.outputs) outs.push_back(readDense(b, r.storage(b)));
  return outs;
}

} // namespace wm::lower
