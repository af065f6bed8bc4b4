// Property test (seeded): for every operator of the library on two shapes, 50 random legal
// step sequences lower and run through the loop-nest interpreter to the reference result
// within 1e-4 relative error. Each sequence also round-trips through JSON and replays to the
// same state and the same loop nest as when it was applied step by step.
#include "../support/random_schedule.h"

#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace wm;

TEST_CASE("random schedules of every operator compute the reference result", "[property]") {
  Rng rng(20261202);
  std::map<std::string, int> tagCount;
  std::set<std::string> opsCovered;
  int checked = 0;
  for (const auto& spec : testing::smallWorkloads()) {
    auto w = parseWorkload(spec);
    opsCovered.insert(w.def->name);
    auto inputs = ir::randomInputs(w.dag, rng.next());
    auto expect = ir::evaluateOutputs(w.dag, inputs);
    for (int k = 0; k < 50;) {
      sched::State built;
      auto steps = testing::randomSchedule(w.dag, rng, 14, &built);
      std::string json = sched::stepsToJson(steps);
      INFO(spec << "\nschedule: " << json);
      for (auto& st : steps) tagCount[sched::stepTag(st)]++;
      // Replay of the JSON form gives the same state as applying step by step.
      std::vector<sched::Step> parsed;
      std::string err;
      REQUIRE(sched::stepsFromJson(json, &parsed, &err));
      REQUIRE(parsed == steps);
      auto r = sched::replay(w.dag, parsed);
      REQUIRE(r.error.empty());
      REQUIRE(r.state.toString() == built.toString());
      auto f = lower::lower(r.state);
      REQUIRE(lower::toString(f) == lower::toString(lower::lower(built)));
      if (testing::loopWork(f.body) > 2e5) continue; // too large to interpret quickly; draw again
      auto got = lower::runLowered(f, inputs);
      REQUIRE(got.size() == expect.size());
      for (size_t o = 0; o < got.size(); ++o) {
        INFO("loop nest:\n" << lower::toString(f));
        REQUIRE(ir::maxRelativeError(got[o], expect[o]) <= 1e-4);
      }
      ++checked;
      ++k;
    }
  }
  CHECK(opsCovered.size() == workloadDefs().size());
  CHECK(checked == 50 * static_cast<int>(testing::smallWorkloads().size()));
  // The generator exercised every kind of step.
  for (const char* tag :
       {"AN", "FU", "PR", "RE", "SP", "FSP", "FFSP", "SA", "CA", "CI", "CR", "CHR", "CHW", "RF"}) {
    INFO("step kind " << tag);
    CHECK(tagCount[tag] >= 20);
  }
}
