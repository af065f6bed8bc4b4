#include <wm/bench/bench.h>
#include <wm/bench/fma_peak.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/hash.h>
#include <wm/support/int_math.h>
#include <wm/support/strings.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace wm::bench {

namespace {

const TunerConfig& configNamed(const BenchConfig& c, const std::string& name) {
  for (auto& tc : c.configs)
    if (tc.name == name) return tc;
  throw InternalError("bench: no config " + name);
}

std::string hex8(const std::string& s) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08llx",
                static_cast<unsigned long long>(StableHasher().addString(s).value() & 0xffffffffu));
  return hex;
}

// A short, file-name-safe form of a workload: its op and a hash of the whole.
std::string slug(const BenchWorkload& w) {
  std::string base = w.kind == BenchWorkload::Kind::Model
                         ? w.value.substr(w.value.find_last_of('/') + 1)
                         : w.value.substr(0, w.value.find(':'));
  if (auto dot = base.rfind(".onnx"); dot != std::string::npos) base = base.substr(0, dot);
  for (char& ch : base)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') ch = '_';
  return base.substr(0, 40) + "-" + hex8(w.value);
}

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return trim(line);
}

} // namespace

std::vector<int> budgetsOf(const BenchConfig& c, const TunerConfig& tc) {
  std::vector<int> b = tc.trials.empty() ? c.trials : tc.trials;
  std::sort(b.begin(), b.end());
  return b;
}

std::vector<Cell> planCells(const BenchConfig& c) {
  std::vector<Cell> cells;
  std::set<int> allSeeds;
  for (auto& tc : c.configs)
    for (int s : (tc.seeds.empty() ? c.seeds : tc.seeds)) allSeeds.insert(s);
  for (size_t wi = 0; wi < c.workloads.size(); ++wi)
    for (int seed : allSeeds)
      for (auto& tc : c.configs) {
        auto& seeds = tc.seeds.empty() ? c.seeds : tc.seeds;
        if (std::find(seeds.begin(), seeds.end(), seed) == seeds.end()) continue;
        Cell cell;
        cell.workload = static_cast<int>(wi);
        cell.config = tc.name;
        cell.seed = seed;
        int64_t trials = 0;
        if (!checkedMul(budgetsOf(c, tc).back(), c.perTask ? c.workloads[wi].tasks : 1, &trials) ||
            trials > std::numeric_limits<int>::max())
          throw UserError(c.path + ": config '" + tc.name + "' on '" + c.workloads[wi].value +
                          "': budget x tasks is more trials than a run can count");
        cell.trials = static_cast<int>(trials);
        // The flags are part of the identity: an edited config is a new cell.
        std::string flags;
        for (auto& [k, v] : tc.flags) flags += k + "=" + v + ";";
        std::string hex = hex8(flags + c.target + std::to_string(c.threads));
        cell.id = slug(c.workloads[wi]) + "." + tc.name + ".s" + std::to_string(seed) + ".t" +
                  std::to_string(cell.trials) + "." + hex;
        cells.push_back(std::move(cell));
      }
  return cells;
}

std::vector<std::string> tuneArgs(const BenchConfig& c, const Cell& cell, const std::string& log,
                                  const std::string& json) {
  const BenchWorkload& w = c.workloads[cell.workload];
  std::vector<std::string> a{"tune"};
  if (w.kind == BenchWorkload::Kind::Model)
    a.push_back(w.value);
  else
    a.insert(a.end(), {"-w", w.value});
  a.insert(a.end(), {"--target", c.target, "--threads", std::to_string(c.threads), "--trials",
                     std::to_string(cell.trials), "--seed", std::to_string(cell.seed), "--log", log,
                     "--json", json});
  for (auto& [k, v] : configNamed(c, cell.config).flags) {
    a.push_back("--" + k);
    if (!v.empty()) a.push_back(v);
  }
  return a;
}

std::vector<std::string> modelRunArgs(const BenchConfig& c, const Cell& cell,
                                      const std::string& log, const std::string& json) {
  return {"run",       c.workloads[cell.workload].value,
          "--target",  c.target,
          "--threads", std::to_string(c.threads),
          "--log",     log,
          "--bench",   "--bench-json",
          json};
}

nlohmann::json Machine::toJson() const {
  return {{"cpu", cpu},           {"cores", cores},
          {"threads", threads},   {"peak_gflops", peakGflops},
          {"governor", governor}, {"load1", load1}};
}

