// The GPU-semantics emulator (see gpu.h). Statements are compiled once into closures over a
// group of threads: each thread has its own slot array (loop variables; slot 0 holds its
// linear index in the block), every statement runs for each active thread in turn, a condition
// splits the group, a barrier ends a phase. Memory is checked per element: who wrote and who
// read it in the current phase (shared) or kernel (global).
#include <wm/ir/eval.h>
#include <wm/lower/gpu.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/support/error.h>

#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace wm::lower {

using namespace wm::ir;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Access {
  int64_t epoch = -1; ///< phase (shared) or kernel (global) of the entries below
  int64_t writer = -1, reader = -1;
  int64_t writerPhase = -1; ///< global: the writer's block phase
  bool manyReaders = false;
};

struct Memory {
  Buffer buf;
  std::vector<double> data;
  std::vector<Access> acc; ///< per element (shared and global buffers)
};

class Emulator : public ExprCompiler {
public:
  using Group = std::vector<int>; // active threads of the block
  using Exec = std::function<void(const Group&)>;

  std::vector<std::string> problems;
  int64_t dropped = 0;

  explicit Emulator(const GpuProgram& p) : p_(p) {}

  void problem(const std::string& s) {
    if (problems.size() < 20)
      problems.push_back(s);
    else
      ++dropped;
  }

  Memory& memory(const Buffer& b) {
    auto it = index_.find(b.get());
    if (it != index_.end()) return mem_[it->second];
    index_[b.get()] = mem_.size();
    mem_.push_back({b, {}, {}});
    return mem_.back();
  }

  std::vector<NDArray> run(const std::vector<NDArray>& inputs) {
    const auto& f = p_.func;
    WM_CHECK(inputs.size() == f.inputs.size())
        << "emulateGpu: " << inputs.size() << " inputs for " << f.inputs.size() << " arguments";
    for (auto& b : p_.params()) {
      auto& m = memory(b);
      m.data.assign(static_cast<size_t>(b->allocElements()), kNaN);
      m.acc.assign(m.data.size(), Access{});
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      WM_CHECK(inputs[i].shape() == f.inputs[i]->shape)
          << "emulateGpu: input " << f.inputs[i]->name << " has the wrong shape";
      std::copy(inputs[i].values().begin(), inputs[i].values().end(),
                memory(f.inputs[i]).data.begin());
    }
    for (size_t k = 0; k < p_.kernels.size(); ++k)
      runKernel(p_.kernels[k], static_cast<int64_t>(k));
    std::vector<NDArray> outs;
    for (auto& b : f.outputs) outs.push_back(readDense(b, memory(b).data));
    if (dropped) problems.push_back("... and " + std::to_string(dropped) + " more");
    return outs;
  }

protected:
  Fn compileVar(const VarNode* v) override {
    int s = slot(v);
    return [s](const double* sl) { return sl[s]; };
  }
  Fn compileBufferLoad(const BufferLoadNode* n) override {
    auto addr = compileAddress(n->buffer, n->indices);
    Memory* m = &memory(n->buffer);
    return [this, addr, m](const double* sl) {
      int64_t a = addr(sl);
      if (a < 0) return kNaN;
      int64_t t = static_cast<int64_t>(sl[0]);
      if (m->buf->scope == MemScope::Local) return m->data[t * m->buf->allocElements() + a];
      if (!m->acc.empty()) read(*m, a, t);
      return m->data[a];
    };
  }

private:
  int slot(const VarNode* v) {
    auto it = slots_.find(v);
    if (it != slots_.end()) return it->second;
    int s = static_cast<int>(slots_.size()) + 1; // slot 0: the thread
    slots_[v] = s;
    return s;
  }

