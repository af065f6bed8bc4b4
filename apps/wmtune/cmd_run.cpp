// `wmtune run model.onnx [--log FILE] [--input ...] [--output ...] [--check] [--bench]`: runs
// a whole model with wmtune's kernels (the best record of each task in the log, else the
// default schedule), optionally checked against and timed beside the libtorch reference
// executor.
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/frontend/model.h>
#include <wm/rt/parallel.h>
#include <wm/runtime/graph_executor.h>
#include <wm/runtime/npy.h>
#include <wm/runtime/timing.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>
#include <wm/support/rng.h>
#ifdef WM_HAVE_TORCH_REFERENCE
#include <wm/runtime/torch_reference.h>
#endif

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

namespace wm::cli {

namespace {

struct RunCli {
  std::string model, log;
  std::vector<std::string> inputs, outputs;
  bool check = false, bench = false;
  target::TargetOptions target;
  runtime::MeasureOptions timing = [] {
    runtime::MeasureOptions t;
    t.repeat = 10;
    t.minRepeatMs = 50;
    return t;
  }();
  double tolerance = 1e-3;
  uint64_t seed = 0;
};

/// The best record per task key of the log, for the target.
std::map<std::string, std::vector<sched::Step>> bestSchedules(const std::string& path,
                                                              const target::Target& t) {
  search::TuningLog log(path, search::TuningLog::Mode::Read);
  int other = 0;
  std::map<std::string, std::vector<sched::Step>> out;
  for (auto& [key, rec] : search::bestRecords(log.records(), t, &other)) out[key] = rec->steps;
  if (other > 0)
    spdlog::warn("{}: {} record(s) were measured on another target than '{}'; they are not used",
                 path, other, t.key());
  return out;
}

std::vector<ir::NDArray> readInputs(const RunCli& o, const frontend::Program& p) {
  std::vector<std::optional<ir::NDArray>> in(p.inputs.size());
  size_t positional = 0;
  Rng rng(o.seed);
  auto indexOf = [&](const std::string& name) -> size_t {
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (p.values[p.inputs[i]].name == name) return i;
    WM_USER_ERROR() << "--input " << name << "=...: the model has no input '" << name << "'";
  };
  for (auto& spec : o.inputs) {
    size_t eq = spec.find('=');
    size_t i;
    std::string file = spec;
    if (eq != std::string::npos && spec.size() > 4 && spec.substr(spec.size() - 4) == ".npy" &&
        !std::filesystem::exists(spec)) {
      i = indexOf(spec.substr(0, eq));
      file = spec.substr(eq + 1);
    } else {
      if (positional >= p.inputs.size())
        WM_USER_ERROR() << "--input " << spec << ": the model has only " << p.inputs.size()
                        << " inputs";
      i = positional++;
    }
    if (file == "random") continue;
    ir::NDArray a = runtime::readNpy(file);
    const auto& v = p.values[p.inputs[i]];
    if (a.shape() != v.shape)
      WM_USER_ERROR() << "--input " << file << ": shape does not match input '" << v.name << "'";
    if (a.dtype() != v.dtype)
      WM_USER_ERROR() << "--input " << file << ": element type " << ir::dtypeName(a.dtype())
                      << ", input '" << v.name << "' is " << ir::dtypeName(v.dtype);
    in[i] = std::move(a);
  }
  std::vector<ir::NDArray> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& v = p.values[p.inputs[i]];
    out.push_back(in[i] ? *in[i]
                        : ir::NDArray::random(v.dtype, v.shape, rng,
                                              ir::isFloat(v.dtype) ? -1.0 : 0.0,
                                              ir::isFloat(v.dtype) ? 1.0 : 2.0));
  }
  return out;
}

void writeOutputs(const RunCli& o, const frontend::Program& p,
                  const std::vector<ir::NDArray>& outs) {
  size_t positional = 0;
  for (auto& spec : o.outputs) {
    size_t eq = spec.find('=');
    size_t i = 0;
    std::string file = spec;
    bool named = false;
    if (eq != std::string::npos) {
      std::string name = spec.substr(0, eq);
      for (size_t k = 0; k < p.outputs.size(); ++k)
        if (p.values[p.outputs[k]].name == name) {
          i = k;
          named = true;
        }
      if (named) file = spec.substr(eq + 1);
    }
    if (!named) {
      if (positional >= p.outputs.size())
        WM_USER_ERROR() << "--output " << spec << ": the model has only " << p.outputs.size()
                        << " outputs";
      i = positional++;
    }
    runtime::writeNpy(file, outs[i]);
  }
}

std::string ms(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << s * 1e3;
  return os.str();
}

} // namespace

