// Model export (see export.h). Roadmap:
//  1. The log is read, the model loaded, folded and planned exactly as `wmtune run` does
//     (buildProgram, planModel, planMemory): the same fused groups, tasks and buffers.
//  2. Each task gets the log's best valid record (else the default schedule) and is lowered.
//  3. Places: every group output's slot and every graph input get an offset in one arena (each
//     64-byte aligned); every constant a kernel reads, an offset in the weights; a view lives
//     at its source's place.
//  4. The plan (the word layout of runtime/model_runtime.c) lists the inputs and outputs, each
//     group's kernel and argument places, and the run-time index checks.
//  5. One LLVM module holds the kernels (hidden), their table and the plan: NAME.o/.ll/.s. The
//     weights are a second object (embedded) or NAME.weights (external). Both runtime objects
//     join them in libNAME.so, which exports wm_model_* only.
#include "common.h"

#include <wm/codegen/codegen.h>
#include <wm/export/export.h>
#include <wm/frontend/graph.h>
#include <wm/frontend/model.h>
#include <wm/rt/abi.h>
#include <wm/runtime/buffer.h>
#include <wm/schedule/default_schedule.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/int_math.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstring>
#include <iomanip>
#include <map>
#include <sstream>

// The model runtime object's bytes (model_runtime_blob.cpp, generated at build time).
extern const unsigned char kWmModelRuntime[];
extern const unsigned long kWmModelRuntimeSize;

