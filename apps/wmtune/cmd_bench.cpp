// `wmtune bench CONFIG.yaml [-o OUT]`: batch benchmarking from a bench file (docs/bench.md).
// Every cell (workload x config x seed) runs as a `wmtune tune` child process with its own log
// under OUT/logs/; its result is appended to OUT/results.jsonl when it finishes, and the report
// (summary.md/.csv/.json, plots/*.svg) is rewritten. Running the same command again skips
// finished cells and resumes a half-done one from its log. `--report OUT` re-renders the report
// from OUT/results.jsonl alone; `--dry-run` prints the planned cells.
#include "commands.h"

#include <wm/bench/bench.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/runtime/measure.h>
#include <wm/runtime/timing.h>
#ifdef WM_HAVE_TORCH_REFERENCE
#include <wm/runtime/torch_reference.h>
#endif
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/strings.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace wm::cli {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct BenchCli {
  std::string file, out, report;
  bool dryRun = false, quiet = false;
};

std::string nowIso() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

std::string shellQuote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// Checks a tune flag by parsing it with the real `tune` options (a fresh CLI app).
bench::FlagProblem checkTuneFlag(const std::string& flag, std::string* value) {
  CLI::App app;
  // The command owns the option structs the parse writes into: it must outlive the parse.
  Command tuneCommand = addTuneCommand(app);
  CLI::App* tune = app.get_subcommand("tune");
  const CLI::Option* opt = tune->get_option_no_throw("--" + flag);
  if (!opt) return {"'" + flag + "' is not a flag of `wmtune tune` (see wmtune tune --help)", true};
  std::vector<std::string> args{"tune", "-w", "gemm:M=1,N=1,K=1", "--" + flag};
  if (opt->get_expected_max() == 0) { // a switch
    if (*value == "true" || value->empty()) {
      *value = "";
    } else {
      return {"'" + flag + "' is a switch: give it no value or true (leave it out for false)"};
    }
  } else {
    if (value->empty()) return {"'" + flag + "' needs a value"};
    args.push_back(*value);
  }
  // Files a cell would open: missing ones fail here, not hours into the bench.
  bool isFile = flag == "warm-start" || flag == "onnx" ||
                (flag == "init" && *value != "default" && *value != "none");
  try {
    if (isFile && !requireRegularFile(*value))
      return {"'" + flag + "': no such file '" + *value + "'"};
  } catch (const UserError& e) {
    return {"'" + flag + "': " + e.what()};
  }
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return {"bad value for tune flag '" + flag + "': " + e.what()};
  }
  return {};
}

// The environment of children: the OpenBLAS presets that halve it here are dropped (README).
void benchEnvironment() {
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");
}

struct ChildResult {
  int status = 0;   // exit code, or 128 + signal
  std::string tail; // last lines of its output
};

