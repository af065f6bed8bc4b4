// Distributed tuning over MPI (see cluster.h): rank 0's coordinator and the workers' loop.
#include <wm/distributed/cluster.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <deque>

namespace wm::distributed {

using nlohmann::json;

std::string encodeMeasure(int64_t id, const runtime::MeasureInput& in) {
  return json{{"id", id},
              {"workload", in.workload},
              {"steps", json::parse(sched::stepsToJson(in.steps))},
              {"inject", in.inject}}
      .dump();
}

bool decodeMeasure(const std::string& text, int64_t* id, runtime::MeasureInput* in) {
  try {
    auto j = json::parse(text);
    *id = j.at("id").get<int64_t>();
    in->workload = j.at("workload").get<std::string>();
    in->inject = j.value("inject", "");
    std::string err;
    return sched::stepsFromJson(j.at("steps").dump(), &in->steps, &err);
  } catch (const std::exception&) {
    return false;
  }
}

std::string encodeResult(int64_t id, const runtime::MeasureResult& r) {
  return json{{"id", id},
              {"error", runtime::measureErrorName(r.error)},
              {"message", r.message},
              {"costs", r.costs},
              {"iqr", r.iqr},
              {"number", r.number},
              {"max_error", r.maxError},
              {"build_s", r.buildSeconds},
              {"run_s", r.runSeconds}}
      .dump();
}

bool decodeResult(const std::string& text, int64_t* id, runtime::MeasureResult* r) {
  try {
    auto j = json::parse(text);
    *id = j.at("id").get<int64_t>();
    if (!runtime::parseMeasureError(j.at("error").get<std::string>(), &r->error)) return false;
    r->message = j.value("message", "");
    r->costs = j.at("costs").get<std::vector<double>>();
    r->median = runtime::medianOf(r->costs);
    r->iqr = j.value("iqr", 0.0);
    r->number = j.value("number", 1);
    r->maxError = j.value("max_error", 0.0);
    r->buildSeconds = j.value("build_s", 0.0);
    r->runSeconds = j.value("run_s", 0.0);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

namespace {

enum Busy { Free = 0, Measuring = 1, RunningJob = 2 };

class CoordinatorMeasurer : public runtime::Measurer {
public:
  explicit CoordinatorMeasurer(Coordinator& c) : c_(c) {}
  std::vector<runtime::MeasureResult>
  measure(const std::vector<runtime::MeasureInput>& inputs) override {
    std::vector<runtime::MeasureResult> out(inputs.size());
    c_.measureEach(
        inputs, [&](size_t i, const runtime::MeasureResult& r) { out[i] = r; }, nullptr);
    return out;
  }
  void measureEach(const std::vector<runtime::MeasureInput>& inputs, const runtime::ResultFn& done,
                   const std::atomic<bool>* stop) override {
    c_.measureEach(inputs, done, stop);
  }

private:
  Coordinator& c_;
};

std::string unexpected(const Message& m) {
  return "rank 0 got an unexpected message (tag " + std::to_string(static_cast<int>(m.tag)) +
         ") from rank " + std::to_string(m.source);
}

} // namespace

Coordinator::Coordinator(Mpi& mpi) : mpi_(mpi), busy_(static_cast<size_t>(mpi.size()), Free) {
  workers_.resize(static_cast<size_t>(mpi.size() - 1));
  for (int got = 0; got < mpi.size() - 1; ++got) {
    Message m = mpi.receive();
    WM_CHECK(m.tag == Tag::Hello && m.source > 0) << unexpected(m);
    auto j = json::parse(m.payload);
    workers_[static_cast<size_t>(m.source - 1)] = {m.source, j.at("host").get<std::string>(),
                                                   j.at("target").get<std::string>()};
  }
}

Coordinator::~Coordinator() {
  try {
    auto measuring = [&] {
      for (int b : busy_)
        if (b == Measuring) return true;
      return false;
    };
    while (measuring()) {
      Message m = mpi_.receive();
      if (m.tag == Tag::Result) busy_[static_cast<size_t>(m.source)] = Free;
    }
    for (auto& w : workers_) mpi_.send(w.rank, Tag::Stop, "");
    mpi_.peersReleased();
  } catch (const std::exception& e) {
    spdlog::error("stopping the workers: {}", e.what());
  }
}

std::unique_ptr<runtime::Measurer> Coordinator::measurer() {
  return std::make_unique<CoordinatorMeasurer>(*this);
}

void Coordinator::measureEach(const std::vector<runtime::MeasureInput>& inputs,
                              const runtime::ResultFn& done, const std::atomic<bool>* stop) {
  std::vector<int64_t> slot(busy_.size(), -1);
  size_t next = 0;
  int inflight = 0;
  auto dispatch = [&] {
    for (auto& w : workers_) {
      if (next >= inputs.size() || (stop && *stop)) return;
      auto r = static_cast<size_t>(w.rank);
      if (busy_[r] != Free) continue;
      mpi_.send(w.rank, Tag::Measure, encodeMeasure(static_cast<int64_t>(next), inputs[next]));
      busy_[r] = Measuring;
      slot[r] = static_cast<int64_t>(next++);
      ++inflight;
    }
  };
  dispatch();
  while (inflight > 0) {
    Message m = mpi_.receive();
    WM_CHECK(m.tag == Tag::Result) << unexpected(m);
    auto r = static_cast<size_t>(m.source);
    int64_t id = -1;
    runtime::MeasureResult res;
    WM_CHECK(decodeResult(m.payload, &id, &res)) << "rank " << m.source << ": unreadable result";
    WM_CHECK(busy_[r] == Measuring && id == slot[r])
        << "rank " << m.source << " answered candidate " << id << ", not " << slot[r];
    busy_[r] = Free;
    --inflight;
    res.rank = m.source;
    res.host = workers_[r - 1].host;
    dispatch(); // the worker measures the next one while this one is written
    done(static_cast<size_t>(id), res);
  }
}

void Coordinator::runJobs(const std::vector<TaskJob>& jobs, search::TuningLog& log,
                          const std::function<void(const JobReport&)>& done) {
  try {
    std::vector<int> slot(busy_.size(), -1);
    size_t next = 0;
    int running = 0;
    auto dispatch = [&] {
      for (auto& w : workers_) {
        if (next >= jobs.size()) return;
        auto r = static_cast<size_t>(w.rank);
        if (busy_[r] != Free) continue;
        const TaskJob& job = jobs[next];
        json recs = json::array();
        for (auto& rec : job.records) recs.push_back(search::TuningLog::toLine(rec));
        mpi_.send(
            w.rank, Tag::Job,
            json{{"task", job.task}, {"key", job.key}, {"trials", job.trials}, {"records", recs}}
                .dump());
        busy_[r] = RunningJob;
        slot[r] = static_cast<int>(next++);
        ++running;
      }
    };
    dispatch();
    while (running > 0) {
      Message m = mpi_.receive();
      auto r = static_cast<size_t>(m.source);
      WM_CHECK(m.source > 0 && busy_[r] == RunningJob) << unexpected(m);
      if (m.tag == Tag::Record) {
        search::TuningRecord rec;
        std::string err;
        WM_CHECK(search::TuningLog::fromLine(m.payload, &rec, &err))
            << "rank " << m.source << " sent an unreadable record: " << err;
        rec.rank = m.source;
        rec.host = workers_[r - 1].host;
        log.append(rec);
        continue;
      }
      WM_CHECK(m.tag == Tag::JobDone) << unexpected(m);
      auto j = json::parse(m.payload);
      JobReport rep;
      rep.task = jobs[static_cast<size_t>(slot[r])].task;
      rep.rank = m.source;
      rep.host = workers_[r - 1].host;
      rep.searchSeconds = j.value("search_s", 0.0);
      rep.buildSeconds = j.value("build_s", 0.0);
      rep.runSeconds = j.value("run_s", 0.0);
      rep.wallSeconds = j.value("wall_s", 0.0);
      busy_[r] = Free;
      --running;
      dispatch();
      if (done) done(rep);
    }
  } catch (const std::exception& e) {
    // The workers are in the middle of their jobs and cannot be waited for: end the job (the
    // log is complete up to here and resumes it).
    spdlog::error("{}", e.what());
    mpi_.abort(2);
  }
}

void serve(Mpi& mpi, const std::string& targetKey, runtime::Measurer& local, const JobFn& job) {
  try {
    mpi.send(0, Tag::Hello, json{{"host", mpi.host()}, {"target", targetKey}}.dump());
    while (true) {
      Message m = mpi.receive();
      WM_CHECK(m.source == 0) << "rank " << mpi.rank() << " got a message from rank " << m.source;
      if (m.tag == Tag::Stop) return;
      if (m.tag == Tag::Measure) {
        int64_t id = -1;
        runtime::MeasureInput in;
        WM_CHECK(decodeMeasure(m.payload, &id, &in)) << "unreadable measure request";
        runtime::MeasureResult res;
        local.measureEach({in}, [&](size_t, const runtime::MeasureResult& r) { res = r; });
        mpi.send(0, Tag::Result, encodeResult(id, res));
        continue;
      }
      WM_CHECK(m.tag == Tag::Job) << "rank " << mpi.rank() << ": unexpected message";
      auto j = json::parse(m.payload);
      TaskJob tj;
      tj.task = j.at("task").get<int>();
      tj.key = j.at("key").get<std::string>();
      tj.trials = j.at("trials").get<int>();
      for (auto& line : j.at("records")) {
        search::TuningRecord rec;
        std::string err;
        WM_CHECK(search::TuningLog::fromLine(line.get<std::string>(), &rec, &err))
            << "unreadable record from rank 0: " << err;
        tj.records.push_back(std::move(rec));
      }
      search::TuningLog log(tj.records, [&](const search::TuningRecord& rec) {
        mpi.send(0, Tag::Record, search::TuningLog::toLine(rec));
      });
      auto t0 = std::chrono::steady_clock::now();
      search::TuneSummary s = job(tj, log);
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      mpi.send(0, Tag::JobDone,
               json{{"task", tj.task},
                    {"search_s", s.searchSeconds},
                    {"build_s", s.buildSeconds},
                    {"run_s", s.runSeconds},
                    {"wall_s", wall}}
                   .dump());
    }
  } catch (const std::exception& e) {
    mpi.fail(e.what());
  }
}

} // namespace wm::distributed
