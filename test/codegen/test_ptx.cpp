// Every GPU schedule assembles: GPU sketches x annotations (and mutations) over the operator
// library, split into kernels, emitted as PTX by LLVM's NVPTX backend and assembled by the CUDA
// toolkit's `ptxas -arch=sm_90` (WM_PTXAS, else /usr/local/cuda/bin/ptxas, else ptxas on the
// PATH; without one the test says loudly that it skipped). No rejections allowed.
#include "../support/random_schedule.h"

#include <wm/codegen/codegen.h>
#include <wm/frontend/workload.h>
#include <wm/lower/gpu.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/evolution.h>
#include <wm/search/sketch.h>
#include <wm/support/error.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

using namespace wm;
using namespace wm::search;

namespace {

std::string findPtxas() {
  if (const char* p = std::getenv("WM_PTXAS")) return p;
  if (std::filesystem::exists("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  if (std::system("command -v ptxas >/dev/null 2>&1") == 0) return "ptxas";
  return "";
}

lower::GpuLaunchLimits limitsOf(const target::Target& t) {
  lower::GpuLaunchLimits l;
  l.maxThreadsPerBlock = t.gpu.maxThreadsPerBlock;
  l.sharedBytesPerBlock = t.gpu.sharedBytesPerBlock;
  return l;
}

} // namespace

TEST_CASE("PTX of every kernel contains an entry and the launch shape", "[ptx]") {
  auto w = parseWorkload("gemm:M=64,N=64,K=64");
  const target::Target hw = target::gpuDefaults();
  SearchTask task(w.dag, hw);
  auto sk = generateSketches(task);
  Rng rng(4);
  std::optional<sched::State> s;
  while (!s) s = annotate(task, sk[0], rng);
  auto p = lower::splitKernels(lower::lower(*s), limitsOf(hw));
  std::string ptx = codegen::emitGpu(p, hw, codegen::EmitKind::Assembly);
  CHECK_THAT(ptx, Catch::Contains(".target sm_90"));
  CHECK_THAT(ptx, Catch::Contains(".entry " + p.kernels[0].name));
  CHECK_THAT(ptx, Catch::Contains(".maxntid " + std::to_string(p.kernels[0].block[0]) + ", 1, 1"));
  CHECK_THAT(ptx, Catch::Contains("bar.sync"));
  CHECK_THAT(ptx, Catch::Contains(".shared"));
  CHECK_THAT(ptx, Catch::Contains("%ctaid.x") && Catch::Contains("%tid.x"));
}

TEST_CASE("every sampled GPU schedule of every operator assembles with ptxas -arch=sm_90",
          "[ptx][property]") {
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {
    WARN("SKIPPED: no ptxas (install the CUDA toolkit or set WM_PTXAS): GPU schedules were "
         "emitted as PTX but not assembled");
    std::cerr << "*** test_ptx: SKIPPED the ptxas check: no ptxas found ***\n";
  }
  Rng rng(90);
  const target::Target hw = target::gpuDefaults();
  auto dir = std::filesystem::temp_directory_path() / ("wm_ptx_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  int emitted = 0, assembled = 0, overLimits = 0;
  std::vector<std::string> specs = testing::smallWorkloads();
  const size_t small = specs.size();
  // The benchmark's shapes too (two schedules each: their unrolled kernels take longest).
  for (const char* s :
       {"gemm:M=1024,N=1024,K=1024", "batch_matmul:B=12,M=128,N=128,K=64",
        "conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
        "depthwise_conv2d:C=32,H=112,W=112,R=3,S=3,pad=1", "softmax:M=1536,N=128",
        "layer_norm:M=128,N=768", "conv2d:C=16,H=28,W=28,K=32,R=3,S=3,pad=2,dilation=2"})
    specs.push_back(s);
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string& spec = specs[i];
    auto w = parseWorkload(spec);
    SearchTask task(w.dag, hw);
    auto sk = generateSketches(task);
    REQUIRE(!sk.empty());
    int valid = 0;
    for (int k = 0; k < 3000 && valid < (i < small ? 6 : 2); ++k) {
      auto state = annotate(task, sk[rng.uniformInt(0, static_cast<int64_t>(sk.size()) - 1)], rng);
      if (!state) continue;
      std::vector<sched::State> states{*state};
      if (i < small)
        if (auto m = mutate(task, *state, rng)) states.push_back(*m);
      for (auto& st : states) {
        INFO(spec << "\n" << sched::stepsToJson(st.steps()));
        auto f = lower::lower(sched::replay(w.dag, st.steps()).state);
        lower::GpuProgram p;
        try {
          p = lower::splitKernels(f, limitsOf(hw));
        } catch (const UserError& e) {
          // Over a launch limit (shared memory, threads): a schedule error before measurement.
          CHECK_THAT(e.what(), Catch::Contains("the device allows"));
          ++overLimits;
          continue;
        }
        std::string ptx;
        REQUIRE_NOTHROW(ptx = codegen::emitGpu(p, hw, codegen::EmitKind::Assembly));
        ++emitted;
        if (ptxas.empty()) continue;
        auto file = dir / ("k" + std::to_string(emitted) + ".ptx");
        std::ofstream(file) << ptx;
        std::string cmd = ptxas + " -arch=sm_90 -o /dev/null " + file.string() + " 2>" +
                          (dir / "err.txt").string();
        int rc = std::system(cmd.c_str());
        std::ifstream errIn(dir / "err.txt");
        std::string err((std::istreambuf_iterator<char>(errIn)), std::istreambuf_iterator<char>());
        INFO(ptx.substr(0, 4000));
        REQUIRE(err == "");
        REQUIRE(rc == 0);
        std::filesystem::remove(file);
        ++assembled;
      }
      ++valid;
    }
    CHECK(valid > 0);
  }
  std::filesystem::remove_all(dir);
  CHECK(emitted >= 500);
  CHECK(overLimits < emitted / 4); // the annotator's own checks keep most samples launchable
  if (!ptxas.empty()) CHECK(assembled == emitted);
}
