// Distributed tuning without MPI: the arrival order of results never changes the search (what
// makes a distributed run propose what a single process proposes), the in-memory log of
// task-mode workers, the coordinator's messages, and the cluster simulation's arithmetic. The
// MPI runs themselves are test/cli/mpi_tests.sh (label mpi).
#include <wm/costmodel/cost_model.h>
#include <wm/distributed/cluster.h>
#include <wm/distributed/simulate.h>
#include <wm/frontend/workload.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuner.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

using namespace wm;
using namespace wm::search;

namespace {

// Costs are a hash of the schedule; measureEach hands the results back last first (a cluster
// where the first candidate takes longest) when `reverse`, and remembers every batch it got.
class OrderMeasurer : public runtime::Measurer {
public:
  explicit OrderMeasurer(bool reverse) : reverse_(reverse) {}
  std::vector<runtime::MeasureResult>
  measure(const std::vector<runtime::MeasureInput>& in) override {
    std::vector<runtime::MeasureResult> out;
    for (auto& x : in) {
      runtime::MeasureResult r;
      r.error = runtime::MeasureError::None;
      double h = static_cast<double>(std::hash<std::string>()(sched::stepsToJson(x.steps)) % 997);
      r.costs = {1e-3 * (1 + h)};
      r.median = r.costs[0];
      out.push_back(r);
    }
    return out;
  }
  void measureEach(const std::vector<runtime::MeasureInput>& in, const runtime::ResultFn& done,
                   const std::atomic<bool>*) override {
    std::string batch;
    for (auto& x : in) batch += sched::stepsToJson(x.steps) + "\n";
    batches.push_back(batch);
    auto res = measure(in);
    for (size_t k = 0; k < in.size(); ++k) {
      size_t i = reverse_ ? in.size() - 1 - k : k;
      res[i].host = "node" + std::to_string(i % 2);
      res[i].rank = 1 + static_cast<int>(i % 2);
      done(i, res[i]);
    }
  }
  std::vector<std::string> batches;

private:
  bool reverse_;
};

// Rounds of 8 over a small population.
TuneOptions smallRun(int trials, uint64_t seed, int remeasureTop) {
  TuneOptions o;
  o.trials = trials;
  o.perRound = 8;
  o.seed = seed;
  o.evolution.population = 64;
  o.remeasureTop = remeasureTop;
  return o;
}

std::vector<TuneTask> twoTasks() {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  auto w2 = parseWorkload("conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1");
  return {{w.canonical, SearchTask(w.dag, target::ansorCpuDefaults(2))},
          {w2.canonical, SearchTask(w2.dag, target::ansorCpuDefaults(2))}};
}

} // namespace

TEST_CASE("the order in which results arrive changes neither the candidates nor the records",
          "[distributed]") {
  auto run = [](bool reverse, std::vector<TuningRecord>* records) {
    auto tasks = twoTasks();
    TuneOptions o = smallRun(32, 11, 2);
    OrderMeasurer m(reverse);
    auto model = costmodel::makeRandomModel(o.seed);
    TuningLog log({}, nullptr);
    tune(tasks, o, m, *model, log, "random");
    *records = log.records();
    return m.batches;
  };
  std::vector<TuningRecord> inOrder, reversed;
  auto a = run(false, &inOrder), b = run(true, &reversed);
  REQUIRE(a.size() >= 4); // four rounds of 8, then the re-measurements
  CHECK(a == b);          // every round proposed the same candidates
  REQUIRE(inOrder.size() == reversed.size());
  auto content = [](const std::vector<TuningRecord>& rs) {
    std::vector<std::string> out;
    for (auto& r : rs)
      out.push_back(r.task + r.stepsKey() + std::to_string(r.median()) +
                    (r.remeasure ? " again" : ""));
    std::sort(out.begin(), out.end());
    return out;
  };
  CHECK(content(inOrder) == content(reversed));
  // The log keeps the arrival order (a killed run loses nothing that had arrived) ...
  CHECK(inOrder.front().stepsKey() != reversed.front().stepsKey());
  // ... and each record says where it was measured.
  for (auto& r : reversed) {
    CHECK((r.rank == 1 || r.rank == 2));
    CHECK(r.host == "node" + std::to_string(r.rank - 1));
  }
  auto line = TuningLog::toLine(reversed.front());
  TuningRecord back;
  std::string err;
  REQUIRE(TuningLog::fromLine(line, &back, &err));
  CHECK(back.host == reversed.front().host);
  CHECK(back.rank == reversed.front().rank);
  CHECK(back.runSeconds == reversed.front().runSeconds);
}