  // Flat address, or -1 (reported) when an index leaves the buffer.
  std::function<int64_t(const double*)> compileAddress(const Buffer& b,
                                                       const std::vector<Expr>& indices) {
    std::vector<Fn> idx;
    for (auto& i : indices) idx.push_back(compile(i));
    Buffer buf = b;
    return [this, idx, buf](const double* sl) -> int64_t {
      int64_t flat = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        int64_t v = static_cast<int64_t>(idx[d](sl));
        if (v < 0 || v >= buf->shape[d]) {
          problem(where() + ": " + buf->name + " accessed out of bounds: index " +
                  std::to_string(v) + " in dimension " + std::to_string(d) + " of extent " +
                  std::to_string(buf->shape[d]) + " by thread " + std::to_string(int64_t(sl[0])));
          return -1;
        }
        flat += v * buf->strides[d];
      }
      return flat;
    };
  }

  std::string where() const {
    std::ostringstream os;
    os << p_.kernels[kernel_].name << " block (" << blockIdx_[0] << ", " << blockIdx_[1] << ", "
       << blockIdx_[2] << ") phase " << phase_;
    return os.str();
  }
  int64_t globalThread(int64_t t) const { return blockLinear_ * threads_ + t; }

  void race(const Memory& m, int64_t a, const char* what, int64_t t, int64_t other) {
    problem("race on " + m.buf->name + "[" + std::to_string(a) + "] (" +
            memScopeName(m.buf->scope) + ") in " + where() + ": thread " + std::to_string(t) + " " +
            what + " thread " + std::to_string(other) + " between two barriers");
  }

  // Shared: one epoch per phase. Global: one epoch per kernel; accesses of threads of one block
  // in different phases are ordered by the barrier between them.
  void read(Memory& m, int64_t a, int64_t t) {
    Access& x = m.acc[a];
    if (m.buf->scope == MemScope::Shared) {
      if (x.epoch != phaseEpoch_) x = Access{phaseEpoch_};
      if (x.writer >= 0 && x.writer != t) race(m, a, "reads what another wrote:", t, x.writer);
      if (x.reader >= 0 && x.reader != t) x.manyReaders = true;
      if (x.reader < 0) x.reader = t;
      return;
    }
    if (x.epoch != kernel_ || x.writer < 0) return; // inputs and earlier kernels' results
    int64_t g = globalThread(t);
    if (x.writer != g && !(sameBlock(x.writer) && x.writerPhase != phaseEpoch_))
      race(m, a, "reads a global element written by", t, x.writer);
  }
  void write(Memory& m, int64_t a, int64_t t) {
    Access& x = m.acc[a];
    if (m.buf->scope == MemScope::Shared) {
      if (x.epoch != phaseEpoch_) x = Access{phaseEpoch_};
      if (x.writer >= 0 && x.writer != t)
        race(m, a, "writes what another wrote:", t, x.writer);
      else if (x.manyReaders || (x.reader >= 0 && x.reader != t))
        race(m, a, "writes what another read:", t, x.reader);
      x.writer = t;
      return;
    }
    int64_t g = globalThread(t);
    if (x.epoch == kernel_ && x.writer >= 0 && x.writer != g &&
        !(sameBlock(x.writer) && x.writerPhase != phaseEpoch_))
      race(m, a, "writes a global element also written by", t, x.writer);
    x.epoch = kernel_;
    x.writer = g;
    x.writerPhase = phaseEpoch_;
  }
  bool sameBlock(int64_t globalT) const { return globalT / threads_ == blockLinear_; }

  void runKernel(const GpuKernel& k, int64_t index) {
    kernel_ = index;
    threads_ = k.block[0] * k.block[1] * k.block[2];
    slots_.clear();
    Exec body = compileStmt(k.body);
    slotsOf_.assign(threads_, std::vector<double>(slots_.size() + 1, 0.0));
    for (int64_t t = 0; t < threads_; ++t) slotsOf_[t][0] = static_cast<double>(t);
    Group all;
    for (int64_t t = 0; t < threads_; ++t) all.push_back(static_cast<int>(t));
    for (blockIdx_[2] = 0; blockIdx_[2] < k.grid[2]; ++blockIdx_[2])
      for (blockIdx_[1] = 0; blockIdx_[1] < k.grid[1]; ++blockIdx_[1])
        for (blockIdx_[0] = 0; blockIdx_[0] < k.grid[0]; ++blockIdx_[0]) {
          blockLinear_ = (blockIdx_[2] * k.grid[1] + blockIdx_[1]) * k.grid[0] + blockIdx_[0];
          phase_ = 0;
          ++phaseEpoch_;
          body(all);
        }
  }

  // Index of thread t along dimension d of the block.
  int64_t threadIndex(int64_t t, int d) const {
    const auto& b = p_.kernels[kernel_].block;
    if (d == 0) return t % b[0];
    if (d == 1) return (t / b[0]) % b[1];
    return t / (b[0] * b[1]);
  }

  Exec compileStmt(const Stmt& s) {
    if (!s.defined()) return [](const Group&) {};
    switch (s.kind()) {
    case StmtKind::For: {
      auto* n = s.as<ForNode>();
      int v = slot(n->var.node());
      int64_t extent = n->extent;
      Exec body = compileStmt(n->body);
      if (n->forKind != ForKind::ThreadBound)
        return [this, v, extent, body](const Group& g) {
          for (int64_t i = 0; i < extent; ++i) {
            for (int t : g) slotsOf_[t][v] = static_cast<double>(i);
            body(g);
          }
        };
      const std::string& tag = n->threadTag;
      int d = tag.back() - 'x';
      WM_CHECK(d >= 0 && d < 3 &&
               (tag.rfind("blockIdx.", 0) == 0 || tag.rfind("threadIdx.", 0) == 0))
          << "emulateGpu: thread tag '" << tag << "' (splitKernels turns vthreads into loops)";
      bool block = tag[0] == 'b';
      return [this, v, d, block, extent, body](const Group& g) {
        Group in;
        for (int t : g) {
          int64_t i = block ? blockIdx_[d] : threadIndex(t, d);
          slotsOf_[t][v] = static_cast<double>(i);
          if (i < extent) in.push_back(t);
        }
        if (!in.empty()) body(in);
      };
    }
    case StmtKind::Store: {
      auto* n = s.as<StoreNode>();
      auto addr = compileAddress(n->buffer, n->indices);
      Fn value = compile(n->value);
      Memory* m = &memory(n->buffer);
      DType type = n->buffer->dtype;
      return [this, addr, value, m, type](const Group& g) {
        for (int t : g) {
          const double* sl = slotsOf_[t].data();
          double x = roundTo(type, value(sl));
          int64_t a = addr(sl);
          if (a < 0) continue;
          if (m->buf->scope == MemScope::Local) {
            m->data[t * m->buf->allocElements() + a] = x;
            continue;
          }
          if (!m->acc.empty()) write(*m, a, t);
          m->data[a] = x;
        }
      };
    }
    case StmtKind::Allocate: {
      auto* n = s.as<AllocateNode>();
      Memory* m = &memory(n->buffer);
      int64_t elems = n->buffer->allocElements();
      bool local = n->buffer->scope == MemScope::Local;
      m->data.assign(static_cast<size_t>(elems * (local ? threads_ : 1)), kNaN);
      if (n->buffer->scope == MemScope::Shared) m->acc.assign(static_cast<size_t>(elems), Access{});
      Exec body = compileStmt(n->body);
      // Fresh (NaN) contents on entry: a read of an element nobody wrote shows in the result.
      return [m, elems, local, body](const Group& g) {
        if (local)
          for (int t : g)
            std::fill(m->data.begin() + t * elems, m->data.begin() + (t + 1) * elems, kNaN);
        else
          std::fill(m->data.begin(), m->data.end(), kNaN);
        body(g);
      };
    }
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseNode>();
      Fn c = compile(n->cond);
      Exec then = compileStmt(n->then), otherwise = compileStmt(n->otherwise);
      return [this, c, then, otherwise](const Group& g) {
        Group yes, no;
        for (int t : g) (c(slotsOf_[t].data()) != 0 ? yes : no).push_back(t);
        if (!yes.empty()) then(yes);
        if (!no.empty()) otherwise(no);
      };
    }
    case StmtKind::Seq: {
      std::vector<Exec> parts;
      for (auto& x : s.as<SeqNode>()->stmts) parts.push_back(compileStmt(x));
      return [parts](const Group& g) {
        for (auto& p : parts) p(g);
      };
    }
    case StmtKind::Attr: return compileStmt(s.as<AttrNode>()->body);
    case StmtKind::Barrier:
      return [this](const Group& g) {
        if (static_cast<int64_t>(g.size()) != threads_)
          problem(where() + ": a barrier reached by " + std::to_string(g.size()) + " of " +
                  std::to_string(threads_) + " threads");
        ++phase_;
        ++phaseEpoch_;
      };
    }
    return [](const Group&) {};
  }

  const GpuProgram& p_;
  std::deque<Memory> mem_; // closures keep pointers: a deque never moves its elements
  std::unordered_map<const BufferNode*, size_t> index_;
  std::unordered_map<const VarNode*, int> slots_;
  std::vector<std::vector<double>> slotsOf_;
  int64_t kernel_ = 0, threads_ = 1, blockLinear_ = 0, phase_ = 0, phaseEpoch_ = 0;
  std::array<int64_t, 3> blockIdx_{0, 0, 0};
};

} // namespace

GpuEmulation emulateGpu(const GpuProgram& p, const std::vector<NDArray>& inputs) {
  Emulator e(p);
  GpuEmulation out;
  out.outputs = e.run(inputs);
  out.problems = std::move(e.problems);
  return out;
}

} // namespace wm::lower
