// Ansor's per-store static features (see ansor_features.h). Roadmap: a walk over the loop nest
// keeps the stack of enclosing loops, the current auto-unroll pragma and allocations; at each
// store it counts the operations of the stored value and its indices, classifies the
// annotated loops, and describes every buffer the store touches (access type, bytes, lines,
// reuse across loops, stride of the innermost loop).
#include <wm/costmodel/ansor_features.h>
#include <wm/ir/visitor.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace wm::costmodel {

using namespace wm::ir;
using namespace wm::lower;

namespace {

float slog(double x) {
  return static_cast<float>(x >= 0 ? std::log2(x + 1) : -std::log2(-x + 1));
}

struct Loop {
  const VarNode* var;
  int64_t extent;
  ForKind kind;
  std::string tag;
};

struct Counts {
  double v[16] = {0};
};

// Operation counts of one evaluation: [0..6] float mad, add/sub, mul, div/mod, cmp, math,
// other call; [7..13] the same for integers; [14] bool ops; [15] select.
void countOps(const Expr& e, Counts& c) {
  postOrderVisit(e, [&](const Expr& x) {
    bool f = isFloat(x.dtype());
    int base = f ? 0 : 7;
    if (auto* b = x.as<BinaryNode>()) {
      switch (b->op) {
      case BinaryOp::Add:
      case BinaryOp::Sub: {
        auto* m1 = b->a.as<BinaryNode>();
        auto* m2 = b->b.as<BinaryNode>();
        bool mad = (m1 && m1->op == BinaryOp::Mul) || (m2 && m2->op == BinaryOp::Mul);
        c.v[base + (mad ? 0 : 1)] += 1;
        if (mad) c.v[base + 2] -= 1; // the multiply belongs to the mad
        break;
      }
      case BinaryOp::Mul: c.v[base + 2] += 1; break;
      case BinaryOp::Div:
      case BinaryOp::Mod: c.v[base + 3] += 1; break;
      case BinaryOp::Min:
      case BinaryOp::Max: c.v[base + 4] += 1; break;
      }
    } else if (auto* cmp = x.as<CompareNode>()) {
      c.v[(isFloat(cmp->a.dtype()) ? 0 : 7) + 4] += 1;
    } else if (x.as<CallNode>()) {
      c.v[base + 5] += 1;
    } else if (x.as<LogicalNode>() || x.as<NotNode>()) {
      c.v[14] += 1;
    } else if (x.as<SelectNode>()) {
      c.v[15] += 1;
    }
  });
  for (double& v : c.v) v = std::max(0.0, v);
}

bool mentions(const Expr& e, const VarNode* v) {
  bool m = false;
  postOrderVisit(e, [&](const Expr& x) { m |= x.as<VarNode>() == v; });
  return m;
}

// Coefficient of v in e when e is affine in v (else 0).
int64_t coefficient(const Expr& e, const VarNode* v) {
  if (e.as<VarNode>() == v) return 1;
  if (auto* b = e.as<BinaryNode>()) {
    int64_t c;
    if (b->op == BinaryOp::Add) return coefficient(b->a, v) + coefficient(b->b, v);
    if (b->op == BinaryOp::Sub) return coefficient(b->a, v) - coefficient(b->b, v);
    if (b->op == BinaryOp::Mul && isConstInt(b->b, &c)) return c * coefficient(b->a, v);
    if (b->op == BinaryOp::Mul && isConstInt(b->a, &c)) return c * coefficient(b->b, v);
  }
  return 0;
}

struct Access {
  Buffer buf;
  std::vector<std::vector<Expr>> reads;
  std::vector<Expr> write;
};

class Extractor {
public:
  std::vector<FeatureRow> rows;

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
    case StmtKind::For: {
      auto* n = s.as<ForNode>();
      loops_.push_back({n->var.node(), n->extent, n->forKind, n->threadTag});
      walk(n->body);
      loops_.pop_back();
      return;
    }
    case StmtKind::Store: store(s.as<StoreNode>()); return;
    case StmtKind::Allocate: {
      auto* n = s.as<AllocateNode>();
      allocProd_[n->buffer.get()] = prod(loops_.size());
      walk(n->body);
      return;
    }
    case StmtKind::IfThenElse:
      walk(s.as<IfThenElseNode>()->then);
      walk(s.as<IfThenElseNode>()->otherwise);
      return;
    case StmtKind::Seq:
      for (auto& x : s.as<SeqNode>()->stmts) walk(x);
      return;
    case StmtKind::Attr: {
      auto* n = s.as<AttrNode>();
      int64_t saved = unroll_;
      if (n->key == "auto_unroll_max_step") unroll_ = n->value;
      walk(n->body);
      unroll_ = saved;
      return;
    }
    case StmtKind::Barrier: return;
    }
  }

