// Host buffers (see buffer.h).
#include <wm/runtime/buffer.h>
#include <wm/support/error.h>

#include <cstdlib>
#include <cstring>

namespace wm::runtime {

using ir::DType;

int64_t elementBytes(DType t) {
  switch (t) {
  case DType::F32: return 4;
  case DType::F16: return 2;
  case DType::I32: return 4;
  case DType::I64: return 8;
  case DType::Bool: return 1;
  }
  return 4;
}

void HostBuffer::Free::operator()(void* p) const { std::free(p); }

HostBuffer::HostBuffer(DType dtype, const ir::Shape& shape, int64_t allocElements)
    : dtype_(dtype), shape_(shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  elements_ = allocElements >= 0 ? allocElements : n;
  bytes_ = elements_ * elementBytes(dtype);
  size_t size = static_cast<size_t>((bytes_ + 63) / 64 * 64);
  mem_.reset(std::aligned_alloc(64, size ? size : 64));
  WM_CHECK(mem_ != nullptr) << "out of memory for a buffer of " << bytes_ << " bytes";
  std::memset(mem_.get(), 0, size ? size : 64);
}

HostBuffer HostBuffer::from(const ir::NDArray& a) {
  HostBuffer b(a.dtype(), a.shape());
  const double* src = a.data();
  for (int64_t i = 0; i < a.size(); ++i) {
    switch (a.dtype()) {
    case DType::F32: static_cast<float*>(b.data())[i] = static_cast<float>(src[i]); break;
    case DType::F16: static_cast<_Float16*>(b.data())[i] = static_cast<_Float16>(src[i]); break;
    case DType::I32: static_cast<int32_t*>(b.data())[i] = static_cast<int32_t>(src[i]); break;
    case DType::I64: static_cast<int64_t*>(b.data())[i] = static_cast<int64_t>(src[i]); break;
    case DType::Bool: static_cast<uint8_t*>(b.data())[i] = src[i] != 0; break;
    }
  }
  return b;
}

ir::NDArray HostBuffer::toNDArray(const std::vector<int64_t>& strides) const {
  ir::NDArray a(dtype_, shape_);
  std::vector<int64_t> idx(shape_.size(), 0);
  for (int64_t flat = 0; flat < a.size(); ++flat) {
    int64_t addr = flat;
    if (!strides.empty()) {
      addr = 0;
      for (size_t d = 0; d < idx.size(); ++d) addr += idx[d] * strides[d];
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < shape_[d]) break;
        idx[d] = 0;
      }
    }
    double v = 0;
    switch (dtype_) {
    case DType::F32: v = static_cast<const float*>(data())[addr]; break;
    case DType::F16: v = static_cast<double>(static_cast<const _Float16*>(data())[addr]); break;
    case DType::I32: v = static_cast<const int32_t*>(data())[addr]; break;
    case DType::I64: v = static_cast<double>(static_cast<const int64_t*>(data())[addr]); break;
    case DType::Bool: v = static_cast<const uint8_t*>(data())[addr]; break;
    }
    a.values()[flat] = v;
  }
  return a;
}

} // namespace wm::runtime
