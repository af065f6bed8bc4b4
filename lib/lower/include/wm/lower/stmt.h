// Loop-nest IR: the statements lowering produces and the backends consume.
//
// Every statement node is listed once in WM_STMT_NODES; the kind enum and the mutator are
// generated from it (STYLE.md 1). Expressions are ir::Expr, reading memory with BufferLoad.
#pragma once

#include <wm/ir/expr.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wm::lower {

#define WM_STMT_NODES(X)                                                                           \
  X(For)                                                                                           \
  X(Store)                                                                                         \
  X(Allocate)                                                                                      \
  X(IfThenElse)                                                                                    \
  X(Seq)                                                                                           \
  X(Attr)                                                                                          \
  X(Barrier)

enum class StmtKind : uint8_t {
#define WM_X(n) n,
  WM_STMT_NODES(WM_X)
#undef WM_X
};

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, ThreadBound };
const char* forKindName(ForKind k);

struct StmtNode;
class Stmt {
public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  StmtKind kind() const;
  template <typename T> const T* as() const;
  bool same(const Stmt& o) const { return node_ == o.node_; }

private:
  std::shared_ptr<const StmtNode> node_;
};

struct StmtNode {
  const StmtKind kind;
  virtual ~StmtNode() = default;

protected:
  explicit StmtNode(StmtKind k) : kind(k) {}
};

/// for var in [0, extent): body
struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  const ir::Var var;
  const int64_t extent;
  const ForKind forKind;
  const std::string threadTag; ///< ThreadBound: "blockIdx.x", "threadIdx.x", "vthread", ...
  const Stmt body;
  ForNode(ir::Var v, int64_t e, ForKind k, std::string tag, Stmt b)
      : StmtNode(kKind), var(std::move(v)), extent(e), forKind(k), threadTag(std::move(tag)),
        body(std::move(b)) {}
};

struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  const ir::Buffer buffer;
  const std::vector<ir::Expr> indices;
  const ir::Expr value;
  StoreNode(ir::Buffer b, std::vector<ir::Expr> i, ir::Expr v)
      : StmtNode(kKind), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
};

/// The buffer exists (uninitialized) for the duration of body.
struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  const ir::Buffer buffer;
  const Stmt body;
  AllocateNode(ir::Buffer b, Stmt s) : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)) {}
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  const ir::Expr cond;
  const Stmt then, otherwise; ///< otherwise may be undefined
  IfThenElseNode(ir::Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then(std::move(t)), otherwise(std::move(e)) {}
};

struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  const std::vector<Stmt> stmts;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
};

/// A pragma on the enclosed statement, e.g. key "auto_unroll_max_step".
struct AttrNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Attr;
  const std::string key;
  const int64_t value;
  const Stmt body;
  AttrNode(std::string k, int64_t v, Stmt b)
      : StmtNode(kKind), key(std::move(k)), value(v), body(std::move(b)) {}
};

/// GPU: every thread of the block waits here until all have arrived, and their writes to
/// shared memory before it are seen by reads after it (__syncthreads). Sequential code (the
/// loop interpreter, CPU targets) runs it as nothing.
struct BarrierNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Barrier;
  BarrierNode() : StmtNode(kKind) {}
};

inline StmtKind Stmt::kind() const {
  return node_->kind;
}
template <typename T> const T* Stmt::as() const {
  return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
}

// Checked constructors.
Stmt makeFor(ir::Var var, int64_t extent, ForKind kind, std::string threadTag, Stmt body);
Stmt makeStore(ir::Buffer b, std::vector<ir::Expr> indices, ir::Expr value);
Stmt makeAllocate(ir::Buffer b, Stmt body);
Stmt makeIf(ir::Expr cond, Stmt then, Stmt otherwise = Stmt());
/// Flattens nested sequences; a single statement is returned as is.
Stmt makeSeq(std::vector<Stmt> stmts);
Stmt makeAttr(std::string key, int64_t value, Stmt body);
Stmt makeBarrier();

/// Rebuilds bottom-up; returns the same node when nothing below changed.
class StmtMutator {
public:
  virtual ~StmtMutator() = default;
  Stmt mutate(const Stmt& s);
  /// Expressions inside statements pass through here (identity by default).
  virtual ir::Expr mutateExpr(const ir::Expr& e) { return e; }
#define WM_X(n) virtual Stmt mutate##n(const n##Node* op, const Stmt& self);
  WM_STMT_NODES(WM_X)
#undef WM_X
};

/// Whether `pred` holds for s or a statement below it (pre-order; stops at the first).
bool anyStmt(const Stmt& s, const std::function<bool(const Stmt&)>& pred);

/// Indented text, one statement a line; the format of the text expectations in tests.
std::string toString(const Stmt& s);

} // namespace wm::lower