private:
  double prod(size_t depth, size_t from = 0) const {
    double p = 1;
    for (size_t i = from; i < depth && i < loops_.size(); ++i)
      p *= static_cast<double>(loops_[i].extent);
    return p;
  }

  void store(const StoreNode* st) {
    FeatureRow row{};
    int k = 0;
    double outer = prod(loops_.size());
    // Computation counts (16).
    Counts c;
    countOps(st->value, c);
    for (auto& i : st->indices) countOps(i, c);
    for (double v : c.v) row[k++] = slog(v * outer);
    // Annotations: vectorize, unroll, parallel (3 x 11).
    std::vector<Expr> storeIdx = st->indices;
    for (ForKind kind : {ForKind::Vectorized, ForKind::Unrolled, ForKind::Parallel}) {
      int num = 0;
      double p = 1;
      int64_t len = 0;
      int last = -1;
      for (size_t i = 0; i < loops_.size(); ++i)
        if (loops_[i].kind == kind) {
          ++num;
          p *= static_cast<double>(loops_[i].extent);
          len = loops_[i].extent;
          last = static_cast<int>(i);
        }
      row[k++] = slog(num);
      row[k++] = slog(num ? p : 0);
      row[k++] = slog(len);
      // Position one-hot: none, inner/middle/outer spatial, inner/middle/outer reduce, mixed.
      int pos = 0;
      if (last >= 0) {
        bool spatial = false;
        for (auto& e : storeIdx) spatial |= mentions(e, loops_[last].var);
        int where = last == static_cast<int>(loops_.size()) - 1 ? 0 : last == 0 ? 2 : 1;
        pos = (spatial ? 1 : 4) + where;
        if (num > 1) pos = 7;
      }
      for (int h = 0; h < 8; ++h) row[k++] = h == pos ? 1.0f : 0.0f;
    }
    // GPU binding (8): blockIdx.x/y/z, threadIdx.x/y/z, vthread extents, is_gpu.
    const char* tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                          "threadIdx.y", "threadIdx.z", "vthread"};
    bool gpu = false;
    for (const char* t : tags) {
      double e = 0;
      for (auto& l : loops_)
        if (l.kind == ForKind::ThreadBound && l.tag == t)
          e = std::max(e, static_cast<double>(l.extent));
      gpu |= e > 0;
      row[k++] = slog(e);
    }
    row[k++] = gpu ? 1.0f : 0.0f;
    // Buffer accesses (top 5 by bytes, 18 each).
    // Buffers in order of first access (never by address: equal-sized buffers keep this order
    // through the stable sort below, so features do not depend on the heap).
    std::vector<std::pair<const BufferNode*, Access>> acc;
    auto accessOf = [&](const Buffer& b) -> Access& {
      for (auto& kv : acc)
        if (kv.first == b.get()) return kv.second;
      acc.push_back({b.get(), Access{}});
      acc.back().second.buf = b;
      return acc.back().second;
    };
    postOrderVisit(st->value, [&](const Expr& x) {
      if (auto* ld = x.as<BufferLoadNode>()) accessOf(ld->buffer).reads.push_back(ld->indices);
    });
    accessOf(st->buffer).write = st->indices;
    struct BufFeat {
      double v[18];
      double bytes;
    };
    std::vector<BufFeat> feats;
    double uniqueTotalBytes = 0;
    for (auto& [ptr, a] : acc) {
      double elem = static_cast<double>(storageBytes(a.buf->dtype));
      std::vector<std::vector<Expr>> idxs = a.reads;
      if (!a.write.empty()) idxs.push_back(a.write);
      auto flat = [&](const std::vector<Expr>& ix) {
        Expr f;
        for (size_t d = 0; d < ix.size(); ++d) {
          Expr t = ix[d] * static_cast<double>(a.buf->strides[d]);
          f = f.defined() ? f + t : t;
        }
        return f.defined() ? f : intImm(0);
      };
      // Loops whose variable the accesses use, and the innermost loop without it (reuse).
      double unique = 1;
      int reuseLoop = -1;
      for (size_t i = 0; i < loops_.size(); ++i) {
        bool used = false;
        for (auto& ix : idxs)
          for (auto& e : ix) used |= mentions(e, loops_[i].var);
        if (used)
          unique *= static_cast<double>(loops_[i].extent);
        else
          reuseLoop = static_cast<int>(i);
      }
      double count = outer * static_cast<double>(idxs.size());
      double bytes = count * elem;
      double uniqueBytes = unique * elem;
      uniqueTotalBytes += uniqueBytes;
      int64_t stride = 0;
      if (!loops_.empty()) stride = std::abs(coefficient(flat(idxs[0]), loops_.back().var));
      double lines = count * std::min(1.0, static_cast<double>(stride) * elem / 64.0);
      if (stride == 0 && !loops_.empty()) lines = count / static_cast<double>(loops_.back().extent);
      double uniqueLines = std::max(1.0, uniqueBytes / 64.0);
      BufFeat bf{};
      int j = 0;
      bool rd = !a.reads.empty(), wr = !a.write.empty();
      bf.v[j++] = rd && !wr;
      bf.v[j++] = wr && !rd;
      bf.v[j++] = rd && wr;
      bf.v[j++] = slog(bytes);
      bf.v[j++] = slog(uniqueBytes);
      bf.v[j++] = slog(lines);
      bf.v[j++] = slog(uniqueLines);
      double reuseCt = 1, reuseIter = 0, reuseBytes = 0;
      int reuseType = 2; // no reuse
      if (reuseLoop >= 0) {
        reuseType = 0; // loop multiple read
        reuseCt = static_cast<double>(loops_[reuseLoop].extent);
        reuseIter = prod(loops_.size(), reuseLoop + 1);
        reuseBytes = reuseIter * elem * static_cast<double>(idxs.size());
      } else if (rd && wr) {
        reuseType = 1; // serial multiple read-write
        reuseCt = 2;
        reuseIter = 1;
        reuseBytes = elem;
      }
      for (int h = 0; h < 3; ++h) bf.v[j++] = h == reuseType ? 1.0 : 0.0;
      bf.v[j++] = slog(reuseIter);
      bf.v[j++] = slog(reuseBytes);
      bf.v[j++] = slog(reuseCt);
      bf.v[j++] = slog(bytes / reuseCt);
      bf.v[j++] = slog(uniqueBytes / reuseCt);
      bf.v[j++] = slog(lines / reuseCt);
      bf.v[j++] = slog(uniqueLines / reuseCt);
      bf.v[j++] = slog(static_cast<double>(stride));
      bf.bytes = bytes;
      feats.push_back(bf);
    }
    std::stable_sort(feats.begin(), feats.end(),
                     [](auto& x, auto& y) { return x.bytes > y.bytes; });
    for (int b = 0; b < 5; ++b)
      for (int j = 0; j < 18; ++j)
        row[k++] = b < static_cast<int>(feats.size()) ? static_cast<float>(feats[b].v[j]) : 0.0f;
    // Arithmetic intensity curve (10): flops per unique byte with the loops from depth d in.
    double flopsPer = c.v[0] * 2 + c.v[1] + c.v[2] + c.v[3] + c.v[4] + c.v[5];
    size_t n = loops_.size();
    for (int q = 0; q < 10; ++q) {
      size_t d = n == 0 ? 0 : std::min(n - 1, static_cast<size_t>(q * n / 10));
      double inner = prod(n, d);
      row[k++] =
          slog(flopsPer * inner / std::max(1.0, uniqueTotalBytes * inner / std::max(1.0, outer)));
    }
    // Allocation (4).
    auto it = allocProd_.find(st->buffer.get());
    double size =
        static_cast<double>(st->buffer->allocElements() * storageBytes(st->buffer->dtype));
    double ap = it == allocProd_.end() ? 0 : it->second;
    row[k++] = slog(it == allocProd_.end() ? 0 : size);
    row[k++] = slog(ap);
    row[k++] = slog(it == allocProd_.end() ? 0 : outer);
    row[k++] = slog(ap > 0 ? outer / ap : 0);
    // Outer scope (3).
    row[k++] = slog(outer);
    row[k++] = slog(static_cast<double>(n));
    row[k++] = slog(static_cast<double>(std::max<int64_t>(0, unroll_)));
    WM_CHECK(k == kAnsorFeatures) << "feature layout has " << k << " values";
    rows.push_back(row);
  }

  std::vector<Loop> loops_;
  int64_t unroll_ = 0;
  std::map<const BufferNode*, double> allocProd_;
};

} // namespace

std::vector<FeatureRow> extractAnsorFeatures(const LoweredFunc& f) {
  Extractor e;
  e.walk(f.body);
  return e.rows;
}

} // namespace wm::costmodel
