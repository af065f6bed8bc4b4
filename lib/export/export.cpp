// Kernel export (see export.h). Roadmap:
//  1. The output directory is checked (empty, or --force) and a temporary directory made in it.
//  2. Each workload gets its schedule: the log's best valid record for the target, else the
//     default schedule (a warning, or an error with requireTuned); a logged schedule that no
//     longer replays or lowers, or that pads an argument buffer, falls back to the default.
//  3. One LLVM module holds every kernel (hidden) and its C entry point; it is emitted as
//     object code, LLVM IR and assembly. The embedded runtime object joins it in libNAME.so
//     (cc -shared with a version script: only NAME_* is exported) and in libNAME.a.
//  4. The header and the manifest are written, then every file is renamed into the directory,
//     the manifest last.
#include "common.h"

#include <wm/codegen/codegen.h>
#include <wm/export/export.h>
#include <wm/lower/lower.h>
#include <wm/schedule/default_schedule.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <iomanip>
#include <map>
#include <set>
#include <sstream>

// The runtime object's bytes (export_runtime_blob.cpp, generated at build time).
extern const unsigned char kWmExportRuntime[];
extern const unsigned long kWmExportRuntimeSize;

namespace wm::exporter {

std::string runtimeObject() {
  return std::string(reinterpret_cast<const char*>(kWmExportRuntime), kWmExportRuntimeSize);
}

namespace {

/// A kernel of the export: its workload, schedule and lowered function.
struct KernelPlan {
  const Workload* workload = nullptr;
  std::string key, symbol;
  std::vector<sched::Step> steps;
  const search::TuningRecord* record = nullptr; // null: default schedule
  lower::LoweredFunc func;
};

std::string headerGuard(const std::string& name) {
  std::string g;
  for (char c : name) g += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "WM_EXPORT_" + g + "_H";
}

/// The argument names of a kernel: its buffers' names as distinct C identifiers.
std::vector<std::string> argumentNames(const lower::LoweredFunc& f) {
  std::vector<std::string> names;
  std::set<std::string> used;
  auto add = [&](const ir::Buffer& b) {
    std::string n = toCIdentifier(b->name), base = n;
    for (int k = 2; used.count(n); ++k) n = base + "_" + std::to_string(k);
    used.insert(n);
    names.push_back(n);
  };
  for (auto& b : f.inputs) add(b);
  for (auto& b : f.outputs) add(b);
  return names;
}

std::string kernelHeader(const ExportOptions& o, const target::Target& t,
                         const std::vector<KernelPlan>& kernels) {
  std::ostringstream h;
  std::string guard = headerGuard(o.name);
  h << "/* " << o.name << ".h: kernels exported by wmtune " << o.version << " for target "
    << t.key() << ".\n"
    << " *\n"
    << " * Link with -l" << o.name << " (libc, libm and pthread are all it needs).\n"
    << " * Every buffer is a dense row-major array whose address is a multiple of 64 bytes\n"
    << " * (posix_memalign(&p, 64, bytes) or C11's aligned_alloc). Each function returns 0,\n"
    << " * or 1 without computing anything when a pointer is null or not 64-byte aligned.\n"
    << " * Kernels run on all cores unless " << o.name << "_set_threads says otherwise; calls\n"
    << " * from several threads at once are safe (their parallel loops take turns). */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "/** Threads of the kernels' parallel loops (n <= 0: all cores). */\n"
    << "void " << o.name << "_set_threads(int n);\n";
  for (const auto& k : kernels) {
    auto names = argumentNames(k.func);
    h << "\n/** " << k.workload->canonical << "\n";
    size_t nIn = k.func.inputs.size();
    for (size_t i = 0; i < names.size(); ++i) {
      const ir::Buffer& b = i < nIn ? k.func.inputs[i] : k.func.outputs[i - nIn];
      h << " *  @param " << names[i] << " " << (i < nIn ? "input, " : "output,") << " "
        << ir::dtypeName(b->dtype) << " " << shapeString(b->shape) << "\n";
    }
    if (k.record) {
      std::ostringstream ms;
      ms << std::setprecision(4) << k.record->median() * 1e3;
      h << " *  Schedule: tuned, " << ms.str() << " ms measured (" << o.log << " line "
        << k.record->line << ").\n";
    } else {
      h << " *  Schedule: the default (no record in the tuning log).\n";
    }
    h << " *  @return 0, or 1 for a null or misaligned pointer. */\n";
    h << "int " << k.symbol << "(";
    for (size_t i = 0; i < names.size(); ++i) {
      const ir::Buffer& b = i < nIn ? k.func.inputs[i] : k.func.outputs[i - nIn];
      h << (i ? ", " : "") << (i < nIn ? "const " : "") << cType(b->dtype) << "* " << names[i];
    }
    h << ");\n";
  }
  h << "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return h.str();
}

nlohmann::json kernelJson(const ExportOptions& o, const KernelPlan& k) {
  auto names = argumentNames(k.func);
  nlohmann::json args = nlohmann::json::array();
  size_t nIn = k.func.inputs.size();
  for (size_t i = 0; i < names.size(); ++i) {
    const ir::Buffer& b = i < nIn ? k.func.inputs[i] : k.func.outputs[i - nIn];
    args.push_back({{"name", names[i]},
                    {"tensor", b->name},
                    {"shape", b->shape},
                    {"dtype", ir::dtypeName(b->dtype)},
                    {"role", i < nIn ? "input" : "output"}});
  }
  nlohmann::json j = {{"symbol", k.symbol},
                      {"workload", k.workload->canonical},
                      {"spec", k.workload->spec},
                      {"key", k.key},
                      {"arguments", args}};
  addScheduleJson(j, k.steps, k.record, o.log);
  return j;
}

} // namespace

std::vector<ExportedKernel> exportKernels(const std::vector<Workload>& workloads,
                                          const target::Target& target, const ExportOptions& o) {
  checkName(o);
  if (workloads.empty()) WM_USER_ERROR() << "nothing to export: give -w SPEC or a model";
  // The log first: a bad log fails before anything is written.
  BestRecords records = loadBestRecords(o, target);
  const auto& best = records.best;
  std::vector<KernelPlan> kernels;
  std::map<std::string, std::string> specOfKey;
  std::map<std::string, int> opCount, opSeen;
  for (const auto& w : workloads) opCount[w.def->name]++;
  for (const auto& w : workloads) {
    KernelPlan k;
    k.workload = &w;
    k.key = w.dag.workloadKey();
    auto [it, fresh] = specOfKey.emplace(k.key, w.spec);
    if (!fresh)
      WM_USER_ERROR() << "-w " << w.spec << ": the same workload as -w " << it->second
                      << " (export it once)";
    std::string op = toCIdentifier(w.def->name);
    k.symbol = o.name + "_" + op;
    if (opCount[w.def->name] > 1) k.symbol += "_" + std::to_string(opSeen[w.def->name]++);
    std::string why;
    auto rec = best.find(k.key);
    if (rec != best.end()) {
      k.record = rec->second;
      k.steps = k.record->steps;
      if (!lowerWith(w.dag, k.steps, &k.func, &why)) {
        spdlog::warn("{}: the logged schedule (line {}) cannot be exported ({}); using the default",
                     w.spec, k.record->line, why);
        k.record = nullptr;
      }
    } else if (o.requireTuned) {
      WM_USER_ERROR() << "-w " << w.spec << ": no valid record in "
                      << (o.log.empty() ? std::string("the tuning log (no --log given)") : o.log)
                      << " for target " << target.key() << " (--require-tuned)";
    } else {
      spdlog::warn("{}: no valid record in {}; exporting the default schedule", w.spec,
                   o.log.empty() ? std::string("a tuning log (no --log given)") : o.log);
    }
    if (!k.record) {
      k.steps = sched::defaultSchedule(w.dag);
      WM_CHECK(lowerWith(w.dag, k.steps, &k.func, &why))
          << "default schedule of " << w.spec << ": " << why;
    }
    k.func.name = k.symbol + "_kernel";
    kernels.push_back(std::move(k));
  }

  Staging out(o);
  codegen::LibraryModule lib;
  lib.name = o.name;
  lib.forwarders.push_back({o.name + "_set_threads", "wm_set_num_threads"});
  for (const auto& k : kernels) {
    lib.kernels.push_back(k.func);
    lib.entries.push_back(
        {k.symbol, k.func.name, static_cast<int>(k.func.inputs.size() + k.func.outputs.size())});
  }
  out.write(o.name + ".o", codegen::emitLibrary(lib, target, codegen::EmitKind::Object));
  out.write(o.name + ".ll", codegen::emitLibrary(lib, target, codegen::EmitKind::LlvmIr));
  out.write(o.name + ".s", codegen::emitLibrary(lib, target, codegen::EmitKind::Assembly));
  writeFileAtomically(out.tmp("wm_runtime.o"), runtimeObject());
  linkLibrary(out, o, {o.name + ".o", "wm_runtime.o"}, {o.name + "_*"});
  out.write(o.name + ".h", kernelHeader(o, target, kernels));

  nlohmann::json m = {{"format", 1},
                      {"wmtune", o.version},
                      {"name", o.name},
                      {"kind", "kernels"},
                      {"target", targetJson(target)},
                      {"log", o.log},
                      {"kernels", nlohmann::json::array()}};
  std::vector<ExportedKernel> result;
  for (const auto& k : kernels) {
    m["kernels"].push_back(kernelJson(o, k));
    result.push_back({k.workload->spec, k.key, k.symbol, k.record != nullptr,
                      k.record ? k.record->median() : 0.0});
  }
  out.write("manifest.json", m.dump(2) + "\n");
  out.commit("manifest.json");
  return result;
}

} // namespace wm::exporter
