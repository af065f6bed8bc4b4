// Tuning tests: the log format (append, resume, truncated last line, corrupt lines) and the
// determinism of the search (same seed + a mock measurer -> identical candidates).
#include <wm/frontend/workload.h>
#include <wm/lower/gpu.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/evolution.h>
#include <wm/search/heuristic.h>
#include <wm/search/tuner.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace wm;
using namespace wm::search;

namespace {

std::string tempPath(const std::string& name) {
  return "/tmp/wm_test_" + std::to_string(getpid()) + "_" + name;
}

TuningRecord record(int i) {
  TuningRecord r;
  r.task = "abc";
  r.workload = "gemm:M=8,N=8,K=8";
  r.steps = {sched::SplitStep{2, 0, 8, {i + 1}, true}};
  r.costs = {1e-3 * (i + 1), 2e-3};
  r.model = "random";
  r.seed = 7;
  return r;
}

// A deterministic stand-in for the measurer: the cost is a hash of the schedule.
class MockMeasurer : public runtime::Measurer {
public:
  std::vector<runtime::MeasureResult>
  measure(const std::vector<runtime::MeasureInput>& in) override {
    std::vector<runtime::MeasureResult> out;
    for (auto& x : in) {
      runtime::MeasureResult r;
      r.error = runtime::MeasureError::None;
      double h = static_cast<double>(std::hash<std::string>()(sched::stepsToJson(x.steps)) % 1000);
      r.costs = {1e-3 * (1 + h)};
      r.median = r.costs[0];
      out.push_back(r);
    }
    return out;
  }
};

} // namespace

TEST_CASE("the tuning log appends, resumes and skips a truncated last line", "[log]") {
  std::string path = tempPath("log.jsonl");
  std::remove(path.c_str());
  {
    TuningLog log(path, TuningLog::Mode::Append);
    CHECK(log.records().empty());
    for (int i = 0; i < 3; ++i) log.append(record(i));
  }
  {
    std::ofstream(path, std::ios::app) << "{\"v\":1,\"task\":\"abc\",\"wor"; // a killed write
  }
  {
    auto size = [&] {
      std::ifstream in(path, std::ios::binary | std::ios::ate);
      return static_cast<long>(in.tellg());
    };
    long before = size();
    TuningLog reader(path, TuningLog::Mode::Read); // reading never writes
    REQUIRE(reader.records().size() == 3);
    CHECK(size() == before);
    TuningLog log(path, TuningLog::Mode::Append);
    REQUIRE(log.records().size() == 3);
    CHECK(log.records()[1].steps == record(1).steps);
    CHECK(log.records()[2].median() == Approx(0.0025));
    log.append(record(3));
  }
  TuningLog again(path, TuningLog::Mode::Read);
  CHECK(again.records().size() == 4); // the truncated line was dropped, not glued to the next
  std::remove(path.c_str());
}

TEST_CASE("a corrupt tuning log is a user error naming the line", "[log]") {
  std::string path = tempPath("bad.jsonl");
  {
    std::ofstream out(path);
    out << TuningLog::toLine(record(0)) << "\nnot json\n" << TuningLog::toLine(record(1)) << "\n";
  }
  try {
    TuningLog log(path, TuningLog::Mode::Read);
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains(path + ":2: not a tuning record"));
  }
  std::remove(path.c_str());
}

TEST_CASE("with a fixed seed and a mock measurer two runs propose the same candidates", "[tune]") {
  auto run = [](const std::string& path, uint64_t seed) {
    std::remove(path.c_str());
    auto w = parseWorkload("gemm:M=64,N=64,K=64");
    auto w2 = parseWorkload("relu:shape=64x64");
    std::vector<TuneTask> tasks{{w.canonical, SearchTask(w.dag, target::ansorCpuDefaults(2))},
                                {w2.canonical, SearchTask(w2.dag, target::ansorCpuDefaults(2))}};
    TuneOptions o;
    o.trials = 24;
    o.perRound = 6;
    o.seed = seed;
    o.evolution.population = 64;
    MockMeasurer m;
    auto model = costmodel::makeRandomModel(seed);
    TuningLog log(path, TuningLog::Mode::Append);
    o.remeasureTop = 0;
    tune(tasks, o, m, *model, log, "random");
    std::vector<std::string> out;
    for (auto& r : log.records()) out.push_back(r.task + " " + r.stepsKey());
    std::remove(path.c_str());
    return out;
  };
  auto a = run(tempPath("a.jsonl"), 5), b = run(tempPath("b.jsonl"), 5),
       c = run(tempPath("c.jsonl"), 6);
  REQUIRE(a.size() == 24);
  CHECK(a == b);
  CHECK(a != c);
  std::set<std::string> distinct(a.begin(), a.end());
  CHECK(distinct.size() == a.size()); // nothing measured twice
}

