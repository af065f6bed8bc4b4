// Text form of expressions and operations. Parenthesizes by precedence only where needed.
#include <wm/ir/printer.h>
#include <wm/support/error.h>

#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace wm::ir {

namespace {

int precedence(const Expr& e) {
  if (auto* b = e.as<BinaryNode>()) {
    switch (b->op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: return 4;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod: return 5;
    default: return 9; // min/max print as calls
    }
  }
  if (e.as<CompareNode>()) return 3;
  if (auto* l = e.as<LogicalNode>()) return l->op == LogicalOp::And ? 2 : 1;
  return 9;
}

std::string formatFloat(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os << std::setprecision(9) << v;
  std::string s = os.str();
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

void print(std::ostream& os, const Expr& e);

void printChild(std::ostream& os, const Expr& child, int parentPrec, bool rightSide) {
  int p = precedence(child);
  bool paren = p < parentPrec || (rightSide && p == parentPrec);
  if (paren) os << "(";
  print(os, child);
  if (paren) os << ")";
}

void print(std::ostream& os, const Expr& e) {
  WM_CHECK(e.defined()) << "printing an undefined expression";
  switch (e.kind()) {
  case ExprKind::IntImm: {
    auto* n = e.as<IntImmNode>();
    if (n->dtype == DType::Bool)
      os << (n->value ? "true" : "false");
    else
      os << n->value;
    if (n->dtype == DType::I32) os << "i32";
    return;
  }
  case ExprKind::FloatImm: {
    auto* n = e.as<FloatImmNode>();
    os << formatFloat(n->value);
    if (n->dtype == DType::F16) os << "h";
    return;
  }
  case ExprKind::Var: os << e.as<VarNode>()->name; return;
  case ExprKind::Binary: {
    auto* n = e.as<BinaryNode>();
    if (n->op == BinaryOp::Min || n->op == BinaryOp::Max) {
      os << binaryOpName(n->op) << "(";
      print(os, n->a);
      os << ", ";
      print(os, n->b);
      os << ")";
      return;
    }
    int p = precedence(e);
    printChild(os, n->a, p, false);
    os << " " << binaryOpName(n->op) << " ";
    printChild(os, n->b, p, true);
    return;
  }
  case ExprKind::Compare: {
    auto* n = e.as<CompareNode>();
    printChild(os, n->a, 3, false);
    os << " " << compareOpName(n->op) << " ";
    printChild(os, n->b, 3, true);
    return;
  }
  case ExprKind::Logical: {
    auto* n = e.as<LogicalNode>();
    int p = precedence(e);
    printChild(os, n->a, p, false);
    os << (n->op == LogicalOp::And ? " && " : " || ");
    printChild(os, n->b, p, true);
    return;
  }
  case ExprKind::Not:
    os << "!";
    printChild(os, e.as<NotNode>()->a, 9, false);
    return;
  case ExprKind::Select: {
    auto* n = e.as<SelectNode>();
    os << "select(";
    print(os, n->cond);
    os << ", ";
    print(os, n->t);
    os << ", ";
    print(os, n->f);
    os << ")";
    return;
  }
  case ExprKind::Cast:
    os << dtypeName(e.dtype()) << "(";
    print(os, e.as<CastNode>()->value);
    os << ")";
    return;
  case ExprKind::Call: {
    auto* n = e.as<CallNode>();
    os << mathFuncName(n->func) << "(";
    for (size_t i = 0; i < n->args.size(); ++i) {
      if (i) os << ", ";
      print(os, n->args[i]);
    }
    os << ")";
    return;
  }
  case ExprKind::BufferLoad: {
    auto* n = e.as<BufferLoadNode>();
    os << n->buffer->name << "[";
    for (size_t i = 0; i < n->indices.size(); ++i) {
      if (i) os << ", ";
      print(os, n->indices[i]);
    }
    os << "]";
    return;
  }
  case ExprKind::TensorRead: {
    auto* n = e.as<TensorReadNode>();
    os << n->tensor->name << "[";
    for (size_t i = 0; i < n->indices.size(); ++i) {
      if (i) os << ", ";
      print(os, n->indices[i]);
    }
    os << "]";
    return;
  }
  }
}

} // namespace

std::string toString(const Expr& e) {
  std::ostringstream os;
  print(os, e);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  print(os, e);
  return os;
}

std::string typeString(DType t, const Shape& shape) {
  std::ostringstream os;
  os << dtypeName(t) << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

std::string toString(const OperationNode& op) {
  std::ostringstream os;
  if (op.isPlaceholder()) {
    os << "placeholder " << op.name << ": " << typeString(op.dtype, op.shape);
    return os.str();
  }
  os << op.name << "[";
  for (size_t i = 0; i < op.axes.size(); ++i) os << (i ? ", " : "") << op.axes[i].var.name();
  os << "] = ";
  if (op.hasReduction()) {
    os << reduceKindName(op.reduce) << "(";
    for (size_t i = 0; i < op.reduceAxes.size(); ++i)
      os << (i ? ", " : "") << op.reduceAxes[i].var.name() << " < " << op.reduceAxes[i].extent;
    os << ") ";
    bool paren = precedence(op.body) < 9;
    if (paren) os << "(";
    print(os, op.body);
    if (paren) os << ")";
  } else {
    print(os, op.body);
  }
  os << "  : " << typeString(op.dtype, op.shape);
  return os.str();
}

} // namespace wm::ir
