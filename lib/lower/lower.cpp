// The lowering pipeline: a straight script of passes (see lower.h), each optionally printed
// and timed.
#include <wm/ir/printer.h>
#include <wm/lower/lower.h>

#include <chrono>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace wm::lower {

LoweredFunc lower(const sched::State& state, const LowerOptions& opts) {
  LoweredFunc f;
  const auto& outs = state.dag().outputs();
  f.name = outs.empty() ? "kernel" : outs[0]->name;
  auto run = [&](const char* name, auto&& pass) {
    auto t0 = std::chrono::steady_clock::now();
    f.body = pass();
    auto dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0);
    if (opts.log && opts.timePasses)
      *opts.log << "pass " << std::left << std::setw(14) << name << std::right << std::fixed
                << std::setprecision(3) << dt.count() << " ms\n";
    if (opts.log && opts.printAfterAll)
      *opts.log << "// after " << name << "\n" << toString(f.body) << "\n";
  };
  // infer_bound runs inside schedule_ops, on a private copy of the state.
  run("schedule_ops", [&] { return scheduleOps(state, &f); });
  run("simplify", [&] { return simplifyStmt(f.body); });
  bool partitioned = false;
  run("partition_loops", [&] { return partitionLoops(f.body, &partitioned); });
  if (partitioned) run("simplify", [&] { return simplifyStmt(f.body); });
  run("hoist_guards", [&] { return hoistGuards(f.body); });
  run("remove_no_ops", [&] { return removeNoOps(f.body); });
  return f;
}

std::string toString(const LoweredFunc& f) {
  std::ostringstream os;
  os << "func " << f.name << "(";
  bool first = true;
  for (auto* list : {&f.inputs, &f.outputs})
    for (auto& b : *list) {
      os << (first ? "" : ", ") << b->name << ": " << ir::typeString(b->dtype, b->shape);
      first = false;
    }
  os << ")\n" << toString(f.body);
  return os.str();
}

} // namespace wm::lower
