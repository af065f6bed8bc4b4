// Unit tests of the reference interpreter on hand-computed cases.
#include <wm/frontend/ops.h>
#include <wm/ir/interpreter.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

#include <cmath>

using namespace wm::ir;

TEST_CASE("interpreter: a small matmul by hand", "[interp]") {
  Tensor A = placeholder("A", {2, 3}), B = placeholder("B", {3, 2});
  ComputeDAG dag({wm::ops::matmul(A, B)});
  NDArray a(DType::F32, {2, 3}), b(DType::F32, {3, 2});
  a.values() = {1, 2, 3, 4, 5, 6};
  b.values() = {7, 8, 9, 10, 11, 12};
  auto out = evaluateOutputs(dag, {a, b});
  CHECK(out[0].values() == std::vector<double>{58, 64, 139, 154});
}

TEST_CASE("interpreter: select evaluates only the taken branch", "[interp]") {
  Tensor X = placeholder("X", {3});
  ComputeDAG dag({wm::ops::pad(X, {2}, {1}, -5.0)});
  NDArray x(DType::F32, {3});
  x.values() = {1, 2, 3};
  auto out = evaluateOutputs(dag, {x});
  CHECK(out[0].values() == std::vector<double>{-5, -5, 1, 2, 3, -5});
}

TEST_CASE("interpreter: reductions start from their identity", "[interp]") {
  Tensor X = placeholder("X", {2, 3});
  auto mk = [&](ReduceKind k) {
    return ComputeDAG(
        {reduce("r", "t", {2}, k, {3}, [&](auto& ax, auto& r) { return at(X, ax[0], r[0]); })});
  };
  NDArray x(DType::F32, {2, 3});
  x.values() = {-3, -1, -2, 4, 9, 0};
  CHECK(evaluateOutputs(mk(ReduceKind::Max), {x})[0].values() == std::vector<double>{-1, 9});
  CHECK(evaluateOutputs(mk(ReduceKind::Min), {x})[0].values() == std::vector<double>{-3, 0});
  CHECK(evaluateOutputs(mk(ReduceKind::Sum), {x})[0].values() == std::vector<double>{-6, 13});
}

TEST_CASE("interpreter: stores round to the element type", "[interp]") {
  CHECK(roundTo(DType::F32, 0.1) == static_cast<double>(0.1f));
  CHECK(roundTo(DType::F16, 1.0 + 1.0 / 4096) == 1.0); // below half precision
  CHECK(roundTo(DType::I32, -2.7) == -2.0);
  CHECK(roundTo(DType::I32, 4294967296.0 + 5) == 5.0); // wraps like int32
  CHECK(roundTo(DType::Bool, 0.5) == 1.0);
  Tensor X = placeholder("X", {2}, DType::F32);
  ComputeDAG dag(
      {compute("c", "cast", {2}, [&](auto& ax) { return cast(DType::I32, at(X, ax[0])); })});
  NDArray x(DType::F32, {2});
  x.values() = {3.9, -3.9};
  CHECK(evaluateOutputs(dag, {x})[0].values() == std::vector<double>{3, -3});
}

TEST_CASE("interpreter: an out-of-bounds read is an internal error", "[interp]") {
  Tensor X = placeholder("X", {3});
  ComputeDAG dag({compute("c", "t", {3}, [&](auto& ax) { return at(X, ax[0] + 1); })});
  CHECK_THROWS_AS(evaluate(dag, randomInputs(dag, 1)), wm::InternalError);
}

TEST_CASE("interpreter: random inputs are seeded and respect ranges", "[interp]") {
  Tensor X = placeholder("X", {64}), V = placeholder("V", {64}, DType::F32, {0.5, 2.0});
  ComputeDAG dag({compute("c", "t", {64}, [&](auto& ax) { return at(X, ax[0]) + at(V, ax[0]); })});
  auto a = randomInputs(dag, 7), b = randomInputs(dag, 7), c = randomInputs(dag, 8);
  CHECK(a[0].values() == b[0].values());
  CHECK(a[0].values() != c[0].values());
  for (double v : a[1].values()) CHECK((v >= 0.5 && v <= 2.0));
}
