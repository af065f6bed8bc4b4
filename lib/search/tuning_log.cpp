// The tuning log (see tuning_log.h).
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace wm::search {

double TuningRecord::median() const {
  if (costs.empty()) return 0;
  std::vector<double> c = costs;
  std::sort(c.begin(), c.end());
  return c.size() % 2 ? c[c.size() / 2] : 0.5 * (c[c.size() / 2 - 1] + c[c.size() / 2]);
}

std::string TuningRecord::stepsKey() const { return sched::stepsToJson(steps); }

std::string TuningLog::toLine(const TuningRecord& r) {
  nlohmann::json j = {{"v", r.version},
                      {"task", r.task},
                      {"workload", r.workload},
                      {"target", r.target},
                      {"steps", nlohmann::json::parse(sched::stepsToJson(r.steps))},
                      {"costs", r.costs},
                      {"error", r.error},
                      {"build_s", r.buildSeconds},
                      {"time", r.time},
                      {"model", r.model},
                      {"seed", r.seed}};
  return j.dump();
}

bool TuningLog::fromLine(const std::string& line, TuningRecord* r, std::string* error) {
  try {
    auto j = nlohmann::json::parse(line);
    if (!j.is_object()) throw std::runtime_error("not an object");
    r->version = j.at("v").get<int>();
    if (r->version != 1) throw std::runtime_error("format version " + std::to_string(r->version) + " (this wmtune reads 1)");
    r->task = j.at("task").get<std::string>();
    r->workload = j.at("workload").get<std::string>();
    r->target = j.at("target").get<std::string>();
    std::string err;
    if (!sched::stepsFromJson(j.at("steps").dump(), &r->steps, &err)) throw std::runtime_error(err);
    r->costs = j.at("costs").get<std::vector<double>>();
    r->error = j.at("error").get<std::string>();
    r->buildSeconds = j.value("build_s", 0.0);
    r->time = j.value("time", 0.0);
    r->model = j.value("model", "");
    r->seed = j.value("seed", uint64_t(0));
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

TuningLog::TuningLog(std::string path) : path_(std::move(path)) {
  std::string text;
  {
    std::ifstream in(path_, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
  }
  // A last line without its newline is a record whose write was cut off: drop it.
  size_t keep = text.size();
  if (!text.empty() && text.back() != '\n') {
    size_t nl = text.rfind('\n');
    keep = nl == std::string::npos ? 0 : nl + 1;
    spdlog::warn("{}: the last line is truncated (a run was killed while writing); skipping it", path_);
  }
  std::istringstream lines(text.substr(0, keep));
  std::string line;
  int lineNo = 0;
  while (std::getline(lines, line)) {
    ++lineNo;
    if (line.empty()) continue;
    TuningRecord r;
    std::string err;
    if (!fromLine(line, &r, &err)) WM_USER_ERROR() << path_ << ":" << lineNo << ": not a tuning record: " << err;
    records_.push_back(std::move(r));
  }
  fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd_ < 0) WM_USER_ERROR() << path_ << ": cannot open the tuning log for writing";
  if (keep != text.size() && ftruncate(fd_, static_cast<off_t>(keep)) != 0)
    WM_USER_ERROR() << path_ << ": cannot drop the truncated last line";
}

TuningLog::~TuningLog() {
  if (fd_ >= 0) close(fd_);
}

void TuningLog::append(const TuningRecord& r) {
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

} // namespace wm::search
