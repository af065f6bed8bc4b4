// Tensor-expression IR: expressions.
//
// Every expression node is listed once in WM_EXPR_NODES; the node kind enum, the visitor and
// the mutator (visitor.h) are generated from that list, so a pass cannot forget a node.
// Nodes are immutable and built only through the checked constructors below (intImm, binary,
// select, read, ...), which reject ill-typed trees with an InternalError. Expressions share
// subtrees freely; a mutator returns the very same node when nothing changed.
//
// Semantics worth knowing:
//  - Integer Div and Mod are floor division and floor modulo (the remainder has the sign of the
//    divisor), as index arithmetic needs. Float Div is true division; float Mod is fmod-floor.
//  - Select evaluates only the branch it takes (TVM's if_then_else), so a guarded out-of-bounds
//    read, as in padding, is legal.
#pragma once

#include <wm/ir/dtype.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wm::ir {

#define WM_EXPR_NODES(X)                                                                           \
  X(IntImm)                                                                                        \
  X(FloatImm)                                                                                      \
  X(Var)                                                                                           \
  X(Binary)                                                                                        \
  X(Compare)                                                                                       \
  X(Logical)                                                                                       \
  X(Not)                                                                                           \
  X(Select)                                                                                        \
  X(Cast)                                                                                          \
  X(Call)                                                                                          \
  X(TensorRead)                                                                                    \
  X(BufferLoad)

enum class ExprKind : uint8_t {
#define WM_X(n) n,
  WM_EXPR_NODES(WM_X)
#undef WM_X
};

#define WM_BINARY_OPS(X)                                                                           \
  X(Add, "+")                                                                                      \
  X(Sub, "-")                                                                                      \
  X(Mul, "*")                                                                                      \
  X(Div, "/")                                                                                      \
  X(Mod, "%")                                                                                      \
  X(Min, "min")                                                                                    \
  X(Max, "max")

#define WM_COMPARE_OPS(X)                                                                          \
  X(EQ, "==")                                                                                      \
  X(NE, "!=")                                                                                      \
  X(LT, "<")                                                                                       \
  X(LE, "<=")                                                                                      \
  X(GT, ">")                                                                                       \
  X(GE, ">=")

// name, printed name, argument count
#define WM_MATH_FUNCS(X)                                                                           \
  X(Exp, "exp", 1)                                                                                 \
  X(Log, "log", 1)                                                                                 \
  X(Sqrt, "sqrt", 1)                                                                               \
  X(Rsqrt, "rsqrt", 1)                                                                             \
  X(Tanh, "tanh", 1)                                                                               \
  X(Erf, "erf", 1)                                                                                 \
  X(Sigmoid, "sigmoid", 1)                                                                         \
  X(Pow, "pow", 2)                                                                                 \
  X(Abs, "abs", 1)

enum class BinaryOp : uint8_t {
#define WM_X(n, s) n,
  WM_BINARY_OPS(WM_X)
#undef WM_X
};
enum class CompareOp : uint8_t {
#define WM_X(n, s) n,
  WM_COMPARE_OPS(WM_X)
#undef WM_X
};
enum class LogicalOp : uint8_t { And, Or };
enum class MathFunc : uint8_t {
#define WM_X(n, s, a) n,
  WM_MATH_FUNCS(WM_X)
#undef WM_X
};

const char* binaryOpName(BinaryOp op);
const char* compareOpName(CompareOp op);
const char* mathFuncName(MathFunc f);
int mathFuncArity(MathFunc f);
const char* exprKindName(ExprKind k);

struct ExprNode;
struct OperationNode;
/// A tensor is the single output of an operation (placeholder or compute).
using Tensor = std::shared_ptr<const OperationNode>;

/// Where a buffer lives (lowered IR only).
enum class MemScope : uint8_t { Global, Shared, Local };
const char* memScopeName(MemScope s);
bool parseMemScope(const std::string& s, MemScope* out);

