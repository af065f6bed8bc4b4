// `wmtune bench`: the cells a bench file asks for, the records of OUT/results.jsonl, the machine
// a run was made on, and the report rendered from the records alone (docs/bench.md).
//
// A cell is one tuning run: one workload x one config x one seed, at the config's largest trial
// budget (smaller budgets are read off its tuning curve). Cells are ordered workload by
// workload, and within a workload seed by seed with every config in turn, so that a drift of the
// machine's speed hits every config alike.
#pragma once

#include <wm/bench/config.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace wm::bench {

struct Cell {
  int workload = 0; // index into BenchConfig::workloads
  std::string config;
  int seed = 0;
  int trials = 0;
  std::string id; // file-name safe and stable: the same cell of an edited file keeps it
};

/// Every cell of the file, in run order.
std::vector<Cell> planCells(const BenchConfig& c);

/// The trial budgets reported for a config (its own, else the file's), ascending.
std::vector<int> budgetsOf(const BenchConfig& c, const TunerConfig& tc);

/// The arguments after `wmtune` that run a cell (tune ... --log LOG --json JSON).
std::vector<std::string> tuneArgs(const BenchConfig& c, const Cell& cell, const std::string& log,
                                  const std::string& json);

/// The arguments after `wmtune` that time a model cell's result as a user runs the model
/// (run MODEL --log LOG --bench --bench-json JSON), on the bench's target and threads.
std::vector<std::string> modelRunArgs(const BenchConfig& c, const Cell& cell,
                                      const std::string& log, const std::string& json);

/// The machine a run is made on; the FMA peak is measured, everything else read.
struct Machine {
  std::string cpu;
  int cores = 0, threads = 0;
  double peakGflops = 0; // measured with `threads` threads, best of three 0.1 s loops
  std::string governor;  // "unknown" when the kernel does not say
  double load1 = 0;      // 1-minute load average at the time
  nlohmann::json toJson() const;
};
Machine describeMachine(int threads);

/// The best latency after each trial of a tuning log, from the records of a cell in log order
/// (a re-measure does not count as a trial). For a model, the sum over tasks of weight x best,
/// infinite until every task has one. taskWeights: task key -> weight (empty: one task).
std::vector<double> tuningCurve(const std::string& logPath,
                                const std::vector<std::pair<std::string, double>>& taskWeights);

/// The records of OUT/results.jsonl: a torn or unreadable last line (a kill mid-write) is
/// skipped; any other bad line is a UserError naming path:line. Never writes.
std::vector<nlohmann::json> readResults(const std::string& path);

/// Appends one record as one line (O_APPEND, fsynced); a torn last line left by a kill is cut
/// off first (bench is the file's only writer).
void appendResult(const std::string& path, const nlohmann::json& record);

/// Writes summary.md, summary.csv, summary.json and plots/*.svg into dir from the records
/// alone (each file written whole, atomically). Returns the files written.
std::vector<std::string> writeReport(const std::string& dir,
                                     const std::vector<nlohmann::json>& records);

} // namespace wm::bench
