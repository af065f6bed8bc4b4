// Operator family: padding, N-d convolution (grouped, dilated, strided) and transposed
// convolution. Padding is its own stage (a guarded select), as in TVM, so the convolution
// itself reads a dense tensor.
#include <wm/frontend/ops.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

namespace wm::ops {

using namespace wm::ir;

ConvParams ConvParams::uniform(size_t dims, int64_t stride, int64_t pad, int64_t dilation,
                               int64_t groups) {
  ConvParams p;
  p.stride.assign(dims, stride);
  p.padBefore.assign(dims, pad);
  p.padAfter.assign(dims, pad);
  p.dilation.assign(dims, dilation);
  p.groups = groups;
  return p;
}

Tensor pad(const Tensor& x, const Shape& before, const Shape& after, const PadOptions& opts,
           const std::string& name) {
  size_t nd = x->ndim();
  WM_CHECK(before.size() == nd && after.size() == nd) << name << ": pad rank mismatch";
  if (opts.valueTensor && (*opts.valueTensor)->numElements() != 1)
    WM_USER_ERROR() << name << ": the pad value must be a scalar";
  if (opts.valueTensor && (*opts.valueTensor)->dtype != x->dtype)
    WM_USER_ERROR() << name << ": the pad value must have the input's type";
  bool any = false;
  Shape out = x->shape;
  for (size_t d = 0; d < nd; ++d) {
    any |= before[d] || after[d];
    SizeMath m;
    out[d] = m.add(out[d], m.add(before[d], after[d]));
    if (!m.ok()) WM_USER_ERROR() << name << ": padding overflows dimension " << d;
    if (out[d] <= 0) WM_USER_ERROR() << name << ": padding leaves dimension " << d << " empty";
    if (opts.mode == PadMode::Reflect && (before[d] >= x->shape[d] || after[d] >= x->shape[d]))
      WM_USER_ERROR() << name << ": reflect pads must be smaller than the dimension";
  }
  if (!any) return x;
  return compute(name, "pad", out, [&](const std::vector<Var>& ax) {
    Expr cond;
    std::vector<Expr> idx;
    for (size_t d = 0; d < nd; ++d) {
      int64_t n = x->shape[d], b = before[d];
      Expr j = b ? Expr(ax[d] - static_cast<double>(b)) : Expr(ax[d]);
      if (b <= 0 && after[d] <= 0) { // cropped or untouched: every index is in range
        idx.push_back(j);
        continue;
      }
      if (opts.mode == PadMode::Edge) {
        j = min(max(j, intImm(0)), intImm(n - 1));
      } else if (opts.mode == PadMode::Reflect) {
        j = select(j < 0.0, intImm(0) - j,
                   select(j >= static_cast<double>(n), intImm(2 * (n - 1)) - j, j));
      } else {
        Expr inRange = ax[d] >= static_cast<double>(b);
        inRange = inRange && (Expr(ax[d]) < static_cast<double>(b + n));
        cond = cond.defined() ? (cond && inRange) : inRange;
      }
      idx.push_back(j);
    }
    Expr v = read(x, idx);
    if (!cond.defined()) return v;
    Expr fill = opts.valueTensor ? read(*opts.valueTensor,
                                        std::vector<Expr>((*opts.valueTensor)->ndim(), intImm(0)))
                                 : constLike(v, opts.value);
    return select(cond, v, fill);
  });
}

Tensor pad(const Tensor& x, const Shape& before, const Shape& after, double value,
           const std::string& name) {
  for (size_t d = 0; d < before.size() && d < after.size(); ++d)
    if (before[d] < 0 || after[d] < 0) WM_USER_ERROR() << name << ": negative padding";
  PadOptions o;
  o.value = value;
  return pad(x, before, after, o, name);
}

namespace {

const char* spatialName(size_t dims, size_t d, bool reduceAxis) {
  static const char* out3[] = {"od", "oh", "ow"};
  static const char* red3[] = {"rd", "rh", "rw"};
  size_t off = 3 - dims;
  return reduceAxis ? red3[off + d] : out3[off + d];
}

void checkConvInputs(const Tensor& data, const Tensor& weight, const ConvParams& p,
                     const std::string& name, size_t* dims) {
  size_t nd = data->ndim();
  if (nd < 3 || nd > 5)
    WM_USER_ERROR() << name << ": data " << data->name << " has rank " << nd
                    << ", expected 3 to 5 (N, C, spatial...)";
  if (weight->ndim() != nd)
    WM_USER_ERROR() << name << ": weight " << weight->name << " has rank " << weight->ndim()
                    << ", expected " << nd;
  *dims = nd - 2;
  WM_CHECK(p.stride.size() == *dims && p.padBefore.size() == *dims && p.padAfter.size() == *dims &&
           p.dilation.size() == *dims)
      << name << ": parameter vectors of the wrong size";
  if (p.groups < 1) WM_USER_ERROR() << name << ": groups=" << p.groups << " must be >= 1";
  for (size_t d = 0; d < *dims; ++d) {
    if (p.stride[d] < 1) WM_USER_ERROR() << name << ": stride must be >= 1";
    if (p.dilation[d] < 1) WM_USER_ERROR() << name << ": dilation must be >= 1";
    if (p.padBefore[d] < 0 || p.padAfter[d] < 0) WM_USER_ERROR() << name << ": negative pad";
  }
}

// A convolution's result as [N, K, X...] from another layout of it (`at` reads it there): a
// layout stage, inlined into whatever reads it.
Tensor nchwLayout(const std::string& name, int64_t N, int64_t K, const Shape& spatial,
                  const ComputeFn& at) {
  Shape nchw{N, K};
  nchw.insert(nchw.end(), spatial.begin(), spatial.end());
  std::vector<std::string> names{"n", "k"};
  for (size_t d = 0; d < spatial.size(); ++d)
    names.push_back(spatialName(spatial.size(), d, false));
  return compute(name, ir::kLayoutTag, nchw, at, names);
}

// conv() of a pointwise window in NCHW: the output's spatial axes as one (see there).
Tensor pointwiseConv(const Tensor& data, const Tensor& weight, int64_t K, const Shape& spatial,
                     int64_t G, const std::string& name) {
  int64_t N = data->shape[0], C = data->shape[1], Cg = C / G, Kg = K / G;
  size_t dims = spatial.size();
  int64_t plane = 1;
  for (int64_t x : spatial)
    if (!checkedMul(plane, x, &plane)) WM_USER_ERROR() << name << ": the output plane overflows";
  std::string tag = "conv" + std::to_string(dims) + "d";
  Tensor y = reduce(name + "_flat", tag, {N, K, plane}, ReduceKind::Sum, {Cg},
                    [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
                      Expr channel = r[0];
                      if (G > 1)
                        channel = ax[1] / static_cast<double>(Kg) * static_cast<double>(Cg) + r[0];
                      std::vector<Expr> di{ax[0], channel}, wi{ax[1], r[0]};
                      int64_t inner = plane; // elements of the plane's dimensions after d
                      for (size_t d = 0; d < dims; ++d) {
                        int64_t outer = inner;
                        inner /= spatial[d];
                        Expr pos = Expr(ax[2]);
                        if (d > 0) pos = pos % static_cast<double>(outer);
                        if (d + 1 < dims) pos = pos / static_cast<double>(inner);
                        di.push_back(pos);
                        wi.push_back(intImm(0));
                      }
                      return read(data, di) * read(weight, wi);
                    },
                    {"n", "k", "f"}, {"rc"});
  return nchwLayout(name, N, K, spatial, [&](const std::vector<Var>& ax) {
    Expr f = ax[2];
    for (size_t d = 1; d < dims; ++d) f = f * static_cast<double>(spatial[d]) + ax[2 + d];
    return read(y, {ax[0], ax[1], f});
  });
}

} // namespace

Tensor conv(const Tensor& data, const Tensor& weight, const ConvParams& p,
            const std::string& name) {
  size_t dims;
  checkConvInputs(data, weight, p, name, &dims);
  // Weight [K, C/groups, R...], or channels-last [C, R..., K] (groups=1): where its axes are.
  bool cl = p.weightChannelsLast;
  size_t wK = cl ? dims + 1 : 0, wC = cl ? 0 : 1, wR = cl ? 1 : 2;
  int64_t N = data->shape[0], C = data->shape[1], K = weight->shape[wK], G = p.groups;
  if (cl && G != 1) WM_USER_ERROR() << name << ": a channels-last weight needs groups=1";
  if (C % G) WM_USER_ERROR() << name << ": groups=" << G << " does not divide C=" << C;
  if (K % G) WM_USER_ERROR() << name << ": groups=" << G << " does not divide K=" << K;
  int64_t Cg = C / G, Kg = K / G;
  if (p.weightRowPad < 0 || (p.weightRowPad && cl))
    WM_USER_ERROR() << name << ": weight row padding " << p.weightRowPad << " is not supported";
  if (weight->shape[wC] != Cg + p.weightRowPad)
    WM_USER_ERROR() << name << ": weight has " << weight->shape[wC] - p.weightRowPad
                    << " input channels per group, expected C/groups=" << Cg;
  Shape spatial, reduceExt{Cg}, before{0, 0}, after{0, 0};
  for (size_t d = 0; d < dims; ++d) {
    int64_t X = data->shape[2 + d], R = weight->shape[wR + d];
    SizeMath m;
    int64_t span = m.add(m.mul(p.dilation[d], R - 1), 1);
    int64_t padded = m.add(X, m.add(p.padBefore[d], p.padAfter[d]));
    if (!m.ok()) WM_USER_ERROR() << name << ": sizes overflow in spatial dim " << d;
    int64_t o = (padded - span) / p.stride[d] + 1;
    if (padded < span || o < 1)
      WM_USER_ERROR() << name << ": kernel extent " << span << " exceeds padded input " << X
                      << " + " << p.padBefore[d] + p.padAfter[d] << " in spatial dim " << d;
    spatial.push_back(o);
    reduceExt.push_back(R);
    before.push_back(p.padBefore[d]);
    after.push_back(p.padAfter[d]);
  }
  // A pointwise convolution (1 x 1 window, stride 1, no padding, NCHW) over a plane of
  // several rows: computed as [N, K, X*Y...], its spatial axes flattened into one, which is a
  // matrix product whose vector axis runs along the whole plane (the input's rows lie end to
  // end, so the codegen reads data[n, c, f / W, f % W] as one vector at offset f), where a row
  // of 7 or 14 filled a vector or two partly; a view stage gives back [N, K, X...].
  bool flat = !cl && dims >= 2;
  for (size_t d = 0; d < dims && flat; ++d)
    flat = reduceExt[1 + d] == 1 && p.stride[d] == 1 && before[2 + d] == 0 && after[2 + d] == 0;
  if (flat) return pointwiseConv(data, weight, K, spatial, p.groups, name);
  if (p.weightRowPad)
    WM_USER_ERROR() << name << ": a weight with padded rows needs a pointwise convolution";
  Tensor padded = pad(data, before, after, 0.0, name + "_pad");
  // The reduction's axes: n, k, spatial... (NCHW) or n, spatial..., k (channels-last).
  std::vector<std::string> axisNames{"n"}, reduceNames{"rc"};
  Shape outShape{N};
  if (!cl) {
    axisNames.push_back("k");
    outShape.push_back(K);
  }
  for (size_t d = 0; d < dims; ++d) {
    axisNames.push_back(spatialName(dims, d, false));
    reduceNames.push_back(spatialName(dims, d, true));
    outShape.push_back(spatial[d]);
  }
  if (cl) {
    axisNames.push_back("k");
    outShape.push_back(K);
  }
  size_t kAxis = cl ? dims + 1 : 1, xAxis = cl ? 1 : 2;
  std::string tag = "conv" + std::to_string(dims) + "d";
  Tensor y = reduce(
      cl ? name + "_cl" : name, cl ? tag + "_cl" : tag, outShape, ReduceKind::Sum, reduceExt,
      [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
        Expr k = ax[kAxis], channel = r[0];
        if (G > 1) channel = k / static_cast<double>(Kg) * static_cast<double>(Cg) + r[0];
        std::vector<Expr> di{ax[0], channel}, wi;
        if (!cl) wi.push_back(k);
        wi.push_back(r[0]);
        for (size_t d = 0; d < dims; ++d) {
          Expr x = ax[xAxis + d];
          Expr pos = p.stride[d] == 1 ? x : x * static_cast<double>(p.stride[d]);
          Expr ry =
              p.dilation[d] == 1 ? Expr(r[1 + d]) : r[1 + d] * static_cast<double>(p.dilation[d]);
          di.push_back(pos + ry);
          wi.push_back(r[1 + d]);
        }
        if (cl) wi.push_back(k);
        return read(padded, di) * read(weight, wi);
      },
      axisNames, reduceNames);
  if (!cl) return y;
  // Back to [N, K, X...].
  return nchwLayout(name, N, K, spatial, [&](const std::vector<Var>& ax) {
    std::vector<Expr> idx{ax[0]};
    for (size_t d = 0; d < dims; ++d) idx.push_back(ax[2 + d]);
    idx.push_back(ax[1]);
    return read(y, idx);
  });
}

Tensor convTranspose(const Tensor& data, const Tensor& weight, const ConvParams& p,
                     const std::vector<int64_t>& outputPadding, const std::string& name) {
  size_t dims;
  checkConvInputs(data, weight, p, name, &dims);
  WM_CHECK(outputPadding.size() == dims) << name << ": output padding of the wrong size";
  int64_t N = data->shape[0], C = data->shape[1], G = p.groups;
  if (weight->shape[0] != C)
    WM_USER_ERROR() << name << ": weight has " << weight->shape[0]
                    << " input channels, data has C=" << C;
  if (C % G) WM_USER_ERROR() << name << ": groups=" << G << " does not divide C=" << C;
  int64_t Kg = weight->shape[1], K = 0, Cg = C / G;
  if (!checkedMul(Kg, G, &K)) WM_USER_ERROR() << name << ": output channels overflow";
  // out[y] = sum_r P[y + r*dil] * w[R-1-r], where P is the input dilated by the stride and
  // shifted by lead = dil*(R-1) - pad (zero outside the input's dilated support).
  Shape outShape{N, K}, pShape{N, C}, reduceExt{Cg};
  std::vector<int64_t> lead;
  for (size_t d = 0; d < dims; ++d) {
    int64_t X = data->shape[2 + d], R = weight->shape[2 + d];
    if (outputPadding[d] < 0 || outputPadding[d] >= std::max(p.stride[d], p.dilation[d]))
      WM_USER_ERROR() << name << ": output padding must be in [0, max(stride, dilation))";
    SizeMath m;
    int64_t reach = m.mul(p.dilation[d], R - 1);
    int64_t o = m.add(m.sub(m.sub(m.mul(X - 1, p.stride[d]), p.padBefore[d]), p.padAfter[d]),
                      m.add(reach, m.add(outputPadding[d], 1)));
    int64_t pd = m.add(o, reach), ld = m.sub(reach, p.padBefore[d]);
    if (!m.ok()) WM_USER_ERROR() << name << ": sizes overflow in spatial dim " << d;
    if (o < 1) WM_USER_ERROR() << name << ": empty output in spatial dim " << d;
    outShape.push_back(o);
    pShape.push_back(pd);
    reduceExt.push_back(R);
    lead.push_back(ld);
  }
  Tensor dil = compute(name + "_dilate", "dilate_pad", pShape, [&](const std::vector<Var>& ax) {
    Expr cond;
    std::vector<Expr> idx{ax[0], ax[1]};
    for (size_t d = 0; d < dims; ++d) {
      Expr j = ax[2 + d] - static_cast<double>(lead[d]);
      Expr c = j >= 0.0;
      if (p.stride[d] > 1) c = c && (j % static_cast<double>(p.stride[d]) == 0.0);
      Expr q = p.stride[d] > 1 ? j / static_cast<double>(p.stride[d]) : j;
      c = c && (q < static_cast<double>(data->shape[2 + d]));
      cond = cond.defined() ? (cond && c) : c;
      idx.push_back(q);
    }
    return select(cond, read(data, idx), floatImm(0.0, data->dtype));
  });
  std::vector<std::string> axisNames{"n", "k"}, reduceNames{"rc"};
  for (size_t d = 0; d < dims; ++d) {
    axisNames.push_back(spatialName(dims, d, false));
    reduceNames.push_back(spatialName(dims, d, true));
  }
  std::string tag = "conv" + std::to_string(dims) + "d_transpose";
  return reduce(
      name, tag, outShape, ReduceKind::Sum, reduceExt,
      [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
        Expr channel = r[0], kIn = ax[1];
        if (G > 1) {
          channel = Expr(ax[1]) / static_cast<double>(Kg) * static_cast<double>(Cg) + r[0];
          kIn = Expr(ax[1]) % static_cast<double>(Kg);
        }
        std::vector<Expr> di{ax[0], channel}, wi{channel, kIn};
        for (size_t d = 0; d < dims; ++d) {
          int64_t R = weight->shape[2 + d];
          Expr ry =
              p.dilation[d] == 1 ? Expr(r[1 + d]) : r[1 + d] * static_cast<double>(p.dilation[d]);
          di.push_back(ax[2 + d] + ry);
          wi.push_back(static_cast<double>(R - 1) - Expr(r[1 + d]));
        }
        return read(dil, di) * read(weight, wi);
      },
      axisNames, reduceNames);
}

} // namespace wm::ops
