// `wmtune export`: tuned kernels, or a whole model, as a library other programs link, with no
// wmtune at run time (docs/export.md). A directory receives
//   NAME.h            a C header (C89, extern "C" guarded): one function per workload, or the
//                     wm_model_* API of a model
//   libNAME.so        the kernels and the parallel runtime, depending on libc, libm, pthread only
//   libNAME.a         the same as a static archive (with `staticLib`)
//   NAME.o/.ll/.s     the kernels' object code, LLVM IR and assembly
//   NAME.weights      a model's weights, with --weights external (else embedded in the library)
//   manifest.json     format version, wmtune version, target, and per kernel its workload,
//                     symbol, arguments, schedule steps and the measurement it came from
// Every file is written under a temporary name and renamed, the manifest last: a directory
// without manifest.json is an interrupted export.
#pragma once

#include <wm/frontend/workload.h>
#include <wm/schedule/step_types.h>
#include <wm/target/target.h>

#include <map>
#include <string>
#include <vector>

namespace wm::exporter {

struct ExportOptions {
  std::string dir;              ///< output directory
  std::string name = "wm";      ///< library name: a C identifier, the prefix of every symbol
  std::string log;              ///< tuning log (empty: default schedules everywhere)
  bool force = false;           ///< export into a non-empty directory
  bool staticLib = false;       ///< also libNAME.a
  bool requireTuned = false;    ///< a workload without a valid record in the log is an error
  bool externalWeights = false; ///< a model's weights in NAME.weights, not in the library
  std::string cc;               ///< C compiler driver that links (empty: $CC, else "cc")
  std::string ar;               ///< archiver of --static (empty: $AR, else "ar")
  std::string version;          ///< wmtune's version, for the manifest
  /// A model's tasks without a valid record: their schedules by task key (`wmtune export
  /// --untuned heuristic|guess` puts the heuristic schedules or the world model's picks here,
  /// as `wmtune run` uses them); a task not here gets the default schedule.
  std::map<std::string, std::vector<sched::Step>> untuned;
  std::string untunedKind = "heuristic"; ///< where `untuned` came from (for the manifest)
};

/// What was exported, per kernel (also in the manifest).
struct ExportedKernel {
  std::string spec, key, symbol;
  bool tuned = false;
  double seconds = 0; ///< the record's median (0: default schedule)
};

/// Exports the workloads' kernels (each the best valid record of the log for the target, else
/// the default schedule with a warning). UserError for bad names, an existing non-empty
/// directory without `force`, a missing log, a failed link.
std::vector<ExportedKernel> exportKernels(const std::vector<Workload>& workloads,
                                          const target::Target& target, const ExportOptions& o);

struct ExportedModel {
  int groups = 0;         ///< fused groups the library runs
  int64_t arenaBytes = 0; ///< inputs and intermediate buffers of one handle
  int64_t weightsBytes = 0;
  std::vector<ExportedKernel> kernels; ///< one per task
};

/// Exports the ONNX model: its tasks' kernels (as exportKernels picks them), its execution plan
/// and weights, and the wm_model_* API (docs/export.md). UserError as exportKernels, and for a
/// model wmtune cannot load.
ExportedModel exportModel(const std::string& modelPath, const target::Target& target,
                          const ExportOptions& o);

/// The bytes of the runtime object compiled into every exported library (thread pool,
/// allocation; position-independent, hidden symbols): built with wmtune and embedded in it.
std::string runtimeObject();
/// The object of the wm_model_* API (runtime/model_runtime.c), linked into exported models.
std::string modelRuntimeObject();

} // namespace wm::exporter
