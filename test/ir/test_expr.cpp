// Unit tests: expression construction (type checks), mutator sharing, substitution, printer.
#include <wm/ir/printer.h>
#include <wm/ir/tensor.h>
#include <wm/ir/visitor.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

using namespace wm::ir;

TEST_CASE("checked constructors reject ill-typed expressions", "[ir]") {
  Var i("i");
  Expr f = floatImm(1.0);
  CHECK_THROWS_AS(binary(BinaryOp::Add, i, f), wm::InternalError);
  CHECK_THROWS_AS(select(i, f, f), wm::InternalError);             // condition not bool
  CHECK_THROWS_AS(select(i < 3, f, intImm(1)), wm::InternalError); // branch types differ
  CHECK_THROWS_AS(call(MathFunc::Exp, {i}), wm::InternalError);    // exp of an integer
  CHECK_THROWS_AS(call(MathFunc::Pow, {f}), wm::InternalError);    // arity
  CHECK_THROWS_AS(logical(LogicalOp::And, i, i), wm::InternalError);
  Tensor A = placeholder("A", {4, 4});
  CHECK_THROWS_AS(read(A, {i}), wm::InternalError);    // rank
  CHECK_THROWS_AS(read(A, {i, f}), wm::InternalError); // float index
  CHECK_THROWS_AS(intImm(int64_t(1) << 40, DType::I32), wm::InternalError);
  CHECK_NOTHROW(read(A, {i, i + 1}));
}

TEST_CASE("compute ops check their bodies", "[ir]") {
  Tensor A = placeholder("A", {4, 4});
  Var stray("stray");
  CHECK_THROWS_AS(compute("B", "t", {4, 4}, [&](auto& ax) { return at(A, ax[0], stray); }),
                  wm::InternalError);
  // shapes are input: a bad one is the user's error, an overflowing one too
  CHECK_THROWS_AS(placeholder("Z", {4, 0}), wm::UserError);
  CHECK_THROWS_AS(placeholder("H", {int64_t(1) << 32, int64_t(1) << 32}), wm::UserError);
  CHECK_THROWS_AS(reduce("R", "t", {int64_t(1) << 30}, ReduceKind::Sum, {int64_t(1) << 35},
                         [&](auto&, auto&) { return Expr(); }),
                  wm::UserError);
  Tensor B = compute("B", "t", {4, 4}, [&](auto& ax) { return at(A, ax[1], ax[0]) * 2.0; });
  CHECK(B->dtype == DType::F32);
  CHECK(B->axes.size() == 2);
  Tensor S = reduce("S", "t", {4}, ReduceKind::Max, {4},
                    [&](auto& ax, auto& r) { return at(A, ax[0], r[0]); });
  CHECK(S->hasReduction());
}

TEST_CASE("the mutator shares unchanged subtrees", "[ir]") {
  Var i("i"), j("j");
  Expr e = (i * 4 + j) % 8;
  ExprMutator identity;
  CHECK(identity.mutate(e).same(e));
  Var k("k");
  Expr s = substitute(e, {{j.node(), k}});
  CHECK(toString(s) == "(i * 4 + k) % 8");
  auto* mod = s.as<BinaryNode>();
  REQUIRE(mod != nullptr);
  // The untouched operand `8` is the same node as before.
  CHECK(mod->b.same(e.as<BinaryNode>()->b));
}

TEST_CASE("printer output", "[ir]") {
  Var i("i"), j("j");
  CHECK(toString(i + j * 2) == "i + j * 2");
  CHECK(toString((i + j) * 2) == "(i + j) * 2");
  CHECK(toString(i - (j - 1)) == "i - (j - 1)");
  CHECK(toString(i - j - 1) == "i - j - 1");
  CHECK(toString(min(i, j)) == "min(i, j)");
  Expr x = floatImm(0.5);
  CHECK(toString(exp(x) * 2.0) == "exp(0.5) * 2.0");
  CHECK(toString(select(i < j && i >= 0, x, floatImm(0))) == "select(i < j && i >= 0, 0.5, 0.0)");
  Tensor A = placeholder("A", {8, 8});
  Tensor C = reduce("C", "t", {8, 8}, ReduceKind::Sum, {8},
                    [&](auto& ax, auto& r) { return at(A, ax[0], r[0]) * at(A, r[0], ax[1]); },
                    {"i", "j"}, {"k"});
  CHECK(toString(*C) == "C[i, j] = sum(k < 8) (A[i, k] * A[k, j])  : f32[8, 8]");
  CHECK(toString(*A) == "placeholder A: f32[8, 8]");
}
