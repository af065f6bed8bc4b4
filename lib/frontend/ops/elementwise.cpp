// Operator family: element-wise and broadcasting ops (activations, arithmetic, bias add).
#include <wm/frontend/ops.h>
#include <wm/support/error.h>

#include <cmath>

namespace wm::ops {

using namespace wm::ir;

namespace {

std::vector<Expr> sameIndex(const std::vector<Var>& ax) {
  return {ax.begin(), ax.end()};
}

Tensor unary(const Tensor& x, const std::string& name, const std::string& tag,
             const std::function<Expr(Expr)>& f) {
  return compute(name, tag, x->shape, [&](auto& ax) { return f(read(x, sameIndex(ax))); });
}

} // namespace

std::vector<Expr> broadcastIndex(const Tensor& t, const Shape& out, const std::vector<Var>& ax) {
  std::vector<Expr> idx;
  size_t off = out.size() - t->ndim();
  for (size_t d = 0; d < t->ndim(); ++d)
    idx.push_back(t->shape[d] == 1 && out[off + d] != 1 ? intImm(0) : Expr(ax[off + d]));
  return idx;
}

Tensor relu(const Tensor& x, const std::string& name) {
  return unary(x, name, "relu", [](Expr v) { return max(v, constLike(v, 0)); });
}

Tensor clip(const Tensor& x, const ClipBound& lo, const ClipBound& hi, const std::string& name) {
  if (lo.value && hi.value && *lo.value > *hi.value)
    WM_USER_ERROR() << name << ": min " << *lo.value << " is above max " << *hi.value;
  for (const ClipBound* b : {&lo, &hi}) {
    if (!b->tensor) continue;
    if ((*b->tensor)->dtype != x->dtype)
      WM_USER_ERROR() << name << ": min/max must have the input's type";
    if ((*b->tensor)->numElements() != 1) WM_USER_ERROR() << name << ": min/max must be scalars";
  }
  auto bound = [](const ClipBound& b, const Expr& like) -> Expr {
    if (b.value) return constLike(like, *b.value);
    return read(*b.tensor, std::vector<Expr>((*b.tensor)->ndim(), intImm(0)));
  };
  return unary(x, name, "clip", [&](Expr v) {
    if (lo.present()) v = max(v, bound(lo, v));
    if (hi.present()) v = min(v, bound(hi, v));
    return v;
  });
}

Tensor clip(const Tensor& x, double lo, double hi, const std::string& name) {
  return clip(x, ClipBound{lo, std::nullopt}, ClipBound{hi, std::nullopt}, name);
}

Tensor sigmoid(const Tensor& x, const std::string& name) {
  return unary(x, name, "sigmoid", [](Expr v) { return ir::sigmoid(v); });
}

Tensor tanh(const Tensor& x, const std::string& name) {
  return unary(x, name, "tanh", [](Expr v) { return ir::tanh(v); });
}

Tensor gelu(const Tensor& x, const std::string& name) {
  return unary(x, name, "gelu",
               [](Expr v) { return v * 0.5 * (1.0 + ir::erf(v * (1.0 / std::sqrt(2.0)))); });
}

Shape broadcastShape(const Shape& a, const Shape& b, const std::string& what) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      WM_USER_ERROR() << what << ": shapes cannot be broadcast (dimension " << x << " vs " << y
                      << ")";
    out[i] = std::max(x, y);
  }
  return out;
}

Tensor binaryOp(const Tensor& a, const Tensor& b, BinaryOp op, const std::string& name) {
  if (a->dtype != b->dtype)
    WM_USER_ERROR() << name << ": operand types differ (" << dtypeName(a->dtype) << " vs "
                    << dtypeName(b->dtype) << ")";
  Shape out = broadcastShape(a->shape, b->shape, name);
  const char* tag = op == BinaryOp::Add   ? "add"
                    : op == BinaryOp::Sub ? "sub"
                    : op == BinaryOp::Mul ? "mul"
                    : op == BinaryOp::Div ? "div"
                                          : "binary";
  return compute(name, tag, out, [&](auto& ax) {
    return binary(op, read(a, broadcastIndex(a, out, ax)), read(b, broadcastIndex(b, out, ax)));
  });
}

Tensor add(const Tensor& a, const Tensor& b, const std::string& name) {
  return binaryOp(a, b, BinaryOp::Add, name);
}
Tensor sub(const Tensor& a, const Tensor& b, const std::string& name) {
  return binaryOp(a, b, BinaryOp::Sub, name);
}
Tensor mul(const Tensor& a, const Tensor& b, const std::string& name) {
  return binaryOp(a, b, BinaryOp::Mul, name);
}
Tensor div(const Tensor& a, const Tensor& b, const std::string& name) {
  return binaryOp(a, b, BinaryOp::Div, name);
}

Tensor biasAdd(const Tensor& x, const Tensor& bias, int axis, const std::string& name) {
  if (axis < 0) axis += static_cast<int>(x->ndim());
  if (axis < 0 || axis >= static_cast<int>(x->ndim()))
    WM_USER_ERROR() << name << ": axis out of range for rank " << x->ndim();
  if (bias->ndim() != 1 || bias->shape[0] != x->shape[axis])
    WM_USER_ERROR() << name << ": bias " << bias->name << " must have shape [" << x->shape[axis]
                    << "]";
  return compute(name, "bias_add", x->shape,
                 [&](auto& ax) { return read(x, sameIndex(ax)) + at(bias, ax[axis]); });
}

} // namespace wm::ops