TEST_CASE("warm-up rounds of warmup_trials, then rounds of per_round where the scheduler says",
          "[tune]") {
  std::string path = tempPath("warmup.jsonl");
  std::remove(path.c_str());
  std::vector<TuneTask> tasks;
  for (const char* spec : {"gemm:M=64,N=64,K=64", "gemm:M=48,N=64,K=32", "gemm:M=32,N=32,K=32"}) {
    auto w = parseWorkload(spec);
    tasks.push_back({w.canonical, SearchTask(w.dag, target::ansorCpuDefaults(2))});
  }
  TuneOptions o;
  o.trials = 40;
  o.perRound = 8;
  o.warmupTrials = 2;
  o.remeasureTop = 0;
  o.evolution.population = 64;
  MockMeasurer m;
  auto model = costmodel::makeRandomModel(3);
  TuningLog log(path, TuningLog::Mode::Append);
  auto sum = tune(tasks, o, m, *model, log, "random");
  // The log in runs of one task: three warm-up runs of 2, one per task, then whole rounds of 8
  // (a task picked twice in a row makes one run of 16), the budget's last 2 a short round.
  std::vector<std::pair<std::string, int>> runs;
  for (auto& r : log.records()) {
    if (runs.empty() || runs.back().first != r.task) runs.push_back({r.task, 0});
    ++runs.back().second;
  }
  std::remove(path.c_str());
  REQUIRE(runs.size() >= 4);
  std::set<std::string> warm;
  for (int i = 0; i < 3; ++i) {
    CHECK(runs[i].second == 2);
    warm.insert(runs[i].first);
  }
  CHECK(warm.size() == 3);
  int later = 0;
  for (size_t i = 3; i < runs.size(); ++i) {
    later += runs[i].second;
    if (i + 1 < runs.size()) CHECK(runs[i].second % 8 == 0);
  }
  CHECK(later == 34);
  CHECK(runs.back().second % 8 == 2);
  int trials = 0;
  for (auto& t : sum.tasks) trials += t.trials;
  CHECK(trials == 40);
}

// A measurer whose first measurement of a state is optimistic: only a re-measure shows its real
// cost (what a lucky sample or a lost thread does to a real timing).
class LuckyFirstMeasurer : public runtime::Measurer {
public:
  std::vector<runtime::MeasureResult>
  measure(const std::vector<runtime::MeasureInput>& in) override {
    std::vector<runtime::MeasureResult> out;
    for (auto& x : in) {
      std::string key = sched::stepsToJson(x.steps);
      double real = 1e-3 * (1 + static_cast<double>(std::hash<std::string>()(key) % 1000));
      bool first = seen_.insert(key).second;
      runtime::MeasureResult r;
      r.error = runtime::MeasureError::None;
      r.costs = {first ? real / 10 : real};
      r.median = r.costs[0];
      out.push_back(r);
    }
    return out;
  }

private:
  std::set<std::string> seen_;
};

TEST_CASE("the best few of a task are re-measured and only re-measured figures are best",
          "[tune]") {
  std::string path = tempPath("remeasure.jsonl");
  std::remove(path.c_str());
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  std::vector<TuneTask> tasks{{w.canonical, SearchTask(w.dag, target::ansorCpuDefaults(2))}};
  TuneOptions o;
  o.trials = 12;
  o.perRound = 12;
  o.seed = 3;
  o.evolution.population = 64;
  o.remeasureTop = 3;
  LuckyFirstMeasurer m;
  auto model = costmodel::makeRandomModel(3);
  auto log = std::make_unique<TuningLog>(path, TuningLog::Mode::Append);
  // One writer per log: a second appender is refused while this one is open; readers are not.
  CHECK_THROWS_AS(TuningLog(path, TuningLog::Mode::Append), UserError);
  CHECK_NOTHROW(TuningLog(path, TuningLog::Mode::Read));
  auto sum = tune(tasks, o, m, *model, *log, "random");
  int fresh = 0, again = 0;
  std::map<std::string, double> latest;
  for (auto& r : log->records()) {
    (r.remeasure ? again : fresh) += 1;
    latest[r.stepsKey()] = r.median();
  }
  CHECK(fresh == 12);
  CHECK(again >= 3);
  CHECK(sum.tasks[0].trials == 12); // re-measures are not trials
  // Every first figure was 10x too good: the reported best is a re-measured (real) one.
  auto best = bestRecords(log->records(), target::ansorCpuDefaults(2));
  REQUIRE(best.count(w.dag.workloadKey()));
  CHECK(best.at(w.dag.workloadKey())->remeasure);
  CHECK(sum.tasks[0].best == Approx(best.at(w.dag.workloadKey())->median()));
  // Resuming reads the re-measurements back: no new trial, no state re-measured twice, and
  // the best is still a re-measured figure.
  log.reset(); // the first tuner ends (its lock with it)
  TuningLog again2(path, TuningLog::Mode::Append);
  auto sum2 = tune(tasks, o, m, *model, again2, "random");
  CHECK(sum2.tasks[0].trials == 12);
  std::set<std::string> remeasuredKeys;
  for (auto& r : again2.records())
    if (r.remeasure) CHECK(remeasuredKeys.insert(r.stepsKey()).second);
  auto best2 = bestRecords(again2.records(), target::ansorCpuDefaults(2));
  CHECK(best2.at(w.dag.workloadKey())->remeasure);
  CHECK(sum2.tasks[0].best == Approx(best2.at(w.dag.workloadKey())->median()));
  std::remove(path.c_str());
}

