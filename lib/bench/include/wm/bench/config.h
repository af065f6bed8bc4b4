// `wmtune bench` configuration files (docs/bench.md): which workloads, tuned with which named
// tuner configurations, at which trial budgets and seeds, beside which baselines. Read from YAML
// with every error naming the file, line and column; the cells to run follow from it (plan.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace wm::bench {

/// Where a value came from in the YAML file (1-based; 0 when not from a file).
struct Mark {
  int line = 0, column = 0;
};

/// One workload of the bench: a built-in spec or an ONNX model (tuned task by task).
struct BenchWorkload {
  enum class Kind { Spec, Model } kind = Kind::Spec;
  std::string value; // the canonical spec, or the model path as written
  Mark mark;
  int tasks = 1; // a model's tuning tasks (set by the caller before planning; see perTask)
};

/// A named tuner configuration: tune flags (without "--") and their values, in file order.
struct TunerConfig {
  std::string name;
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<int> trials, seeds; // empty: the file's
  Mark mark;
};

/// A reference timed in the same run: built in (`libtorch`: the workload's operator through
/// libtorch, in wmtune), or a `command` run by /bin/sh with {workload}, {model}, {threads}
/// replaced, printing JSON {"ms": ...} (or {"unavailable": "why"}).
struct Baseline {
  std::string name;
  std::string command; // empty for a built-in
  Mark mark;
};

/// The built-in baselines (a bare name in `baselines:`).
inline const char* const kBuiltinBaselines[] = {"libtorch"};

struct BenchConfig {
  std::string path; // the file it was read from
  std::string name;
  std::string target = "llvm";
  int threads = 0; // 0: all cores
  std::vector<int> trials{64};
  bool perTask = false; // budgets count per task: a model's cell tunes budget x tasks trials
  std::vector<int> seeds{1};
  std::vector<BenchWorkload> workloads;
  std::vector<TunerConfig> configs;
  std::vector<Baseline> baselines;
  std::string reference; // a config name, or empty
};

/// What a FlagCheck found wrong: nothing (message empty), the flag itself, or its value.
struct FlagProblem {
  std::string message;
  bool aboutFlag = false; // the flag is unknown (the message points at the key, not the value)
};

/// Checks one tune flag of a config (name without "--", *value as written; "" for a key without
/// a value) against what `wmtune tune` takes. It may rewrite *value ("" for a switch that is on).
using FlagCheck = std::function<FlagProblem(const std::string& flag, std::string* value)>;

/// Reads and checks a bench file: unknown keys, wrong types, unknown or bad tune flags (by
/// checkFlag), missing model or workload files, bad specs and names given twice are UserErrors
/// naming path:line:column. Relative model and file paths are relative to the current directory.
BenchConfig loadBenchConfig(const std::string& path, const FlagCheck& checkFlag);

/// The same from text (path only names it in messages).
BenchConfig parseBenchConfig(const std::string& text, const std::string& path,
                             const FlagCheck& checkFlag);

} // namespace wm::bench
