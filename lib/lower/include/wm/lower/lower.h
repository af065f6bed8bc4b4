// Lowering: a loop state to a loop nest, as a straight pipeline of passes (lower.cpp):
//
//   infer_bound      regions of compute-at stages (schedule/bound.h)
//   schedule_ops     the loop nest: loops from leaf iterators, attached stages inside their
//                    target loop, reduction init/update, inlining, guards of non-dividing
//                    splits, buffers (compact for attached stages)
//   simplify         index simplification under loop bounds; decided guards removed;
//                    extent-1 loops removed
//   hoist_guards     guards of non-dividing splits tested once per tile: full tiles run an
//                    unguarded copy of the loop body (CPU nests)
//   remove_no_ops    empty sequences, loops and ifs dropped
//
// Each pass can print the IR after it (--print-after-all) and is timed (--time-passes).
#pragma once

#include <wm/lower/stmt.h>
#include <wm/schedule/state.h>

#include <iosfwd>
#include <string>
#include <vector>

namespace wm::lower {

/// A lowered program: arguments (inputs in placeholder order, then outputs) and the body.
struct LoweredFunc {
  std::string name;
  std::vector<ir::Buffer> inputs;
  std::vector<ir::Buffer> outputs;
  Stmt body;
};

struct LowerOptions {
  bool printAfterAll = false; ///< print the IR after each pass to `log`
  bool timePasses = false;    ///< print each pass's time to `log`
  std::ostream* log = nullptr;
};

/// Lowers a state; UserError if it cannot be lowered (open split lengths, ...).
LoweredFunc lower(const sched::State& state, const LowerOptions& opts = {});

std::string toString(const LoweredFunc& f);

// The passes, one entry function each (one file each).
Stmt scheduleOps(const sched::State& state, LoweredFunc* func);
Stmt simplifyStmt(const Stmt& s);
/// Splits serial loops where a select's condition turns (partition_loops.cpp); *changed set
/// when it split one.
Stmt partitionLoops(const Stmt& s, bool* changed = nullptr);
Stmt hoistGuards(const Stmt& s);
Stmt removeNoOps(const Stmt& s);

} // namespace wm::lower