TEST_CASE("a log that cannot be read is neither kept open nor locked", "[tune]") {
  std::string path = tempPath("badline.jsonl");
  {
    std::ofstream out(path);
    out << "not json\n";
  }
  // Twice the same message: the failed first open released its lock.
  for (int i = 0; i < 2; ++i)
    CHECK_THROWS_WITH(TuningLog(path, TuningLog::Mode::Append),
                      Catch::Contains("not a tuning record"));
  std::remove(path.c_str());
}

TEST_CASE("on a GPU every proposed candidate fits the launch limits", "[tune][gpu]") {
  // GEMM 1024^3: most random GPU sketches ask for more shared memory than 48 KiB a block; such
  // a candidate is a build error, a wasted trial, so propose() never returns one.
  auto w = parseWorkload("gemm:M=1024,N=1024,K=1024");
  SearchTask task(w.dag, target::gpuDefaults());
  EvolutionOptions opts;
  opts.population = 128;
  opts.generations = 1;
  EvolutionarySearch search(task, opts, 5);
  auto model = costmodel::makeRandomModel(5);
  auto cands = search.propose(32, *model, {}, {});
  REQUIRE(cands.size() >= 16);
  lower::GpuLaunchLimits limits;
  limits.maxThreadsPerBlock = task.target.gpu.maxThreadsPerBlock;
  limits.sharedBytesPerBlock = task.target.gpu.sharedBytesPerBlock;
  for (const auto& s : cands) {
    INFO(sched::stepsToJson(s.steps()));
    CHECK_NOTHROW(lower::splitKernels(lower::lower(s), limits));
  }
  // ... while the sketches' random samples do not (the filter is what this test is about).
  int over = 0;
  Rng rng(9);
  for (int k = 0; k < 64; ++k) {
    auto s = annotate(task, search.sketches()[k % search.sketches().size()], rng);
    if (!s) continue;
    try {
      lower::splitKernels(lower::lower(*s), limits);
    } catch (const UserError&) {
      ++over;
    }
  }
  CHECK(over > 0);
}

namespace {
// Scores by a hash of the steps and remembers every score it gave.
class RecordingModel : public costmodel::CostModel {
public:
  std::map<std::string, double> seen;
  std::string name() const override { return "recording"; }
  void update(const std::vector<costmodel::MeasuredRecord>&) override {}
  std::vector<double> predict(const std::string&,
                              const std::vector<sched::State>& states) override {
    std::vector<double> out;
    for (const auto& s : states) {
      std::string key = sched::stepsToJson(s.steps());
      double v = static_cast<double>(std::hash<std::string>{}(key) % 1000003) / 1000003.0;
      seen[key] = v;
      out.push_back(v);
    }
    return out;
  }
};
} // namespace

TEST_CASE("guessSchedule picks the best-scored state it saw, the same for the same seed",
          "[tune]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  SearchTask task(w.dag, target::ansorCpuDefaults(2));
  EvolutionOptions opts;
  opts.population = 64;
  opts.generations = 2;
  RecordingModel a, b;
  auto ga = guessSchedule(task, a, opts, 11);
  auto gb = guessSchedule(task, b, opts, 11);
  REQUIRE(ga.has_value());
  REQUIRE(gb.has_value());
  CHECK(sched::stepsToJson(*ga) == sched::stepsToJson(*gb));
  CHECK(sched::replay(task.dag, *ga).error.empty());
  double best = -1;
  for (auto& [k, v] : a.seen) best = std::max(best, v);
  REQUIRE(a.seen.size() > 32);
  CHECK(a.seen.at(sched::stepsToJson(*ga)) == best);
}

TEST_CASE("with init_schedule heuristic the first proposal is the heuristic schedule",
          "[heuristic][tune]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  SearchTask task(w.dag, target::ansorCpuDefaults(2));
  RecordingModel model;
  EvolutionOptions opts;
  opts.population = 64;
  opts.generations = 1;
  auto h = heuristicSchedule(task);
  REQUIRE(h.has_value());
  std::string hk = sched::stepsToJson(*h);
  EvolutionarySearch es(task, opts, 3);
  auto first = es.propose(8, model, {}, {});
  REQUIRE(!first.empty());
  CHECK(sched::stepsToJson(first.front().steps()) == hk);
  // Once measured it is not proposed again; with "random" it is not forced in.
  auto next = es.propose(8, model, {hk}, {});
  for (const auto& s : next) CHECK(sched::stepsToJson(s.steps()) != hk);
  opts.initSchedule = "random";
  EvolutionarySearch plain(task, opts, 3);
  int found = 0;
  for (const auto& s : plain.propose(8, model, {}, {}))
    found += sched::stepsToJson(s.steps()) == hk;
  CHECK(found == 0);
}
