// The reference interpreter (see interpreter.h). Each op's body is compiled once into a tree
// of closures over a slot array of axis values, then evaluated for every output element.
#include <wm/ir/eval.h>
#include <wm/ir/interpreter.h>
#include <wm/ir/printer.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>

#include <cmath>
#include <functional>
#include <limits>

namespace wm::ir {

NDArray::NDArray(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  int64_t n = 1, bytes = 0;
  for (int64_t d : shape_)
    if (d < 0 || !checkedMul(n, d, &n))
      WM_USER_ERROR() << "an array of shape " << typeString(dtype, shape_) << " is too large";
  if (!checkedMul(n, static_cast<int64_t>(sizeof(double)), &bytes)) bytes = -1;
  checkAllocation(bytes, "an array of shape " + typeString(dtype, shape_));
  data_.assign(static_cast<size_t>(n), 0.0);
}

void NDArray::set(int64_t i, double v) {
  data_[static_cast<size_t>(i)] = roundTo(dtype_, v);
}

NDArray NDArray::random(DType dtype, Shape shape, Rng& rng, double lo, double hi) {
  NDArray a(dtype, std::move(shape));
  for (int64_t i = 0; i < a.size(); ++i) {
    double v = rng.uniform(lo, hi);
    if (isInt(dtype)) v = std::floor(v);
    if (dtype == DType::Bool) v = rng.bernoulli(0.5) ? 1 : 0;
    a.set(i, v);
  }
  return a;
}

std::vector<NDArray> randomInputs(const ComputeDAG& dag, uint64_t seed) {
  Rng rng(seed);
  std::vector<NDArray> out;
  for (auto& p : dag.placeholders())
    out.push_back(NDArray::random(p->dtype, p->shape, rng, p->inputLo, p->inputHi));
  return out;
}

namespace {

using Fn = ExprCompiler::Fn;

// Resolves axis variables to slots and tensor reads to the arrays of already evaluated ops.
class Compiler : public ExprCompiler {
public:
  Compiler(const ComputeDAG& dag, const std::vector<NDArray>& buffers,
           const std::unordered_map<const VarNode*, int>& slots)
      : dag_(dag), buffers_(buffers), slots_(slots) {}

protected:
  Fn compileVar(const VarNode* v) override {
    auto it = slots_.find(v);
    WM_CHECK(it != slots_.end()) << "interpreter: unbound variable " << v->name;
    int s = it->second;
    return [s](const double* slots) { return slots[s]; };
  }

