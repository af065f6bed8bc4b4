// Element types of the tensor-expression IR.
#pragma once

#include <cstdint>
#include <string>

namespace wm::ir {

enum class DType : uint8_t { F32, F16, I32, I64, Bool };

inline bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16;
}
inline bool isInt(DType t) {
  return t == DType::I32 || t == DType::I64;
}
inline int bitsOf(DType t) {
  switch (t) {
  case DType::F32: return 32;
  case DType::F16: return 16;
  case DType::I32: return 32;
  case DType::I64: return 64;
  case DType::Bool: return 1;
  }
  return 0;
}
/// Bytes one element occupies in memory (bool: one byte). The one table of element sizes:
/// buffers, code generation, features and executors all read it.
inline int64_t storageBytes(DType t) {
  switch (t) {
  case DType::F32: return 4;
  case DType::F16: return 2;
  case DType::I32: return 4;
  case DType::I64: return 8;
  case DType::Bool: return 1;
  }
  return 0;
}
const char* dtypeName(DType t);
/// Parses "f32", "f16", "i32", "i64", "bool"; returns false when unknown.
bool parseDType(const std::string& s, DType* out);

/// The index type used for every axis and index expression.
constexpr DType kIndexType = DType::I64;

} // namespace wm::ir
