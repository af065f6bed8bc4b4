// What kernel and model exports share (internal to lib/export): names, the staging directory
// that makes an export all-or-nothing, running the C compiler and archiver, lowering a logged
// schedule, linking the library.
#pragma once

#include <wm/ir/dtype.h>
#include <wm/lower/lower.h>
#include <wm/schedule/step_types.h>
#include <wm/search/tuning_log.h>
#include <wm/target/target.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wm::exporter {

struct ExportOptions;

bool isCIdentifier(const std::string& s);
/// A C identifier made of s: other characters become '_', a leading digit gets one before it.
std::string toCIdentifier(const std::string& s);
/// The C element type of a dtype in headers ("float", "int64_t", ...).
const char* cType(ir::DType t);
std::string shapeString(const std::vector<int64_t>& shape);
/// UserError unless o.name is a C identifier.
void checkName(const ExportOptions& o);

/// Lowers the DAG with the steps; false (and *why) if they do not replay or lower, or give a
/// padded argument buffer (an exported kernel's buffers are dense).
bool lowerWith(const ir::ComputeDAG& dag, const std::vector<sched::Step>& steps,
               lower::LoweredFunc* f, std::string* why);

nlohmann::json targetJson(const target::Target& t);

/// A kernel's manifest fields that both exports write: "schedule" (the steps), "tuned", and
/// "measured" (median, log, record line, target) when a record was used.
void addScheduleJson(nlohmann::json& j, const std::vector<sched::Step>& steps,
                     const search::TuningRecord* record, const std::string& log);

/// The log's best valid record per task key on this target (none without --log); warns about
/// records of other targets. The log stays open: the records point into it.
struct BestRecords {
  std::unique_ptr<search::TuningLog> log;
  std::map<std::string, const search::TuningRecord*> best;
};
BestRecords loadBestRecords(const ExportOptions& o, const target::Target& target);

/// The export's files, first in a temporary directory inside the output directory (checked:
/// empty, or o.force), renamed into it by commit(); the temporary directory goes on destruction.
class Staging {
public:
  explicit Staging(const ExportOptions& o);
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  /// A path in the temporary directory.
  std::string tmp(const std::string& file) const;
  /// Writes a file of the export (renamed into place by commit()).
  void write(const std::string& file, const std::string& contents);
  /// Marks a file made in the temporary directory (by a tool) as part of the export.
  void keep(const std::string& file);
  /// Renames every kept file into the directory, `last` after all others.
  void commit(const std::string& last);

private:
  std::string dir_, tmp_;
  std::vector<std::string> files_;
};

/// Links libNAME.so (exporting only the symbols matching `exportPatterns`, e.g. "NAME_*") and,
/// with o.staticLib, libNAME.a of the objects in the staging directory; both are kept.
void linkLibrary(Staging& out, const ExportOptions& o, const std::vector<std::string>& objects,
                 const std::vector<std::string>& exportPatterns);

} // namespace wm::exporter
