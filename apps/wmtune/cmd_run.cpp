// `wmtune run model.onnx [--log FILE] [--input ...] [--output ...] [--check] [--bench]`: runs
// a whole model with wmtune's kernels (the best record of each task in the log, else the
// default schedule), optionally checked against and timed beside the libtorch reference
// executor. `wmtune run -w SPEC` runs one workload's kernel the same way (checked against the
// reference interpreter): what exported kernels are compared with.
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/costmodel/factory.h>
#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/rt/parallel.h>
#include <wm/runtime/graph_executor.h>
#include <wm/runtime/npy.h>
#include <wm/runtime/program.h>
#include <wm/runtime/timing.h>
#include <wm/schedule/default_schedule.h>
#include <wm/search/evolution.h>
#include <wm/search/tuning_log.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/rng.h>
#ifdef WM_HAVE_TORCH_REFERENCE
#include <wm/runtime/torch_reference.h>
#endif

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
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
  std::string model, log, workload, benchJson;
  std::string untuned = "heuristic";
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

/// A graph input or output, or a workload's placeholder or output: what --input/--output name.
struct TensorDecl {
  std::string name;
  ir::DType dtype;
  ir::Shape shape;
};

std::vector<TensorDecl> modelInputs(const frontend::Program& p) {
  std::vector<TensorDecl> d;
  for (int v : p.inputs) d.push_back({p.values[v].name, p.values[v].dtype, p.values[v].shape});
  return d;
}
std::vector<TensorDecl> modelOutputs(const frontend::Program& p) {
  std::vector<TensorDecl> d;
  for (int v : p.outputs) d.push_back({p.values[v].name, p.values[v].dtype, p.values[v].shape});
  return d;
}

std::vector<ir::NDArray> readInputs(const RunCli& o, const std::vector<TensorDecl>& decls) {
  std::vector<std::optional<ir::NDArray>> in(decls.size());
  size_t positional = 0;
  Rng rng(o.seed);
  auto indexOf = [&](const std::string& name) -> size_t {
    for (size_t i = 0; i < decls.size(); ++i)
      if (decls[i].name == name) return i;
    WM_USER_ERROR() << "--input " << name << "=...: there is no input '" << name << "'";
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
      if (positional >= decls.size())
        WM_USER_ERROR() << "--input " << spec << ": there are only " << decls.size() << " inputs";
      i = positional++;
    }
    if (file == "random") continue;
    ir::NDArray a = runtime::readNpy(file);
    const auto& v = decls[i];
    if (a.shape() != v.shape)
      WM_USER_ERROR() << "--input " << file << ": shape does not match input '" << v.name << "'";
    if (a.dtype() != v.dtype)
      WM_USER_ERROR() << "--input " << file << ": element type " << ir::dtypeName(a.dtype())
                      << ", input '" << v.name << "' is " << ir::dtypeName(v.dtype);
    in[i] = std::move(a);
  }
  std::vector<ir::NDArray> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& v = decls[i];
    out.push_back(in[i] ? *in[i]
                        : ir::NDArray::random(v.dtype, v.shape, rng,
                                              ir::isFloat(v.dtype) ? -1.0 : 0.0,
                                              ir::isFloat(v.dtype) ? 1.0 : 2.0));
  }
  return out;
}

void writeOutputs(const RunCli& o, const std::vector<TensorDecl>& decls,
                  const std::vector<ir::NDArray>& outs) {
  size_t positional = 0;
  for (auto& spec : o.outputs) {
    size_t eq = spec.find('=');
    size_t i = 0;
    std::string file = spec;
    bool named = false;
    if (eq != std::string::npos) {
      std::string name = spec.substr(0, eq);
      for (size_t k = 0; k < decls.size(); ++k)
        if (decls[k].name == name) {
          i = k;
          named = true;
        }
      if (named) file = spec.substr(eq + 1);
    }
    if (!named) {
      if (positional >= decls.size())
        WM_USER_ERROR() << "--output " << spec << ": there are only " << decls.size() << " outputs";
      i = positional++;
    }
    runtime::writeNpy(file, outs[i]);
  }
}

