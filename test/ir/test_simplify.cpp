// Unit tests of the simplifier: text in -> text out, plus a seeded property test that
// simplification never changes the value of random integer expressions.
#include <wm/ir/interpreter.h>
#include <wm/ir/printer.h>
#include <wm/ir/simplify.h>
#include <wm/support/rng.h>

#include <catch2/catch.hpp>

using namespace wm::ir;

TEST_CASE("simplifier: constant folding and identities", "[simplify]") {
  Var x("x"), y("y");
  CHECK(toString(simplify(intImm(3) + 4)) == "7");
  CHECK(toString(simplify(x + 0)) == "x");
  CHECK(toString(simplify(x * 1 + 0)) == "x");
  CHECK(toString(simplify(x * 0 + y)) == "y");
  CHECK(toString(simplify((x + 3) - 3)) == "x");
  CHECK(toString(simplify(x + x * 2 - y + y)) == "x * 3");
  CHECK(toString(simplify(intImm(-7) / 2)) == "-4"); // floor division
  CHECK(toString(simplify(intImm(-7) % 2)) == "1");  // floor modulo
  CHECK(toString(simplify(min(x, x))) == "x");
  CHECK(toString(simplify(floatImm(2.0) * floatImm(3.0))) == "6.0");
  Expr f = floatImm(1.5);
  CHECK(toString(simplify(select(intImm(1) < 2, f, floatImm(0)))) == "1.5");
  CHECK(toString(simplify(!(!(x < y)))) == "x < y");
}

TEST_CASE("simplifier: division and modulo with bounds", "[simplify]") {
  Var x("x"), y("y");
  VarBounds b{{x.node(), {0, 15}}, {y.node(), {0, 3}}};
  CHECK(toString(simplify((x * 4 + y) / 4, b)) == "x");
  CHECK(toString(simplify((x * 4 + y) % 4, b)) == "y");
  CHECK(toString(simplify((x * 8 + 12) / 4)) == "x * 2 + 3");
  CHECK(toString(simplify((x * 8 + y) / 4)) == "x * 2 + y / 4"); // y unbounded here
  CHECK(toString(simplify(x / 4 / 8)) == "x / 32");
  CHECK(toString(simplify(x % 16 % 4)) == "x % 4");
  CHECK(toString(simplify(x < 16, b)) == "true");
  CHECK(toString(simplify(x + y >= 19, b)) == "false");
  CHECK(toString(simplify(x + y < 10, b)) == "x + y < 10");
  CHECK(toString(simplify(min(y, x + 4), b)) == "y");
}

namespace {
// A random integer expression over vars, of bounded depth.
Expr randomExpr(wm::Rng& rng, const std::vector<Var>& vars, int depth) {
  if (depth == 0 || rng.bernoulli(0.25)) {
    if (rng.bernoulli(0.6)) return vars[rng.uniformInt(0, vars.size() - 1)];
    return intImm(rng.uniformInt(-9, 9));
  }
  Expr a = randomExpr(rng, vars, depth - 1), b = randomExpr(rng, vars, depth - 1);
  switch (rng.uniformInt(0, 6)) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * intImm(rng.uniformInt(-4, 6));
  case 3: return a / intImm(rng.uniformInt(1, 9));
  case 4: return a % intImm(rng.uniformInt(1, 9));
  case 5: return min(a, b);
  default: return select(a < b, a, b + 1);
  }
}
} // namespace

TEST_CASE("simplifier preserves the value of random expressions", "[simplify][property]") {
  wm::Rng rng(1234);
  std::vector<Var> vars{Var("a"), Var("b"), Var("c")};
  VarBounds bounds{{vars[0].node(), {0, 7}}, {vars[1].node(), {0, 3}}, {vars[2].node(), {-5, 5}}};
  int checked = 0;
  for (int t = 0; t < 2000; ++t) {
    Expr e = randomExpr(rng, vars, 4);
    Expr s = simplify(e, bounds);
    for (int k = 0; k < 8; ++k) {
      std::unordered_map<const VarNode*, double> v;
      for (auto& var : vars) {
        auto bnd = bounds.at(var.node());
        v[var.node()] = static_cast<double>(rng.uniformInt(bnd.lo, bnd.hi));
      }
      INFO("expr: " << toString(e) << "  simplified: " << toString(s));
      REQUIRE(evaluateScalar(e, v) == evaluateScalar(s, v));
      ++checked;
    }
  }
  CHECK(checked == 16000);
}
