// splitKernels (see gpu.h): the launch sequence of a lowered GPU function.
#include <wm/ir/printer.h>
#include <wm/ir/visitor.h>
#include <wm/lower/gpu.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

#include <algorithm>
#include <cctype>

namespace wm::lower {

using namespace wm::ir;

namespace {

/// A PTX identifier of a name (a model task's function names carry '/', ':' and '.'): letters,
/// digits and '_' kept, anything else '_', and a leading '_' before a digit.
std::string ptxIdentifier(const std::string& name) {
  std::string id = name.empty() ? std::string("f") : name;
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (std::isdigit(static_cast<unsigned char>(id[0]))) id = "_" + id;
  return id;
}

// tag "blockIdx.y" -> {true, 1}; "threadIdx.z" -> {false, 2}; others -> {false, -1}
std::pair<bool, int> axisOf(const std::string& tag) {
  auto dim = [&](size_t at) { return at < tag.size() ? tag[at] - 'x' : -1; };
  if (tag.rfind("blockIdx.", 0) == 0) return {true, dim(9)};
  if (tag.rfind("threadIdx.", 0) == 0) return {false, dim(10)};
  return {false, -1};
}

// ---- Cross-thread reduction (TVM's allreduce) ----
// The sequential nest of a reduction whose inner reduction loop is bound to threadIdx:
//     C[i] = init                                   (maybe under a guard)
//     for r.0: for r.1 threadIdx.x (T): C[i] = C[i] op v
// becomes, with every thread of the block taking part:
//     for t threadIdx.x (T):
//       acc = init; for r.0: (r.1 = t) acc = acc op v    (a local partial per thread)
//       barrier; red[t] = acc; barrier                   (red: shared, T elements)
//       for s = 2^k ... 1: if t < s && t + s < T: red[t] = red[t] op red[t + s]; barrier
//       if t == 0: C[i] = red[0]
class CrossThreadReduction : public StmtMutator {
public:
  Stmt mutateSeq(const SeqNode* op, const Stmt& self) override {
    Stmt base = StmtMutator::mutateSeq(op, self);
    auto* q = base.as<SeqNode>();
    if (!q) return base;
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < q->stmts.size(); ++i) {
      if (i + 1 < q->stmts.size()) {
        Stmt r = rewrite(q->stmts[i], q->stmts[i + 1]);
        if (r.defined()) {
          out.push_back(r);
          ++i;
          changed = true;
          continue;
        }
      }
      out.push_back(q->stmts[i]);
    }
    return changed ? makeSeq(out) : base;
  }

private:
  static std::string key(const std::vector<Expr>& idx) {
    std::string k;
    for (auto& e : idx) k += ir::toString(e) + ";";
    return k;
  }
  // The store of an init statement (a store or a guarded store).
  static const StoreNode* initStore(const Stmt& s, Expr* guard) {
    if (auto* st = s.as<StoreNode>()) return st;
    auto* c = s.as<IfThenElseNode>();
    if (c && !c->otherwise.defined() && c->then.as<StoreNode>()) {
      *guard = c->cond;
      return c->then.as<StoreNode>();
    }
    return nullptr;
  }
  // The threadIdx loop inside s (through loops, pragmas and guards) whose body updates buf at
  // index k; null when there is none.
  static const ForNode* threadLoop(const Stmt& s, const BufferNode* buf, const std::string& k) {
    if (!s.defined()) return nullptr;
    if (auto* f = s.as<ForNode>()) {
      if (f->forKind == ForKind::ThreadBound && f->threadTag.rfind("threadIdx.", 0) == 0)
        return updates(f->body, buf, k) ? f : nullptr;
      return threadLoop(f->body, buf, k);
    }
    if (auto* a = s.as<AttrNode>()) return threadLoop(a->body, buf, k);
    return nullptr;
  }
  static bool updates(const Stmt& s, const BufferNode* buf, const std::string& k) {
    if (auto* st = s.as<StoreNode>()) return st->buffer.get() == buf && key(st->indices) == k;
    if (auto* c = s.as<IfThenElseNode>())
      return !c->otherwise.defined() && updates(c->then, buf, k);
    return false;
  }