/// Prints an output's type and element sum (what `run` shows of every output).
void printOutput(const TensorDecl& d, const ir::NDArray& a) {
  double sum = 0;
  for (double x : a.values()) sum += x;
  std::cout << "output " << d.name << " " << ir::dtypeName(d.dtype) << "[";
  for (size_t i = 0; i < d.shape.size(); ++i) std::cout << (i ? "," : "") << d.shape[i];
  std::cout << "] sum " << std::setprecision(6) << sum << "\n";
}

/// `run -w SPEC`: the workload's kernel (the log's best record, else the default schedule) on
/// the inputs; --check compares with the reference interpreter.
int runWorkload(const RunCli& o) {
  if (o.bench)
    WM_USER_ERROR() << "--bench times models; time a workload's schedule with wmtune measure";
  Workload w = parseWorkload(o.workload);
  target::Target target = runnableTarget(o.target);
  std::string key = w.dag.workloadKey();
  std::vector<sched::Step> steps;
  bool tuned = false;
  if (!o.log.empty()) {
    auto best = bestSchedules(o.log, target);
    if (auto it = best.find(key); it != best.end()) {
      steps = it->second;
      tuned = true;
    }
  }
  if (!tuned)
    steps = target.isGpu() ? sched::defaultGpuSchedule(w.dag) : sched::defaultSchedule(w.dag);
  auto builder = runtime::makeLocalBuilder(target);
  runtime::BuiltProgram prog;
  try {
    prog = builder->build(w.dag, steps);
  } catch (const UserError& e) {
    if (!tuned) throw;
    spdlog::warn("{}: the logged schedule does not build ({}); using the default", o.workload,
                 e.what());
    tuned = false;
    prog = builder->build(w.dag, target.isGpu() ? sched::defaultGpuSchedule(w.dag)
                                                : sched::defaultSchedule(w.dag));
  }
  std::vector<TensorDecl> ins, outs;
  for (const auto& b : prog.func.inputs) ins.push_back({b->name, b->dtype, b->shape});
  for (const auto& t : w.dag.outputs()) outs.push_back({t->name, t->dtype, t->shape});
  auto inputs = readInputs(o, ins);
  auto device = runtime::makeDevice(target);
  auto got = runtime::runProgram(*device, prog, inputs);
  std::cout << "workload " << w.canonical << ": "
            << (tuned ? "the best schedule of " + o.log : std::string("the default schedule"))
            << "\n";
  for (size_t i = 0; i < got.size(); ++i) printOutput(outs[i], got[i]);
  writeOutputs(o, outs, got);
  if (!o.check) return 0;
  auto want = ir::evaluateOutputs(w.dag, inputs);
  int rc = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = ir::maxRelativeError(got[i], want[i]);
    bool ok = err <= o.tolerance;
    std::cout << "check " << outs[i].name << ": max relative error " << std::scientific
              << std::setprecision(3) << err << " -> " << (ok ? "ok" : "FAILED")
              << " (reference interpreter, tolerance " << o.tolerance << ")" << std::fixed << "\n";
    if (!ok) rc = 1;
  }
  return rc;
}

std::string ms(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << s * 1e3;
  return os.str();
}

/// One task's share of a model's kernel time (its groups timed alone, summed).
struct TaskProfile {
  std::string key, ops, source;
  int groups = 0;
  double seconds = 0;
  int64_t flops = 0;
};

/// Per task, slowest first; `source` says where each task's schedule came from.
std::vector<TaskProfile> profileTasks(const frontend::ModelPlan& plan,
                                      const std::vector<double>& kernels,
                                      const std::map<std::string, std::string>& source) {
  std::vector<TaskProfile> out(plan.tasks.size());
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    const auto& task = plan.tasks[t];
    auto it = source.find(task.key);
    out[t].key = task.key;
    out[t].ops = task.ops;
    out[t].source = it == source.end() ? "default" : it->second;
    out[t].flops = task.dag.flops();
  }
  for (size_t g = 0; g < plan.groups.size() && g < kernels.size(); ++g) {
    auto& p = out[plan.groups[g].task];
    p.seconds += kernels[g];
    p.groups += 1;
  }
  std::stable_sort(out.begin(), out.end(), [](const TaskProfile& a, const TaskProfile& b) {
    return a.seconds > b.seconds;
  });
  return out;
}

