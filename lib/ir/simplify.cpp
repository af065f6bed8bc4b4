// The simplifier (see simplify.h). Roadmap:
//  1. A bottom-up mutator folds constants and applies local identities.
//  2. Integer +, -, * by constants are flattened to a linear form (atom·coef + const); equal
//     atoms merge, and the form is rebuilt in first-appearance order.
//  3. floor-div/mod by a positive constant peel off the multiples of the divisor and use
//     variable bounds to drop what provably stays in [0, c).
//  4. Integer comparisons are decided from the bounds of their difference.
#include <wm/ir/simplify.h>
#include <wm/ir/visitor.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

#include <cmath>

namespace wm::ir {

namespace {

bool isConstFloat(const Expr& e, double* v) {
  if (auto* f = e.as<FloatImmNode>()) {
    *v = f->value;
    return true;
  }
  return false;
}

double roundFloat(DType t, double v) {
  return t == DType::F32 ? double(float(v)) : v;
}

/// sum(coef * atom) + constant, over one integer type.
struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  void addTerm(const Expr& atom, int64_t coef) {
    if (coef == 0) return;
    for (auto& t : terms) {
      if (deepEqual(t.first, atom)) {
        t.second += coef;
        return;
      }
    }
    terms.emplace_back(atom, coef);
  }
  void add(const Linear& o, int64_t scale) {
    for (auto& t : o.terms) addTerm(t.first, t.second * scale);
    constant += o.constant * scale;
  }
};

/// Flattens integer +, -, * by constant into a linear form.
Linear toLinear(const Expr& e) {
  Linear l;
  int64_t c;
  if (isConstInt(e, &c)) {
    l.constant = c;
    return l;
  }
  if (auto* b = e.as<BinaryNode>()) {
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
      l = toLinear(b->a);
      l.add(toLinear(b->b), b->op == BinaryOp::Add ? 1 : -1);
      return l;
    }
    if (b->op == BinaryOp::Mul) {
      if (isConstInt(b->b, &c)) {
        l.add(toLinear(b->a), c);
        return l;
      }
      if (isConstInt(b->a, &c)) {
        l.add(toLinear(b->b), c);
        return l;
      }
    }
  }
  l.addTerm(e, 1);
  return l;
}

Expr fromLinear(const Linear& l, DType t) {
  Expr out;
  for (auto& [atom, coef] : l.terms) {
    if (coef == 0) continue;
    int64_t mag = coef < 0 ? -coef : coef;
    Expr term = mag == 1 ? atom : binary(BinaryOp::Mul, atom, intImm(mag, t));
    if (!out.defined())
      out = coef < 0 ? binary(BinaryOp::Sub, intImm(0, t), term) : term;
    else
      out = binary(coef < 0 ? BinaryOp::Sub : BinaryOp::Add, out, term);
  }
  if (!out.defined()) return intImm(l.constant, t);
  if (l.constant > 0) out = binary(BinaryOp::Add, out, intImm(l.constant, t));
  if (l.constant < 0) out = binary(BinaryOp::Sub, out, intImm(-l.constant, t));
  return out;
}

bool boundOfLinear(const Linear& l, const VarBounds& bounds, IntBound* out) {
  IntBound r{l.constant, l.constant};
  for (auto& [atom, coef] : l.terms) {
    IntBound b;
    if (!boundOf(atom, bounds, &b)) return false;
    if (coef >= 0) {
      r.lo += b.lo * coef;
      r.hi += b.hi * coef;
    } else {
      r.lo += b.hi * coef;
      r.hi += b.lo * coef;
    }
  }
  *out = r;
  return true;
}

class Simplifier : public ExprMutator {
public:
  explicit Simplifier(const VarBounds& b) : bounds_(b) {}