/// A buffer of the lowered IR: dense, row-major unless strides say otherwise.
struct BufferNode {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; ///< in elements, one per dimension
  MemScope scope = MemScope::Global;
  /// Elements to allocate (covers the largest index under `strides`).
  int64_t allocElements() const;
};
using Buffer = std::shared_ptr<const BufferNode>;
/// A buffer with row-major strides; `alignStrides` pads dimension d's stride up to
/// k·factor + offset when factor > 0 (storage_align).
Buffer makeBuffer(std::string name, DType dtype, std::vector<int64_t> shape, MemScope scope,
                  const std::vector<std::pair<int64_t, int64_t>>& alignStrides = {});

/// A handle to an immutable expression node.
class Expr {
public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const;
  DType dtype() const;
  /// The node as T, or nullptr when it is of another kind.
  template <typename T> const T* as() const;
  /// Pointer identity (structural equality lives in compute_dag.h's hashing).
  bool same(const Expr& o) const { return node_ == o.node_; }

private:
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  const ExprKind kind;
  const DType dtype;
  virtual ~ExprNode() = default;

protected:
  ExprNode(ExprKind k, DType t) : kind(k), dtype(t) {}
};

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  const int64_t value;
  IntImmNode(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  const double value;
  FloatImmNode(DType t, double v) : ExprNode(kKind, t), value(v) {}
};

/// A variable: an axis of a compute op, or a loop variable after lowering. Identity is the
/// node itself; the name is only for printing.
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  const std::string name;
  VarNode(DType t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
};

struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  const BinaryOp op;
  const Expr a, b;
  BinaryNode(BinaryOp o, Expr x, Expr y) : ExprNode(kKind, x.dtype()), op(o), a(x), b(y) {}
};

struct CompareNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Compare;
  const CompareOp op;
  const Expr a, b;
  CompareNode(CompareOp o, Expr x, Expr y) : ExprNode(kKind, DType::Bool), op(o), a(x), b(y) {}
};

struct LogicalNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Logical;
  const LogicalOp op;
  const Expr a, b;
  LogicalNode(LogicalOp o, Expr x, Expr y) : ExprNode(kKind, DType::Bool), op(o), a(x), b(y) {}
};

struct NotNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Not;
  const Expr a;
  explicit NotNode(Expr x) : ExprNode(kKind, DType::Bool), a(x) {}
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  const Expr cond, t, f;
  SelectNode(Expr c, Expr x, Expr y) : ExprNode(kKind, x.dtype()), cond(c), t(x), f(y) {}
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  const Expr value;
  CastNode(DType to, Expr v) : ExprNode(kKind, to), value(v) {}
};

struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  const MathFunc func;
  const std::vector<Expr> args;
  CallNode(MathFunc f, std::vector<Expr> a)
      : ExprNode(kKind, a.at(0).dtype()), func(f), args(std::move(a)) {}
};

struct TensorReadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::TensorRead;
  const Tensor tensor;
  const std::vector<Expr> indices;
  TensorReadNode(DType t, Tensor ten, std::vector<Expr> idx)
      : ExprNode(kKind, t), tensor(std::move(ten)), indices(std::move(idx)) {}
};

/// A load from a buffer of the lowered IR (never appears in a ComputeDAG).
struct BufferLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::BufferLoad;
  const Buffer buffer;
  const std::vector<Expr> indices;
  BufferLoadNode(Buffer b, std::vector<Expr> idx)
      : ExprNode(kKind, b->dtype), buffer(std::move(b)), indices(std::move(idx)) {}
};

inline ExprKind Expr::kind() const {
  return node_->kind;
}
inline DType Expr::dtype() const {
  return node_->dtype;
}
template <typename T> const T* Expr::as() const {
  return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
}

/// A variable handle; converts to Expr.
class Var : public Expr {
public:
  Var() = default;
  explicit Var(std::string name, DType t = kIndexType);
  const VarNode* node() const { return as<VarNode>(); }
  const std::string& name() const { return node()->name; }
};

// ---- Checked constructors -------------------------------------------------------------------
Expr intImm(int64_t v, DType t = kIndexType);
Expr floatImm(double v, DType t = DType::F32);
Expr boolImm(bool v);
/// A constant of `like`'s type (int constants are truncated toward zero).
Expr constLike(const Expr& like, double v);
Expr binary(BinaryOp op, Expr a, Expr b);
Expr compare(CompareOp op, Expr a, Expr b);
Expr logical(LogicalOp op, Expr a, Expr b);
Expr logicalNot(Expr a);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DType to, Expr v);
Expr call(MathFunc f, std::vector<Expr> args);
Expr read(const Tensor& t, std::vector<Expr> indices);
Expr load(const Buffer& b, std::vector<Expr> indices);