/// The slowest tasks, as --bench prints them.
void printTaskProfile(const std::vector<TaskProfile>& tasks, double sum) {
  std::cout << "slowest tasks (kernels timed alone, per task over its groups):\n";
  for (size_t i = 0; i < tasks.size() && i < 8; ++i) {
    const auto& t = tasks[i];
    double gflops = t.seconds > 0 ? t.groups * static_cast<double>(t.flops) / t.seconds / 1e9 : 0;
    std::cout << "  " << std::setw(9) << ms(t.seconds) << " ms " << std::setw(5)
              << std::setprecision(1) << 100.0 * t.seconds / std::max(sum, 1e-12) << "%  "
              << std::setw(7) << std::setprecision(1) << gflops << " GFLOP/s  x" << t.groups << "  "
              << t.source << "  " << t.ops << "  " << t.key << "\n";
  }
  std::cout << std::setprecision(3);
}

/// --bench-json: the figures --bench printed, for `wmtune bench` (written whole).
void writeBenchJson(const RunCli& o, const target::Target& t, const runtime::Timing& ours,
                    const std::vector<double>& kernels, const runtime::Timing* reference,
                    const std::vector<TaskProfile>& tasks) {
  if (o.benchJson.empty()) return;
  double sum = 0;
  for (double k : kernels) sum += k;
  nlohmann::json j = {{"model", o.model},
                      {"log", o.log},
                      {"target", t.key()},
                      {"threads", t.cores},
                      {"ms", ours.median * 1e3},
                      {"iqr_ms", ours.iqr * 1e3},
                      {"samples", ours.samples.size()},
                      {"kernels", kernels.size()},
                      {"kernels_sum_ms", sum * 1e3}};
  if (reference) j["reference_executor_ms"] = reference->median * 1e3;
  nlohmann::json jt = nlohmann::json::array();
  for (const auto& p : tasks)
    jt.push_back({{"key", p.key},
                  {"ops", p.ops},
                  {"source", p.source},
                  {"groups", p.groups},
                  {"ms", p.seconds * 1e3},
                  {"flops", p.flops}});
  j["tasks"] = jt;
  writeFileAtomically(o.benchJson, j.dump(1) + "\n");
}

} // namespace

