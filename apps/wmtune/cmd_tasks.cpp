// `wmtune tasks -w SPEC...`: prints each workload's DAG: ops, shapes, FLOPs, workload key.
// `wmtune tasks model.onnx`: the model's fused tasks: key, ops, output shape, FLOPs, weight.
#include "commands.h"

#include <wm/frontend/model.h>
#include <wm/frontend/workload.h>
#include <wm/ir/printer.h>
#include <wm/support/error.h>
#include <wm/support/strings.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>

namespace wm::cli {

namespace {

struct TasksOptions {
  std::string model;
  std::vector<std::string> specs;
  bool json = false;
};

void printText(const Workload& w) {
  const auto& dag = w.dag;
  std::cout << "workload " << w.canonical << "\n";
  std::cout << "  key    " << dag.workloadKey() << "\n";
  std::cout << "  FLOPs  " << withThousands(dag.flops()) << "\n";
  std::cout << "  ops    " << dag.size() << "\n";
  std::cout << "    #  " << std::left << std::setw(22) << "op" << std::setw(24) << "kind"
            << std::setw(26) << "shape" << std::right << std::setw(16) << "FLOPs"
            << "\n";
  for (size_t i = 0; i < dag.size(); ++i) {
    const auto& op = dag.op(static_cast<int>(i));
    std::string kind = op.isPlaceholder() ? "placeholder" : op.tag;
    if (op.hasReduction()) kind += " (" + std::string(ir::reduceKindName(op.reduce)) + ")";
    std::cout << "    " << std::left << std::setw(3) << i << std::setw(22) << op.name
              << std::setw(24) << kind << std::setw(26) << ir::typeString(op.dtype, op.shape)
              << std::right << std::setw(16) << withThousands(dag.flops(static_cast<int>(i)))
              << "\n";
  }
  std::cout << "  DAG\n";
  for (auto& t : dag.ops()) std::cout << "    " << ir::toString(*t) << "\n";
  std::cout << "\n";
}

nlohmann::json toJson(const Workload& w) {
  const auto& dag = w.dag;
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < dag.size(); ++i) {
    const auto& op = dag.op(static_cast<int>(i));
    ops.push_back({{"name", op.name},
                   {"kind", op.isPlaceholder() ? "placeholder" : "compute"},
                   {"tag", op.tag},
                   {"dtype", ir::dtypeName(op.dtype)},
                   {"shape", op.shape},
                   {"reduce", ir::reduceKindName(op.reduce)},
                   {"flops", dag.flops(static_cast<int>(i))},
                   {"text", ir::toString(op)}});
  }
  return {{"spec", w.spec},
          {"canonical", w.canonical},
          {"key", dag.workloadKey()},
          {"flops", dag.flops()},
          {"ops", ops}};
}

std::string shapeOf(const ir::OperationNode& op) {
  return ir::typeString(op.dtype, op.shape);
}

void printModel(const frontend::Program& p, const frontend::ModelPlan& plan) {
  int64_t total = 0;
  for (auto& t : plan.tasks) total += t.dag.flops() * t.weight;
  std::cout << "model " << p.path << " (opset " << p.opset << ")\n";
  std::cout << "  " << p.numOnnxNodes << " ONNX nodes: " << p.numFolded << " folded to constants, "
            << p.numViews << " views, " << p.numBatchNormsFolded
            << " batch norms folded into convs, " << p.numWeightsTransposed
            << " Gemm weights transposed, " << p.numConvWeightsChannelsLast
            << " conv weights channels-last, " << p.numConvWeightsPadded
            << " conv weights with padded rows, " << p.numWeightsPacked
            << " MatMul weights packed, " << p.nodes.size() << " computed\n";
  std::cout << "  " << plan.groups.size() << " fused subgraphs, " << plan.tasks.size() << " tasks, "
            << withThousands(total) << " FLOPs per inference\n\n";
  std::cout << "  " << std::left << std::setw(4) << "#" << std::setw(18) << "key" << std::setw(36)
            << "ops" << std::setw(26) << "output" << std::right << std::setw(16) << "FLOPs"
            << std::setw(8) << "weight"
            << "\n";
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = plan.tasks[i];
    std::string ops = t.ops.size() > 34 ? t.ops.substr(0, 31) + "..." : t.ops;
    std::cout << "  " << std::left << std::setw(4) << i << std::setw(18) << t.key << std::setw(36)
              << ops << std::setw(26) << shapeOf(*t.dag.outputs()[0]) << std::right << std::setw(16)
              << withThousands(t.dag.flops()) << std::setw(8) << t.weight << "\n";
  }
}

nlohmann::json modelJson(const frontend::Program& p, const frontend::ModelPlan& plan) {
  nlohmann::json tasks = nlohmann::json::array();
  for (auto& t : plan.tasks) {
    nlohmann::json inputs = nlohmann::json::array();
    for (auto& ph : t.dag.placeholders())
      inputs.push_back({{"dtype", ir::dtypeName(ph->dtype)}, {"shape", ph->shape}});
    const auto& out = *t.dag.outputs()[0];
    tasks.push_back({{"key", t.key},
                     {"ops", t.ops},
                     {"weight", t.weight},
                     {"flops", t.dag.flops()},
                     {"output", {{"dtype", ir::dtypeName(out.dtype)}, {"shape", out.shape}}},
                     {"inputs", inputs},
                     {"workload", frontend::onnxTaskSpec(p.path, t.key)}});
  }
  nlohmann::json groups = nlohmann::json::array();
  for (auto& g : plan.groups)
    groups.push_back(
        {{"ops", g.ops}, {"task", plan.tasks[g.task].key}, {"output", p.values[g.output].name}});
  return {{"model", p.path},
          {"opset", p.opset},
          {"onnx_nodes", p.numOnnxNodes},
          {"folded", p.numFolded},
          {"views", p.numViews},
          {"batch_norms_folded", p.numBatchNormsFolded},
          {"weights_transposed", p.numWeightsTransposed},
          {"conv_weights_channels_last", p.numConvWeightsChannelsLast},
          {"conv_weights_padded", p.numConvWeightsPadded},
          {"matmul_weights_packed", p.numWeightsPacked},
          {"tasks", tasks},
          {"groups", groups}};
}

} // namespace

Command addTasksCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("tasks", "Print the tasks of workloads: DAG, shapes, FLOPs, key");
  auto opts = std::make_shared<TasksOptions>();
  sub->add_option("model", opts->model, "ONNX model: print its fused tasks");
  sub->add_option("-w,--workload", opts->specs, "Workload spec op:key=value,... (repeatable)");
  sub->add_flag("--json", opts->json, "Print JSON instead of text");
  return [opts]() {
    if (opts->model.empty() && opts->specs.empty())
      WM_USER_ERROR() << "tasks: give an ONNX model or at least one -w workload";
    if (!opts->model.empty()) {
      auto prog = frontend::buildProgram(frontend::loadOnnx(opts->model));
      auto plan = frontend::planModel(prog);
      if (opts->json)
        std::cout << modelJson(prog, plan).dump(2) << "\n";
      else
        printModel(prog, plan);
      if (opts->specs.empty()) return 0;
    }
    std::vector<Workload> ws;
    for (auto& s : opts->specs) ws.push_back(parseWorkload(s)); // all errors before any output
    if (opts->json) {
      nlohmann::json out = nlohmann::json::array();
      for (auto& w : ws) out.push_back(toJson(w));
      std::cout << out.dump(2) << "\n";
    } else {
      for (auto& w : ws) printText(w);
    }
    return 0;
  };
}

} // namespace wm::cli
