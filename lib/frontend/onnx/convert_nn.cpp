// ONNX converters of the anchor ops: Conv and ConvTranspose (through ops::conv and
// ops::convTranspose), Gemm, MatMul.
#include "convert_ops.h"

#include <wm/frontend/ops.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace wm::frontend::conv {

using namespace wm::ir;

/// What Conv and ConvTranspose share: input checks, kernel, strides, dilations, groups.
static ops::ConvParams convCommon(const ConvertContext& c, std::vector<int64_t>* kernel) {
  const Tensor &x = c.x(0), &w = c.x(1);
  requireFloat(c, x, "X");
  if (x->ndim() < 3 || x->ndim() > 5) c.fail("only 1-3 spatial dimensions are supported");
  if (w->ndim() != x->ndim()) c.fail("W must have X's rank");
  size_t n = x->ndim() - 2;
  if (c.node.weightChannelsLast) // [C, R..., K]
    kernel->assign(w->shape.begin() + 1, w->shape.end() - 1);
  else
    kernel->assign(w->shape.begin() + 2, w->shape.end());
  if (c.hasAttr("kernel_shape") && c.attrInts("kernel_shape", {}) != *kernel)
    c.fail("'kernel_shape' does not match W");
  ops::ConvParams p;
  p.stride = spatialAttr(c, "strides", n, 1);
  p.dilation = spatialAttr(c, "dilations", n, 1);
  p.groups = c.attrInt("group", 1);
  return p;
}

Outs convertConv(ConvertContext& c) {
  const Tensor &x = c.x(0), &w = c.x(1);
  std::vector<int64_t> kernel;
  ops::ConvParams p = convCommon(c, &kernel);
  Shape in(x->shape.begin() + 2, x->shape.end());
  resolvePads(c, in, kernel, p.stride, p.dilation, &p.padBefore, &p.padAfter);
  p.weightChannelsLast = c.node.weightChannelsLast;
  p.weightRowPad = c.node.weightRowPad;
  Tensor y = ops::conv(x, w, p, c.name());
  if (c.has(2)) y = ops::biasAdd(y, c.x(2), 1, c.name("bias"));
  return {y};
}

Outs convertConvTranspose(ConvertContext& c) {
  const Tensor &x = c.x(0), &w = c.x(1);
  std::vector<int64_t> kernel;
  ops::ConvParams p = convCommon(c, &kernel);
  size_t n = kernel.size();
  auto outPad = c.attrInts("output_padding", std::vector<int64_t>(n, 0));
  if (outPad.size() != n) c.fail("'output_padding' needs " + std::to_string(n) + " values");
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  p.padBefore.assign(n, 0);
  p.padAfter.assign(n, 0);
  if (c.hasAttr("output_shape") || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    std::vector<int64_t> target = c.attrInts("output_shape", {});
    if (target.size() > n)
      target.erase(target.begin(), target.begin() + static_cast<long>(target.size() - n));
    for (size_t d = 0; d < n; ++d) {
      int64_t want = target.empty() ? x->shape[2 + d] * p.stride[d] : target[d];
      int64_t full =
          p.stride[d] * (x->shape[2 + d] - 1) + outPad[d] + (kernel[d] - 1) * p.dilation[d] + 1;
      int64_t total = full - want;
      if (total < 0) c.fail("an output_shape larger than the full output is not supported");
      int64_t half = total / 2;
      p.padBefore[d] = autoPad == "SAME_UPPER" ? half : total - half;
      p.padAfter[d] = autoPad == "SAME_UPPER" ? total - half : half;
    }
  } else if (autoPad == "NOTSET") {
    explicitPads(c, n, &p.padBefore, &p.padAfter);
  } else if (autoPad != "VALID") {
    c.fail("auto_pad '" + autoPad + "' is unknown");
  }
  Tensor y = ops::convTranspose(x, w, p, outPad, c.name());
  if (c.has(2)) y = ops::biasAdd(y, c.x(2), 1, c.name("bias"));
  return {y};
}

// ---- matrix products ----