inline Expr min(Expr a, Expr b) {
  return binary(BinaryOp::Min, std::move(a), std::move(b));
}
inline Expr max(Expr a, Expr b) {
  return binary(BinaryOp::Max, std::move(a), std::move(b));
}
inline Expr exp(Expr a) {
  return call(MathFunc::Exp, {std::move(a)});
}
inline Expr log(Expr a) {
  return call(MathFunc::Log, {std::move(a)});
}
inline Expr sqrt(Expr a) {
  return call(MathFunc::Sqrt, {std::move(a)});
}
inline Expr rsqrt(Expr a) {
  return call(MathFunc::Rsqrt, {std::move(a)});
}
inline Expr tanh(Expr a) {
  return call(MathFunc::Tanh, {std::move(a)});
}
inline Expr erf(Expr a) {
  return call(MathFunc::Erf, {std::move(a)});
}
inline Expr sigmoid(Expr a) {
  return call(MathFunc::Sigmoid, {std::move(a)});
}
inline Expr abs(Expr a) {
  return call(MathFunc::Abs, {std::move(a)});
}
inline Expr pow(Expr a, Expr b) {
  return call(MathFunc::Pow, {std::move(a), std::move(b)});
}

// Operators: an arithmetic constant on either side takes the other operand's type.
#define WM_DEFINE_BINARY_OPERATOR(sym, OP)                                                         \
  inline Expr operator sym(Expr a, Expr b) {                                                       \
    return binary(OP, std::move(a), std::move(b));                                                 \
  }                                                                                                \
  inline Expr operator sym(Expr a, double c) {                                                     \
    Expr k = constLike(a, c);                                                                      \
    return binary(OP, std::move(a), std::move(k));                                                 \
  }                                                                                                \
  inline Expr operator sym(double c, Expr b) {                                                     \
    Expr k = constLike(b, c);                                                                      \
    return binary(OP, std::move(k), std::move(b));                                                 \
  }
WM_DEFINE_BINARY_OPERATOR(+, BinaryOp::Add)
WM_DEFINE_BINARY_OPERATOR(-, BinaryOp::Sub)
WM_DEFINE_BINARY_OPERATOR(*, BinaryOp::Mul)
WM_DEFINE_BINARY_OPERATOR(/, BinaryOp::Div)
WM_DEFINE_BINARY_OPERATOR(%, BinaryOp::Mod)
#undef WM_DEFINE_BINARY_OPERATOR

#define WM_DEFINE_COMPARE_OPERATOR(sym, OP)                                                        \
  inline Expr operator sym(Expr a, Expr b) {                                                       \
    return compare(OP, std::move(a), std::move(b));                                                \
  }                                                                                                \
  inline Expr operator sym(Expr a, double c) {                                                     \
    Expr k = constLike(a, c);                                                                      \
    return compare(OP, std::move(a), std::move(k));                                                \
  }
WM_DEFINE_COMPARE_OPERATOR(==, CompareOp::EQ)
WM_DEFINE_COMPARE_OPERATOR(!=, CompareOp::NE)
WM_DEFINE_COMPARE_OPERATOR(<, CompareOp::LT)
WM_DEFINE_COMPARE_OPERATOR(<=, CompareOp::LE)
WM_DEFINE_COMPARE_OPERATOR(>, CompareOp::GT)
WM_DEFINE_COMPARE_OPERATOR(>=, CompareOp::GE)
#undef WM_DEFINE_COMPARE_OPERATOR

inline Expr operator&&(Expr a, Expr b) {
  return logical(LogicalOp::And, std::move(a), std::move(b));
}
inline Expr operator||(Expr a, Expr b) {
  return logical(LogicalOp::Or, std::move(a), std::move(b));
}
inline Expr operator!(Expr a) {
  return logicalNot(std::move(a));
}
inline Expr operator-(Expr a) {
  return constLike(a, 0) - std::move(a);
}

/// If e is an integer constant, stores it in *v and returns true.
bool isConstInt(const Expr& e, int64_t* v = nullptr);

} // namespace wm::ir