  Stmt rewrite(const Stmt& first, const Stmt& second) {
    Expr guard;
    const StoreNode* init = initStore(first, &guard);
    if (!init) return Stmt();
    std::string k = key(init->indices);
    const ForNode* loop = threadLoop(second, init->buffer.get(), k);
    if (!loop) return Stmt();
    const Buffer& C = init->buffer;
    const int64_t T = loop->extent;
    Var t(loop->var.name() + ".red");
    Buffer acc = makeBuffer(C->name + ".acc", C->dtype, {1}, MemScope::Local);
    Buffer red = makeBuffer(C->name + ".red", C->dtype, {T}, MemScope::Shared);
    BinaryOp op = BinaryOp::Add;
    bool ok = true;
    // The partial: the update loop's body with its thread variable -> t, C[i] -> acc[0].
    class Partial : public StmtMutator {
    public:
      Partial(const ForNode* l, Var t, Buffer C, Buffer acc, BinaryOp* op, bool* ok)
          : l_(l), t_(std::move(t)), C_(std::move(C)), acc_(std::move(acc)), op_(op), ok_(ok) {}
      Stmt mutateFor(const ForNode* f, const Stmt& self) override {
        if (f != l_) return StmtMutator::mutateFor(f, self);
        in_ = true;
        Stmt b = mutate(f->body);
        in_ = false;
        return b;
      }
      Expr mutateExpr(const Expr& e) override {
        return in_ ? ir::substitute(e, {{l_->var.node(), Expr(t_)}}) : e;
      }
      Stmt mutateStore(const StoreNode* st, const Stmt& self) override {
        if (!in_ || st->buffer != C_) return StmtMutator::mutateStore(st, self);
        auto* b = st->value.as<BinaryNode>();
        auto isCur = [&](const Expr& x) {
          auto* l = x.as<BufferLoadNode>();
          return l && l->buffer == C_;
        };
        if (!b || !(isCur(b->a) || isCur(b->b)) ||
            !(b->op == BinaryOp::Add || b->op == BinaryOp::Max || b->op == BinaryOp::Min)) {
          *ok_ = false;
          return self;
        }
        *op_ = b->op;
        Expr v = mutateExpr(isCur(b->a) ? b->b : b->a);
        return makeStore(acc_, {ir::intImm(0)}, binary(b->op, load(acc_, {ir::intImm(0)}), v));
      }

    private:
      const ForNode* l_;
      Var t_;
      Buffer C_, acc_;
      BinaryOp* op_;
      bool* ok_;
      bool in_ = false;
    } partial(loop, t, C, acc, &op, &ok);
    Stmt nest = partial.mutate(second);
    if (!ok) return Stmt();
    auto zero = ir::intImm(0);
    std::vector<Stmt> body{makeStore(acc, {zero}, init->value), nest, makeBarrier(),
                           makeStore(red, {Expr(t)}, load(acc, {zero})), makeBarrier()};
    int64_t s = 1;
    while (s < T) s *= 2;
    for (s /= 2; s >= 1; s /= 2) {
      Expr other = Expr(t) + static_cast<double>(s);
      body.push_back(
          makeIf((Expr(t) < static_cast<double>(s)) && (other < static_cast<double>(T)),
                 makeStore(red, {Expr(t)}, binary(op, load(red, {Expr(t)}), load(red, {other})))));
      body.push_back(makeBarrier());
    }
    Expr first0 = Expr(t) == 0.0;
    body.push_back(makeIf(guard.defined() ? (first0 && guard) : first0,
                          makeStore(C, init->indices, load(red, {zero}))));
    return makeFor(t, T, ForKind::ThreadBound, loop->threadTag,
                   makeAllocate(acc, makeAllocate(red, makeSeq(body))));
  }
};

// The launch shape of one kernel: the longest loop of every tag; vthreads -> unrolled loops.
class Shape : public StmtMutator {
public:
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::vector<Buffer> shared;
  std::string error;

  Stmt mutateFor(const ForNode* op, const Stmt& self) override {
    if (op->forKind == ForKind::Parallel && error.empty())
      error = "loop " + op->var.name() + " is parallel (a CPU annotation) inside a GPU kernel";
    if (op->forKind != ForKind::ThreadBound) {
      ++serialDepth_;
      Stmt r = StmtMutator::mutateFor(op, self);
      --serialDepth_;
      return r;
    }
    if (op->threadTag == "vthread") {
      ++serialDepth_;
      Stmt body = mutate(op->body);
      --serialDepth_;
      return makeFor(op->var, op->extent, ForKind::Unrolled, "", body);
    }
    auto [isBlock, d] = axisOf(op->threadTag);
    if (d < 0 || d > 2) {
      if (error.empty()) error = "unknown thread tag '" + op->threadTag + "'";
      return self;
    }
    if (isBlock && (serialDepth_ > 0 || threadDepth_ > 0) && error.empty())
      error = "loop " + op->var.name() + " (" + op->threadTag +
              ") is inside another loop: blocks cannot wait for each other";
    auto& dims = isBlock ? grid : block;
    dims[d] = std::max(dims[d], op->extent);
    threadDepth_ += !isBlock;
    Stmt r = StmtMutator::mutateFor(op, self);
    threadDepth_ -= !isBlock;
    return r;
  }
  Stmt mutateAllocate(const AllocateNode* op, const Stmt& self) override {
    if (op->buffer->scope == MemScope::Global && error.empty())
      error = "buffer " + op->buffer->name + " is global but allocated inside a kernel";
    if (op->buffer->scope == MemScope::Shared) shared.push_back(op->buffer);
    return StmtMutator::mutateAllocate(op, self);
  }

private:
  int serialDepth_ = 0, threadDepth_ = 0;
};

// Barriers every thread of the block reaches: not under a condition, nor under a thread loop
// shorter than its launch dimension.
std::string checkBarriers(const Stmt& s, const std::array<int64_t, 3>& block, int divergent,
                          const std::string& where) {
  if (!s.defined()) return "";
  switch (s.kind()) {
  case StmtKind::For: {
    auto* n = s.as<ForNode>();
    auto [isBlock, d] = axisOf(n->threadTag);
    bool shorter = n->forKind == ForKind::ThreadBound && !isBlock && d >= 0 && n->extent < block[d];
    return checkBarriers(n->body, block, divergent + shorter,
                         shorter ? "loop " + n->var.name() + " (" + n->threadTag + ", " +
                                       std::to_string(n->extent) + " of " +
                                       std::to_string(block[d]) + " threads)"
                                 : where);
  }
  case StmtKind::Allocate:
    return checkBarriers(s.as<AllocateNode>()->body, block, divergent, where);
  case StmtKind::Attr: return checkBarriers(s.as<AttrNode>()->body, block, divergent, where);
  case StmtKind::IfThenElse: {
    auto* n = s.as<IfThenElseNode>();
    std::string w = "a condition";
    std::string e = checkBarriers(n->then, block, divergent + 1, w);
    return e.empty() ? checkBarriers(n->otherwise, block, divergent + 1, w) : e;
  }
  case StmtKind::Seq:
    for (auto& x : s.as<SeqNode>()->stmts) {
      std::string e = checkBarriers(x, block, divergent, where);
      if (!e.empty()) return e;
    }
    return "";
  case StmtKind::Barrier: return divergent ? "a barrier inside " + where : "";
  case StmtKind::Store: return "";
  }
  return "";
}

} // namespace