  Expr mutateBinary(const BinaryNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DType t = op->dtype;
    int64_t x, y;
    double fx = 0, fy = 0;
    if (isInt(t)) {
      bool ca = isConstInt(a, &x), cb = isConstInt(b, &y);
      if (ca && cb) {
        switch (op->op) {
        case BinaryOp::Add: return intImm(x + y, t);
        case BinaryOp::Sub: return intImm(x - y, t);
        case BinaryOp::Mul: return intImm(x * y, t);
        case BinaryOp::Div:
          if (y != 0) return intImm(floorDiv(x, y), t);
          break;
        case BinaryOp::Mod:
          if (y != 0) return intImm(floorMod(x, y), t);
          break;
        case BinaryOp::Min: return intImm(std::min(x, y), t);
        case BinaryOp::Max: return intImm(std::max(x, y), t);
        }
      }
      switch (op->op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul: {
        Expr rebuilt = a.same(op->a) && b.same(op->b) ? self : binary(op->op, a, b);
        return fromLinear(toLinear(rebuilt), t);
      }
      case BinaryOp::Div:
        if (cb && y > 0) return divByConst(a, y, t);
        break;
      case BinaryOp::Mod:
        if (cb && y > 0) return modByConst(a, y, t);
        break;
      case BinaryOp::Min:
      case BinaryOp::Max: {
        if (deepEqual(a, b)) return a;
        IntBound ba, bb;
        if (boundOf(a, bounds_, &ba) && boundOf(b, bounds_, &bb)) {
          bool aLess = ba.hi <= bb.lo, bLess = bb.hi <= ba.lo;
          if (op->op == BinaryOp::Min && aLess) return a;
          if (op->op == BinaryOp::Min && bLess) return b;
          if (op->op == BinaryOp::Max && aLess) return b;
          if (op->op == BinaryOp::Max && bLess) return a;
        }
        break;
      }
      }
    } else if (isFloat(t)) {
      bool ca = isConstFloat(a, &fx), cb = isConstFloat(b, &fy);
      if (ca && cb) {
        switch (op->op) {
        case BinaryOp::Add: return floatImm(roundFloat(t, fx + fy), t);
        case BinaryOp::Sub: return floatImm(roundFloat(t, fx - fy), t);
        case BinaryOp::Mul: return floatImm(roundFloat(t, fx * fy), t);
        case BinaryOp::Div: return floatImm(roundFloat(t, fx / fy), t);
        case BinaryOp::Min: return floatImm(std::min(fx, fy), t);
        case BinaryOp::Max: return floatImm(std::max(fx, fy), t);
        case BinaryOp::Mod: break;
        }
      }
      if (op->op == BinaryOp::Add && cb && fy == 0.0) return a;
      if (op->op == BinaryOp::Add && ca && fx == 0.0) return b;
      if (op->op == BinaryOp::Sub && cb && fy == 0.0) return a;
      if (op->op == BinaryOp::Mul && cb && fy == 1.0) return a;
      if (op->op == BinaryOp::Mul && ca && fx == 1.0) return b;
      if (op->op == BinaryOp::Div && cb && fy == 1.0) return a;
    }
    if (a.same(op->a) && b.same(op->b)) return self;
    return binary(op->op, a, b);
  }

  Expr mutateCompare(const CompareNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    double fx = 0, fy = 0;
    if (isConstFloat(a, &fx) && isConstFloat(b, &fy)) return boolImm(decide(op->op, fx - fy));
    if (isInt(a.dtype())) {
      Expr diff = mutate(binary(BinaryOp::Sub, a, b));
      IntBound d;
      if (boundOf(diff, bounds_, &d)) {
        int r = decideRange(op->op, d);
        if (r >= 0) return boolImm(r == 1);
      }
    }
    if (a.same(op->a) && b.same(op->b)) return self;
    return compare(op->op, a, b);
  }

  Expr mutateLogical(const LogicalNode* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    int64_t x, y;
    bool ca = isConstInt(a, &x), cb = isConstInt(b, &y);
    if (op->op == LogicalOp::And) {
      if ((ca && !x) || (cb && !y)) return boolImm(false);
      if (ca) return b;
      if (cb) return a;
    } else {
      if ((ca && x) || (cb && y)) return boolImm(true);
      if (ca) return b;
      if (cb) return a;
    }
    if (a.same(op->a) && b.same(op->b)) return self;
    return logical(op->op, a, b);
  }

  Expr mutateNot(const NotNode* op, const Expr& self) override {
    Expr a = mutate(op->a);
    int64_t x;
    if (isConstInt(a, &x)) return boolImm(!x);
    if (auto* n = a.as<NotNode>()) return n->a;
    return a.same(op->a) ? self : logicalNot(a);
  }

  Expr mutateSelect(const SelectNode* op, const Expr& self) override {
    Expr c = mutate(op->cond);
    int64_t x;
    if (isConstInt(c, &x)) return mutate(x ? op->t : op->f);
    Expr t = mutate(op->t), f = mutate(op->f);
    if (deepEqual(t, f)) return t;
    if (c.same(op->cond) && t.same(op->t) && f.same(op->f)) return self;
    return select(c, t, f);
  }

