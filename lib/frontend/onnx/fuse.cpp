// planModel: fusion of a Program into single-output groups, one ComputeDAG per group, and
// deduplication of identical groups into weighted tasks.
//
// Rules (TVM's FuseOps, simplified to single-output groups):
//  1. consumers: a group whose output has exactly one reader, an element-wise node, takes it
//     (conv + bias + add + relu; matmul + add; reduce + div; chains of element-wise ops);
//  2. producers: a group of element-wise/injective nodes whose output has exactly one reader
//     joins the reader's group when that group is a reduction or injective, and a group of
//     injective nodes only (transpose, pad, slice) joins a conv/matmul reader too. Element-wise
//     work is never inlined into a conv or matmul input, where it would be recomputed.
// A value read through a view, or a graph output, always stays a buffer.
#include "convert.h"

#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/support/error.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <unordered_map>

namespace wm::frontend {

using namespace wm::ir;

namespace {

constexpr size_t kMaxGroupNodes = 32;

int rank(OpClass c) {
  switch (c) {
  case OpClass::Anchor: return 4;
  case OpClass::Reduce: return 3;
  case OpClass::Injective: return 2;
  case OpClass::Elementwise: return 1;
  default: return 0;
  }
}

class Fuser {
public:
  explicit Fuser(const Program& p) : p_(p), parent_(p.nodes.size()), cls_(p.nodes.size()) {
    std::iota(parent_.begin(), parent_.end(), 0);
    readers_.resize(p.values.size());
    blocked_.assign(p.values.size(), false);
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const OpDef* d = findOpDef(p.nodes[i].node.op);
      WM_CHECK(d) << "no op def for " << p.nodes[i].node.op;
      cls_[i] = d->cls;
      for (int v : p.nodes[i].inputs)
        if (v >= 0) {
          if (p.values[v].aliasOf >= 0)
            blocked_[p.values[v].aliasOf] = true;
          else
            readers_[v].push_back(static_cast<int>(i));
        }
    }
    for (auto& v : p.values)
      if (v.aliasOf >= 0 && v.isOutput) blocked_[v.aliasOf] = true;
    members_.resize(p.nodes.size());
    for (size_t i = 0; i < p.nodes.size(); ++i) members_[i] = {static_cast<int>(i)};
  }

  std::vector<std::vector<int>> run() {
    // 1. element-wise consumers (chains and diamonds), in topological order
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      int g = find(static_cast<int>(i));
      if (g != static_cast<int>(i)) continue;
      while (true) {
        int c = soleReader(g);
        if (c < 0) { // element-wise readers that join again in one node (gelu's diamond)
          std::vector<int> d = diamond(g);
          if (d.empty()) break;
          for (int m : d) merge(m, g);
          continue;
        }
        if (find(c) != c || cls_[c] != OpClass::Elementwise) break;
        if (members_[g].size() + members_[c].size() > kMaxGroupNodes) break;
        merge(c, g);
      }
    }
    // 2. producers, until nothing changes
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = p_.nodes.size(); i-- > 0;) {
        int g = find(static_cast<int>(i));
        if (g != static_cast<int>(i)) continue;
        int top = masterRank(g);
        if (top != rank(OpClass::Elementwise) && top != rank(OpClass::Injective)) continue;
        int c = soleReader(g);
        if (c < 0) continue;
        int h = find(c);
        if (h == g || members_[g].size() + members_[h].size() > kMaxGroupNodes) continue;
        int hr = masterRank(h);
        bool ok = hr == rank(OpClass::Reduce) || hr == rank(OpClass::Injective) ||
                  (hr == rank(OpClass::Anchor) && onlyInjective(g));
        if (!ok) continue;
        merge(g, h);
        changed = true;
      }
    }
    std::vector<std::vector<int>> groups;
    for (size_t i = 0; i < p_.nodes.size(); ++i)
      if (find(static_cast<int>(i)) == static_cast<int>(i)) {
        auto m = members_[i];
        std::sort(m.begin(), m.end());
        groups.push_back(m);
      }
    std::sort(groups.begin(), groups.end(), [](auto& a, auto& b) { return a.back() < b.back(); });
    return groups;
  }

