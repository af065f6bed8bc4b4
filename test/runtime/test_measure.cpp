// Measurement tests with injected faults: a crashing, an endless and a wrong kernel (and a
// build that hangs, and one that fails, and a kernel that allocates without bound) each give
// their error code, and the next candidate is measured normally by a fresh worker. Timing takes
// a device's own clock (CUDA events) when the device has one.
#include <wm/codegen/codegen.h>
#include <wm/runtime/measure.h>
#include <wm/runtime/timing.h>

#include <catch2/catch.hpp>

using namespace wm;
using runtime::MeasureError;

TEST_CASE("faulty candidates cost one error record each", "[measure]") {
  runtime::MeasureOptions o;
  o.runTimeoutS = 2;
  o.buildTimeoutS = 5;
  o.minRepeatMs = 5;
  auto m =
      runtime::makeWorkerMeasurer(o, codegen::resolveTarget({"llvm", "", "", 1}), WM_WMTUNE_PATH);
  const std::string spec = "gemm:M=32,N=32,K=32";
  std::vector<sched::Step> good{sched::SplitStep{2, 0, 32, {8}, true},
                                sched::AnnotationStep{2, 1, sched::Annotation::Unroll}};
  std::vector<runtime::MeasureInput> in{
      {spec, good, ""}, {spec, good, "crash"},
      {spec, good, ""}, {spec, good, "hang"},
      {spec, good, ""}, {spec, good, "wrong"},
      {spec, good, ""}, {spec, good, "build_hang"},
      {spec, good, ""}, {spec, {sched::SplitStep{2, 9, 32, {8}, true}}, ""},
      {spec, {}, ""},   {spec, good, "alloc_bomb"},
      {spec, good, ""},
  };
  auto r = m->measure(in);
  REQUIRE(r.size() == in.size());
  std::vector<MeasureError> expect{
      MeasureError::None, MeasureError::RunError,    MeasureError::None, MeasureError::RunTimeout,
      MeasureError::None, MeasureError::WrongAnswer, MeasureError::None, MeasureError::BuildTimeout,
      MeasureError::None, MeasureError::BuildError,  MeasureError::None, MeasureError::RunError,
      MeasureError::None};
  for (size_t i = 0; i < r.size(); ++i) {
    INFO("candidate " << i << ": " << runtime::measureErrorName(r[i].error) << " " << r[i].message);
    CHECK(r[i].error == expect[i]);
    if (expect[i] == MeasureError::None) {
      CHECK(r[i].median > 0);
      CHECK(r[i].costs.size() >= 3);
      CHECK(r[i].maxError <= 1e-3);
    }
  }
  CHECK_THAT(r[1].message, Catch::Contains("signal 11"));
  CHECK_THAT(r[9].message, Catch::Contains("step 0"));
  CHECK_THAT(r[11].message, Catch::Contains("out of memory")); // the worker's address-space limit
}

TEST_CASE("timing takes a device's clock when it has one", "[measure]") {
  // A clock that says every call took 2 ms, whatever the wall clock says (CUDA events time the
  // GPU's work, not the launches).
  int calls = 0;
  runtime::BatchClock clock = [&](const std::function<void()>& call, int number) {
    for (int i = 0; i < number; ++i) call();
    return 2e-3;
  };
  runtime::MeasureOptions o;
  o.minRepeatMs = 20;
  o.repeat = 5;
  auto t = runtime::timeCalls([&] { ++calls; }, o, 0, {}, clock);
  CHECK(t.median == Approx(2e-3));
  CHECK(t.samples.size() == 5);
  CHECK(t.number == 10); // 20 ms a sample at 2 ms a call
  CHECK(calls >= 50);
  // Without one: the wall clock, far below 2 ms for an empty call.
  auto wall = runtime::timeCalls([&] { ++calls; }, o);
  CHECK(wall.median < 1e-4);
}
