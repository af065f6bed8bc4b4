// The tuning log (see tuning_log.h).
#include <wm/runtime/measure.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/strings.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace wm::search {

double TuningRecord::median() const {
  return runtime::medianOf(costs);
}

std::string TuningRecord::stepsKey() const {
  return sched::stepsToJson(steps);
}

std::string TuningLog::toLine(const TuningRecord& r) {
  nlohmann::json j = {{"v", r.version},
                      {"task", r.task},
                      {"workload", r.workload},
                      {"target", r.target},
                      {"steps", nlohmann::json::parse(sched::stepsToJson(r.steps))},
                      {"costs", r.costs},
                      {"median_s", r.median()},
                      {"iqr_s", r.iqr},
                      {"error", r.error},
                      {"build_s", r.buildSeconds},
                      {"run_s", r.runSeconds},
                      {"time", r.time},
                      {"model", r.model},
                      {"seed", r.seed}};
  if (r.remeasure) j["remeasure"] = true;
  if (!r.device.empty()) j["device"] = r.device;
  if (!r.host.empty()) {
    j["host"] = r.host;
    j["rank"] = r.rank;
  }
  return j.dump();
}

bool TuningLog::fromLine(const std::string& line, TuningRecord* r, std::string* error) {
  try {
    if (jsonDepth(line) > kMaxJsonDepth) throw std::runtime_error("nested too deeply");
    auto j = nlohmann::json::parse(line);
    if (!j.is_object()) throw std::runtime_error("not an object");
    r->version = j.at("v").get<int>();
    if (r->version != 1)
      throw std::runtime_error("format version " + std::to_string(r->version) +
                               " (this wmtune reads 1)");
    r->task = j.at("task").get<std::string>();
    r->workload = j.at("workload").get<std::string>();
    r->target = j.at("target").get<std::string>();
    std::string err;
    if (!sched::stepsFromJson(j.at("steps").dump(), &r->steps, &err)) throw std::runtime_error(err);
    r->costs = j.at("costs").get<std::vector<double>>();
    r->error = j.at("error").get<std::string>();
    r->buildSeconds = j.value("build_s", 0.0);
    r->runSeconds = j.value("run_s", 0.0);
    r->time = j.value("time", 0.0);
    r->model = j.value("model", "");
    r->seed = j.value("seed", uint64_t(0));
    r->iqr = j.value("iqr_s", 0.0);
    r->remeasure = j.value("remeasure", false);
    r->device = j.value("device", "");
    r->host = j.value("host", "");
    r->rank = j.value("rank", -1);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

TuningLog::TuningLog(std::string path, Mode mode) : path_(std::move(path)) {
  bool exists = requireRegularFile(path_);
  if (!exists && mode == Mode::Read) WM_USER_ERROR() << path_ << ": no such file";
  if (mode == Mode::Append) {
    // One writer per log: the lock is taken before reading, so no other tuner appends between
    // what this one reads and what it writes. Close-on-exec: measurement workers run generated
    // code and must not inherit the log.
    fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      WM_USER_ERROR() << path_ << ": cannot open the tuning log for writing ("
                      << std::strerror(errno) << ")";
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      close(fd_);
      fd_ = -1;
      if (e == EWOULDBLOCK)
        WM_USER_ERROR() << path_
                        << ": another wmtune is writing this tuning log (one writer per log; "
                           "wait for it or give another --log)";
      WM_USER_ERROR() << path_ << ": cannot lock the tuning log (" << std::strerror(e) << ")";
    }
  }
  // A log that cannot be read is not kept open (nor locked): a caller that recovers may open it
  // again.
  try {
    std::string text;
    {
      std::ifstream in(path_, std::ios::binary);
      if (!in && (mode == Mode::Read || exists))
        WM_USER_ERROR() << path_ << ": cannot read the tuning log";
      if (in) {
        std::stringstream ss;
        ss << in.rdbuf();
        if (in.bad()) WM_USER_ERROR() << path_ << ": error reading the tuning log";
        text = ss.str();
      }
    }
    // A last line without its newline is a record whose write was cut off: drop it.
    size_t keep = text.size();
    if (!text.empty() && text.back() != '\n') {
      size_t nl = text.rfind('\n');
      keep = nl == std::string::npos ? 0 : nl + 1;
      spdlog::warn("{}: the last line is truncated (a run was killed while writing); skipping it",
                   path_);
    }
    std::istringstream lines(text.substr(0, keep));
    std::string line;
    int lineNo = 0;
    while (std::getline(lines, line)) {
      ++lineNo;
      if (line.empty()) continue;
      TuningRecord r;
      std::string err;
      if (!fromLine(line, &r, &err))
        WM_USER_ERROR() << path_ << ":" << lineNo << ": not a tuning record: " << err;
      r.line = lineNo;
      records_.push_back(std::move(r));
    }
    if (mode == Mode::Read) return;
    if (keep != text.size() && ftruncate(fd_, static_cast<off_t>(keep)) != 0)
      WM_USER_ERROR() << path_ << ": cannot drop the truncated last line";
  } catch (...) {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    throw;
  }
}

TuningLog::TuningLog(std::vector<TuningRecord> records,
                     std::function<void(const TuningRecord&)> sink)
    : path_("(in memory)"), records_(std::move(records)), memory_(true), sink_(std::move(sink)) {}

TuningLog::~TuningLog() {
  if (fd_ >= 0) close(fd_);
}

void TuningLog::append(const TuningRecord& r) {
  if (memory_) {
    if (sink_) sink_(r);
    records_.push_back(r);
    return;
  }
  WM_CHECK(fd_ >= 0) << path_ << ": the tuning log was opened for reading";
  std::string line = toLine(r) + "\n";
  // One write per record (O_APPEND): a killed process leaves whole records and at most one
  // truncated last line.
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(fd_, line.data() + off, line.size() - off);
    if (n <= 0) WM_USER_ERROR() << path_ << ": cannot append to the tuning log";
    off += static_cast<size_t>(n);
  }
  records_.push_back(r);
}

