// Executes lowered IR on the CPU, loops one iteration at a time (parallel and thread-bound
// loops run sequentially), so lowering can be checked without any backend. Freshly allocated
// buffers hold NaN, so reading an element before it is written shows up as a wrong result;
// out-of-bounds accesses are internal errors that name the buffer.
#pragma once

#include <wm/ir/interpreter.h>
#include <wm/lower/lower.h>

#include <vector>

namespace wm::lower {

/// Runs f on inputs (in f.inputs order) and returns its outputs.
/// Buffer b's elements as a dense row-major array, gathered from `storage` through its strides
/// (outputs may be storage-aligned).
ir::NDArray readDense(const ir::Buffer& b, const std::vector<double>& storage);

std::vector<ir::NDArray> runLowered(const LoweredFunc& f, const std::vector<ir::NDArray>& inputs);

} // namespace wm::lower