Outs convertGemm(ConvertContext& c) {
  const Tensor &a = c.x(0), &b = c.x(1);
  requireFloat(c, a, "A");
  bool ta = c.attrInt("transA", 0) != 0, tb = c.attrInt("transB", 0) != 0;
  double alpha = c.attrFloat("alpha", 1.0), beta = c.attrFloat("beta", 1.0);
  const int64_t blk = c.node.weightBlock; // B packed [N / blk, K, blk]
  if (blk && (ta || tb || b->ndim() != 3 || b->shape[2] != blk))
    c.fail("a packed weight needs transA = transB = 0 and the shape [N / block, K, block]");
  if (a->ndim() != 2 || b->ndim() != (blk ? 3 : 2)) c.fail("A and B must be matrices");
  int64_t M = ta ? a->shape[1] : a->shape[0], K = ta ? a->shape[0] : a->shape[1];
  int64_t Kb = blk ? b->shape[1] : tb ? b->shape[1] : b->shape[0];
  int64_t N = blk ? b->shape[0] * blk : tb ? b->shape[0] : b->shape[1];
  if (K != Kb)
    c.fail("inner dimensions differ (" + std::to_string(K) + " vs " + std::to_string(Kb) + ")");
  Tensor y = reduce(c.name(), tb ? "dense" : "matmul", {M, N}, ReduceKind::Sum, {K},
                    [&](auto& ax, auto& r) {
                      Expr av = ta ? read(a, {r[0], ax[0]}) : read(a, {ax[0], r[0]});
                      Expr bv = blk  ? read(b, {ax[1] / blk, r[0], ax[1] % blk})
                                : tb ? read(b, {ax[1], r[0]})
                                     : read(b, {r[0], ax[1]});
                      return av * bv;
                    },
                    {"i", "j"}, {"k"});
  bool bias = c.has(2) && beta != 0;
  if (alpha != 1 || bias) {
    Shape out{M, N};
    if (bias) ops::broadcastShape(out, c.x(2)->shape, "node '" + c.node.name + "' C");
    y = compute(c.name("epilogue"), "gemm_epilogue", out, [&](const std::vector<Var>& ax) {
      Expr v = read(y, all(ax));
      if (alpha != 1) v = v * alpha;
      if (bias) {
        Expr cv = read(c.x(2), broadcastIndex(c.x(2), out, ax));
        v = v + (beta == 1 ? cv : cv * beta);
      }
      return v;
    });
  }
  return {y};
}

Outs convertMatMul(ConvertContext& c) {
  Tensor a = c.x(0), b = c.x(1);
  requireFloat(c, a, "A");
  if (a->dtype != b->dtype) c.fail("operand types differ");
  Shape sa = a->shape, sb = b->shape;
  const int64_t blk = c.node.weightBlock; // B packed [N / blk, K, blk]
  if (blk) {
    if (sb.size() != 3 || sb[2] != blk)
      c.fail("a packed weight needs the shape [N / block, K, block]");
    sb = {sb[1], sb[0] * blk};
  }
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA) sa.insert(sa.begin(), 1);
  if (vecB) sb.push_back(1);
  int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  if (sb[sb.size() - 2] != K)
    c.fail("inner dimensions differ (" + std::to_string(K) + " vs " +
           std::to_string(sb[sb.size() - 2]) + ")");
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = ops::broadcastShape(ba, bb, "node '" + c.node.name + "'");
  Shape out = batch;
  if (!vecA) out.push_back(M);
  if (!vecB) out.push_back(N);
  size_t nb = batch.size();
  auto batchIndex = [&](const Shape& bs, const std::vector<Var>& ax) {
    std::vector<Expr> idx;
    size_t off = nb - bs.size();
    for (size_t d = 0; d < bs.size(); ++d)
      idx.push_back(bs[d] == 1 && batch[off + d] != 1 ? intImm(0) : Expr(ax[off + d]));
    return idx;
  };
  const char* tag = nb ? "batch_matmul" : "matmul";
  return {reduce(c.name(), tag, out, ReduceKind::Sum, {K},
                 [&](const std::vector<Var>& ax, const std::vector<Var>& r) {
                   Expr i = vecA ? Expr(intImm(0)) : Expr(ax[nb]);
                   Expr j = vecB ? Expr(intImm(0)) : Expr(ax[nb + (vecA ? 0 : 1)]);
                   std::vector<Expr> ia = batchIndex(ba, ax), ib = batchIndex(bb, ax);
                   if (!vecA) ia.push_back(i);
                   ia.push_back(r[0]);
                   ib.push_back(r[0]);
                   if (!vecB) ib.push_back(j);
                   if (blk) ib = {j / blk, r[0], j % blk}; // (2-D B: no batch indices)
                   return read(a, ia) * read(b, ib);
                 })};
}

} // namespace wm::frontend::conv
