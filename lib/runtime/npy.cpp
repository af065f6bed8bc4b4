#include <wm/runtime/npy.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/int_math.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace wm::runtime {

namespace {

std::string field(const std::string& header, const std::string& key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) return "";
  size_t b = header.find_first_not_of(" ", colon + 1);
  if (b == std::string::npos) return "";
  if (header[b] == '(') return header.substr(b, header.find(')', b) - b + 1);
  if (header[b] == '\'') return header.substr(b + 1, header.find('\'', b + 1) - b - 1);
  size_t e = header.find_first_of(",}", b);
  return header.substr(b, e - b);
}

template <typename T> void readValues(const char* p, ir::NDArray* a) {
  for (int64_t i = 0; i < a->size(); ++i) {
    T v;
    std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    a->set(i, static_cast<double>(v));
  }
}

} // namespace

ir::NDArray readNpy(const std::string& path) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) WM_USER_ERROR() << path << ": cannot open the file";
  std::stringstream ss;
  ss << in.rdbuf();
  return parseNpy(ss.str(), path);
}

ir::NDArray parseNpy(const std::string& s, const std::string& path) {
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0)
    WM_USER_ERROR() << path << ": not a .npy file";
  int major = static_cast<unsigned char>(s[6]);
  size_t hlen, off;
  if (major == 1) {
    hlen = static_cast<unsigned char>(s[8]) |
           (static_cast<size_t>(static_cast<unsigned char>(s[9])) << 8);
    off = 10;
  } else {
    if (s.size() < 12) WM_USER_ERROR() << path << ": truncated .npy header";
    hlen = 0;
    for (int i = 0; i < 4; ++i)
      hlen |= static_cast<size_t>(static_cast<unsigned char>(s[8 + i])) << (8 * i);
    off = 12;
  }
  if (s.size() < off + hlen) WM_USER_ERROR() << path << ": truncated .npy header";
  std::string header = s.substr(off, hlen);
  std::string descr = field(header, "descr"), order = field(header, "fortran_order"),
              shape = field(header, "shape");
  if (order.find("True") != std::string::npos)
    WM_USER_ERROR() << path << ": Fortran-order arrays are not supported";
  if (shape.empty()) WM_USER_ERROR() << path << ": no shape in the .npy header";
  ir::Shape dims;
  std::string inner = shape.substr(1, shape.size() - 2);
  std::stringstream ds(inner);
  std::string tok;
  int64_t elements = 1;
  while (std::getline(ds, tok, ',')) {
    size_t b = tok.find_first_not_of(" "), e = tok.find_last_not_of(" ");
    if (b == std::string::npos) continue;
    std::string d = tok.substr(b, e - b + 1);
    if (d.empty() || d.size() > 18 || d.find_first_not_of("0123456789") != std::string::npos)
      WM_USER_ERROR() << path << ": shape " << shape << ": '" << d
                      << "' is not a dimension (a non-negative integer)";
    dims.push_back(std::stoll(d));
    if (!checkedMul(elements, dims.back(), &elements))
      WM_USER_ERROR() << path << ": shape " << shape << " has more elements than fit in memory";
  }
  ir::DType t;
  size_t esize;
  if (descr == "<f4") {
    t = ir::DType::F32;
    esize = 4;
  } else if (descr == "<f8") {
    t = ir::DType::F32;
    esize = 8;
  } else if (descr == "<i4") {
    t = ir::DType::I32;
    esize = 4;
  } else if (descr == "<i8") {
    t = ir::DType::I64;
    esize = 8;
  } else if (descr == "|b1") {
    t = ir::DType::Bool;
    esize = 1;
  } else
    WM_USER_ERROR() << path << ": element type '" << descr
                    << "' is not supported (<f4, <f8, <i4, <i8, |b1 are)";
  // The bytes must be present before anything is allocated for them.
  size_t data = off + hlen;
  int64_t need = 0;
  if (!checkedMul(elements, static_cast<int64_t>(esize), &need) ||
      static_cast<uint64_t>(need) != s.size() - data)
    WM_USER_ERROR() << path << ": holds " << (s.size() - data) << " data bytes, the shape " << shape
                    << " needs " << (need > 0 ? std::to_string(need) : "more");
  ir::NDArray a(t, dims);
  const char* p = s.data() + data;
  if (descr == "<f4")
    readValues<float>(p, &a);
  else if (descr == "<f8")
    readValues<double>(p, &a);
  else if (descr == "<i4")
    readValues<int32_t>(p, &a);
  else if (descr == "<i8")
    readValues<int64_t>(p, &a);
  else
    readValues<uint8_t>(p, &a);
  return a;
}

void writeNpy(const std::string& path, const ir::NDArray& a) {
  const char* descr = a.dtype() == ir::DType::F32    ? "<f4"
                      : a.dtype() == ir::DType::I32  ? "<i4"
                      : a.dtype() == ir::DType::I64  ? "<i8"
                      : a.dtype() == ir::DType::Bool ? "|b1"
                                                     : nullptr;
  if (!descr) WM_USER_ERROR() << path << ": cannot write element type " << ir::dtypeName(a.dtype());
  std::string shape = "(";
  for (size_t i = 0; i < a.shape().size(); ++i)
    shape += std::to_string(a.shape()[i]) + (a.shape().size() == 1      ? ","
                                             : i + 1 < a.shape().size() ? ", "
                                                                        : "");
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ostringstream out;
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = static_cast<uint16_t>(header.size());
  char h[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
  out.write(h, 2);
  out << header;
  for (int64_t i = 0; i < a.size(); ++i) {
    double v = a.data()[i];
    switch (a.dtype()) {
    case ir::DType::F32: {
      float f = static_cast<float>(v);
      out.write(reinterpret_cast<char*>(&f), 4);
      break;
    }
    case ir::DType::I32: {
      int32_t x = static_cast<int32_t>(v);
      out.write(reinterpret_cast<char*>(&x), 4);
      break;
    }
    case ir::DType::I64: {
      int64_t x = static_cast<int64_t>(v);
      out.write(reinterpret_cast<char*>(&x), 8);
      break;
    }
    default: {
      char c = v != 0;
      out.write(&c, 1);
      break;
    }
    }
  }
  writeFileAtomically(path, out.str());
}

} // namespace wm::runtime
