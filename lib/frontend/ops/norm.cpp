// Operator family: normalizations and softmax (batch norm, layer norm, softmax, 2-norm).
#include <wm/frontend/ops.h>
#include <wm/support/error.h>

namespace wm::ops {

using namespace wm::ir;

namespace {
std::vector<Expr> allOf(const std::vector<Var>& ax) {
  return {ax.begin(), ax.end()};
}
} // namespace

Tensor batchNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                 const Tensor& var, double eps, const std::string& name) {
  if (x->ndim() < 2) WM_USER_ERROR() << name << ": input must have rank >= 2";
  int64_t C = x->shape[1];
  for (const Tensor& t : {gamma, beta, mean, var})
    if (t->ndim() != 1 || t->shape[0] != C)
      WM_USER_ERROR() << name << ": " << t->name << " must have shape [" << C << "]";
  return compute(name, "batch_norm", x->shape, [&](auto& ax) {
    Expr c = ax[1];
    Expr scale = at(gamma, c) * rsqrt(at(var, c) + eps);
    return (read(x, allOf(ax)) - at(mean, c)) * scale + at(beta, c);
  });
}

Tensor softmax(const Tensor& x, int axis, const std::string& name) {
  int nd = static_cast<int>(x->ndim());
  if (axis < 0) axis += nd;
  if (axis < 0 || axis >= nd) WM_USER_ERROR() << name << ": axis out of range for rank " << nd;
  int64_t L = x->shape[axis];
  Shape reduced;
  for (int d = 0; d < nd; ++d)
    if (d != axis) reduced.push_back(x->shape[d]);
  if (reduced.empty()) reduced.push_back(1);
  // Index of the reduced tensor from a full index (dropping `axis`).
  auto dropAxis = [&](const std::vector<Var>& ax) {
    std::vector<Expr> idx;
    for (int d = 0; d < nd; ++d)
      if (d != axis) idx.push_back(ax[d]);
    if (idx.empty()) idx.push_back(intImm(0));
    return idx;
  };
  // Full index from a reduced index plus the reduction variable.
  auto withAxis = [&](const std::vector<Var>& ax, const Expr& r) {
    std::vector<Expr> idx;
    size_t k = 0;
    for (int d = 0; d < nd; ++d) idx.push_back(d == axis ? r : Expr(ax[k++]));
    return idx;
  };
  Tensor maxElem = reduce(name + "_maxelem", "softmax_max", reduced, ReduceKind::Max, {L},
                          [&](auto& ax, auto& r) { return read(x, withAxis(ax, r[0])); });
  Tensor e = compute(name + "_exp", "softmax_exp", x->shape, [&](auto& ax) {
    return exp(read(x, allOf(ax)) - read(maxElem, dropAxis(ax)));
  });
  Tensor sum = reduce(name + "_expsum", "softmax_sum", reduced, ReduceKind::Sum, {L},
                      [&](auto& ax, auto& r) { return read(e, withAxis(ax, r[0])); });
  return compute(name, "softmax", x->shape,
                 [&](auto& ax) { return read(e, allOf(ax)) / read(sum, dropAxis(ax)); });
}

LayerNormResult layerNorm(const Tensor& x, int axis, const Tensor& scale,
                          const std::optional<Tensor>& bias, double eps, bool stats,
                          const std::string& name) {
  int nd = static_cast<int>(x->ndim());
  if (axis < 0) axis += nd;
  if (nd < 1 || axis < 0 || axis >= nd)
    WM_USER_ERROR() << name << ": axis out of range for rank " << nd;
  size_t a = static_cast<size_t>(axis);
  Shape outer(x->shape.begin(), x->shape.begin() + axis),
      inner(x->shape.begin() + axis, x->shape.end());
  Shape rows = outer.empty() ? Shape{1} : outer;
  int64_t count = 1;
  for (int64_t d : inner) count *= d;
  for (const Tensor* t : {&scale, bias ? &*bias : nullptr}) {
    if (!t) continue;
    if ((*t)->ndim() > inner.size() || broadcastShape(inner, (*t)->shape, name) != inner)
      WM_USER_ERROR() << name << ": " << (*t)->name
                      << " does not broadcast to the normalized shape";
  }
  auto full = [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < a; ++d) idx.push_back(ax[d]);
    idx.insert(idx.end(), r.begin(), r.end());
    return idx;
  };
  auto row = [&](const std::vector<Var>& ax) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < a; ++d) idx.push_back(ax[d]);
    if (idx.empty()) idx.push_back(intImm(0));
    return idx;
  };
  double inv = 1.0 / static_cast<double>(count);
  Tensor mean = reduce(name + "_mean", "layer_norm_mean", rows, ReduceKind::Sum, inner,
                       [&](auto& ax, auto& r) { return read(x, full(ax, r)) * inv; });
  Tensor var =
      reduce(name + "_var", "layer_norm_var", rows, ReduceKind::Sum, inner, [&](auto& ax, auto& r) {
        Expr d = read(x, full(ax, r)) - read(mean, row(ax));
        return d * d * inv;
      });
  LayerNormResult res;
  res.y = compute(name, "layer_norm", x->shape, [&](const std::vector<Var>& ax) {
    std::vector<Var> tail(ax.begin() + axis, ax.end());
    Expr v = (read(x, allOf(ax)) - read(mean, row(ax))) * rsqrt(read(var, row(ax)) + eps) *
             read(scale, broadcastIndex(scale, inner, tail));
    if (bias) v = v + read(*bias, broadcastIndex(*bias, inner, tail));
    return v;
  });
  if (stats) { // the outer shape with the normalized dimensions kept as 1
    Shape kept = outer;
    kept.resize(x->ndim(), 1);
    res.mean = compute(name + "_mean_out", "layer_norm_mean", kept,
                       [&](auto& ax) { return read(mean, row(ax)); });
    res.invStdDev = compute(name + "_inv_std_dev", "layer_norm_inv_std", kept,
                            [&](auto& ax) { return rsqrt(read(var, row(ax)) + eps); });
  }
  return res;
}

Tensor layerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                 const std::string& name) {
  if (x->ndim() < 1) WM_USER_ERROR() << name << ": input must have rank >= 1";
  int64_t L = x->shape.back();
  for (const Tensor& t : {gamma, beta})
    if (t->ndim() != 1 || t->shape[0] != L)
      WM_USER_ERROR() << name << ": " << t->name << " must have shape [" << L << "]";
  return layerNorm(x, -1, gamma, beta, eps, false, name).y;
}

Tensor norm2(const Tensor& x, const std::string& name) {
  if (x->ndim() < 2) WM_USER_ERROR() << name << ": input must have rank >= 2";
  Shape rest(x->shape.begin() + 1, x->shape.end());
  Tensor sq = reduce(name + "_sqsum", "norm_sqsum", {x->shape[0]}, ReduceKind::Sum, rest,
                     [&](auto& ax, auto& r) {
                       std::vector<Expr> idx{ax[0]};
                       idx.insert(idx.end(), r.begin(), r.end());
                       Expr v = read(x, idx);
                       return v * v;
                     });
  return compute(name, "norm", {x->shape[0]}, [&](auto& ax) { return sqrt(at(sq, ax[0])); });
}

} // namespace wm::ops
