// Measurement tests with injected faults: a crashing, an endless and a wrong kernel (and a
// build that hangs, and one that fails, and a kernel that allocates without bound) each give
// their error code, and the next candidate is measured normally by a fresh worker.
#include <wm/codegen/codegen.h>
#include <wm/runtime/measure.h>

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
