// Host buffers for running compiled kernels: 64-byte aligned, typed storage (the kernel ABI
// of codegen/llvm.h), with conversion from and to the interpreters' NDArray.
#pragma once

#include <wm/ir/interpreter.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace wm::runtime {

class HostBuffer {
public:
  HostBuffer(ir::DType dtype, const ir::Shape& shape, int64_t allocElements = -1);
  static HostBuffer from(const ir::NDArray& a);
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

int64_t elementBytes(ir::DType t);

} // namespace wm::runtime