private:
  int find(int i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  /// Merges group a into group b (b's root stays).
  void merge(int a, int b) {
    a = find(a);
    b = find(b);
    parent_[a] = b;
    members_[b].insert(members_[b].end(), members_[a].begin(), members_[a].end());
    members_[a].clear();
  }
  /// The sink of group g: its member with the highest index.
  int sink(int g) const { return *std::max_element(members_[g].begin(), members_[g].end()); }
  /// The node reading group g's output, when it is the only reader and nothing else needs the
  /// buffer; -1 otherwise.
  int soleReader(int g) const {
    int out = p_.nodes[sink(g)].output;
    const PValue& v = p_.values[out];
    if (v.isOutput || blocked_[out] || readers_[out].size() != 1) return -1;
    int r = readers_[out][0];
    // the reader must read the value once (add(x, x) keeps x a buffer)
    int n = 0;
    for (int in : p_.nodes[r].inputs) n += in == out;
    return n == 1 ? r : -1;
  }
  /// Readers of `v` (a node output), or empty when the buffer must stay (graph output, view).
  std::vector<int> readersOf(int v) const {
    if (p_.values[v].isOutput || blocked_[v]) return {};
    return readers_[v];
  }
  /// Element-wise nodes that read group g's output (several readers) and join again in one
  /// node; empty when there is no such closed diamond of at most kMaxDiamond nodes.
  std::vector<int> diamond(int g) {
    constexpr size_t kMaxDiamond = 12;
    int out = p_.nodes[sink(g)].output;
    auto first = readersOf(out);
    if (first.size() < 2) return {};
    std::set<int> c(first.begin(), first.end());
    while (c.size() <= kMaxDiamond) {
      for (int m : c)
        if (find(m) != m || cls_[m] != OpClass::Elementwise || members_[m].size() != 1) return {};
      // exits: members whose output is read outside the set (or must stay a buffer)
      std::vector<int> exits;
      for (int m : c) {
        int v = p_.nodes[m].output;
        bool leaves = p_.values[v].isOutput || blocked_[v] || readers_[v].empty();
        for (int r : readers_[v]) leaves |= !c.count(r);
        if (leaves) exits.push_back(m);
      }
      if (exits.size() == 1 && exits[0] == *c.rbegin()) break;
      if (exits.empty()) return {};
      int e = *std::min_element(exits.begin(), exits.end());
      auto rs = readersOf(p_.nodes[e].output);
      if (rs.empty()) return {};
      c.insert(rs.begin(), rs.end());
    }
    if (c.size() > kMaxDiamond) return {};
    // no member may read a value computed from g's output outside the diamond (a cycle)
    std::set<int> reach{sink(g)};
    int last = *c.rbegin();
    for (int n = sink(g) + 1; n <= last; ++n)
      for (int in : p_.nodes[n].inputs)
        if (in >= 0) {
          int pr = p_.values[p_.root(in)].producer;
          if (pr >= 0 && reach.count(pr)) {
            reach.insert(n);
            break;
          }
        }
    for (int m : c)
      for (int in : p_.nodes[m].inputs) {
        if (in < 0) continue;
        int pr = p_.values[p_.root(in)].producer;
        if (pr >= 0 && reach.count(pr) && !c.count(pr) && find(pr) != g) return {};
      }
    if (members_[g].size() + c.size() > kMaxGroupNodes) return {};
    return std::vector<int>(c.begin(), c.end());
  }
  int masterRank(int g) const {
    int r = 0;
    for (int m : members_[g]) r = std::max(r, rank(cls_[m]));
    return r;
  }
  bool onlyInjective(int g) const {
    for (int m : members_[g])
      if (cls_[m] != OpClass::Injective) return false;
    return true;
  }

  const Program& p_;
  std::vector<int> parent_;
  std::vector<OpClass> cls_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> blocked_;
  std::vector<std::vector<int>> members_;
};

std::pair<double, double> rangeOf(const NDArray& a) {
  double lo = a.values()[0], hi = lo;
  for (double v : a.values()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return {lo, hi};
}

} // namespace

ComputeDAG groupDag(const Program& p, const std::vector<int>& nodes, std::vector<int>* inputs) {
  std::unordered_map<int, Tensor> tensorOf; // value id -> tensor inside the group
  std::unordered_map<const OperationNode*, int> phValue;
  int next = 0;
  auto external = [&](int vid) -> Tensor {
    auto it = tensorOf.find(vid);
    if (it != tensorOf.end()) return it->second;
    const PValue& v = p.values[vid];
    Tensor t;
    if (v.constant && v.constant->size() == 1) {
      // one-element constants (eps, exponents, scales) become immediates of the kernel
      double c = v.constant->values()[0];
      DType dt = v.dtype;
      t = compute("const" + std::to_string(next++), "constant", v.shape, [&](auto&) {
        return dt == DType::Bool ? boolImm(c != 0)
               : isFloat(dt)     ? floatImm(c, dt)
                                 : intImm(saturateInt(c), dt);
      });
    } else {
      PlaceholderOptions opts;
      if (v.constant) { // measurement inputs drawn from the constant's own range
        auto [lo, hi] = rangeOf(*v.constant);
        if (isInt(v.dtype) || v.dtype == DType::Bool)
          hi += 1;
        else if (hi <= lo)
          hi = lo + 1e-3;
        opts.lo = lo;
        opts.hi = hi;
      }
      t = placeholder("p" + std::to_string(next++), v.shape, v.dtype, opts);
      phValue[t.get()] = vid;
    }
    tensorOf.emplace(vid, t);
    return t;
  };
  Tensor last;
  for (int ni : nodes) {
    const PNode& pn = p.nodes[ni];
    std::vector<ConvertInput> ins;
    for (int vid : pn.inputs) {
      ConvertInput ci;
      if (vid >= 0) {
        const PValue& v = p.values[vid];
        ci.present = true;
        ci.dtype = v.dtype;
        ci.shape = v.shape;
        bool empty = v.numElements() == 0;
        auto it = tensorOf.find(vid);
        if (!empty) ci.tensor = it != tensorOf.end() ? it->second : external(vid);
        if (v.constant) ci.constant = &*v.constant;
      }
      ins.push_back(std::move(ci));
    }
    ConvertContext ctx(pn.node, p.opset, std::move(ins));
    auto outs = convertNode(ctx);
    last = outs.at(static_cast<size_t>(pn.outputIndex));
    tensorOf[pn.output] = last;
  }
  ComputeDAG dag({last});
  inputs->clear();
  for (auto& ph : dag.placeholders()) inputs->push_back(phValue.at(ph.get()));
  return dag;
}

