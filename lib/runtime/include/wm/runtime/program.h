// Measurement in two halves, as Ansor's ProgramBuilder / ProgramRunner: a builder turns a
// schedule of a task into a program of the target (replay, lower, generate code); a runner
// checks a built program's first run against the task's reference result and times it on a
// Device. The measurement worker of the app (apps/wmtune/cmd_worker.cpp) uses both; so can
// anything else that needs a checked, timed kernel.
#pragma once

#include <wm/ir/compute_dag.h>
#include <wm/lower/gpu.h>
#include <wm/lower/lower.h>
#include <wm/runtime/device.h>
#include <wm/runtime/measure.h>
#include <wm/support/error.h>
#include <wm/target/target.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wm::runtime {

struct BuiltProgram {
  lower::LoweredFunc func;
  std::unique_ptr<Kernel> kernel;
  double buildSeconds = 0;
};

class ProgramBuilder {
public:
  virtual ~ProgramBuilder() = default;
  /// UserError (a build error) when the steps do not replay or the state does not lower.
  virtual BuiltProgram build(const ir::ComputeDAG& dag, const std::vector<sched::Step>& steps) = 0;
};

/// A GPU program's PTX rejected by the device's driver, or over the registers a block may have
/// (Ansor's compile-device error); the driver's JIT log is in the message.
class DeviceCompileError : public UserError {
public:
  using UserError::UserError;
};

/// Builds in this process for the target (lowering, then the target's code generator; for
/// cuda, the kernels of lower::splitKernels as PTX, loaded on this process's GPU).
std::unique_ptr<ProgramBuilder> makeLocalBuilder(const target::Target& target);

/// The device programs of the target run on, in this process.
std::unique_ptr<Device> makeDevice(const target::Target& target);

/// This process's first CUDA GPU (UserError saying why when there is none).
std::unique_ptr<Device> makeCudaDevice();

/// The kernels of p (their PTX: codegen::emitGpu) loaded on this process's GPU, as one Kernel
/// that launches them in order on device pointers (inputs, then outputs); p's temporaries are
/// allocated once, with it. DeviceCompileError when the driver rejects them.
std::unique_ptr<Kernel> loadCudaProgram(const lower::GpuProgram& p, const std::string& ptx);

/// Runs a built program once on the inputs (in dag.placeholders() order, their shapes and types
/// checked by the caller) and returns its outputs.
std::vector<ir::NDArray> runProgram(Device& device, BuiltProgram& program,
                                    const std::vector<ir::NDArray>& inputs);

/// A task's inputs on the device and its reference outputs.
struct TaskData {
  std::vector<DeviceBuffer> inputs;
  std::vector<ir::NDArray> reference;
};

class ProgramRunner {
public:
  /// reference (optional): where the reference result is computed instead (the CPU, for a GPU
  /// runner: an unscheduled program has no GPU schedule).
  ProgramRunner(Device& device, ProgramBuilder& builder, Device* referenceDevice = nullptr,
                ProgramBuilder* referenceBuilder = nullptr)
      : device_(device), builder_(builder), refDevice_(referenceDevice),
        refBuilder_(referenceBuilder) {}
  /// Random inputs (seeded) and the reference result of a task: the unscheduled program, built
  /// by the same builder or the reference one (the property tests check both against the
  /// reference interpreter). Computed once per (key, seed) and kept while the runner lives.
  const TaskData& task(const std::string& key, const ir::ComputeDAG& dag, uint64_t seed);
  /// Checks the first run against the reference, then times the program as the options say.
  /// inject: test hooks "crash", "hang", "wrong", "device_fault" (a kernel writing through a bad
  /// pointer: on a GPU an illegal address).
  MeasureResult run(const TaskData& task, BuiltProgram& program, const MeasureOptions& opts,
                    const std::string& inject = "");

private:
  Device& device_;
  ProgramBuilder& builder_;
  Device* refDevice_;
  ProgramBuilder* refBuilder_;
  std::map<std::string, TaskData> tasks_;
};

} // namespace wm::runtime
