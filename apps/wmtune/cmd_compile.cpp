// `wmtune compile -w SPEC [--schedule FILE.json] --emit loops [--check]`: applies a schedule
// (a JSON step list, the format the tuning log stores) to a workload, lowers it and prints the
// loop nest; --check runs the loop-nest interpreter against the reference interpreter.
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/ir/printer.h>
#include <wm/lower/gpu.h>
#include <wm/lower/loop_interpreter.h>
#include <wm/lower/lower.h>
#include <wm/schedule/default_schedule.h>
#include <wm/schedule/steps.h>
#include <wm/search/heuristic.h>
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

namespace wm::cli {

namespace {

struct CompileOptions {
  std::string spec;
  std::string schedule;
  std::string emit = "loops";
  bool check = false;
  bool printAfterAll = false;
  bool timePasses = false;
  uint64_t seed = 0;
  std::string output;
  target::TargetOptions target;
};

void writeOrPrint(const std::string& output, const std::string& text) {
  if (!output.empty())
    writeFileAtomically(output, text);
  else
    std::cout << text;
}

// --target cuda: the kernels of the lowered function, as loops, LLVM IR or PTX, and --check in
// the GPU-semantics emulator. Needs no GPU.
int compileForGpu(const CompileOptions& o, const Workload& w, const lower::LoweredFunc& f) {
  target::Target t = codegen::resolveTarget(o.target);
  lower::GpuProgram p;
  try {
    p = lower::splitKernels(f, codegen::gpuLaunchLimits(t));
  } catch (const UserError& e) {
    WM_USER_ERROR() << (o.schedule.empty() ? w.spec : o.schedule) << ": " << e.what();
  }
  if (o.emit == "loops") {
    std::ostringstream os;
    for (auto& b : p.temporaries)
      os << "temporary " << b->name << ": " << ir::typeString(b->dtype, b->shape) << "\n";
    for (auto& k : p.kernels)
      os << "kernel " << k.name << " grid (" << k.grid[0] << ", " << k.grid[1] << ", " << k.grid[2]
         << ") block (" << k.block[0] << ", " << k.block[1] << ", " << k.block[2] << ") shared "
         << k.sharedBytes << " bytes\n"
         << lower::toString(k.body);
    writeOrPrint(o.output, os.str());
  } else if (o.emit == "llvm" || o.emit == "llvm-raw" || o.emit == "ptx" || o.emit == "asm") {
    auto kind = o.emit == "ptx" || o.emit == "asm" ? codegen::EmitKind::Assembly
                                                   : codegen::EmitKind::LlvmIr;
    writeOrPrint(o.output, codegen::emitGpu(p, t, kind, o.emit != "llvm-raw"));
  } else if (o.emit == "obj") {
    WM_USER_ERROR() << "--emit obj: a GPU program is PTX (--emit ptx), not an object file";
  }
  if (!o.check) return 0;
  auto inputs = ir::randomInputs(w.dag, o.seed);
  auto expect = ir::evaluateOutputs(w.dag, inputs);
  auto got = lower::emulateGpu(p, inputs);
  for (auto& problem : got.problems) std::cout << "emulator: " << problem << "\n";
  double err = 0;
  for (size_t i = 0; i < got.outputs.size(); ++i)
    err = std::max(err, ir::maxRelativeError(got.outputs[i], expect[i]));
  bool ok = err <= 1e-4 && got.problems.empty();
  std::cout << "check (GPU emulator, " << p.kernels.size() << " kernels): max relative error "
            << err << (got.problems.empty() ? "" : ", races or faults")
            << (ok ? " (ok)" : " (MISMATCH)") << "\n";
  return ok ? 0 : 1;
}

} // namespace

std::vector<sched::Step> readScheduleFile(const std::string& path) {
  if (path.empty()) return {};
  std::ifstream in(path);
  if (!in) WM_USER_ERROR() << path << ": cannot read the schedule file";
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<sched::Step> steps;
  std::string err;
  if (!sched::stepsFromJson(ss.str(), &steps, &err)) WM_USER_ERROR() << path << ": " << err;
  return steps;
}

Command addCompileCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("compile", "Apply a schedule to a workload and lower it");
  auto o = std::make_shared<CompileOptions>();
  sub->add_option("-w,--workload", o->spec, "Workload spec op:key=value,...")->required();
  sub->add_option("--schedule", o->schedule,
                  "JSON step list; 'heuristic': the schedule `run` uses without a log (CPU; "
                  "tuning measures it first); 'default': inline and parallel outer loops, "
                  "`run --untuned naive` (default: no steps, the naive program)");
  sub->add_option("--emit", o->emit,
                  "What to produce: loops (lowered loop nest; cuda: its kernels), state, steps, "
                  "llvm (optimized LLVM IR), llvm-raw (before optimization), asm, obj, ptx (cuda)")
      ->check(CLI::IsMember({"loops", "state", "steps", "llvm", "llvm-raw", "asm", "obj", "ptx"}))
      ->capture_default_str();
  sub->add_option("-o,--output", o->output,
                  "Write the emitted text or object here instead of stdout");
  addOptionFlags(*sub, o->target, target::targetOptionTable(), {"target", "mcpu", "mattr", "arch"});
  sub->add_flag("--check", o->check,
                "Run the loop nest (cuda: its kernels in the GPU-semantics emulator, which also "
                "reports races) and compare with the reference interpreter");
  sub->add_flag("--print-after-all", o->printAfterAll, "Print the IR after every lowering pass");
  sub->add_flag("--time-passes", o->timePasses, "Print the time of every lowering pass");
  sub->add_option("--seed", o->seed, "Seed of the random inputs of --check")->capture_default_str();
  return [o]() {
    // a built-in workload, or a task of a model (onnx:MODEL#KEY, as tune's logs name them)
    Workload w;
    if (o->spec.rfind("onnx:", 0) == 0)
      w = Workload{o->spec, o->spec, nullptr, frontend::workloadDag(o->spec)};
    else
      w = parseWorkload(o->spec);
    std::vector<sched::Step> steps;
    if (o->schedule == "default") {
      steps = o->target.target == "cuda" ? sched::defaultGpuSchedule(w.dag)
                                         : sched::defaultSchedule(w.dag);
    } else if (o->schedule == "heuristic") {
      if (o->target.target == "cuda")
        WM_USER_ERROR() << "--schedule heuristic: CPU targets only (use 'default' for cuda)";
      auto h =
          search::heuristicSchedule(search::SearchTask(w.dag, codegen::resolveTarget(o->target)));
      steps = h ? *h : sched::defaultSchedule(w.dag);
    } else
      steps = readScheduleFile(o->schedule);
    auto r = sched::replay(w.dag, steps);
    if (!r.error.empty())
      WM_USER_ERROR() << o->schedule << ": step " << r.failedStep << " ("
                      << sched::toString(steps[r.failedStep]) << "): " << r.error;
    if (o->emit == "state") std::cout << r.state.toString();
    if (o->emit == "steps") {
      for (size_t i = 0; i < steps.size(); ++i)
        std::cout << i << ": " << sched::toString(steps[i]) << "\n";
    }
    lower::LowerOptions lo;
    lo.printAfterAll = o->printAfterAll;
    lo.timePasses = o->timePasses;
    lo.log = &std::cerr;
    lower::LoweredFunc f;
    try {
      f = lower::lower(r.state, lo);
    } catch (const UserError& e) {
      WM_USER_ERROR() << (o->schedule.empty() ? w.spec : o->schedule) << ": " << e.what();
    }
    if (o->target.target == "cuda") return compileForGpu(*o, w, f);
    if (!o->target.arch.empty())
      WM_USER_ERROR() << "--arch " << o->target.arch << ": only for --target cuda";
    if (o->emit == "ptx") WM_USER_ERROR() << "--emit ptx: PTX is for --target cuda";
    std::string text;
    if (o->emit == "loops") text = lower::toString(f);
    if (o->emit == "llvm" || o->emit == "llvm-raw" || o->emit == "asm" || o->emit == "obj") {
      auto target = codegen::resolveTarget(o->target);
      auto kind = o->emit == "asm"   ? codegen::EmitKind::Assembly
                  : o->emit == "obj" ? codegen::EmitKind::Object
                                     : codegen::EmitKind::LlvmIr;
      text = codegen::emit(f, target, kind, o->emit != "llvm-raw");
      if (o->emit == "obj" && o->output.empty())
        WM_USER_ERROR() << "--emit obj writes binary code: give -o FILE";
    }
    if (!o->output.empty()) {
      writeFileAtomically(o->output, text);
    } else {
      std::cout << text;
    }
    if (o->check) {
      auto inputs = ir::randomInputs(w.dag, o->seed);
      auto expect = ir::evaluateOutputs(w.dag, inputs);
      auto got = lower::runLowered(f, inputs);
      double err = 0;
      for (size_t i = 0; i < got.size(); ++i)
        err = std::max(err, ir::maxRelativeError(got[i], expect[i]));
      bool ok = err <= 1e-4;
      std::cout << "check: max relative error " << err << (ok ? " (ok)" : " (MISMATCH)") << "\n";
      return ok ? 0 : 1;
    }
    return 0;
  };
}

} // namespace wm::cli