std::map<std::string, const TuningRecord*> bestRecords(const std::vector<TuningRecord>& records,
                                                       const target::Target& t, int* otherTargets) {
  // task -> state -> its latest figure (nullptr: the latest measurement failed)
  std::map<std::string, std::map<std::string, const TuningRecord*>> latest;
  int other = 0;
  for (auto& r : records) {
    if (!target::sameTarget(r.target, t)) {
      ++other;
      continue;
    }
    auto& slot = latest[r.task][r.stepsKey()];
    if (!slot || r.remeasure) slot = r.ok() ? &r : nullptr;
  }
  // The best re-measured figure of each task; a task none of whose states was re-measured
  // (logs of older versions, --remeasure-top 0) reports its best first measurement.
  std::map<std::string, const TuningRecord*> best;
  for (auto& [task, states] : latest) {
    const TuningRecord *again = nullptr, *any = nullptr;
    for (auto& [key, r] : states) {
      if (!r) continue;
      if (!any || r->median() < any->median()) any = r;
      if (r->remeasure && (!again || r->median() < again->median())) again = r;
    }
    if (again || any) best[task] = again ? again : any;
  }
  if (otherTargets) *otherTargets = other;
  return best;
}

std::vector<LoggedTask> readLoggedTasks(const std::vector<std::string>& paths,
                                        const WorkloadResolver& resolve) {
  std::map<std::string, size_t> index;
  std::vector<LoggedTask> tasks;
  std::set<std::string> bad;
  for (auto& p : paths) {
    TuningLog log(p, TuningLog::Mode::Read);
    for (auto& r : log.records()) {
      if (bad.count(r.task)) continue;
      auto it = index.find(r.task);
      if (it == index.end()) {
        LoggedTask t;
        t.key = r.task;
        t.workload = r.workload;
        try {
          t.dag = resolve(r.workload);
        } catch (const UserError& e) {
          spdlog::warn("{}: task {} skipped: {}", p, r.task, e.what());
          bad.insert(r.task);
          continue;
        }
        it = index.emplace(r.task, tasks.size()).first;
        tasks.push_back(std::move(t));
      }
      tasks[it->second].records.push_back(r);
    }
  }
  return tasks;
}

std::vector<costmodel::MeasuredRecord> measuredRecords(const std::vector<LoggedTask>& tasks) {
  std::vector<costmodel::MeasuredRecord> out;
  for (auto& t : tasks)
    for (auto& r : t.records) out.push_back({t.key, &t.dag, r.steps, r.ok() ? r.median() : 0.0});
  return out;
}

} // namespace wm::search
