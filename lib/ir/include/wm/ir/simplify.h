// Simplifier for index arithmetic (and constant folding everywhere).
//
// simplify() folds constants, removes identities (x+0, x*1, x*0, min(x,x), select on a
// constant), and puts integer sums into a canonical linear form: terms in a stable order with
// coefficients merged, constants last. floor-div and floor-mod by a constant c are reduced when
// every coefficient is a multiple of c, or when `bounds` proves the remainder part lies in
// [0, c). The result is semantically identical to the input. Tested in test/ir/test_simplify.cpp.
#pragma once

#include <wm/ir/expr.h>

#include <unordered_map>
#include <vector>

namespace wm::ir {

/// Known inclusive integer range of a variable.
struct IntBound {
  int64_t lo, hi;
};
using VarBounds = std::unordered_map<const VarNode*, IntBound>;

Expr simplify(const Expr& e, const VarBounds& bounds = {});

/// Structural equality, variables compared by identity.
bool deepEqual(const Expr& a, const Expr& b);

/// The operands of a tree of && (e itself when it is no &&), appended in order.
void conjuncts(const Expr& e, std::vector<Expr>* out);

/// Inclusive bounds of an integer expression given variable bounds; false if unknown.
bool boundOf(const Expr& e, const VarBounds& bounds, IntBound* out);

} // namespace wm::ir