  Expr mutateCast(const CastNode* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (v.dtype() == op->dtype) return v;
    int64_t x;
    double f;
    if (isConstInt(v, &x)) {
      if (isFloat(op->dtype)) return floatImm(roundFloat(op->dtype, double(x)), op->dtype);
      if (op->dtype == DType::I64 || op->dtype == DType::I32) {
        if (op->dtype == DType::I32) x = static_cast<int32_t>(x);
        return intImm(x, op->dtype);
      }
    }
    if (isConstFloat(v, &f) && isFloat(op->dtype))
      return floatImm(roundFloat(op->dtype, f), op->dtype);
    return v.same(op->value) ? self : cast(op->dtype, v);
  }

private:
  static bool decide(CompareOp op, double d) {
    switch (op) {
    case CompareOp::EQ: return d == 0;
    case CompareOp::NE: return d != 0;
    case CompareOp::LT: return d < 0;
    case CompareOp::LE: return d <= 0;
    case CompareOp::GT: return d > 0;
    case CompareOp::GE: return d >= 0;
    }
    return false;
  }
  // 1 true, 0 false, -1 unknown, for a - b in range d.
  static int decideRange(CompareOp op, IntBound d) {
    switch (op) {
    case CompareOp::EQ: return d.lo == 0 && d.hi == 0 ? 1 : (d.lo > 0 || d.hi < 0 ? 0 : -1);
    case CompareOp::NE: return d.lo == 0 && d.hi == 0 ? 0 : (d.lo > 0 || d.hi < 0 ? 1 : -1);
    case CompareOp::LT: return d.hi < 0 ? 1 : (d.lo >= 0 ? 0 : -1);
    case CompareOp::LE: return d.hi <= 0 ? 1 : (d.lo > 0 ? 0 : -1);
    case CompareOp::GT: return d.lo > 0 ? 1 : (d.hi <= 0 ? 0 : -1);
    case CompareOp::GE: return d.lo >= 0 ? 1 : (d.hi < 0 ? 0 : -1);
    }
    return -1;
  }

  // Splits a into (multiples of c) + rest, with the constant reduced to [0, c).
  void splitByDivisor(const Expr& a, int64_t c, Linear* divisible, Linear* rest) {
    Linear l = toLinear(a);
    for (auto& [atom, coef] : l.terms) {
      if (coef % c == 0)
        divisible->addTerm(atom, coef / c);
      else
        rest->addTerm(atom, coef);
    }
    int64_t q = floorDiv(l.constant, c);
    divisible->constant = q;
    rest->constant = l.constant - q * c;
  }

  Expr divByConst(const Expr& a, int64_t c, DType t) {
    if (c == 1) return a;
    // (x / p) / c == x / (p * c) for positive p, c (floor semantics).
    if (auto* inner = a.as<BinaryNode>()) {
      int64_t p;
      if (inner->op == BinaryOp::Div && isConstInt(inner->b, &p) && p > 0)
        return divByConst(inner->a, p * c, t);
    }
    Linear div, rest;
    splitByDivisor(a, c, &div, &rest);
    IntBound rb;
    Expr restPart;
    if (boundOfLinear(rest, bounds_, &rb) && floorDiv(rb.lo, c) == floorDiv(rb.hi, c)) {
      div.constant += floorDiv(rb.lo, c);
    } else if (rest.terms.empty()) {
      // constant in [0, c): contributes nothing
    } else {
      restPart = binary(BinaryOp::Div, fromLinear(rest, t), intImm(c, t));
    }
    if (restPart.defined()) div.addTerm(restPart, 1);
    return fromLinear(div, t);
  }

  Expr modByConst(const Expr& a, int64_t c, DType t) {
    if (c == 1) return intImm(0, t);
    // (x % p) % c == x % c when c divides p.
    if (auto* inner = a.as<BinaryNode>()) {
      int64_t p;
      if (inner->op == BinaryOp::Mod && isConstInt(inner->b, &p) && p > 0 && p % c == 0)
        return modByConst(inner->a, c, t);
    }
    Linear div, rest;
    splitByDivisor(a, c, &div, &rest);
    IntBound rb;
    if (boundOfLinear(rest, bounds_, &rb) && rb.lo >= 0 && rb.hi < c) return fromLinear(rest, t);
    if (rest.terms.empty()) return intImm(rest.constant, t);
    return binary(BinaryOp::Mod, fromLinear(rest, t), intImm(c, t));
  }

  const VarBounds& bounds_;
};

} // namespace