namespace wm::exporter {

namespace plan {
#include "runtime/model_plan.h"
} // namespace plan

namespace {

using frontend::MemoryPlan;

// The plan's layout (shared with the runtime that reads it).
using namespace plan;

int64_t dtypeCode(ir::DType t) {
  switch (t) {
  case ir::DType::F32: return 0;
  case ir::DType::F16: return 1;
  case ir::DType::I32: return 2;
  case ir::DType::I64: return 3;
  case ir::DType::Bool: return 4;
  }
  return -1;
}

/// FNV-1a, 64 bits (the runtime checks external weights with it).
uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

/// n rounded up to a multiple of the kernels' buffer alignment (UserError on overflow).
int64_t aligned(int64_t n) {
  int64_t a = rt::kBufferAlignment, r = 0;
  if (!checkedAdd(n, a - 1, &r)) WM_USER_ERROR() << "the model's buffers are too large";
  return r / a * a;
}

/// Where a value's bytes are while the model runs: the arena (0) or the weights (1).
struct Place {
  int64_t where = -1, offset = 0;
};

/// A task of the model, as exported.
struct TaskKernel {
  const frontend::ModelTask* task = nullptr;
  std::string symbol;
  std::vector<sched::Step> steps;
  const search::TuningRecord* record = nullptr;
  bool guessed = false; ///< no record: ExportOptions::untuned's schedule
  lower::LoweredFunc func;
};

/// The plan's words, built section by section.
class PlanWriter {
public:
  PlanWriter() : words_(kPlanHeaderWords, 0) {}
  void set(int h, int64_t v) { words_[h] = v; }
  int64_t here() const { return static_cast<int64_t>(words_.size()); }
  void push(int64_t w) { words_.push_back(w); }
  int64_t string(const std::string& s) {
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    int64_t at = static_cast<int64_t>(chars_.size());
    chars_ += s;
    chars_ += '\0';
    strings_.emplace(s, at);
    return at;
  }
  /// The words, strings appended, as bytes.
  std::string finish() {
    words_[kStringsAt] = here();
    words_[kStringsBytes] = static_cast<int64_t>(chars_.size());
    std::string chars = chars_;
    chars.resize((chars.size() + 7) / 8 * 8, '\0');
    words_[kPlanWords] = here() + static_cast<int64_t>(chars.size() / 8);
    std::string out(words_.size() * 8, '\0');
    std::memcpy(out.data(), words_.data(), out.size());
    return out + chars;
  }

private:
  std::vector<int64_t> words_;
  std::string chars_;
  std::map<std::string, int64_t> strings_;
};

std::string modelHeader(const ExportOptions& o, const target::Target& t,
                        const std::string& modelPath, const frontend::Program& p,
                        bool externalWeights) {
  std::ostringstream h;
  std::string guard = "WM_EXPORT_MODEL_";
  for (char c : o.name) guard += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  guard += "_H";
  auto describe = [&](const char* role, const std::vector<int>& ids) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const frontend::PValue& v = p.values[ids[i]];
      h << " *   " << role << " " << i << ": " << v.name << ", " << ir::dtypeName(v.dtype) << " "
        << shapeString(v.shape) << " (" << cType(v.dtype) << ")\n";
    }
  };
  h << "/* " << o.name << ".h: the model " << modelPath << ", exported by wmtune " << o.version
    << " for target " << t.key() << ".\n"
    << " *\n";
  describe("input ", p.inputs);
  describe("output", p.outputs);
  h << " *\n"
    << " * Link with -l" << o.name << " (libc, libm and pthread are all it needs). The weights are "
    << (externalWeights ? "in " + o.name + ".weights: give its path to wm_model_open."
                        : "embedded: give NULL to wm_model_open.")
    << "\n"
    << " * Tensors are dense row-major arrays of their element type, at any address. */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n#include <stddef.h>\n#include "
    << "<stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << R"(/** A loaded model: its weights, planned buffers and thread count. */
typedef struct wm_model wm_model;

/** Loads the model: weights_path is the .weights file of an export with external weights, NULL
 *  when they are embedded. On failure returns NULL with a message in err (errlen bytes, may be
 *  NULL). Every handle has its own buffers: handles run concurrently in different threads. */
wm_model* wm_model_open(const char* weights_path, char* err, size_t errlen);

/** Counts of the model's inputs and outputs (-1 for a NULL handle). */
int wm_model_num_inputs(const wm_model* m);
int wm_model_num_outputs(const wm_model* m);

/** Input (output) i: its name, element type ("f32", "f16", "i32", "i64", "bool"), rank,
 *  dimensions (rank of them) and size in bytes; NULL, -1 or 0 when there is no tensor i. */
const char* wm_model_input_name(const wm_model* m, int i);
const char* wm_model_input_dtype(const wm_model* m, int i);
int wm_model_input_rank(const wm_model* m, int i);
const int64_t* wm_model_input_shape(const wm_model* m, int i);
size_t wm_model_input_bytes(const wm_model* m, int i);
const char* wm_model_output_name(const wm_model* m, int i);
const char* wm_model_output_dtype(const wm_model* m, int i);
int wm_model_output_rank(const wm_model* m, int i);
const int64_t* wm_model_output_shape(const wm_model* m, int i);
size_t wm_model_output_bytes(const wm_model* m, int i);

/** Threads of this handle's runs (n <= 0: all cores, the default). 0, or 1 for a NULL handle. */
int wm_model_set_threads(wm_model* m, int n);

/** Runs the model: inputs[i] holds input i, outputs[i] receives output i (one pointer per
 *  tensor, in the order above). 0 on success; 1 with wm_model_last_error set when a pointer is
 *  NULL or an index input is out of range. Calls on one handle from several threads take turns. */
int wm_model_run(wm_model* m, const void* const* inputs, void* const* outputs);
/** wm_model_run that also checks the counts of the two arrays. */
int wm_model_run_n(wm_model* m, int num_inputs, const void* const* inputs, int num_outputs,
                   void* const* outputs);

/** The message of the handle's last failed run ("" after a successful one). */
const char* wm_model_last_error(const wm_model* m);

/** Frees the handle (NULL is allowed). */
void wm_model_close(wm_model* m);

#ifdef __cplusplus
}
#endif

#endif /* )"
    << guard << " */\n";
  return h.str();
}

nlohmann::json tensorJson(const frontend::PValue& v) {
  return {{"name", v.name}, {"dtype", ir::dtypeName(v.dtype)}, {"shape", v.shape}};
}

} // namespace

std::string modelRuntimeObject() {
  return std::string(reinterpret_cast<const char*>(kWmModelRuntime), kWmModelRuntimeSize);
}

