// `wmtune measure -w SPEC [--schedule FILE.json]`: builds the schedule (or the naive program)
// in a measurement worker, checks it against the reference and times it.
#include "commands.h"
#include "option_flags.h"

#include <wm/codegen/codegen.h>
#include <wm/frontend/workload.h>
#include <wm/runtime/measure.h>
#include <wm/schedule/default_schedule.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/strings.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace wm::cli {

namespace {

struct MeasureCli {
  std::string spec, schedule;
  runtime::MeasureOptions opts;
  target::TargetOptions target;
  bool json = false;
  std::string inject;
};

} // namespace

Command addMeasureCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("measure", "Build, check and time a schedule on this CPU");
  auto o = std::make_shared<MeasureCli>();
  sub->add_option("-w,--workload", o->spec, "Workload spec op:key=value,...")->required();
  sub->add_option("--schedule", o->schedule,
                  "JSON step list (default: the naive program; on a GPU the default GPU schedule)");
  addOptionFlags(*sub, o->opts, runtime::measureOptionTable());
  addOptionFlags(*sub, o->target, target::targetOptionTable());
  sub->add_flag("--json", o->json, "Print the result as JSON");
  sub->add_option("--inject", o->inject,
                  "Test hook: first measure the schedule with this fault (crash, hang, wrong, "
                  "device_fault), then again with the same measurer")
      ->group(""); // hidden
  return [o]() {
    Workload w = parseWorkload(o->spec);
    target::Target target = runnableTarget(o->target);
    runtime::MeasureInput in{o->spec, readScheduleFile(o->schedule), ""};
    if (o->schedule.empty() && target.isGpu()) in.steps = sched::defaultGpuSchedule(w.dag);
    auto r = sched::replay(w.dag, in.steps);
    if (!r.error.empty())
      WM_USER_ERROR() << o->schedule << ": step " << r.failedStep << ": " << r.error;
    auto measurer = runtime::makeWorkerMeasurer(o->opts, target);
    if (!o->inject.empty()) {
      runtime::MeasureInput faulty = in;
      faulty.inject = o->inject;
      auto f = measurer->measure({faulty})[0];
      std::cout << "injected " << o->inject << ": " << runtime::measureErrorName(f.error) << ": "
                << f.message << "\n";
    }
    auto m = measurer->measure({in})[0];
    double flops = static_cast<double>(w.dag.flops());
    double gflops = m.median > 0 ? flops / m.median * 1e-9 : 0;
    if (o->json) {
      nlohmann::json j = {{"workload", w.canonical}, {"error", runtime::measureErrorName(m.error)},
                          {"message", m.message},    {"median_s", m.median},
                          {"costs", m.costs},        {"gflops", gflops},
                          {"max_error", m.maxError}, {"build_s", m.buildSeconds},
                          {"flops", w.dag.flops()}};
      std::cout << j.dump(2) << "\n";
    } else if (m.error == runtime::MeasureError::None) {
      auto [lo, hi] = std::minmax_element(m.costs.begin(), m.costs.end());
      std::cout << std::fixed << std::setprecision(4) << "workload " << w.canonical << "\n"
                << "latency  " << m.median * 1e3 << " ms median (min " << *lo * 1e3 << ", max "
                << *hi * 1e3 << ", " << m.costs.size() << " runs)\n"
                << std::setprecision(2) << "GFLOP/s  " << gflops << "\n"
                << std::scientific << std::setprecision(2) << "check    max relative error "
                << m.maxError << " (ok)\n"
                << std::fixed << "build    " << m.buildSeconds << " s\n";
    } else {
      std::cout << "workload " << w.canonical << "\nerror    " << runtime::measureErrorName(m.error)
                << ": " << m.message << "\n";
    }
    return m.error == runtime::MeasureError::None ? 0 : 1;
  };
}

} // namespace wm::cli