// Runs argv with stdout+stderr into a pipe; every line goes to `sink` (a file) and to onLine.
// The child dies with wmtune (PR_SET_PDEATHSIG), so a killed bench leaves no tuner holding a
// log. It stays in wmtune's process group: Ctrl-C reaches it and it stops cleanly.
ChildResult runChild(const std::vector<std::string>& argv, std::ostream* sink,
                     const std::function<void(const std::string&)>& onLine) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw UserError(std::string("pipe: ") + std::strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw UserError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(137);
    dup2(p[1], 1);
    dup2(p[1], 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  close(p[1]);
  std::string buf;
  std::vector<std::string> last;
  char chunk[8192];
  while (true) {
    ssize_t n = read(p[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (sink) *sink << line << "\n";
      last.push_back(line);
      if (last.size() > 8) last.erase(last.begin());
      onLine(line);
    }
  }
  close(p[0]);
  if (sink && !buf.empty()) *sink << buf << "\n";
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  ChildResult r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  for (auto& l : last) r.tail += l + "\n";
  return r;
}

// The built-in `libtorch` baseline: the workload's operator through libtorch, float32, timed
// like a kernel (runtime::timeCalls), on random inputs.
void libtorchBaseline(const bench::BenchWorkload& w, int threads, json* rec) {
  if (w.kind == bench::BenchWorkload::Kind::Model) {
    (*rec)["unavailable"] = "libtorch times one operator; for a model use a command baseline "
                            "(benchmarks/baselines/torch_model.py)";
    return;
  }
#ifdef WM_HAVE_TORCH_REFERENCE
  try {
    runtime::TorchWorkload tw(w.value, /*useDouble=*/false, threads);
    tw.run(ir::randomInputs(parseWorkload(w.value).dag, 1));
    runtime::MeasureOptions opts;
    opts.minRepeatMs = 50;
    opts.repeat = 9;
    auto t = runtime::timeCalls([&] { tw.rerun(); }, opts);
    (*rec)["ms"] = t.median * 1e3;
    (*rec)["info"] = {{"iqr_ms", t.iqr * 1e3}, {"threads", threads}};
  } catch (const UserError& e) {
    (*rec)["unavailable"] = e.what();
  }
#else
  (void)threads;
  (*rec)["unavailable"] = "this wmtune is built without libtorch (WM_WITH_TORCH=OFF)";
#endif
}

// Runs a baseline; returns its record.
json runBaseline(const bench::Baseline& b, const bench::BenchWorkload& w, int threads) {
  json rec = {{"type", "baseline"}, {"name", b.name}, {"workload", w.value}, {"time", nowIso()}};
  if (b.command.empty()) {
    libtorchBaseline(w, threads, &rec);
    return rec;
  }
  bool isModel = w.kind == bench::BenchWorkload::Kind::Model;
  std::string cmd = b.command;
  auto subst = [&](const std::string& key, const std::string& v) {
    for (size_t at; (at = cmd.find(key)) != std::string::npos;) cmd.replace(at, key.size(), v);
  };
  if ((cmd.find("{model}") != std::string::npos && !isModel) ||
      (cmd.find("{workload}") != std::string::npos && isModel)) {
    rec["unavailable"] = isModel ? "the command takes a workload spec, this is a model"
                                 : "the command takes a model, this is a workload spec";
    return rec;
  }
  subst("{model}", shellQuote(w.value));
  subst("{workload}", shellQuote(w.value));
  subst("{threads}", std::to_string(threads));
  std::string out;
  auto r = runChild({"/bin/sh", "-c", cmd}, nullptr, [&](const std::string& l) { out = l; });
  json j = json::parse(out, nullptr, false);
  if (r.status != 0) {
    rec["unavailable"] = "exited " + std::to_string(r.status) + ": " + trim(r.tail);
  } else if (j.is_object() && j.contains("ms") && j["ms"].is_number() &&
             j["ms"].get<double>() > 0) {
    rec["ms"] = j["ms"].get<double>();
    for (auto& [k, v] : j.items())
      if (k != "ms") rec["info"][k] = v;
  } else if (j.is_object() && j.contains("unavailable")) {
    rec["unavailable"] = j["unavailable"];
  } else {
    rec["unavailable"] = "its last line is not {\"ms\": ...}: " + out.substr(0, 200);
  }
  return rec;
}

std::string fmtDuration(double s) {
  std::ostringstream os;
  if (s >= 3600)
    os << int(s / 3600) << "h" << std::setw(2) << std::setfill('0') << int(s / 60) % 60 << "m";
  else if (s >= 60)
    os << int(s / 60) << "m" << std::setw(2) << std::setfill('0') << int(s) % 60 << "s";
  else
    os << int(s) << "s";
  return os.str();
}

// A model cell's result as a user gets it: the whole model run with the cell's log
// (`wmtune run --bench`), which the sum of the tuned task latencies does not show (the time
// between kernels, untuned parts). Its record: type model_run, keyed by the cell's id.
json timeModel(const std::string& exe, const bench::BenchConfig& c, const bench::Cell& cell,
               const std::string& out) {
  const auto& w = c.workloads[cell.workload];
  std::string result = out + "/logs/" + cell.id + ".run.json";
  std::vector<std::string> argv{exe};
  for (auto& a : bench::modelRunArgs(c, cell, out + "/logs/" + cell.id + ".jsonl", result))
    argv.push_back(a);
  std::ofstream sink(out + "/logs/" + cell.id + ".run.out", std::ios::trunc);
  auto r = runChild(argv, &sink, [](const std::string&) {});
  sink.close();
  json rec = {{"type", "model_run"}, {"id", cell.id},         {"time", nowIso()},
              {"workload", w.value}, {"config", cell.config}, {"seed", cell.seed}};
  if (r.status == 130 || r.status == 128 + SIGINT) return nullptr; // interrupted: not a result
  json j;
  if (r.status == 0) {
    std::ifstream in(result);
    j = json::parse(in, nullptr, false);
  }
  if (r.status == 0 && j.is_object() && j.contains("ms") && j["ms"].is_number()) {
    for (const char* k : {"ms", "iqr_ms", "kernels", "kernels_sum_ms", "reference_executor_ms"})
      if (j.contains(k)) rec[k] = j[k];
  } else {
    rec["error"] = "`wmtune " + join(std::vector<std::string>(argv.begin() + 1, argv.end()), " ") +
                   "` exited " + std::to_string(r.status) + ": " + trim(r.tail);
  }
  return rec;
}

} // namespace

Command addBenchCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "bench", "Batch benchmarking from a YAML bench file: tune every workload x config x seed, "
               "time the baselines, write tables and plots (docs/bench.md)");
  auto o = std::make_shared<BenchCli>();
  sub->add_option("config", o->file, "Bench file (YAML)");
  sub->add_option("-o,--out", o->out, "Output folder (default: out/bench/NAME)");
  sub->add_flag("--dry-run", o->dryRun, "Print the planned cells and their trials, run nothing");
  sub->add_option("--report", o->report,
                  "Re-render the report of this output folder from its results.jsonl alone");
  sub->add_flag("-q,--quiet", o->quiet, "No progress output");
  return [o]() {
    if (!o->report.empty()) {
      if (!o->file.empty()) WM_USER_ERROR() << "bench: give a bench file or --report OUT, not both";
      auto records = bench::readResults(o->report + "/results.jsonl");
      if (records.empty())
        WM_USER_ERROR() << o->report
                        << "/results.jsonl: missing or empty (not a bench output folder?)";
      for (auto& f : bench::writeReport(o->report, records))
        if (!o->quiet) std::cout << f << "\n";
      return 0;
    }
    if (o->file.empty()) WM_USER_ERROR() << "bench: give a bench file (YAML) or --report OUT";
    bench::BenchConfig c = bench::loadBenchConfig(o->file, checkTuneFlag);
    if (c.target != "llvm")
      WM_USER_ERROR() << o->file << ": target '" << c.target
                      << "' is not built yet (the GPU target is issue 15); use llvm";
    for (auto& w : c.workloads)
      if (w.kind == bench::BenchWorkload::Kind::Model) {
        try {
          w.tasks = static_cast<int>(
              frontend::planModel(frontend::buildProgram(frontend::loadOnnx(w.value)))
                  .tasks.size());
        } catch (const UserError& e) {
          WM_USER_ERROR() << o->file << ":" << w.mark.line << ":" << w.mark.column << ": "
                          << e.what();
        }
      }
    std::string out = o->out.empty() ? "out/bench/" + c.name : o->out;
    auto cells = bench::planCells(c);
    std::string resultsPath = out + "/results.jsonl";
    auto records = bench::readResults(resultsPath);
    std::set<std::string> done;
    std::set<std::pair<std::string, std::string>> baselinesDone;
    std::set<std::string> modelTimed; // model cells whose whole-model run is recorded
    for (auto& r : records) {
      if (r["type"] == "cell" && r.contains("id") && r["id"].is_string()) done.insert(r["id"]);
      if (r["type"] == "model_run" && r.contains("id") && r["id"].is_string())
        modelTimed.insert(r["id"]);
      if (r["type"] == "baseline" && r.contains("name") && r.contains("workload"))
        baselinesDone.insert({r["workload"].dump(), r["name"].dump()});
    }
    int64_t totalTrials = 0, leftTrials = 0;
    int left = 0;
    for (auto& cell : cells) {
      totalTrials += cell.trials;
      if (!done.count(cell.id)) leftTrials += cell.trials, ++left;
    }
    if (o->dryRun) {
      std::cout << "bench " << c.name << ": " << cells.size() << " cells, " << totalTrials
                << " trials (" << left << " cells, " << leftTrials << " trials left), output "
                << out << "\n";
      int i = 0;
      for (auto& cell : cells)
        std::cout << std::setw(4) << ++i << "  " << std::left << std::setw(12) << cell.config
                  << std::right << " seed " << std::setw(3) << cell.seed << "  trials "
                  << std::setw(6) << cell.trials << "  " << c.workloads[cell.workload].value
                  << (done.count(cell.id) ? "  (done)" : "") << "\n";
      for (auto& b : c.baselines)
        std::cout << "baseline " << b.name << ": "
                  << (b.command.empty() ? "built in (the operator through libtorch)" : b.command)
                  << "\n";
      return 0;
    }

    fs::create_directories(out + "/logs");
    checkWritable(resultsPath, "results");
    benchEnvironment();
    bool tty = isatty(1) && !o->quiet;
    int threads = c.threads;
    bench::Machine m0 = bench::describeMachine(threads);
    json runRec = {{"type", "run"},
                   {"bench", c.name},
                   {"file", o->file},
                   {"time", nowIso()},
                   {"target", c.target},
                   {"threads", m0.threads},
                   {"reference", c.reference},
                   {"per_task", c.perTask},
                   {"machine", m0.toJson()}};
    runRec["configs"] = json::array();
    runRec["budgets"] = json::object();
    for (auto& tc : c.configs) {
      runRec["configs"].push_back(tc.name);
      runRec["budgets"][tc.name] = bench::budgetsOf(c, tc);
    }
    runRec["workloads"] = json::array();
    for (auto& w : c.workloads)
      runRec["workloads"].push_back(
          {{"name", w.value},
           {"kind", w.kind == bench::BenchWorkload::Kind::Model ? "model" : "spec"},
           {"tasks", w.tasks}});
    runRec["baselines"] = json::array();
    for (auto& b : c.baselines) runRec["baselines"].push_back(b.name);
    bench::appendResult(resultsPath, runRec);
    if (!o->quiet)
      std::cout << "bench " << c.name << ": " << left << " of " << cells.size() << " cells to run ("
                << leftTrials << " trials), FMA peak " << std::fixed << std::setprecision(1)
                << m0.peakGflops << " GFLOP/s on " << m0.threads << " threads, output " << out
                << std::endl;

    std::string exe = selfExecutable();
    auto t0 = std::chrono::steady_clock::now();
    int64_t trialsDone = 0; // in this process, for the ETA
    int index = 0, lastWorkload = -1;
    for (auto& cell : cells) {
      ++index;
      const auto& w = c.workloads[cell.workload];
      if (cell.workload != lastWorkload) { // the workload's baselines, in the same run
        lastWorkload = cell.workload;
        for (auto& b : c.baselines) {
          if (baselinesDone.count({json(w.value).dump(), json(b.name).dump()})) continue;
          json rec = runBaseline(b, w, m0.threads);
          bench::appendResult(resultsPath, rec);
          if (!o->quiet)
            std::cout << (tty ? "\r\033[K" : "") << "baseline " << b.name << "  " << w.value << "  "
                      << (rec.contains("ms") ? std::to_string(rec["ms"].get<double>()) + " ms"
                                             : "unavailable: " + rec["unavailable"].dump())
                      << std::endl;
        }
      }
      bool isModel = w.kind == bench::BenchWorkload::Kind::Model;
      auto timeWholeModel = [&] {
        if (!isModel || modelTimed.count(cell.id)) return true;
        if (tty)
          std::cout << "\r\033[K[" << index << "/" << cells.size() << "] " << cell.config << " s"
                    << cell.seed << "  running the whole model" << std::flush;
        json mr = timeModel(exe, c, cell, out);
        if (mr.is_null()) return false;
        bench::appendResult(resultsPath, mr);
        modelTimed.insert(cell.id);
        if (!o->quiet)
          std::cout << (tty ? "\r\033[K" : "") << "[" << index << "/" << cells.size() << "] "
                    << cell.config << " s" << cell.seed << "  whole model "
                    << (mr.contains("ms") ? std::to_string(mr["ms"].get<double>()) + " ms"
                                          : "failed: " + mr["error"].get<std::string>())
                    << std::endl;
        return true;
      };
      auto interrupted = [&] {
        if (tty) std::cout << "\n";
        std::cerr << "bench: interrupted in cell " << cell.id << " (its log keeps what was "
                  << "measured; run the same command again to resume)\n";
        return 130;
      };
      if (done.count(cell.id)) {
        if (!timeWholeModel()) return interrupted();
        continue;
      }
      std::string log = out + "/logs/" + cell.id + ".jsonl";
      std::string summary = out + "/logs/" + cell.id + ".json";
      bool resumed = fs::exists(log);
      std::vector<std::string> argv{exe};
      for (auto& a : bench::tuneArgs(c, cell, log, summary)) argv.push_back(a);
      std::ofstream sink(out + "/logs/" + cell.id + ".out", std::ios::app);
      auto c0 = std::chrono::steady_clock::now();
      std::string best = "-";
      int trialsNow = 0;
      auto show = [&] {
        if (!tty) return;
        double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        int64_t doneT = trialsDone + trialsNow;
        std::string eta = doneT > 0 ? fmtDuration(el / doneT * (leftTrials - doneT)) : "?";
        std::cout << "\r\033[K[" << index << "/" << cells.size() << "] " << cell.config << " s"
                  << cell.seed << "  trials " << trialsNow << "/" << cell.trials << "  best "
                  << best << "  ETA " << eta << "  "
                  << (w.value.size() > 40 ? w.value.substr(0, 37) + "..." : w.value) << std::flush;
      };
      show();
      auto r = runChild(argv, &sink, [&](const std::string& line) {
        // "round   3  task ...  trials 40/64  best 1.2345 ms  ..."
        auto at = line.find(" trials ");
        if (line.rfind("round ", 0) == 0 && at != std::string::npos) {
          if (auto n = parseInt(split(line.substr(at + 8), '/')[0])) trialsNow = int(*n);
          auto b = line.find(" best ");
          if (b != std::string::npos) best = split(line.substr(b + 6), ' ')[0] + " ms";
          show();
        }
      });
      sink.close();
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      if (r.status == 130 || r.status == 128 + SIGINT) return interrupted();
      if (r.status != 0)
        WM_USER_ERROR() << "bench: cell " << cell.id << " (`wmtune "
                        << join(std::vector<std::string>(argv.begin() + 1, argv.end()), " ")
                        << "`) exited " << r.status << "; its output is in " << out << "/logs/"
                        << cell.id << ".out:\n"
                        << r.tail;
      json s;
      {
        std::ifstream in(summary);
        s = json::parse(in, nullptr, false);
      }
      if (!s.is_object() || !s.contains("tasks"))
        WM_USER_ERROR() << summary << ": the tuner's summary is missing or unreadable";
      std::vector<std::pair<std::string, double>> weights;
      double latency = 0, flops = 0;
      bool complete = true;
      json tasks = json::array();
      for (auto& t : s["tasks"]) {
        double wgt = t.value("weight", 1.0), b = t.value("best_latency_s", 0.0);
        weights.emplace_back(t.value("key", std::string()), wgt);
        if (b > 0)
          latency += wgt * b, flops += wgt * t.value("gflops", 0.0) * 1e9 * b;
        else
          complete = false;
        tasks.push_back({{"key", t.value("key", std::string())},
                         {"weight", wgt},
                         {"best_s", b},
                         {"trials", t.value("trials", 0)},
                         {"errors", t.value("errors", 0)}});
      }
      if (w.kind == bench::BenchWorkload::Kind::Spec) weights.clear();
      auto curve = bench::tuningCurve(log, weights);
      json cj = json::array();
      for (double v : curve) cj.push_back(std::isfinite(v) ? json(v) : json(nullptr));
      json rec = {{"type", "cell"},
                  {"id", cell.id},
                  {"time", nowIso()},
                  {"workload", w.value},
                  {"kind", w.kind == bench::BenchWorkload::Kind::Model ? "model" : "spec"},
                  {"config", cell.config},
                  {"seed", cell.seed},
                  {"trials", cell.trials},
                  {"budget_scale", c.perTask ? w.tasks : 1},
                  {"best_s", complete && latency > 0 ? json(latency) : json(nullptr)},
                  {"flops", flops},
                  {"tasks", tasks},
                  {"curve", cj},
                  {"wall_s", wall},
                  {"tune_wall_s", s.value("wall_s", 0.0)},
                  {"search_s", s.value("search_s", 0.0)},
                  {"build_s", s.value("build_s", 0.0)},
                  {"run_s", s.value("run_s", 0.0)},
                  {"resumed", resumed},
                  {"log", "logs/" + cell.id + ".jsonl"}};
      bench::appendResult(resultsPath, rec);
      trialsDone += cell.trials;
      if (!o->quiet) {
        std::ostringstream line;
        line << "[" << index << "/" << cells.size() << "] " << std::left << std::setw(12)
             << cell.config << std::right << " s" << cell.seed << "  best "
             << (complete && latency > 0 ? std::to_string(latency * 1e3) + " ms" : "-") << "  "
             << std::fixed << std::setprecision(0) << wall << " s  " << w.value;
        std::cout << (tty ? "\r\033[K" : "") << line.str() << std::endl;
      }
      if (!timeWholeModel()) return interrupted();
      bench::writeReport(out, bench::readResults(resultsPath));
    }
    bench::Machine m1 = bench::describeMachine(threads);
    bench::appendResult(resultsPath,
                        {{"type", "end"}, {"time", nowIso()}, {"machine", m1.toJson()}});
    bench::writeReport(out, bench::readResults(resultsPath));
    if (!o->quiet) {
      std::cout << "FMA peak at the end " << std::fixed << std::setprecision(1) << m1.peakGflops
                << " GFLOP/s (start " << m0.peakGflops << ")\n";
      std::cout << "report: " << out << "/summary.md\n";
    }
    return 0;
  };
}

} // namespace wm::cli
