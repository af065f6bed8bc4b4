// The closure compiler shared by the interpreters (see eval.h).
#include <wm/ir/eval.h>
#include <wm/ir/tensor.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

#include <cmath>

namespace wm::ir {

double roundTo(DType t, double v) {
  switch (t) {
  case DType::F32: return static_cast<double>(static_cast<float>(v));
  case DType::F16: return static_cast<double>(static_cast<_Float16>(v));
  case DType::I32:
    if (!std::isfinite(v)) return 0;
    return static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(std::trunc(v))));
  case DType::I64:
    if (!std::isfinite(v)) return 0;
    return std::trunc(v);
  case DType::Bool: return v != 0 ? 1.0 : 0.0;
  }
  return v;
}

ExprCompiler::Fn ExprCompiler::compileTensorRead(const TensorReadNode* n) {
  WM_CHECK(false) << "evaluator: tensor read of " << n->tensor->name << " is not allowed here";
  return {};
}

ExprCompiler::Fn ExprCompiler::compileBufferLoad(const BufferLoadNode* n) {
  WM_CHECK(false) << "evaluator: buffer load of " << n->buffer->name << " is not allowed here";
  return {};
}

ExprCompiler::Fn ExprCompiler::compile(const Expr& e) {
  switch (e.kind()) {
  case ExprKind::IntImm: {
    double v = static_cast<double>(e.as<IntImmNode>()->value);
    return [v](const double*) { return v; };
  }
  case ExprKind::FloatImm: {
    double v = e.as<FloatImmNode>()->value;
    return [v](const double*) { return v; };
  }
  case ExprKind::Var: return compileVar(e.as<VarNode>());
  case ExprKind::Binary: return compileBinary(e.as<BinaryNode>());
  case ExprKind::Compare: {
    auto* n = e.as<CompareNode>();
    Fn a = compile(n->a), b = compile(n->b);
    switch (n->op) {
    case CompareOp::EQ: return [a, b](const double* s) { return double(a(s) == b(s)); };
    case CompareOp::NE: return [a, b](const double* s) { return double(a(s) != b(s)); };
    case CompareOp::LT: return [a, b](const double* s) { return double(a(s) < b(s)); };
    case CompareOp::LE: return [a, b](const double* s) { return double(a(s) <= b(s)); };
    case CompareOp::GT: return [a, b](const double* s) { return double(a(s) > b(s)); };
    case CompareOp::GE: return [a, b](const double* s) { return double(a(s) >= b(s)); };
    }
    break;
  }
  case ExprKind::Logical: {
    auto* n = e.as<LogicalNode>();
    Fn a = compile(n->a), b = compile(n->b);
    if (n->op == LogicalOp::And)
      return [a, b](const double* s) { return double(a(s) != 0 && b(s) != 0); };
    return [a, b](const double* s) { return double(a(s) != 0 || b(s) != 0); };
  }
  case ExprKind::Not: {
    Fn a = compile(e.as<NotNode>()->a);
    return [a](const double* s) { return double(a(s) == 0); };
  }
  case ExprKind::Select: {
    auto* n = e.as<SelectNode>();
    Fn c = compile(n->cond), t = compile(n->t), f = compile(n->f);
    return [c, t, f](const double* s) { return c(s) != 0 ? t(s) : f(s); };
  }
  case ExprKind::Cast: {
    DType to = e.dtype();
    Fn v = compile(e.as<CastNode>()->value);
    return [v, to](const double* s) { return roundTo(to, v(s)); };
  }
  case ExprKind::Call: return compileCall(e.as<CallNode>());
  case ExprKind::TensorRead: return compileTensorRead(e.as<TensorReadNode>());
  case ExprKind::BufferLoad: return compileBufferLoad(e.as<BufferLoadNode>());
  }
  WM_CHECK(false) << "evaluator: unhandled expression " << exprKindName(e.kind());
  return {};
}

ExprCompiler::Fn ExprCompiler::compileBinary(const BinaryNode* n) {
  Fn a = compile(n->a), b = compile(n->b);
  bool isI = isInt(n->dtype);
  // i64 values stay exact in double (indices are far below 2^53); only i32 must wrap.
  bool wrap = n->dtype == DType::I32;
  DType t = n->dtype;
  switch (n->op) {
  case BinaryOp::Add:
    if (wrap) return [a, b, t](const double* s) { return roundTo(t, a(s) + b(s)); };
    return [a, b](const double* s) { return a(s) + b(s); };
  case BinaryOp::Sub:
    if (wrap) return [a, b, t](const double* s) { return roundTo(t, a(s) - b(s)); };
    return [a, b](const double* s) { return a(s) - b(s); };
  case BinaryOp::Mul:
    if (wrap) return [a, b, t](const double* s) { return roundTo(t, a(s) * b(s)); };
    return [a, b](const double* s) { return a(s) * b(s); };
  case BinaryOp::Div:
    if (isI)
      return [a, b](const double* s) {
        int64_t y = static_cast<int64_t>(b(s));
        WM_CHECK(y != 0) << "evaluator: integer division by zero";
        return static_cast<double>(floorDiv(static_cast<int64_t>(a(s)), y));
      };
    return [a, b](const double* s) { return a(s) / b(s); };
  case BinaryOp::Mod:
    if (isI)
      return [a, b](const double* s) {
        int64_t x = static_cast<int64_t>(a(s)), y = static_cast<int64_t>(b(s));
        WM_CHECK(y != 0) << "evaluator: integer modulo by zero";
        return static_cast<double>(x - floorDiv(x, y) * y);
      };
    return [a, b](const double* s) {
      double x = a(s), y = b(s);
      return x - std::floor(x / y) * y;
    };
  case BinaryOp::Min: return [a, b](const double* s) { return std::min(a(s), b(s)); };
  case BinaryOp::Max: return [a, b](const double* s) { return std::max(a(s), b(s)); };
  }
  return {};
}

ExprCompiler::Fn ExprCompiler::compileCall(const CallNode* n) {
  Fn a = compile(n->args[0]);
  switch (n->func) {
  case MathFunc::Exp: return [a](const double* s) { return std::exp(a(s)); };
  case MathFunc::Log: return [a](const double* s) { return std::log(a(s)); };
  case MathFunc::Sqrt: return [a](const double* s) { return std::sqrt(a(s)); };
  case MathFunc::Rsqrt: return [a](const double* s) { return 1.0 / std::sqrt(a(s)); };
  case MathFunc::Tanh: return [a](const double* s) { return std::tanh(a(s)); };
  case MathFunc::Erf: return [a](const double* s) { return std::erf(a(s)); };
  case MathFunc::Sigmoid: return [a](const double* s) { return 1.0 / (1.0 + std::exp(-a(s))); };
  case MathFunc::Abs: return [a](const double* s) { return std::fabs(a(s)); };
  case MathFunc::Pow: {
    Fn b = compile(n->args[1]);
    return [a, b](const double* s) { return std::pow(a(s), b(s)); };
  }
  }
  return {};
}

} // namespace wm::ir
