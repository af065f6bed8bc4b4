// Where a model's values live while it runs (see model.h: planMemory). Group outputs take the
// smallest free slot that fits (a slot is free once the last group reading its value has run;
// graph outputs are never freed), else a new slot.
#include <wm/frontend/model.h>
#include <wm/ir/dtype.h>
#include <wm/support/error.h>
#include <wm/support/int_math.h>

#include <limits>

namespace wm::frontend {

int64_t valueBytes(const PValue& v) {
  int64_t bytes = 0;
  if (!checkedMul(v.numElements(), ir::storageBytes(v.dtype), &bytes))
    WM_USER_ERROR() << "value '" << v.name << "' is too large";
  return bytes;
}

MemoryPlan planMemory(const Program& p, const ModelPlan& plan) {
  size_t nv = p.values.size();
  MemoryPlan m;
  m.kind.assign(nv, MemoryPlan::Kind::None);
  m.slot.assign(nv, -1);
  constexpr int kForever = std::numeric_limits<int>::max();
  std::vector<int> lastUse(nv, -1);
  int ng = static_cast<int>(plan.groups.size());
  for (int g = 0; g < ng; ++g)
    for (int v : plan.groups[g].inputs) lastUse[p.root(v)] = std::max(lastUse[p.root(v)], g);
  for (int v : p.outputs) lastUse[p.root(v)] = kForever;
  for (size_t v = 0; v < nv; ++v) {
    const PValue& pv = p.values[v];
    if (pv.aliasOf >= 0) continue;
    if (pv.constant && lastUse[v] >= 0)
      m.kind[v] = MemoryPlan::Kind::Constant;
    else if (pv.isInput)
      m.kind[v] = MemoryPlan::Kind::Input;
  }
  std::vector<int> busyUntil; // per slot
  for (int g = 0; g < ng; ++g) {
    int v = plan.groups[g].output;
    int64_t need = valueBytes(p.values[v]);
    if (!checkedAdd(m.unplannedBytes, need, &m.unplannedBytes))
      WM_USER_ERROR() << p.path << ": the model's intermediate values are too large";
    int best = -1;
    for (size_t s = 0; s < m.slotBytes.size(); ++s)
      if (busyUntil[s] < g && m.slotBytes[s] >= need &&
          (best < 0 || m.slotBytes[s] < m.slotBytes[best]))
        best = static_cast<int>(s);
    if (best < 0) {
      m.slotBytes.push_back(need);
      busyUntil.push_back(-1);
      m.plannedBytes += need; // <= unplannedBytes, checked above
      best = static_cast<int>(m.slotBytes.size() - 1);
    }
    busyUntil[best] = lastUse[v] < 0 ? g : lastUse[v];
    m.kind[v] = MemoryPlan::Kind::Slot;
    m.slot[v] = best;
  }
  return m;
}

} // namespace wm::frontend
