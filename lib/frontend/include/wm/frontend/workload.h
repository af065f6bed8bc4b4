// Built-in workloads: named operators with parameters, written as a spec
//     op:key=value,key=value
// e.g. `gemm:M=1024,N=1024,K=1024` or `conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1`.
// The list of workloads is one ordered table in workload.cpp (no hidden registration); each
// entry declares its parameters once (name, kind, default, help), and `wmtune workloads`, the
// parser and the tests all read that table.
#pragma once

#include <wm/ir/compute_dag.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace wm {

enum class ParamKind { Int, Float, Shape };
const char* paramKindName(ParamKind k);

struct WorkloadParam {
  std::string name;
  ParamKind kind = ParamKind::Int;
  std::string defaultValue; ///< empty: required
  std::string help;
  int64_t minValue = 1; ///< for Int (and each dimension of a Shape)
};

/// Parsed, validated parameter values of one workload.
class WorkloadArgs {
public:
  int64_t i(const std::string& name) const;
  double f(const std::string& name) const;
  const ir::Shape& shape(const std::string& name) const;

  std::map<std::string, int64_t> ints;
  std::map<std::string, double> floats;
  std::map<std::string, ir::Shape> shapes;
};

struct WorkloadDef {
  std::string name;
  std::string summary;
  std::vector<WorkloadParam> params;
  std::function<ir::ComputeDAG(const WorkloadArgs&)> build;
  std::string example; ///< a spec that works as written
};

/// Every built-in workload, in the order `wmtune workloads` lists them.
const std::vector<WorkloadDef>& workloadDefs();
const WorkloadDef* findWorkload(const std::string& name);

struct Workload {
  std::string spec;      ///< as the user wrote it
  std::string canonical; ///< every parameter, in declared order
  const WorkloadDef* def = nullptr;
  ir::ComputeDAG dag;
};

/// Parses and builds a workload; UserError naming the spec and the bad part otherwise.
Workload parseWorkload(const std::string& spec);

} // namespace wm