TEST_CASE("a log in memory hands every append to its sink and resumes from its records",
          "[distributed]") {
  auto tasks = twoTasks();
  TuneOptions o = smallRun(16, 3, 0);
  std::vector<TuningRecord> sent;
  OrderMeasurer m(false);
  auto model = costmodel::makeRandomModel(o.seed);
  {
    TuningLog log({}, [&](const TuningRecord& r) { sent.push_back(r); });
    tune(tasks, o, m, *model, log, "random");
    CHECK(sent.size() == 16);
    CHECK(log.records().size() == 16);
  }
  // A worker resumes a task from the records rank 0 sends: only the missing trials are new.
  std::vector<TuningRecord> more;
  TuningLog log(std::vector<TuningRecord>(sent.begin(), sent.begin() + 10),
                [&](const TuningRecord& r) { more.push_back(r); });
  tune(tasks, o, m, *model, log, "random");
  CHECK(more.size() == 6);
  for (auto& r : more)
    for (size_t i = 0; i < 10; ++i)
      CHECK(r.stepsKey() + r.task != sent[i].stepsKey() + sent[i].task);
}

TEST_CASE("the coordinator's messages survive the trip", "[distributed]") {
  runtime::MeasureInput in{"gemm:M=8,N=8,K=8", {sched::SplitStep{2, 0, 8, {4}, true}}, "crash"};
  int64_t id = 0;
  runtime::MeasureInput got;
  REQUIRE(distributed::decodeMeasure(distributed::encodeMeasure(42, in), &id, &got));
  CHECK(id == 42);
  CHECK(got.workload == in.workload);
  CHECK(got.steps == in.steps);
  CHECK(got.inject == "crash");
  runtime::MeasureResult r;
  r.error = runtime::MeasureError::RunTimeout;
  r.message = "run exceeded 10 s";
  r.costs = {1e-3, 2e-3, 3e-3};
  r.buildSeconds = 0.25;
  r.runSeconds = 1.5;
  runtime::MeasureResult back;
  REQUIRE(distributed::decodeResult(distributed::encodeResult(7, r), &id, &back));
  CHECK(id == 7);
  CHECK(back.error == r.error);
  CHECK(back.message == r.message);
  CHECK(back.costs == r.costs);
  CHECK(back.median == Approx(2e-3));
  CHECK(back.buildSeconds == 0.25);
  CHECK(back.runSeconds == 1.5);
  CHECK_FALSE(distributed::decodeResult("{\"id\":1}", &id, &back));
  CHECK_FALSE(distributed::decodeMeasure("[]", &id, &got));
}

TEST_CASE("the cluster simulation schedules a round on the first free worker", "[distributed]") {
  using distributed::roundMakespan;
  CHECK(roundMakespan({1, 1, 1, 1}, 1, 0) == Approx(4));
  CHECK(roundMakespan({1, 1, 1, 1}, 2, 0) == Approx(2));
  CHECK(roundMakespan({1, 1, 1, 1}, 64, 0) == Approx(1));
  CHECK(roundMakespan({3, 1, 1, 1}, 2, 0) == Approx(3)); // the long one on worker 0
  CHECK(roundMakespan({1, 1, 1, 3}, 2, 0) == Approx(4)); // the long one last, on worker 1
  CHECK(roundMakespan({1, 1}, 1, 0.5) == Approx(3));
  CHECK(roundMakespan({}, 4, 0) == 0);

  // Durations: build_s + run_s, or the gap to the task's previous record in older logs.
  std::vector<TuningRecord> rs(3);
  rs[0].task = rs[1].task = "a";
  rs[2].task = "b";
  rs[0].time = 100;
  rs[1].time = 100.75;
  rs[2].time = 101;
  rs[2].buildSeconds = 0.2;
  rs[2].runSeconds = 0.3;
  auto d = distributed::recordDurations(rs);
  CHECK(d[0] == 0);
  CHECK(d[1] == Approx(0.75));
  CHECK(d[2] == Approx(0.5));

  // A replayed run: logged candidates get their logged cost and time; every cluster size sees
  // the same rounds.
  auto tasks = twoTasks();
  TuneOptions o = smallRun(16, 5, 0);
  OrderMeasurer m(false);
  auto model = costmodel::makeRandomModel(o.seed);
  TuningLog first({}, nullptr);
  tune(tasks, o, m, *model, first, "random");
  auto logged = first.records();
  for (auto& r : logged) {
    r.buildSeconds = 0.5;
    r.runSeconds = 0.5;
  }
  distributed::SimulatedCluster cluster(logged, {1, 4});
  auto model2 = costmodel::makeRandomModel(o.seed);
  TuningLog second({}, nullptr);
  tune(tasks, o, cluster, *model2, second, "random");
  CHECK(cluster.replayed() == 16);
  CHECK(cluster.madeUp() == 0);
  REQUIRE(second.records().size() == 16);
  for (size_t i = 0; i < 16; ++i) CHECK(second.records()[i].median() == logged[i].median());
  auto& t = cluster.timelines();
  REQUIRE(t.size() == 2);
  CHECK(t[0].trials == 16);
  CHECK(t[0].rounds == 2);
  // One worker: 16 candidates of 1 s (+ 2 ms each) after each round's search.
  CHECK(t[0].seconds == Approx(t[0].searchSeconds + 16 * 1.002));
  CHECK(t[1].seconds == Approx(t[1].searchSeconds + 2 * 2 * 1.002));
  CHECK(t[1].busySeconds == Approx(16));
}