std::vector<Buffer> GpuProgram::params() const {
  std::vector<Buffer> p(func.inputs);
  p.insert(p.end(), func.outputs.begin(), func.outputs.end());
  p.insert(p.end(), temporaries.begin(), temporaries.end());
  return p;
}

GpuProgram splitKernels(const LoweredFunc& f, const GpuLaunchLimits& limits) {
  GpuProgram p;
  p.func = f;
  Stmt body = f.body;
  while (body.defined() && body.kind() == StmtKind::Allocate) {
    auto* a = body.as<AllocateNode>();
    if (a->buffer->scope != MemScope::Global)
      throw UserError("GPU schedule error: buffer " + a->buffer->name + " (" +
                      memScopeName(a->buffer->scope) +
                      ") is computed at the root; only global buffers live outside kernels");
    p.temporaries.push_back(a->buffer);
    body = a->body;
  }
  std::vector<Stmt> parts;
  if (auto* q = body.as<SeqNode>())
    parts = q->stmts;
  else if (body.defined())
    parts.push_back(body);
  for (size_t k = 0; k < parts.size(); ++k) {
    GpuKernel kern;
    kern.name = ptxIdentifier(f.name) + "_kernel" + std::to_string(k);
    auto fail = [&](const std::string& why) {
      throw UserError("GPU schedule error in " + kern.name + ": " + why);
    };
    Shape shape;
    kern.body = shape.mutate(CrossThreadReduction().mutate(parts[k]));
    if (!shape.error.empty()) fail(shape.error);
    kern.grid = shape.grid;
    kern.block = shape.block;
    for (int d = 0; d < 3; ++d) {
      if (kern.block[d] > limits.maxBlock[d])
        fail("block dimension " + std::string(1, char('x' + d)) + " is " +
             std::to_string(kern.block[d]) + "; the device allows " +
             std::to_string(limits.maxBlock[d]));
      if (kern.grid[d] > limits.maxGrid[d])
        fail("grid dimension " + std::string(1, char('x' + d)) + " is " +
             std::to_string(kern.grid[d]) + "; the device allows " +
             std::to_string(limits.maxGrid[d]));
    }
    SizeMath size;
    int64_t threads = size.mul(size.mul(kern.block[0], kern.block[1]), kern.block[2]);
    if (!size.ok() || threads > limits.maxThreadsPerBlock)
      fail((size.ok() ? std::to_string(threads) : std::string("too many")) +
           " threads per block; the device allows " + std::to_string(limits.maxThreadsPerBlock));
    for (auto& b : shape.shared)
      kern.sharedBytes =
          size.add(kern.sharedBytes, size.mul(b->allocElements(), storageBytes(b->dtype)));
    if (!size.ok()) kern.sharedBytes = INT64_MAX;
    if (kern.sharedBytes > limits.sharedBytesPerBlock)
      fail(std::to_string(kern.sharedBytes) + " bytes of shared memory per block; the device " +
           "allows " + std::to_string(limits.sharedBytesPerBlock));
    std::string e = checkBarriers(kern.body, kern.block, 0, "");
    if (!e.empty()) fail(e + ": not every thread of the block reaches it");
    p.kernels.push_back(std::move(kern));
  }
  return p;
}

} // namespace wm::lower
