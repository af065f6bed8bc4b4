// Readable text for expressions and operations; used by `wmtune tasks` and test expectations.
#pragma once

#include <wm/ir/tensor.h>

#include <iosfwd>
#include <string>

namespace wm::ir {

std::string toString(const Expr& e);
/// "f32[1, 64, 56, 56]"
std::string typeString(DType t, const Shape& shape);
/// One line: "C[i, j] = sum(k < 64) (A[i, k] * B[k, j])" or "placeholder A: f32[64, 64]".
std::string toString(const OperationNode& op);
std::ostream& operator<<(std::ostream& os, const Expr& e);

} // namespace wm::ir
