// NumPy .npy files (format 1.0-3.0, little-endian, C order) as NDArrays: float32, float64
// (read as float32), int32, int64, bool.
#pragma once

#include <wm/ir/interpreter.h>

#include <string>

namespace wm::runtime {

ir::NDArray readNpy(const std::string& path);
/// The array in the bytes of a .npy file; `path` names it in messages.
ir::NDArray parseNpy(const std::string& bytes, const std::string& path);
void writeNpy(const std::string& path, const ir::NDArray& a);

} // namespace wm::runtime