ModelPlan planModel(const Program& p) {
  ModelPlan plan;
  std::map<std::string, int> byKey;
  for (auto& members : Fuser(p).run()) {
    FusedGroup g;
    g.nodes = members;
    g.output = p.nodes[members.back()].output;
    ComputeDAG dag = groupDag(p, members, &g.inputs);
    for (int m : members) g.ops += (g.ops.empty() ? "" : "+") + p.nodes[m].node.op;
    std::string key = dag.workloadKey();
    auto it = byKey.find(key);
    if (it == byKey.end()) {
      ModelTask t;
      t.key = key;
      t.dag = std::move(dag);
      t.ops = g.ops;
      it = byKey.emplace(key, static_cast<int>(plan.tasks.size())).first;
      plan.tasks.push_back(std::move(t));
    }
    g.task = it->second;
    plan.tasks[g.task].weight += 1;
    plan.tasks[g.task].groups.push_back(static_cast<int>(plan.groups.size()));
    plan.groups.push_back(std::move(g));
  }
  return plan;
}

std::vector<IndexRange> indexRanges(const Program& p) {
  std::vector<IndexRange> out;
  for (const PNode& n : p.nodes) {
    if (n.node.op != "Gather" || n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0)
      continue;
    if (p.values[p.root(n.inputs[1])].constant) continue; // checked when converted
    const ir::Shape& data = p.values[n.inputs[0]].shape;
    auto it = n.node.attrs.find("axis");
    int64_t axis = it == n.node.attrs.end() ? 0 : it->second.i;
    if (axis < 0) axis += static_cast<int64_t>(data.size());
    if (axis < 0 || axis >= static_cast<int64_t>(data.size())) continue; // refused when converted
    int64_t dim = data[static_cast<size_t>(axis)];
    out.push_back({n.inputs[1], -dim, dim - 1, n.node.name});
  }
  return out;
}

std::string onnxTaskSpec(const std::string& path, const std::string& key) {
  return "onnx:" + path + "#" + key;
}

ComputeDAG onnxTaskDag(const std::string& spec) {
  static std::mutex mu;
  static std::map<std::string, std::map<std::string, ComputeDAG>> cache; // path -> key -> dag
  if (spec.rfind("onnx:", 0) != 0)
    WM_USER_ERROR() << "'" << spec << "' is not an onnx:<path>#<key> spec";
  size_t hash = spec.rfind('#');
  if (hash == std::string::npos || hash < 5)
    WM_USER_ERROR() << "'" << spec << "': missing #<task key>";
  std::string path = spec.substr(5, hash - 5), key = spec.substr(hash + 1);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(path);
  if (it == cache.end()) {
    Program prog = buildProgram(loadOnnx(path));
    ModelPlan plan = planModel(prog);
    std::map<std::string, ComputeDAG> dags;
    for (auto& t : plan.tasks) dags.emplace(t.key, t.dag);
    it = cache.emplace(path, std::move(dags)).first;
  }
  auto d = it->second.find(key);
  if (d == it->second.end()) WM_USER_ERROR() << path << ": the model has no task " << key;
  return d->second;
}

ComputeDAG workloadDag(const std::string& spec) {
  if (spec.rfind("onnx:", 0) == 0) return onnxTaskDag(spec);
  return parseWorkload(spec).dag;
}

namespace {
std::string canonicalPath(const std::string& p) {
  std::error_code ec;
  auto c = std::filesystem::weakly_canonical(p, ec);
  return ec ? p : c.string();
}
} // namespace

std::function<ComputeDAG(const std::string&)>
logWorkloadResolver(const std::vector<std::string>& models) {
  std::set<std::string> allowed;
  for (auto& m : models) allowed.insert(canonicalPath(m));
  return [allowed](const std::string& spec) {
    if (spec.rfind("onnx:", 0) == 0) {
      size_t hash = spec.rfind('#');
      std::string path = spec.substr(5, hash == std::string::npos ? std::string::npos : hash - 5);
      if (!allowed.count(canonicalPath(path)))
        WM_USER_ERROR() << "its workload names the model " << path
                        << ", which was not given (pass it with --onnx to use these records)";
    }
    return workloadDag(spec);
  };
}

} // namespace wm::frontend
