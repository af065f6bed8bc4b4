// Checked constructors of expression nodes, and the name tables.
#include <wm/ir/expr.h>
#include <wm/ir/tensor.h>
#include <wm/support/error.h>

#include <cmath>

namespace wm::ir {

const char* dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::Bool: return "bool";
  }
  return "?";
}

bool parseDType(const std::string& s, DType* out) {
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64, DType::Bool}) {
    if (s == dtypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

const char* binaryOpName(BinaryOp op) {
  switch (op) {
#define WM_X(n, s)                                                                                 \
  case BinaryOp::n: return s;
    WM_BINARY_OPS(WM_X)
#undef WM_X
  }
  return "?";
}

const char* compareOpName(CompareOp op) {
  switch (op) {
#define WM_X(n, s)                                                                                 \
  case CompareOp::n: return s;
    WM_COMPARE_OPS(WM_X)
#undef WM_X
  }
  return "?";
}

const char* mathFuncName(MathFunc f) {
  switch (f) {
#define WM_X(n, s, a)                                                                              \
  case MathFunc::n: return s;
    WM_MATH_FUNCS(WM_X)
#undef WM_X
  }
  return "?";
}

int mathFuncArity(MathFunc f) {
  switch (f) {
#define WM_X(n, s, a)                                                                              \
  case MathFunc::n: return a;
    WM_MATH_FUNCS(WM_X)
#undef WM_X
  }
  return 0;
}

const char* exprKindName(ExprKind k) {
  switch (k) {
#define WM_X(n)                                                                                    \
  case ExprKind::n: return #n;
    WM_EXPR_NODES(WM_X)
#undef WM_X
  }
  return "?";
}

Var::Var(std::string name, DType t) : Expr(std::make_shared<VarNode>(t, std::move(name))) {}

Expr intImm(int64_t v, DType t) {
  WM_CHECK(isInt(t) || t == DType::Bool) << "intImm of type " << dtypeName(t);
  if (t == DType::I32)
    WM_CHECK(v >= INT32_MIN && v <= INT32_MAX) << "i32 constant out of range: " << v;
  if (t == DType::Bool) v = v != 0;
  return Expr(std::make_shared<IntImmNode>(t, v));
}

Expr floatImm(double v, DType t) {
  WM_CHECK(isFloat(t)) << "floatImm of type " << dtypeName(t);
  return Expr(std::make_shared<FloatImmNode>(t, v));
}

Expr boolImm(bool v) {
  return intImm(v ? 1 : 0, DType::Bool);
}

Expr constLike(const Expr& like, double v) {
  WM_CHECK(like.defined()) << "constLike of an undefined expression";
  DType t = like.dtype();
  if (isFloat(t)) return floatImm(v, t);
  WM_CHECK(std::isfinite(v)) << "non-finite integer constant";
  return intImm(static_cast<int64_t>(v), t);
}

static void checkDefined(const Expr& e, const char* what) {
  WM_CHECK(e.defined()) << what << ": undefined operand";
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  checkDefined(a, binaryOpName(op));
  checkDefined(b, binaryOpName(op));
  WM_CHECK(a.dtype() == b.dtype())
      << "operands of '" << binaryOpName(op) << "' differ in type: " << dtypeName(a.dtype())
      << " vs " << dtypeName(b.dtype());
  WM_CHECK(a.dtype() != DType::Bool) << "arithmetic '" << binaryOpName(op) << "' on bool";
  return Expr(std::make_shared<BinaryNode>(op, std::move(a), std::move(b)));
}

Expr compare(CompareOp op, Expr a, Expr b) {
  checkDefined(a, compareOpName(op));
  checkDefined(b, compareOpName(op));
  WM_CHECK(a.dtype() == b.dtype())
      << "operands of '" << compareOpName(op) << "' differ in type: " << dtypeName(a.dtype())
      << " vs " << dtypeName(b.dtype());
  return Expr(std::make_shared<CompareNode>(op, std::move(a), std::move(b)));
}

Expr logical(LogicalOp op, Expr a, Expr b) {
  checkDefined(a, "logical");
  checkDefined(b, "logical");
  WM_CHECK(a.dtype() == DType::Bool && b.dtype() == DType::Bool) << "logical op on non-bool";
  return Expr(std::make_shared<LogicalNode>(op, std::move(a), std::move(b)));
}

Expr logicalNot(Expr a) {
  checkDefined(a, "not");
  WM_CHECK(a.dtype() == DType::Bool) << "'!' on non-bool";
  return Expr(std::make_shared<NotNode>(std::move(a)));
}

Expr select(Expr cond, Expr t, Expr f) {
  checkDefined(cond, "select");
  checkDefined(t, "select");
  checkDefined(f, "select");
  WM_CHECK(cond.dtype() == DType::Bool) << "select condition is not bool";
  WM_CHECK(t.dtype() == f.dtype()) << "select branches differ in type: " << dtypeName(t.dtype())
                                   << " vs " << dtypeName(f.dtype());
  return Expr(std::make_shared<SelectNode>(std::move(cond), std::move(t), std::move(f)));
}

Expr cast(DType to, Expr v) {
  checkDefined(v, "cast");
  return Expr(std::make_shared<CastNode>(to, std::move(v)));
}

Expr call(MathFunc f, std::vector<Expr> args) {
  WM_CHECK(static_cast<int>(args.size()) == mathFuncArity(f))
      << mathFuncName(f) << " takes " << mathFuncArity(f) << " arguments, got " << args.size();
  for (auto& a : args) {
    checkDefined(a, mathFuncName(f));
    WM_CHECK(a.dtype() == args[0].dtype()) << mathFuncName(f) << ": arguments differ in type";
  }
  bool intAbs = f == MathFunc::Abs && isInt(args[0].dtype());
  WM_CHECK(isFloat(args[0].dtype()) || intAbs)
      << mathFuncName(f) << " on " << dtypeName(args[0].dtype());
  return Expr(std::make_shared<CallNode>(f, std::move(args)));
}

Expr read(const Tensor& t, std::vector<Expr> indices) {
  WM_CHECK(t != nullptr) << "read of a null tensor";
  WM_CHECK(indices.size() == t->shape.size()) << "read of " << t->name << " with " << indices.size()
                                              << " indices, rank is " << t->shape.size();
  for (auto& i : indices) {
    checkDefined(i, "read index");
    WM_CHECK(isInt(i.dtype())) << "index into " << t->name << " is " << dtypeName(i.dtype());
  }
  return Expr(std::make_shared<TensorReadNode>(t->dtype, t, std::move(indices)));
}

Expr load(const Buffer& b, std::vector<Expr> indices) {
  WM_CHECK(b != nullptr) << "load from a null buffer";
  WM_CHECK(indices.size() == b->shape.size()) << "load of " << b->name << " with " << indices.size()
                                              << " indices, rank is " << b->shape.size();
  for (auto& i : indices) {
    checkDefined(i, "load index");
    WM_CHECK(isInt(i.dtype())) << "index into " << b->name << " is " << dtypeName(i.dtype());
  }
  return Expr(std::make_shared<BufferLoadNode>(b, std::move(indices)));
}

const char* memScopeName(MemScope s) {
  switch (s) {
  case MemScope::Global: return "global";
  case MemScope::Shared: return "shared";
  case MemScope::Local: return "local";
  }
  return "?";
}

bool parseMemScope(const std::string& s, MemScope* out) {
  for (MemScope m : {MemScope::Global, MemScope::Shared, MemScope::Local}) {
    if (s == memScopeName(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

int64_t BufferNode::allocElements() const {
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
  return shape.empty() ? 1 : last + 1;
}

Buffer makeBuffer(std::string name, DType dtype, std::vector<int64_t> shape, MemScope scope,
                  const std::vector<std::pair<int64_t, int64_t>>& alignStrides) {
  auto b = std::make_shared<BufferNode>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = scope;
  for (int64_t d : b->shape) WM_CHECK(d > 0) << "buffer " << b->name << " has a dimension " << d;
  WM_CHECK(alignStrides.empty() || alignStrides.size() == b->shape.size())
      << "buffer " << b->name << ": one alignment per dimension";
  b->strides.assign(b->shape.size(), 1);
  int64_t stride = 1;
  for (size_t d = b->shape.size(); d-- > 0;) {
    if (!alignStrides.empty() && alignStrides[d].first > 0) {
      int64_t factor = alignStrides[d].first, offset = alignStrides[d].second;
      // smallest stride >= natural with stride % factor == offset
      int64_t s = stride;
      int64_t r = ((s - offset) % factor + factor) % factor;
      if (r != 0) s += factor - r;
      stride = s;
    }
    b->strides[d] = stride;
    stride *= b->shape[d];
  }
  return b;
}

bool isConstInt(const Expr& e, int64_t* v) {
  if (auto* imm = e.as<IntImmNode>()) {
    if (v) *v = imm->value;
    return true;
  }
  return false;
}

} // namespace wm::ir
