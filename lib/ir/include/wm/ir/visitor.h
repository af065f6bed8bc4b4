// Visitor and mutator over expressions, generated from WM_EXPR_NODES (expr.h).
//
// ExprVisitor walks children by default; override visitX to act on node X.
// ExprMutator rebuilds bottom-up; it returns the very same node when no child changed, so
// unchanged subtrees stay shared.
#pragma once

#include <wm/ir/expr.h>

#include <functional>
#include <unordered_map>

namespace wm::ir {

class ExprVisitor {
public:
  virtual ~ExprVisitor() = default;
  void visit(const Expr& e);
#define WM_X(n) virtual void visit##n(const n##Node* op);
  WM_EXPR_NODES(WM_X)
#undef WM_X
};

class ExprMutator {
public:
  virtual ~ExprMutator() = default;
  Expr mutate(const Expr& e);
#define WM_X(n) virtual Expr mutate##n(const n##Node* op, const Expr& self);
  WM_EXPR_NODES(WM_X)
#undef WM_X
};

/// Replaces variables (by identity) with expressions.
Expr substitute(const Expr& e, const std::unordered_map<const VarNode*, Expr>& map);

/// Calls f on every node in pre-order.
void postOrderVisit(const Expr& e, const std::function<void(const Expr&)>& f);

} // namespace wm::ir
