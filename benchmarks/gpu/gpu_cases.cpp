// `wm_gpu_cases DIR [--samples N] [--seed S] [SPEC...]`: GPU programs for the device smoke run
// (benchmarks/gpu/README.md). For each workload (default: the GPU benchmark's five), N schedules
// sampled from the GPU sketches like the search's first round, split into kernels within sm_90's
// limits and emitted as PTX: DIR/pNNN.ptx, and DIR/manifest.tsv describing them:
//   workload J SPEC
//   program ID J STEPS_JSON
//   param ID INDEX in|out|tmp NAME ELEMENTS DIMS...     (f32; every kernel takes all params)
//   kernel ID NAME GX GY GZ BX BY BZ SHARED_BYTES       (launched in this order)
// Built here (LLVM); the device needs only the files, a C++ compiler and its driver.
#include <wm/codegen/codegen.h>
#include <wm/frontend/workload.h>
#include <wm/lower/gpu.h>
#include <wm/lower/lower.h>
#include <wm/schedule/steps.h>
#include <wm/search/annotate.h>
#include <wm/search/sketch.h>
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

using namespace wm;

int main(int argc, char** argv) {
  std::string dir;
  int samples = 16;
  uint64_t seed = 1;
  std::vector<std::string> specs;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--samples") && i + 1 < argc)
      samples = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (dir.empty())
      dir = argv[i];
    else
      specs.push_back(argv[i]);
  }
  if (dir.empty() || samples < 1) {
    std::cerr << "usage: wm_gpu_cases DIR [--samples N] [--seed S] [SPEC...]\n";
    return 2;
  }
  if (specs.empty())
    specs = {"gemm:M=1024,N=1024,K=1024", "batch_matmul:B=12,M=128,N=128,K=64",
             "conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
             "depthwise_conv2d:C=32,H=112,W=112,R=3,S=3,pad=1", "softmax:M=1536,N=128"};
  try {
    std::filesystem::create_directories(dir);
    const target::Target hw = target::gpuDefaults();
    const lower::GpuLaunchLimits limits = codegen::gpuLaunchLimits(hw);
    std::ostringstream manifest;
    Rng rng(seed);
    int id = 0;
    for (size_t j = 0; j < specs.size(); ++j) {
      auto w = parseWorkload(specs[j]);
      manifest << "workload " << j << " " << w.spec << "\n";
      search::SearchTask task(w.dag, hw);
      auto sketches = search::generateSketches(task);
      int made = 0;
      for (int attempt = 0; attempt < 100 * samples && made < samples; ++attempt) {
        const auto& sk = sketches[rng.uniformInt(0, static_cast<int64_t>(sketches.size()) - 1)];
        auto s = search::annotate(task, sk, rng);
        if (!s) continue;
        lower::GpuProgram p;
        try {
          p = lower::splitKernels(lower::lower(*s), limits);
        } catch (const UserError&) {
          continue; // over a launch limit: never measured
        }
        std::string ptx = codegen::emitGpu(p, hw, codegen::EmitKind::Assembly);
        char name[32];
        std::snprintf(name, sizeof name, "p%03d", id);
        writeFileAtomically(dir + "/" + name + ".ptx", ptx);
        manifest << "program " << id << " " << j << " " << sched::stepsToJson(s->steps()) << "\n";
        auto params = p.params();
        for (size_t k = 0; k < params.size(); ++k) {
          const auto& b = params[k];
          const char* role = k < p.func.inputs.size()                           ? "in"
                             : k < p.func.inputs.size() + p.func.outputs.size() ? "out"
                                                                                : "tmp";
          manifest << "param " << id << " " << k << " " << role << " " << b->name << " "
                   << b->allocElements();
          for (int64_t d : b->shape) manifest << " " << d;
          manifest << "\n";
        }
        for (auto& k : p.kernels)
          manifest << "kernel " << id << " " << k.name << " " << k.grid[0] << " " << k.grid[1]
                   << " " << k.grid[2] << " " << k.block[0] << " " << k.block[1] << " "
                   << k.block[2] << " " << k.sharedBytes << "\n";
        ++id;
        ++made;
      }
      std::cerr << w.spec << ": " << made << " programs\n";
    }
    writeFileAtomically(dir + "/manifest.tsv", manifest.str());
  } catch (const std::exception& e) {
    std::cerr << "wm_gpu_cases: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