Machine describeMachine(int threads) {
  Machine m;
  m.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  m.threads = threads > 0 ? threads : m.cores;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0) {
        m.cpu = trim(line.substr(line.find(':') + 1));
        break;
      }
    if (m.cpu.empty()) m.cpu = "unknown";
  }
  m.governor = readFirstLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (m.governor.empty()) m.governor = "unknown";
  if (auto l = parseDouble(split(readFirstLine("/proc/loadavg") + " ", ' ')[0])) m.load1 = *l;
  // FMA peak: best of three rounds of every thread running the register-only loop for ~0.1 s.
  const int64_t iters = 2000000;
  for (int round = 0; round < 3; ++round) {
    std::atomic<double> sink{0};
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < m.threads; ++t) ts.emplace_back([&] { sink = sink + fmaLoop(iters); });
    for (auto& t : ts) t.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.peakGflops = std::max(m.peakGflops, fmaFlopsPerIter() * iters * m.threads / s * 1e-9);
  }
  return m;
}

std::vector<double> tuningCurve(const std::string& logPath,
                                const std::vector<std::pair<std::string, double>>& taskWeights) {
  std::vector<double> curve;
  if (!requireRegularFile(logPath)) return curve;
  search::TuningLog log(logPath, search::TuningLog::Mode::Read);
  const double inf = std::numeric_limits<double>::infinity();
  std::map<std::string, double> best, weight;
  for (auto& [k, w] : taskWeights) weight[k] = w;
  std::set<std::string> measured;
  for (auto& r : log.records()) {
    if (r.remeasure) continue;
    if (!weight.empty() && !weight.count(r.task)) continue;
    if (!measured.insert(r.task + "\n" + r.stepsKey()).second) continue;
    auto it = best.emplace(r.task, inf).first;
    if (r.ok()) it->second = std::min(it->second, r.median());
    double total = 0;
    if (weight.empty()) {
      total = it->second;
    } else {
      for (auto& [k, w] : weight) {
        auto b = best.find(k);
        if (b == best.end() || !std::isfinite(b->second)) {
          total = inf;
          break;
        }
        total += w * b->second;
      }
    }
    curve.push_back(total);
  }
  return curve;
}

std::vector<nlohmann::json> readResults(const std::string& path) {
  std::vector<nlohmann::json> out;
  if (!requireRegularFile(path)) return out;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream lines(text);
  std::string line;
  int no = 0;
  bool lastTorn = !text.empty() && text.back() != '\n';
  size_t total =
      static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + (lastTorn ? 1 : 0);
  while (std::getline(lines, line)) {
    ++no;
    if (trim(line).empty()) continue;
    nlohmann::json j;
    bool ok = jsonDepth(line) <= kMaxJsonDepth;
    if (ok) {
      j = nlohmann::json::parse(line, nullptr, false);
      ok = !j.is_discarded() && j.is_object() && j.contains("type") && j["type"].is_string();
    }
    if (!ok) {
      if (static_cast<size_t>(no) == total && lastTorn) break; // a kill mid-write: skipped
      throw UserError(path + ":" + std::to_string(no) + ": not a bench result record");
    }
    out.push_back(std::move(j));
  }
  return out;
}

void appendResult(const std::string& path, const nlohmann::json& record) {
  std::string line = record.dump() + "\n";
  int fd = open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(path + ": cannot open for appending: " + std::strerror(errno));
  // A torn last line (bench killed mid-write; bench is this file's only writer) is cut off,
  // as the tuning log's appender does: the records before it stay, the next one starts clean.
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    off_t end = st.st_size, keep = end;
    char c = '\n';
    if (pread(fd, &c, 1, end - 1) == 1 && c != '\n') {
      keep = 0;
      for (off_t at = end - 1; at >= 0; --at)
        if (pread(fd, &c, 1, at) == 1 && c == '\n') {
          keep = at + 1;
          break;
        }
      if (ftruncate(fd, keep) != 0) {
        int e = errno;
        close(fd);
        throw UserError(path + ": cannot cut its torn last line: " + std::strerror(e));
      }
    }
  }
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(fd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      close(fd);
      throw UserError(path + ": write failed: " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 && errno != EINVAL) {
    int e = errno;
    close(fd);
    throw UserError(path + ": write failed: " + std::strerror(e));
  }
  if (close(fd) != 0) throw UserError(path + ": write failed: " + std::strerror(errno));
}

} // namespace wm::bench
