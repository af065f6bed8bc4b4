// Host buffers and element conversion (see buffer.h).
#include <wm/ir/printer.h>
#include <wm/rt/abi.h>
#include <wm/runtime/buffer.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace wm::runtime {

using ir::DType;

void storeElements(void* dst, const ir::NDArray& a) {
  const double* src = a.data();
  int64_t n = a.size();
  switch (a.dtype()) {
  case DType::F32:
    for (int64_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = static_cast<float>(src[i]);
    break;
  case DType::F16:
    for (int64_t i = 0; i < n; ++i) static_cast<_Float16*>(dst)[i] = static_cast<_Float16>(src[i]);
    break;
  case DType::I32:
    for (int64_t i = 0; i < n; ++i) static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(src[i]);
    break;
  case DType::I64:
    for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(dst)[i] = static_cast<int64_t>(src[i]);
    break;
  case DType::Bool:
    for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(dst)[i] = src[i] != 0;
    break;
  }
}

ir::NDArray loadElements(const void* src, DType t, const ir::Shape& shape,
                         const std::vector<int64_t>& strides) {
  ir::NDArray a(t, shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0; flat < a.size(); ++flat) {
    int64_t addr = flat;
    if (!strides.empty()) {
      addr = 0;
      for (size_t d = 0; d < idx.size(); ++d) addr += idx[d] * strides[d];
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    double v = 0;
    switch (t) {
    case DType::F32: v = static_cast<const float*>(src)[addr]; break;
    case DType::F16: v = static_cast<double>(static_cast<const _Float16*>(src)[addr]); break;
    case DType::I32: v = static_cast<const int32_t*>(src)[addr]; break;
    case DType::I64: v = static_cast<double>(static_cast<const int64_t*>(src)[addr]); break;
    case DType::Bool: v = static_cast<const uint8_t*>(src)[addr]; break;
    }
    a.values()[flat] = v;
  }
  return a;
}

void HostBuffer::Free::operator()(void* p) const {
  std::free(p);
}

HostBuffer::HostBuffer(DType dtype, const ir::Shape& shape, int64_t allocElements)
    : dtype_(dtype), shape_(shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || !checkedMul(n, d, &n))
      WM_USER_ERROR() << "a buffer of shape " << ir::typeString(dtype, shape) << " is too large";
  elements_ = allocElements >= 0 ? allocElements : n;
  if (!checkedMul(elements_, ir::storageBytes(dtype), &bytes_)) bytes_ = -1;
  checkAllocation(bytes_, "a buffer of " + std::to_string(elements_) + " " + ir::dtypeName(dtype) +
                              " elements");
  constexpr int64_t a = rt::kBufferAlignment;
  size_t size = static_cast<size_t>(bytes_ > 0 ? (bytes_ + a - 1) / a * a : a);
  mem_.reset(std::aligned_alloc(static_cast<size_t>(a), size));
  if (!mem_) WM_USER_ERROR() << "out of memory for a buffer of " << bytes_ << " bytes";
  std::memset(mem_.get(), 0, size);
}

HostBuffer HostBuffer::from(const ir::NDArray& a) {
  HostBuffer b(a.dtype(), a.shape());
  storeElements(b.data(), a);
  return b;
}

HostBuffer HostBuffer::raw(int64_t bytes) {
  return HostBuffer(DType::Bool, {std::max<int64_t>(1, bytes)});
}

ir::NDArray HostBuffer::toNDArray(const std::vector<int64_t>& strides) const {
  return loadElements(data(), dtype_, shape_, strides);
}

} // namespace wm::runtime