bool deepEqual(const Expr& a, const Expr& b) {
  if (a.same(b)) return true;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
  case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
  case ExprKind::FloatImm: return a.as<FloatImmNode>()->value == b.as<FloatImmNode>()->value;
  case ExprKind::Var: return false; // identity already compared
  case ExprKind::Binary: {
    auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
    return x->op == y->op && deepEqual(x->a, y->a) && deepEqual(x->b, y->b);
  }
  case ExprKind::Compare: {
    auto *x = a.as<CompareNode>(), *y = b.as<CompareNode>();
    return x->op == y->op && deepEqual(x->a, y->a) && deepEqual(x->b, y->b);
  }
  case ExprKind::Logical: {
    auto *x = a.as<LogicalNode>(), *y = b.as<LogicalNode>();
    return x->op == y->op && deepEqual(x->a, y->a) && deepEqual(x->b, y->b);
  }
  case ExprKind::Not: return deepEqual(a.as<NotNode>()->a, b.as<NotNode>()->a);
  case ExprKind::Select: {
    auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
    return deepEqual(x->cond, y->cond) && deepEqual(x->t, y->t) && deepEqual(x->f, y->f);
  }
  case ExprKind::Cast: return deepEqual(a.as<CastNode>()->value, b.as<CastNode>()->value);
  case ExprKind::Call: {
    auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
    if (x->func != y->func || x->args.size() != y->args.size()) return false;
    for (size_t i = 0; i < x->args.size(); ++i)
      if (!deepEqual(x->args[i], y->args[i])) return false;
    return true;
  }
  case ExprKind::BufferLoad: {
    auto *x = a.as<BufferLoadNode>(), *y = b.as<BufferLoadNode>();
    if (x->buffer != y->buffer) return false;
    for (size_t i = 0; i < x->indices.size(); ++i)
      if (!deepEqual(x->indices[i], y->indices[i])) return false;
    return true;
  }
  case ExprKind::TensorRead: {
    auto *x = a.as<TensorReadNode>(), *y = b.as<TensorReadNode>();
    if (x->tensor != y->tensor) return false;
    for (size_t i = 0; i < x->indices.size(); ++i)
      if (!deepEqual(x->indices[i], y->indices[i])) return false;
    return true;
  }
  }
  return false;
}

void conjuncts(const Expr& e, std::vector<Expr>* out) {
  if (auto* l = e.as<LogicalNode>(); l && l->op == LogicalOp::And) {
    conjuncts(l->a, out);
    conjuncts(l->b, out);
    return;
  }
  out->push_back(e);
}

bool boundOf(const Expr& e, const VarBounds& bounds, IntBound* out) {
  if (!isInt(e.dtype())) return false;
  int64_t c;
  if (isConstInt(e, &c)) {
    *out = {c, c};
    return true;
  }
  if (auto* v = e.as<VarNode>()) {
    auto it = bounds.find(v);
    if (it == bounds.end()) return false;
    *out = it->second;
    return true;
  }
  if (auto* b = e.as<BinaryNode>()) {
    IntBound x, y;
    bool kx = boundOf(b->a, bounds, &x), ky = boundOf(b->b, bounds, &y);
    switch (b->op) {
    case BinaryOp::Add:
      if (!kx || !ky) return false;
      *out = {x.lo + y.lo, x.hi + y.hi};
      return true;
    case BinaryOp::Sub:
      if (!kx || !ky) return false;
      *out = {x.lo - y.hi, x.hi - y.lo};
      return true;
    case BinaryOp::Mul: {
      if (!kx || !ky) return false;
      int64_t p[4] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
      *out = {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
      return true;
    }
    case BinaryOp::Div:
      if (!kx || !ky || y.lo != y.hi || y.lo <= 0) return false;
      *out = {floorDiv(x.lo, y.lo), floorDiv(x.hi, y.lo)};
      return true;
    case BinaryOp::Mod:
      if (!ky || y.lo != y.hi || y.lo <= 0) return false;
      if (kx && x.lo >= 0 && x.hi < y.lo)
        *out = x;
      else
        *out = {0, y.lo - 1};
      return true;
    case BinaryOp::Min:
      if (!kx || !ky) return false;
      *out = {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
      return true;
    case BinaryOp::Max:
      if (!kx || !ky) return false;
      *out = {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
      return true;
    }
  }
  if (auto* s = e.as<SelectNode>()) {
    IntBound x, y;
    if (!boundOf(s->t, bounds, &x) || !boundOf(s->f, bounds, &y)) return false;
    *out = {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
    return true;
  }
  return false;
}

Expr simplify(const Expr& e, const VarBounds& bounds) {
  return Simplifier(bounds).mutate(e);
}

} // namespace wm::ir