ExportedModel exportModel(const std::string& modelPath, const target::Target& target,
                          const ExportOptions& o) {
  checkName(o);
  BestRecords records = loadBestRecords(o, target);
  const auto& best = records.best;
  frontend::Graph graph = frontend::loadOnnx(modelPath);
  frontend::Program prog = frontend::buildProgram(graph);
  frontend::ModelPlan plan = frontend::planModel(prog);

  // 2. kernels
  std::vector<TaskKernel> kernels;
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    TaskKernel k;
    k.task = &plan.tasks[t];
    k.symbol = o.name + "__task" + std::to_string(t);
    std::string spec = frontend::onnxTaskSpec(modelPath, k.task->key), why;
    auto rec = best.find(k.task->key);
    if (rec != best.end()) {
      k.record = rec->second;
      k.steps = k.record->steps;
      if (!lowerWith(k.task->dag, k.steps, &k.func, &why)) {
        spdlog::warn("task {} ({}): the logged schedule (line {}) cannot be exported ({}); using "
                     "the default",
                     t, k.task->ops, k.record->line, why);
        k.record = nullptr;
      }
    } else if (o.requireTuned) {
      WM_USER_ERROR() << modelPath << ": task " << t << " (" << k.task->ops << ", " << spec
                      << "): no valid record in "
                      << (o.log.empty() ? std::string("the tuning log (no --log given)") : o.log)
                      << " for target " << target.key() << " (--require-tuned)";
    } else {
      spdlog::warn("task {} ({}, {}): no valid record in {}; exporting {}", t, k.task->ops, spec,
                   o.log.empty() ? std::string("a tuning log (no --log given)") : o.log,
                   o.untuned.count(k.task->key) ? "its " + o.untunedKind + " schedule"
                                                : std::string("the default schedule"));
    }
    if (!k.record) {
      auto u = o.untuned.find(k.task->key);
      if (u != o.untuned.end()) {
        k.steps = u->second;
        k.guessed = lowerWith(k.task->dag, k.steps, &k.func, &why);
        if (!k.guessed)
          spdlog::warn("task {}: the {} schedule cannot be exported ({}); using the default", t,
                       o.untunedKind, why);
      }
      if (!k.guessed) {
        k.steps = sched::defaultSchedule(k.task->dag);
        WM_CHECK(lowerWith(k.task->dag, k.steps, &k.func, &why))
            << "default schedule of task " << k.task->key << ": " << why;
      }
    }
    WM_CHECK(k.func.outputs.size() == 1) << "task " << k.task->key << " has several outputs";
    k.func.name = k.symbol;
    kernels.push_back(std::move(k));
  }

  // 3. places
  MemoryPlan mp = frontend::planMemory(prog, plan);
  size_t nv = prog.values.size();
  std::vector<Place> place(nv);
  int64_t arena = 0;
  std::vector<int64_t> slotOffset;
  for (int64_t bytes : mp.slotBytes) {
    slotOffset.push_back(arena);
    arena = aligned(arena + aligned(bytes));
  }
  std::string weights;
  for (size_t v = 0; v < nv; ++v) {
    const frontend::PValue& pv = prog.values[v];
    switch (mp.kind[v]) {
    case MemoryPlan::Kind::Slot: place[v] = {0, slotOffset[mp.slot[v]]}; break;
    case MemoryPlan::Kind::Input:
      place[v] = {0, arena};
      arena = aligned(arena + aligned(frontend::valueBytes(pv)));
      break;
    case MemoryPlan::Kind::Constant: {
      int64_t at = static_cast<int64_t>(weights.size()), bytes = frontend::valueBytes(pv);
      weights.resize(static_cast<size_t>(aligned(at + bytes)), '\0');
      runtime::storeElements(weights.data() + at, *pv.constant);
      place[v] = {1, at};
      break;
    }
    case MemoryPlan::Kind::None: break;
    }
  }
  for (size_t v = 0; v < nv; ++v)
    if (prog.values[v].aliasOf >= 0) place[v] = place[prog.values[v].aliasOf];
  uint64_t checksum = fnv1a(weights);

  // 4. the plan
  PlanWriter pw;
  pw.set(kMagic, WM_PLAN_MAGIC);
  pw.set(kFormat, WM_PLAN_FORMAT);
  pw.set(kNumInputs, static_cast<int64_t>(prog.inputs.size()));
  pw.set(kNumOutputs, static_cast<int64_t>(prog.outputs.size()));
  pw.set(kNumGroups, static_cast<int64_t>(plan.groups.size()));
  pw.set(kNumKernels, static_cast<int64_t>(kernels.size()));
  pw.set(kArenaBytes, arena);
  pw.set(kWeightsBytes, static_cast<int64_t>(weights.size()));
  pw.set(kWeightsChecksum, static_cast<int64_t>(checksum));
  std::vector<int> io = prog.inputs;
  io.insert(io.end(), prog.outputs.begin(), prog.outputs.end());
  std::vector<int64_t> dimsAt;
  for (int v : io) {
    dimsAt.push_back(pw.here());
    for (int64_t d : prog.values[v].shape) pw.push(d);
  }
  pw.set(kTensorsAt, pw.here());
  for (size_t i = 0; i < io.size(); ++i) {
    const frontend::PValue& v = prog.values[io[i]];
    const Place& at = place[io[i]];
    WM_CHECK(at.where >= 0) << "graph " << (i < prog.inputs.size() ? "input" : "output") << " "
                            << v.name << " has no buffer";
    for (int64_t w : {pw.string(v.name), dtypeCode(v.dtype), static_cast<int64_t>(v.shape.size()),
                      frontend::valueBytes(v), at.where, at.offset, dimsAt[i]})
      pw.push(w);
  }
  std::vector<int64_t> argsAt;
  for (const auto& g : plan.groups) {
    argsAt.push_back(pw.here());
    std::vector<int> vals = g.inputs;
    vals.push_back(g.output);
    for (int v : vals) {
      const Place& at = place[prog.root(v)];
      WM_CHECK(at.where >= 0) << "value " << prog.values[v].name << " has no buffer";
      pw.push(at.where);
      pw.push(at.offset);
    }
  }
  pw.set(kGroupsAt, pw.here());
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    pw.push(plan.groups[g].task);
    pw.push(static_cast<int64_t>(plan.groups[g].inputs.size() + 1));
    pw.push(argsAt[g]);
  }
  std::vector<std::vector<int64_t>> checks;
  for (const auto& r : frontend::indexRanges(prog)) {
    int root = prog.root(r.value);
    const frontend::PValue& v = prog.values[r.value];
    int64_t after = -2;
    if (mp.kind[root] == MemoryPlan::Kind::Input) after = -1;
    for (size_t g = 0; g < plan.groups.size(); ++g)
      if (plan.groups[g].output == root) after = static_cast<int64_t>(g);
    if (after == -2) continue; // a constant: the frontend checked it
    WM_CHECK(v.dtype == ir::DType::I32 || v.dtype == ir::DType::I64)
        << "index value " << v.name << " is " << ir::dtypeName(v.dtype);
    checks.push_back({after, place[root].where, place[root].offset, v.numElements(),
                      dtypeCode(v.dtype), r.lo, r.hi, pw.string(r.node), 0});
  }
  pw.set(kNumChecks, static_cast<int64_t>(checks.size()));
  pw.set(kChecksAt, pw.here());
  for (const auto& c : checks)
    for (int64_t w : c) pw.push(w);
  std::string planBytes = pw.finish();

  // 5. objects, library, header, manifest
  Staging out(o);
  codegen::LibraryModule lib;
  lib.name = o.name;
  codegen::FunctionTable table{"wm__model_kernels", {}};
  for (const auto& k : kernels) {
    lib.kernels.push_back(k.func);
    table.functions.push_back(k.symbol);
  }
  lib.tables.push_back(table);
  lib.data.push_back({"wm__model_plan", planBytes, 64});
  // the embedded weights (weights.o), or null: a strong reference, so that a static archive's
  // weights.o is linked into a program
  lib.pointers.push_back({"wm__model_weights_at", o.externalWeights ? "" : "wm__model_weights"});
  out.write(o.name + ".o", codegen::emitLibrary(lib, target, codegen::EmitKind::Object));
  out.write(o.name + ".ll", codegen::emitLibrary(lib, target, codegen::EmitKind::LlvmIr));
  out.write(o.name + ".s", codegen::emitLibrary(lib, target, codegen::EmitKind::Assembly));
  std::vector<std::string> objects = {o.name + ".o"};
  std::string weightsFile = o.name + ".weights";
  if (o.externalWeights) {
    std::string header(WM_WEIGHTS_HEADER, '\0');
    uint64_t fields[3] = {WM_WEIGHTS_FORMAT, static_cast<uint64_t>(weights.size()), checksum};
    std::memcpy(header.data(), WM_WEIGHTS_MAGIC, 8);
    std::memcpy(header.data() + 8, fields, sizeof fields);
    out.write(weightsFile, header + weights);
  } else {
    codegen::LibraryModule w;
    w.name = o.name + "_weights";
    w.data.push_back({"wm__model_weights", weights.empty() ? std::string(64, '\0') : weights, 64});
    writeFileAtomically(out.tmp("weights.o"),
                        codegen::emitLibrary(w, target, codegen::EmitKind::Object));
    objects.push_back("weights.o");
  }
  writeFileAtomically(out.tmp("wm_runtime.o"), runtimeObject());
  writeFileAtomically(out.tmp("wm_model_runtime.o"), modelRuntimeObject());
  objects.push_back("wm_runtime.o");
  objects.push_back("wm_model_runtime.o");
  linkLibrary(out, o, objects, {"wm_model_*"});
  out.write(o.name + ".h", modelHeader(o, target, modelPath, prog, o.externalWeights));

  ExportedModel result;
  result.groups = static_cast<int>(plan.groups.size());
  result.arenaBytes = arena;
  result.weightsBytes = static_cast<int64_t>(weights.size());
  nlohmann::json m = {{"format", 1},
                      {"wmtune", o.version},
                      {"name", o.name},
                      {"kind", "model"},
                      {"model", modelPath},
                      {"target", targetJson(target)},
                      {"log", o.log},
                      {"inputs", nlohmann::json::array()},
                      {"outputs", nlohmann::json::array()},
                      {"groups", plan.groups.size()},
                      {"buffer_bytes", arena},
                      {"kernels", nlohmann::json::array()}};
  for (int v : prog.inputs) m["inputs"].push_back(tensorJson(prog.values[v]));
  for (int v : prog.outputs) m["outputs"].push_back(tensorJson(prog.values[v]));
  std::ostringstream sum;
  sum << std::hex << std::setw(16) << std::setfill('0') << checksum;
  m["weights"] = {{"bytes", weights.size()},
                  {"fnv1a64", sum.str()},
                  {"file", o.externalWeights ? nlohmann::json(weightsFile) : nlohmann::json()}};
  for (const auto& k : kernels) {
    nlohmann::json args = nlohmann::json::array();
    for (size_t i = 0; i < k.func.inputs.size() + 1; ++i) {
      const ir::Buffer& b = i < k.func.inputs.size() ? k.func.inputs[i] : k.func.outputs[0];
      args.push_back({{"tensor", b->name},
                      {"shape", b->shape},
                      {"dtype", ir::dtypeName(b->dtype)},
                      {"role", i < k.func.inputs.size() ? "input" : "output"}});
    }
    nlohmann::json j = {{"symbol", k.symbol},
                        {"ops", k.task->ops},
                        {"spec", frontend::onnxTaskSpec(modelPath, k.task->key)},
                        {"key", k.task->key},
                        {"groups", k.task->weight},
                        {"arguments", args}};
    addScheduleJson(j, k.steps, k.record, o.log);
    if (k.guessed) { // never measured
      j["guessed"] = true;
      j["untuned"] = o.untunedKind;
    }
    m["kernels"].push_back(j);
    result.kernels.push_back({j["spec"], k.task->key, k.symbol, k.record != nullptr,
                              k.record ? k.record->median() : 0.0});
  }
  out.write("manifest.json", m.dump(2) + "\n");
  out.commit("manifest.json");
  return result;
}

} // namespace wm::exporter
