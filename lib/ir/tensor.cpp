// Construction and validation of placeholder and compute operations.
#include <wm/ir/tensor.h>
#include <wm/ir/visitor.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>

#include <limits>
#include <unordered_set>

namespace wm::ir {

const char* reduceKindName(ReduceKind k) {
  switch (k) {
  case ReduceKind::None: return "none";
  case ReduceKind::Sum: return "sum";
  case ReduceKind::Max: return "max";
  case ReduceKind::Min: return "min";
  }
  return "?";
}

int64_t OperationNode::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expr reduceIdentity(ReduceKind k, DType t) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (k) {
  case ReduceKind::Sum: return isFloat(t) ? floatImm(0.0, t) : intImm(0, t);
  case ReduceKind::Max:
    if (isFloat(t)) return floatImm(-inf, t);
    return intImm(t == DType::I32 ? INT32_MIN : INT64_MIN, t);
  case ReduceKind::Min:
    if (isFloat(t)) return floatImm(inf, t);
    return intImm(t == DType::I32 ? INT32_MAX : INT64_MAX, t);
  case ReduceKind::None: break;
  }
  WM_CHECK(false) << "no identity for reduction 'none'";
  return {};
}

static std::string shapeString(const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// Shapes come from input: a bad one is the user's error, named by the tensor.
static int64_t checkShape(const std::string& name, const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) WM_USER_ERROR() << "tensor " << name << " has a dimension " << d;
    if (!checkedMul(n, d, &n) || n > kMaxTensorElements)
      WM_USER_ERROR() << "tensor " << name << ": " << shapeString(shape)
                      << " has more elements than any memory holds (limit " << kMaxTensorElements
                      << ")";
  }
  return n;
}

Tensor placeholder(std::string name, Shape shape, DType dtype, PlaceholderOptions opts) {
  checkShape(name, shape);
  WM_CHECK(opts.lo <= opts.hi) << "placeholder " << name << ": empty input range";
  auto op = std::make_shared<OperationNode>();
  op->kind = OpKind::Placeholder;
  op->name = std::move(name);
  op->tag = "placeholder";
  op->shape = std::move(shape);
  op->dtype = dtype;
  op->inputLo = opts.lo;
  op->inputHi = opts.hi;
  return op;
}

static std::vector<IterVar> makeAxes(const Shape& extents, const std::vector<std::string>& names,
                                     const char* prefix) {
  std::vector<IterVar> axes;
  for (size_t i = 0; i < extents.size(); ++i) {
    std::string n = i < names.size() ? names[i] : prefix + std::to_string(i);
    axes.push_back({Var(n), extents[i]});
  }
  return axes;
}

static std::vector<Var> varsOf(const std::vector<IterVar>& axes) {
  std::vector<Var> v;
  for (auto& a : axes) v.push_back(a.var);
  return v;
}

// Checks that body uses only the op's own axes.
static void checkFreeVars(const OperationNode& op) {
  std::unordered_set<const VarNode*> allowed;
  for (auto& a : op.axes) allowed.insert(a.var.node());
  for (auto& a : op.reduceAxes) allowed.insert(a.var.node());
  postOrderVisit(op.body, [&](const Expr& e) {
    WM_CHECK(!e.as<BufferLoadNode>()) << "compute " << op.name << " loads from a buffer";
    if (auto* v = e.as<VarNode>())
      WM_CHECK(allowed.count(v)) << "compute " << op.name << " uses variable '" << v->name
                                 << "' that is not one of its axes";
  });
}

static Tensor finishCompute(std::shared_ptr<OperationNode> op) {
  WM_CHECK(op->body.defined()) << "compute " << op->name << " has no body";
  op->dtype = op->body.dtype();
  WM_CHECK(!(op->hasReduction() && op->dtype == DType::Bool))
      << "compute " << op->name << " reduces bool values";
  checkFreeVars(*op);
  return op;
}

Tensor compute(std::string name, std::string tag, Shape shape, const ComputeFn& f,
               std::vector<std::string> axisNames) {
  checkShape(name, shape);
  auto op = std::make_shared<OperationNode>();
  op->kind = OpKind::Compute;
  op->name = std::move(name);
  op->tag = std::move(tag);
  op->shape = shape;
  op->axes = makeAxes(shape, axisNames, "i");
  op->body = f(varsOf(op->axes));
  return finishCompute(op);
}

Tensor reduce(std::string name, std::string tag, Shape shape, ReduceKind kind, Shape reduceExtents,
              const ReduceFn& f, std::vector<std::string> axisNames,
              std::vector<std::string> reduceNames) {
  int64_t iterations = checkShape(name, shape);
  if (!checkedMul(iterations, checkShape(name + " (reduction)", reduceExtents), &iterations) ||
      iterations > kMaxIterations)
    WM_USER_ERROR() << "tensor " << name << ": " << shapeString(shape) << " reduced over "
                    << shapeString(reduceExtents) << " takes more iterations than any machine runs";
  WM_CHECK(kind != ReduceKind::None) << "reduce() of " << name << " with kind none";
  WM_CHECK(!reduceExtents.empty()) << "reduce() of " << name << " without reduction axes";
  auto op = std::make_shared<OperationNode>();
  op->kind = OpKind::Compute;
  op->name = std::move(name);
  op->tag = std::move(tag);
  op->shape = shape;
  op->reduce = kind;
  op->axes = makeAxes(shape, axisNames, "i");
  op->reduceAxes = makeAxes(reduceExtents, reduceNames, "r");
  op->body = f(varsOf(op->axes), varsOf(op->reduceAxes));
  return finishCompute(op);
}

Tensor withBody(const OperationNode& op, Expr body, std::string name) {
  WM_CHECK(op.isCompute()) << "withBody of placeholder " << op.name;
  auto n = std::make_shared<OperationNode>(op);
  n->name = std::move(name);
  n->body = std::move(body);
  return finishCompute(n);
}

} // namespace wm::ir
