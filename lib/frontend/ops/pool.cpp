// Operator family: N-d max/average pooling and global pooling ([N, C, X...]).
#include <wm/frontend/ops.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

#include <limits>

namespace wm::ops {

using namespace wm::ir;

PoolParams PoolParams::uniform(size_t dims, int64_t kernel, int64_t stride, int64_t pad) {
  PoolParams p;
  p.kernel.assign(dims, kernel);
  p.stride.assign(dims, stride);
  p.dilation.assign(dims, 1);
  p.padBefore.assign(dims, pad);
  p.padAfter.assign(dims, pad);
  return p;
}

Tensor pool(const Tensor& x, PoolKind kind, const PoolParams& p, const std::string& name) {
  if (x->ndim() < 3 || x->ndim() > 5)
    WM_USER_ERROR() << name << ": input " << x->name << " has rank " << x->ndim()
                    << ", expected [N, C, X...] with 1-3 spatial dimensions";
  size_t n = x->ndim() - 2;
  for (auto* v : {&p.kernel, &p.stride, &p.dilation, &p.padBefore, &p.padAfter})
    if (v->size() != n) WM_USER_ERROR() << name << ": pooling parameters need " << n << " values";
  if (!p.outSize.empty() && p.outSize.size() != n)
    WM_USER_ERROR() << name << ": output sizes need " << n << " values";
  Shape in(x->shape.begin() + 2, x->shape.end());
  Shape out{x->shape[0], x->shape[1]};
  for (size_t d = 0; d < n; ++d) {
    if (p.kernel[d] < 1 || p.stride[d] < 1 || p.dilation[d] < 1)
      WM_USER_ERROR() << name << ": kernel, stride and dilation must be >= 1";
    if (p.padBefore[d] < 0 || p.padAfter[d] < 0) WM_USER_ERROR() << name << ": negative padding";
    if (kind == PoolKind::Avg && p.dilation[d] != 1)
      WM_USER_ERROR() << name << ": dilated average pooling is not supported";
    SizeMath m;
    int64_t eff = m.add(m.mul(p.kernel[d] - 1, p.dilation[d]), 1);
    int64_t num = m.sub(m.add(in[d], m.add(p.padBefore[d], p.padAfter[d])), eff);
    m.add(num, p.stride[d]); // the ceil-mode rounding below
    if (!m.ok()) WM_USER_ERROR() << name << ": sizes overflow in spatial dim " << d;
    if (num < 0) WM_USER_ERROR() << name << ": the window is larger than the padded input";
    int64_t o;
    if (!p.outSize.empty()) {
      o = p.outSize[d];
    } else {
      o = (p.ceilMode ? (num + p.stride[d] - 1) / p.stride[d] : num / p.stride[d]) + 1;
      if (p.ceilMode && (o - 1) * p.stride[d] >= in[d] + p.padBefore[d]) --o;
    }
    out.push_back(o);
  }
  bool isMax = kind == PoolKind::Max;
  Tensor y =
      reduce(isMax ? name : name + "_sum", isMax ? "max_pool" : "avg_pool_sum", out,
             isMax ? ReduceKind::Max : ReduceKind::Sum, p.kernel,
             [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
               std::vector<Expr> idx{ax[0], ax[1]};
               Expr cond;
               for (size_t d = 0; d < n; ++d) {
                 Expr i = Expr(ax[2 + d]) * static_cast<double>(p.stride[d]) +
                          Expr(r[d]) * static_cast<double>(p.dilation[d]) -
                          static_cast<double>(p.padBefore[d]);
                 if (p.padBefore[d] > 0 || p.padAfter[d] > 0 || p.ceilMode || !p.outSize.empty()) {
                   Expr ok = (i >= 0.0) && (i < static_cast<double>(in[d]));
                   cond = cond.defined() ? (cond && ok) : ok;
                 }
                 idx.push_back(i);
               }
               Expr v = read(x, idx);
               if (!cond.defined()) return v;
               double padValue = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
               return select(cond, v, constLike(v, padValue));
             });
  if (isMax) return y;
  return compute(name, "avg_pool", out, [&](const std::vector<Var>& ax) {
    Expr count;
    for (size_t d = 0; d < n; ++d) {
      Expr start =
          Expr(ax[2 + d]) * static_cast<double>(p.stride[d]) - static_cast<double>(p.padBefore[d]);
      Expr end = start + static_cast<double>(p.kernel[d]);
      int64_t lo = p.countIncludePad ? -p.padBefore[d] : 0;
      int64_t hi = p.countIncludePad ? in[d] + p.padAfter[d] : in[d];
      Expr len = min(end, intImm(hi)) - max(start, intImm(lo));
      count = count.defined() ? count * len : len;
    }
    return read(y, std::vector<Expr>(ax.begin(), ax.end())) / cast(x->dtype, count);
  });
}

Tensor globalPool(const Tensor& x, PoolKind kind, const std::string& name) {
  if (x->ndim() < 3)
    WM_USER_ERROR() << name << ": input " << x->name << " needs spatial dimensions";
  Shape out{x->shape[0], x->shape[1]}, extents(x->shape.begin() + 2, x->shape.end());
  int64_t count = 1;
  for (int64_t e : extents) {
    out.push_back(1);
    count *= e;
  }
  bool isMax = kind == PoolKind::Max;
  Tensor y = reduce(isMax ? name : name + "_sum", isMax ? "global_max_pool" : "global_avg_pool_sum",
                    out, isMax ? ReduceKind::Max : ReduceKind::Sum, extents,
                    [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
                      std::vector<Expr> idx{ax[0], ax[1]};
                      idx.insert(idx.end(), r.begin(), r.end());
                      return read(x, idx);
                    });
  if (isMax) return y;
  return compute(name, "global_avg_pool", out, [&](const std::vector<Var>& ax) {
    return read(y, std::vector<Expr>(ax.begin(), ax.end())) / static_cast<double>(count);
  });
}

} // namespace wm::ops
