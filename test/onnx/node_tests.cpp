// The ONNX project's node tests (Debian libonnx-testdata) run through wmtune: each model is
// loaded, folded, fused, compiled with the default schedules by the LLVM backend and run by
// the graph executor; every output must match the expected one (|a-b| <= atol + rtol*|b|,
// ONNX's backend-test tolerances loosened for float32 math functions).
//
//   wm_onnx_node_tests DIR [--filter SUBSTRING] [--min-passed N] [--verbose]
//
// A test whose model wmtune refuses (an unsupported op, attribute, type or opset: a user error
// from the loader) is listed as skipped with that reason. Any other outcome than a match is a
// failure. Exit 0 when nothing failed and at least --min-passed tests passed.
#include <wm/codegen/codegen.h>
#include <wm/frontend/graph.h>
#include <wm/frontend/model.h>
#include <wm/runtime/graph_executor.h>
#include <wm/support/error.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace wm;

namespace {

constexpr double kRtol = 1e-3, kAtol = 1e-5;

struct Outcome {
  enum Kind { Passed, Skipped, Failed } kind = Failed;
  std::string reason;
};

std::vector<ir::NDArray> readSet(const fs::path& dir, const std::string& prefix) {
  std::vector<ir::NDArray> r;
  for (int i = 0;; ++i) {
    fs::path f = dir / (prefix + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(f)) break;
    r.push_back(frontend::loadTensorProto(f.string()));
  }
  return r;
}

std::string firstLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

Outcome compare(const std::string& set, const std::vector<ir::NDArray>& got,
                const std::vector<ir::NDArray>& want) {
  if (got.size() != want.size()) return {Outcome::Failed, "output count differs"};
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].shape() != want[o].shape())
      return {Outcome::Failed, set + " output " + std::to_string(o) + ": shape differs"};
    if (got[o].dtype() != want[o].dtype())
      return {Outcome::Failed, set + " output " + std::to_string(o) + ": type differs"};
    for (int64_t k = 0; k < got[o].size(); ++k) {
      double a = got[o].values()[k], b = want[o].values()[k];
      bool ok = (std::isnan(a) && std::isnan(b)) || a == b ||
                std::abs(a - b) <= kAtol + kRtol * std::abs(b);
      if (!ok) {
        std::ostringstream os;
        os << set << " output " << o << " element " << k << ": got " << a << ", want " << b;
        return {Outcome::Failed, os.str()};
      }
    }
  }
  return {Outcome::Passed, ""};
}

std::string reasonOf(const UserError& e) {
  std::string m = e.what();
  size_t colon = m.find(".onnx: "); // the reason is what matters, not the path
  if (colon != std::string::npos) m = m.substr(colon + 7);
  return firstLine(m);
}

// Each data set: load, bind the integer and bool inputs as constants (node tests pass shapes,
// axes, pads and indices as inputs; wmtune compiles them as the static values they are in a
// model), fold, fuse, compile with default schedules, run, compare.
Outcome runTest(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::Failed, "no test data set"};
  for (auto& s : sets) {
    frontend::Program prog;
    frontend::ModelPlan plan;
    std::vector<ir::NDArray> inputs, want;
    try {
      auto g = frontend::loadOnnx((dir / "model.onnx").string());
      auto all = readSet(s, "input");
      want = readSet(s, "output");
      if (all.size() != g.inputs.size())
        return {Outcome::Failed, "the data set has " + std::to_string(all.size()) +
                                     " inputs, the model " + std::to_string(g.inputs.size())};
      auto names = g.inputs;
      for (size_t i = 0; i < names.size(); ++i) {
        if (ir::isFloat(all[i].dtype()))
          inputs.push_back(all[i]);
        else
          frontend::bindInputAsConstant(g, names[i], all[i]);
      }
      prog = frontend::buildProgram(g);
      plan = frontend::planModel(prog);
    } catch (const UserError& e) {
      return {Outcome::Skipped, reasonOf(e)};
    } catch (const std::exception& e) {
      return {Outcome::Failed, std::string("while loading: ") + firstLine(e.what())};
    }
    try {
      static const target::Target target = codegen::resolveTarget({});
      runtime::GraphExecutor exec(prog, plan, {}, target);
      Outcome r = compare(s.filename().string(), exec.run(inputs), want);
      if (r.kind != Outcome::Passed) return r;
    } catch (const std::exception& e) {
      return {Outcome::Failed, std::string("while running: ") + firstLine(e.what())};
    }
  }
  return {Outcome::Passed, ""};
}

std::set<std::string> opsOf(const fs::path& dir) {
  std::set<std::string> ops;
  try {
    auto g = frontend::loadOnnx((dir / "model.onnx").string());
    for (auto& n : g.nodes) ops.insert(n.op);
  } catch (const std::exception&) {
  }
  return ops;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr
        << "usage: wm_onnx_node_tests DIR [--filter SUBSTRING] [--min-passed N] [--verbose]\n";
    return 2;
  }
  fs::path root = argv[1];
  std::string filter;
  int minPassed = 0;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (a == "--min-passed" && i + 1 < argc)
      minPassed = std::stoi(argv[++i]);
    else if (a == "--verbose")
      verbose = true;
    else {
      std::cerr << "wm_onnx_node_tests: unknown argument " << a << "\n";
      return 2;
    }
  }
  if (!fs::is_directory(root)) {
    std::cerr << "wm_onnx_node_tests: " << root << " is not a directory\n";
    return 2;
  }
  std::vector<fs::path> dirs;
  for (auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
        e.path().filename().string().find(filter) != std::string::npos)
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  struct Counts {
    int passed = 0, skipped = 0, failed = 0;
  };
  std::map<std::string, Counts> perOp;
  std::vector<std::pair<std::string, std::string>> skipped, failed;
  int passed = 0;
  for (auto& d : dirs) {
    std::string name = d.filename().string();
    Outcome r = runTest(d);
    auto ops = opsOf(d);
    if (ops.empty()) ops.insert("(unreadable)");
    for (auto& op : ops) {
      auto& c = perOp[op];
      (r.kind == Outcome::Passed    ? c.passed
       : r.kind == Outcome::Skipped ? c.skipped
                                    : c.failed) += 1;
    }
    if (r.kind == Outcome::Passed) ++passed;
    if (r.kind == Outcome::Skipped) skipped.emplace_back(name, r.reason);
    if (r.kind == Outcome::Failed) failed.emplace_back(name, r.reason);
    if (verbose || r.kind == Outcome::Failed)
      std::cout << (r.kind == Outcome::Passed    ? "PASS "
                    : r.kind == Outcome::Skipped ? "SKIP "
                                                 : "FAIL ")
                << name << (r.reason.empty() ? "" : ": " + r.reason) << std::endl;
  }
  std::cout << "\nper op (a test counts for every op its model uses): passed / skipped / failed\n";
  for (auto& [op, c] : perOp)
    if (c.passed || c.failed)
      std::cout << "  " << op << ": " << c.passed << " / " << c.skipped << " / " << c.failed
                << "\n";
  std::cout << "\nskipped tests and why:\n";
  for (auto& [n, why] : skipped) std::cout << "  " << n << ": " << why << "\n";
  std::cout << "\nnode tests: " << dirs.size() << " run, " << passed << " passed, "
            << skipped.size() << " skipped, " << failed.size() << " failed\n";
  for (auto& [n, why] : failed) std::cout << "  FAILED " << n << ": " << why << "\n";
  if (!failed.empty()) return 1;
  if (passed < minPassed) {
    std::cout << "fewer than " << minPassed << " tests passed\n";
    return 1;
  }
  return 0;
}
