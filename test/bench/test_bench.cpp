// lib/bench: bench files, the plan of cells, tuning curves from logs, results that survive a
// torn line, and the report's SVG.
#include <wm/bench/bench.h>
#include <wm/bench/config.h>
#include <wm/bench/svg.h>
#include <wm/schedule/steps.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

using namespace wm::bench;

namespace {

FlagProblem anyFlag(const std::string& flag, std::string*) {
  return flag == "bogus" ? FlagProblem{"unknown", true} : FlagProblem{};
}

std::string tmpPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("wm_test_bench_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

} // namespace

TEST_CASE("a bench file plans its cells interleaved per workload", "[bench]") {
  auto file = [](const std::string& aModel) {
    return "name: t\ntrials: [8, 4]\nseeds: [1, 2]\nworkloads:\n  - gemm:M=8,N=8,K=8\n"
           "  - relu:shape=4x4\nconfigs:\n  a: {cost-model: " +
           aModel +
           "}\n  b: {cost-model: random, trials: 16, seeds: [2]}\ncompare: {reference: b}\n";
  };
  auto c = parseBenchConfig(file("ansor"), "t.yaml", anyFlag);
  CHECK(c.reference == "b");
  CHECK(budgetsOf(c, c.configs[0]) == std::vector<int>{4, 8});
  auto cells = planCells(c);
  // per workload: seed 1 (a), seed 2 (a, b)
  REQUIRE(cells.size() == 6);
  std::vector<std::string> order;
  for (auto& cell : cells)
    order.push_back(std::to_string(cell.workload) + cell.config + std::to_string(cell.seed));
  CHECK(order == std::vector<std::string>{"0a1", "0a2", "0b2", "1a1", "1a2", "1b2"});
  CHECK(cells[0].trials == 8);
  CHECK(cells[2].trials == 16);
  // ids: distinct, stable, and a changed flag is a new cell
  std::set<std::string> ids;
  for (auto& cell : cells) ids.insert(cell.id);
  CHECK(ids.size() == cells.size());
  auto again = planCells(parseBenchConfig(file("wm"), "t.yaml", anyFlag));
  CHECK(again[0].id != cells[0].id); // a's flags changed
  CHECK(again[2].id == cells[2].id); // b's did not
  auto args = tuneArgs(c, cells[2], "l.jsonl", "s.json");
  CHECK(std::find(args.begin(), args.end(), "--cost-model") != args.end());
  CHECK(std::find(args.begin(), args.end(), "16") != args.end());
}

TEST_CASE("bench file errors name the line and column", "[bench]") {
  auto fails = [](const std::string& text, const std::string& where) {
    try {
      parseBenchConfig(text, "f.yaml", anyFlag);
      FAIL("accepted: " << text);
    } catch (const wm::UserError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(where) != std::string::npos);
    }
  };
  std::string w = "name: t\nworkloads:\n  - gemm:M=8,N=8,K=8\n";
  fails(w + "configs: {a: {bogus: 1}}\n", "f.yaml:4:15: unknown");
  fails(w + "configs: {a: {}}\nseeds: -1\n", "f.yaml:5:8:");
  fails(w + "configs: {a: {}, b: {}}\ncompare: {reference: c}\n", "f.yaml:5:22:");
  fails("name: t\nconfigs: {a: {}}\n", "'workloads' must be a non-empty list");
  fails(w + "configs: {a: {}}\nbaselines:\n  - {name: x}\n", "f.yaml:6:5: a baseline needs");
}

TEST_CASE("the tuning curve is the best so far per distinct trial", "[bench]") {
  std::string path = tmpPath("curve.jsonl");
  std::remove(path.c_str());
  {
    wm::search::TuningLog log(path, wm::search::TuningLog::Mode::Append);
    auto rec = [&](const std::string& task, int split, double cost, bool remeasure = false) {
      wm::search::TuningRecord r;
      r.task = task;
      r.workload = "gemm:M=8,N=8,K=8";
      r.steps = {wm::sched::SplitStep{2, 0, 8, {split}, true}};
      if (cost > 0)
        r.costs = {cost};
      else
        r.error = "run_error";
      r.remeasure = remeasure;
      log.append(r);
    };
    rec("t1", 2, 3.0);
    rec("t1", 4, 0);   // an error: a trial, best unchanged
    rec("t1", 2, 1.0); // the same state again: not a trial
    rec("t1", 8, 2.0);
    rec("t1", 8, 0.5, true); // a re-measure: not a trial
  }
  auto c = tuningCurve(path, {});
  CHECK(c == std::vector<double>{3.0, 3.0, 2.0});
  // weighted tasks: infinite until both have a best
  auto m = tuningCurve(path, {{"t1", 2.0}, {"t2", 1.0}});
  REQUIRE(m.size() == 3);
  CHECK(std::isinf(m[0]));
  std::remove(path.c_str());
}

TEST_CASE("results keep every finished record and skip a torn last line", "[bench]") {
  std::string path = tmpPath("results.jsonl");
  std::remove(path.c_str());
  appendResult(path, {{"type", "run"}, {"n", 1}});
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"type":"cell","id":"x)"; // a kill mid-write
  }
  CHECK(readResults(path).size() == 1);
  appendResult(path, {{"type", "cell"}, {"id", "y"}}); // the torn line is cut off first
  auto r = readResults(path);
  REQUIRE(r.size() == 2);
  CHECK(r[1]["id"] == "y");
  {
    std::ofstream out(path, std::ios::app);
    out << "garbage\n"
        << R"({"type":"end"})"
        << "\n";
  }
  CHECK_THROWS_AS(readResults(path), wm::UserError); // a bad line that is not the last
  std::remove(path.c_str());
}

TEST_CASE("plots escape their text and skip points that are not finite", "[bench]") {
  LinePlot p;
  p.title = "a<b & \"c\"";
  p.xLabel = "trials";
  p.yLabel = "ms";
  p.logX = true;
  p.steps = true;
  p.series.push_back({"s", {1, 2, 4}, {INFINITY, 2.0, 1.0}, {}, {}});
  p.refs.push_back({"torch", 1.5});
  std::string svg = renderSvg(p);
  CHECK(svg.find("a&lt;b &amp; &quot;c&quot;") != std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.rfind("</svg>") != std::string::npos);
  BarChart b{"t", "x", {{"a", 1.2, 1.0, 1.5}}, 1.0};
  CHECK(renderSvg(b).find("1.20") != std::string::npos);
}