  Fn compileTensorRead(const TensorReadNode* n) override {
    int p = dag_.indexOf(n->tensor.get());
    WM_CHECK(p >= 0) << "interpreter: read of " << n->tensor->name << " outside the DAG";
    const NDArray* buf = &buffers_[p];
    std::vector<Fn> idx;
    for (auto& i : n->indices) idx.push_back(compile(i));
    Shape shape = n->tensor->shape;
    std::string name = n->tensor->name;
    return [buf, idx, shape, name](const double* s) {
      int64_t flat = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        int64_t v = static_cast<int64_t>(idx[d](s));
        WM_CHECK(v >= 0 && v < shape[d])
            << "interpreter: read of " << name << " out of bounds: index " << v << " in dim " << d
            << " of extent " << shape[d];
        flat = flat * shape[d] + v;
      }
      return buf->data()[flat];
    };
  }

private:
  const ComputeDAG& dag_;
  const std::vector<NDArray>& buffers_;
  const std::unordered_map<const VarNode*, int>& slots_;
};

// Advances a row-major multi-index; returns false after the last one.
bool advance(std::vector<double>& slots, size_t first, const std::vector<IterVar>& axes) {
  for (size_t d = axes.size(); d-- > 0;) {
    double& v = slots[first + d];
    if (++v < static_cast<double>(axes[d].extent)) return true;
    v = 0;
  }
  return false;
}

void evaluateOp(const ComputeDAG& dag, int i, std::vector<NDArray>& buffers) {
  const auto& op = dag.op(i);
  std::unordered_map<const VarNode*, int> slots;
  for (auto& a : op.axes) slots[a.var.node()] = static_cast<int>(slots.size());
  for (auto& a : op.reduceAxes) slots[a.var.node()] = static_cast<int>(slots.size());
  Compiler compiler(dag, buffers, slots);
  Fn body = compiler.compile(op.body);
  NDArray out(op.dtype, op.shape);
  std::vector<double> s(slots.size(), 0.0);
  const size_t nAxes = op.axes.size();
  double identity = 0;
  if (op.reduce == ReduceKind::Max) identity = -std::numeric_limits<double>::infinity();
  if (op.reduce == ReduceKind::Min) identity = std::numeric_limits<double>::infinity();
  int64_t n = out.size();
  for (int64_t flat = 0; flat < n; ++flat) {
    double v;
    if (!op.hasReduction()) {
      v = body(s.data());
    } else {
      v = identity;
      for (size_t r = 0; r < op.reduceAxes.size(); ++r) s[nAxes + r] = 0;
      do {
        double x = body(s.data());
        switch (op.reduce) {
        case ReduceKind::Sum: v += x; break;
        case ReduceKind::Max: v = std::max(v, x); break;
        case ReduceKind::Min: v = std::min(v, x); break;
        case ReduceKind::None: break;
        }
      } while (advance(s, nAxes, op.reduceAxes));
    }
    out.set(flat, v);
    // advance the spatial index (slots [0, nAxes))
    for (size_t d = nAxes; d-- > 0;) {
      if (++s[d] < static_cast<double>(op.axes[d].extent)) break;
      s[d] = 0;
    }
  }
  buffers[i] = std::move(out);
}

} // namespace

std::vector<NDArray> evaluate(const ComputeDAG& dag, const std::vector<NDArray>& inputs) {
  auto phs = dag.placeholders();
  WM_CHECK(inputs.size() == phs.size())
      << "evaluate: " << inputs.size() << " inputs for " << phs.size() << " placeholders";
  std::vector<NDArray> buffers(dag.size());
  size_t next = 0;
  for (size_t i = 0; i < dag.size(); ++i) {
    const auto& op = dag.op(static_cast<int>(i));
    if (op.isPlaceholder()) {
      const NDArray& in = inputs[next++];
      WM_CHECK(in.shape() == op.shape)
          << "evaluate: input " << op.name << " has shape " << typeString(in.dtype(), in.shape())
          << ", expected " << typeString(op.dtype, op.shape);
      buffers[i] = in;
    } else {
      evaluateOp(dag, static_cast<int>(i), buffers);
    }
  }
  return buffers;
}

std::vector<NDArray> evaluateOutputs(const ComputeDAG& dag, const std::vector<NDArray>& inputs) {
  auto all = evaluate(dag, inputs);
  std::vector<NDArray> out;
  for (auto& o : dag.outputs()) out.push_back(all[dag.indexOf(o.get())]);
  return out;
}

double evaluateScalar(const Expr& e, const std::unordered_map<const VarNode*, double>& vars) {
  std::unordered_map<const VarNode*, int> slots;
  std::vector<double> values;
  for (auto& [v, x] : vars) {
    slots[v] = static_cast<int>(values.size());
    values.push_back(x);
  }
  ComputeDAG none;
  std::vector<NDArray> noBuffers;
  Compiler compiler(none, noBuffers, slots);
  return compiler.compile(e)(values.data());
}

double maxRelativeError(const NDArray& a, const NDArray& b) {
  WM_CHECK(a.shape() == b.shape()) << "maxRelativeError: shapes differ";
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.data()[i], y = b.data()[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::fabs(x - y) / std::max(1.0, std::fabs(y)));
  }
  return worst;
}

} // namespace wm::ir