Command addRunCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "run", "Run an ONNX model with wmtune's kernels; check or time it against libtorch");
  auto o = std::make_shared<RunCli>();
  sub->add_option("model", o->model, "ONNX model")->required();
  sub->add_option("--log", o->log,
                  "Tuning log: each task runs its best record (default schedules otherwise)");
  sub->add_option("--input", o->inputs,
                  "Per graph input, in order: FILE.npy or 'random'; or NAME=FILE.npy (repeatable)");
  sub->add_option("--output", o->outputs,
                  "Per graph output, in order: FILE.npy; or NAME=FILE.npy (repeatable)");
  sub->add_flag("--check", o->check,
                "Compare the outputs with the libtorch reference executor (float64)");
  sub->add_flag("--bench", o->bench,
                "Time the model, and beside it the libtorch reference executor (float32, same "
                "threads: an op-by-op checker, not a speed baseline; see wmtune bench)");
  addOptionFlags(*sub, o->target, target::targetOptionTable());
  addOptionFlags(*sub, o->timing, runtime::measureOptionTable(),
                 {"repeat", "min_repeat_ms", "max_spread", "retries", "pin_threads"});
  sub->add_option("--tolerance", o->tolerance,
                  "Largest relative error --check accepts: |a-b| / max(1, |b|)")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of random inputs")->capture_default_str();
  return [o]() {
    auto graph = frontend::loadOnnx(o->model);
    auto prog = frontend::buildProgram(graph);
    auto plan = frontend::planModel(prog);
    target::Target target = codegen::resolveTarget(o->target);
    int threads = target.cores;
    std::map<std::string, std::vector<sched::Step>> schedules;
    if (!o->log.empty()) schedules = bestSchedules(o->log, target);
    auto inputs = readInputs(*o, prog);
    runtime::GraphExecutor exec(prog, plan, schedules, target);
    const auto& st = exec.stats();
    std::cout << "model " << o->model << ": " << plan.groups.size() << " fused subgraphs, "
              << plan.tasks.size() << " tasks (" << st.tunedKernels << " tuned from the log, "
              << st.kernels - st.tunedKernels << " default schedules), compiled in " << std::fixed
              << std::setprecision(2) << st.compileSeconds << " s; intermediate buffers "
              << st.bufferBytes / 1024 << " KiB planned (" << st.unplannedBytes / 1024
              << " KiB unplanned)\n";
    auto outs = exec.run(inputs);
    for (size_t i = 0; i < outs.size(); ++i) {
      const auto& v = prog.values[prog.outputs[i]];
      double sum = 0;
      for (double x : outs[i].values()) sum += x;
      std::cout << "output " << v.name << " " << ir::dtypeName(v.dtype) << "[";
      for (size_t d = 0; d < v.shape.size(); ++d) std::cout << (d ? "," : "") << v.shape[d];
      std::cout << "] sum " << std::setprecision(6) << sum << "\n";
    }
    writeOutputs(*o, prog, outs);
    int rc = 0;
    if (o->check || o->bench) {
#ifdef WM_HAVE_TORCH_REFERENCE
      if (o->check) {
        runtime::TorchReference ref(graph, /*useDouble=*/true, threads);
        auto want = ref.run(inputs);
        for (size_t i = 0; i < outs.size(); ++i) {
          double maxAbs = 0, maxRel = 0;
          const auto &a = outs[i].values(), &b = want[i].values();
          if (a.size() != b.size())
            WM_CHECK(false) << "output " << i << ": reference has another size";
          for (size_t k = 0; k < a.size(); ++k) {
            double d = std::abs(a[k] - b[k]);
            if (std::isnan(a[k]) != std::isnan(b[k])) d = INFINITY;
            if (std::isnan(d)) d = 0; // both NaN
            maxAbs = std::max(maxAbs, d);
            maxRel = std::max(maxRel, d / std::max(1.0, std::abs(b[k])));
          }
          bool ok = maxRel <= o->tolerance;
          std::cout << "check " << prog.values[prog.outputs[i]].name << ": max abs error "
                    << std::scientific << std::setprecision(3) << maxAbs << ", max relative error "
                    << maxRel << " -> " << (ok ? "ok" : "FAILED") << " (tolerance " << o->tolerance
                    << ")" << std::fixed << "\n";
          if (!ok) rc = 1;
        }
      }
      if (o->bench) {
        if (o->timing.pinThreads) rt::setPinning(true);
        auto ours = runtime::timeCalls([&] { exec.runKernels(); }, o->timing);
        auto kernels = exec.profileKernels(o->timing);
        double sum = 0;
        for (double k : kernels) sum += k;
        runtime::TorchReference ref(graph, /*useDouble=*/false, threads);
        ref.run(inputs);
        auto theirs = runtime::timeCalls([&] { ref.rerun(); }, o->timing);
        std::cout << "bench (" << threads << " threads, median of " << ours.samples.size()
                  << " samples): wmtune " << ms(ours.median) << " ms (IQR " << ms(ours.iqr)
                  << "), libtorch reference executor " << ms(theirs.median) << " ms, ratio "
                  << std::setprecision(2) << theirs.median / ours.median
                  << "x (the reference executor runs op by op, unfused: a checker, not a speed "
                     "baseline; compare with PyTorch and ONNX Runtime through wmtune bench)\n"
                  << "kernels: " << kernels.size() << " kernels timed alone sum to " << ms(sum)
                  << " ms; the whole model takes " << std::setprecision(3) << ours.median / sum
                  << "x that\n";
      }
#else
      WM_USER_ERROR()
          << "--check/--bench need the libtorch reference executor (build with WM_WITH_TORCH=ON)";
#endif
    }
    return rc;
  };
}

} // namespace wm::cli
