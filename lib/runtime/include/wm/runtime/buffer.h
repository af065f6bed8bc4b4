// Host buffers for running compiled kernels: aligned (rt/abi.h), typed storage, and the one
// place where typed memory is converted from and to the interpreters' NDArray (every DType,
// f16 included).
#pragma once

#include <wm/ir/interpreter.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace wm::runtime {

/// Writes a's elements as a.dtype()'s storage type, densely, at dst.
void storeElements(void* dst, const ir::NDArray& a);
/// Reads an array of type t and shape from memory: dense row-major, or gathered with
/// `strides` (elements) when given.
ir::NDArray loadElements(const void* src, ir::DType t, const ir::Shape& shape,
                         const std::vector<int64_t>& strides = {});

class HostBuffer {
public:
  /// Zeroed storage for shape (or allocElements elements when >= 0); UserError when the size
  /// overflows or cannot be allocated.
  HostBuffer(ir::DType dtype, const ir::Shape& shape, int64_t allocElements = -1);
  static HostBuffer from(const ir::NDArray& a);
  /// Raw aligned storage of at least `bytes` bytes.
  static HostBuffer raw(int64_t bytes);
  /// Dense row-major copy (buffers of the kernel ABI are dense unless strides say otherwise;
  /// `strides` gathers from a strided buffer).
  ir::NDArray toNDArray(const std::vector<int64_t>& strides = {}) const;
  void* data() { return mem_.get(); }
  const void* data() const { return mem_.get(); }
  int64_t bytes() const { return bytes_; }
  ir::DType dtype() const { return dtype_; }
  const ir::Shape& shape() const { return shape_; }

private:
  struct Free {
    void operator()(void* p) const;
  };
  ir::DType dtype_;
  ir::Shape shape_;
  int64_t elements_ = 0, bytes_ = 0;
  std::unique_ptr<void, Free> mem_;
};

} // namespace wm::runtime
