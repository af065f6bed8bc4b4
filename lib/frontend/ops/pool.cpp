// Operator family: 2-d max/average pooling and global average pooling (NCHW).
#include <wm/frontend/ops.h>
#include <wm/support/error.h>

#include <limits>

namespace wm::ops {

using namespace wm::ir;

Tensor pool2d(const Tensor& x, PoolKind kind, const std::vector<int64_t>& kernel,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padBefore,
              const std::vector<int64_t>& padAfter, bool countIncludePad,
              const std::string& name) {
  if (x->ndim() != 4)
    WM_USER_ERROR() << name << ": input " << x->name << " has rank " << x->ndim()
                    << ", expected 4 (NCHW)";
  WM_CHECK(kernel.size() == 2 && stride.size() == 2 && padBefore.size() == 2 &&
           padAfter.size() == 2)
      << name << ": 2-d parameters expected";
  int64_t N = x->shape[0], C = x->shape[1];
  Shape out{N, C};
  for (int d = 0; d < 2; ++d) {
    if (kernel[d] < 1 || stride[d] < 1) WM_USER_ERROR() << name << ": kernel and stride must be >= 1";
    if (padBefore[d] >= kernel[d] || padAfter[d] >= kernel[d])
      WM_USER_ERROR() << name << ": padding must be smaller than the kernel";
    int64_t span = x->shape[2 + d] + padBefore[d] + padAfter[d];
    if (span < kernel[d]) WM_USER_ERROR() << name << ": kernel larger than the padded input";
    out.push_back((span - kernel[d]) / stride[d] + 1);
  }
  const double inf = std::numeric_limits<double>::infinity();
  double padValue = kind == PoolKind::Max ? -inf : 0.0;
  Tensor padded = pad(x, {0, 0, padBefore[0], padBefore[1]}, {0, 0, padAfter[0], padAfter[1]},
                      padValue, name + "_pad");
  auto window = [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
    return at(padded, ax[0], ax[1], ax[2] * static_cast<double>(stride[0]) + r[0],
              ax[3] * static_cast<double>(stride[1]) + r[1]);
  };
  std::vector<std::string> axes{"n", "c", "oh", "ow"}, raxes{"rh", "rw"};
  if (kind == PoolKind::Max)
    return reduce(name, "max_pool2d", out, ReduceKind::Max, {kernel[0], kernel[1]}, window, axes,
                  raxes);
  Tensor sum = reduce(name + "_sum", "avg_pool2d_sum", out, ReduceKind::Sum,
                      {kernel[0], kernel[1]}, window, axes, raxes);
  return compute(
      name, "avg_pool2d", out,
      [&](const std::vector<Var>& ax) {
        Expr s = at(sum, ax[0], ax[1], ax[2], ax[3]);
        if (countIncludePad) return s / static_cast<double>(kernel[0] * kernel[1]);
        // Number of in-bounds elements of the window, per dimension.
        Expr count;
        for (int d = 0; d < 2; ++d) {
          Expr start = ax[2 + d] * static_cast<double>(stride[d]) - static_cast<double>(padBefore[d]);
          Expr hi = min(start + static_cast<double>(kernel[d]), intImm(x->shape[2 + d]));
          Expr lo = max(start, intImm(0));
          Expr n = hi - lo;
          count = count.defined() ? count * n : n;
        }
        return s / cast(x->dtype, count);
      },
      axes);
}

Tensor globalAvgPool2d(const Tensor& x, const std::string& name) {
  if (x->ndim() != 4)
    WM_USER_ERROR() << name << ": input " << x->name << " has rank " << x->ndim()
                    << ", expected 4 (NCHW)";
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  Tensor sum = reduce(
      name + "_sum", "global_avg_pool2d_sum", {N, C, 1, 1}, ReduceKind::Sum, {H, W},
      [&](auto& ax, auto& r) { return at(x, ax[0], ax[1], r[0], r[1]); }, {"n", "c", "h", "w"},
      {"rh", "rw"});
  return compute(
      name, "global_avg_pool2d", {N, C, 1, 1},
      [&](auto& ax) { return at(sum, ax[0], ax[1], ax[2], ax[3]) / static_cast<double>(H * W); },
      {"n", "c", "h", "w"});
}

} // namespace wm::ops