Command addRunCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "run", "Run an ONNX model with wmtune's kernels; check or time it against libtorch");
  auto o = std::make_shared<RunCli>();
  auto* model = sub->add_option("model", o->model, "ONNX model");
  sub->add_option("-w,--workload", o->workload,
                  "Run a workload's kernel instead of a model (its best record in --log, else "
                  "the default schedule); --check compares with the reference interpreter")
      ->excludes(model);
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
  sub->add_option("--untuned", o->untuned,
                  "Tasks the log has no record of: heuristic (tiled, vectorized and parallel "
                  "by fixed rules), guess (the world model's pick of schedules it searches "
                  "without measuring) or naive (inline, parallel outer loops)")
      ->check(CLI::IsMember({"guess", "heuristic", "naive"}))
      ->capture_default_str();
  sub->add_option("--bench-json", o->benchJson,
                  "With --bench: also write the timings to FILE as JSON (ms: the whole model, "
                  "kernels_sum_ms, reference_executor_ms); what wmtune bench records");
  addOptionFlags(*sub, o->target, target::targetOptionTable());
  addOptionFlags(*sub, o->timing, runtime::measureOptionTable(),
                 {"repeat", "min_repeat_ms", "max_spread", "retries", "pin_threads"});
  sub->add_option("--tolerance", o->tolerance,
                  "Largest relative error --check accepts: |a-b| / max(1, |b|)")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of random inputs")->capture_default_str();
  return [o]() {
    if (!o->workload.empty()) return runWorkload(*o);
    if (o->model.empty()) WM_USER_ERROR() << "run: give an ONNX model or -w SPEC";
    if (!o->benchJson.empty()) {
      if (!o->bench) WM_USER_ERROR() << "--bench-json FILE needs --bench";
      checkWritable(o->benchJson, "--bench-json");
    }
    auto graph = frontend::loadOnnx(o->model);
    auto prog = frontend::buildProgram(graph);
    auto plan = frontend::planModel(prog);
    target::Target target = runnableTarget(o->target);
    int threads = target.cores;
    std::map<std::string, std::vector<sched::Step>> schedules;
    if (!o->log.empty()) schedules = bestSchedules(o->log, target);
    auto g0 = std::chrono::steady_clock::now();
    std::map<std::string, std::string> source;
    for (const auto& task : plan.tasks)
      if (schedules.count(task.key)) source[task.key] = "log";
    int guessed = o->untuned == "guess"       ? guessUntuned(plan, target, o->seed, &schedules)
                  : o->untuned == "heuristic" ? heuristicUntuned(plan, target, &schedules)
                                              : 0;
    for (const auto& task : plan.tasks)
      if (schedules.count(task.key) && !source.count(task.key)) source[task.key] = o->untuned;
    double guessSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
    auto inputs = readInputs(*o, modelInputs(prog));
    runtime::GraphExecutor exec(prog, plan, schedules, target);
    const auto& st = exec.stats();
    int tunedFromLog = st.tunedKernels - std::min(st.tunedKernels, guessed);
    std::cout << "model " << o->model << ": " << plan.groups.size() << " fused subgraphs, "
              << plan.tasks.size() << " tasks (" << tunedFromLog << " tuned from the log, ";
    if (guessed && o->untuned == "guess")
      std::cout << guessed << " guessed by the world model in " << std::fixed
                << std::setprecision(2) << guessSeconds << " s, ";
    else if (guessed)
      std::cout << guessed << " heuristic, ";
    std::cout << st.kernels - st.tunedKernels << " default schedules), compiled in " << std::fixed
              << std::setprecision(2) << st.compileSeconds << " s; intermediate buffers "
              << st.bufferBytes / 1024 << " KiB planned (" << st.unplannedBytes / 1024
              << " KiB unplanned)\n";
    auto outs = exec.run(inputs);
    auto outDecls = modelOutputs(prog);
    for (size_t i = 0; i < outs.size(); ++i) printOutput(outDecls[i], outs[i]);
    writeOutputs(*o, outDecls, outs);
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
      if (o->bench && target.isGpu()) {
        // The whole model as a user calls it: every kernel launched, then waited for.
        auto ours = runtime::timeCalls([&] { exec.runKernels(); }, o->timing);
        auto kernels = exec.profileKernels(o->timing);
        double sum = 0;
        for (double k : kernels) sum += k;
        std::cout << "bench (" << target.key() << ", median of " << ours.samples.size()
                  << " samples): wmtune " << ms(ours.median) << " ms (IQR " << ms(ours.iqr)
                  << ")\nkernels: " << kernels.size()
                  << " kernels timed alone (CUDA events) sum to " << ms(sum)
                  << " ms; the whole model takes " << std::setprecision(3) << ours.median / sum
                  << "x that\n";
        auto tasks = profileTasks(plan, kernels, source);
        printTaskProfile(tasks, sum);
        writeBenchJson(*o, target, ours, kernels, nullptr, tasks);
      } else if (o->bench) {
        rt::setPinning(o->timing.pinThreads);
        auto ours = runtime::timeCalls([&] { exec.runKernels(); }, o->timing);
        auto kernels = exec.profileKernels(o->timing);
        // libtorch's threads inherit the caller's mask: not one core for all of them.
        rt::setPinning(false);
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
        auto tasks = profileTasks(plan, kernels, source);
        printTaskProfile(tasks, sum);
        writeBenchJson(*o, target, ours, kernels, &theirs, tasks);
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
