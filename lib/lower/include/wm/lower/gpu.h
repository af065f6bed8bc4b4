// GPU kernels of a lowered function, and the GPU-semantics emulator that checks them on the CPU.
//
// splitKernels: the sequential loop nest of a GPU state becomes a launch sequence. Every
// top-level statement (one root stage's nest) is one kernel; root intermediate buffers are
// device temporaries of the call. Inside a kernel a ThreadBound loop does not iterate: its
// variable is the block's (blockIdx.*) or the thread's (threadIdx.*) index, guarded when the
// loop is shorter than the launch dimension; nested loops with one tag (a consumer's threadIdx.x
// around its shared cache's cooperative fetch) read the same index. vthread loops become
// unrolled loops of the thread's own code. Launch limits (threads per block, block and grid
// dimensions, shared memory per block) and barriers in divergent code are schedule errors
// (UserError) before anything is compiled.
//
// emulateGpu: runs the kernels as the GPU would, block by block; the threads of a block advance
// together from barrier to barrier (each statement for every active thread), shared buffers
// are the block's, local buffers each thread's. It reports races: two threads of a block
// touching one shared element between two barriers, at least one writing; two threads writing
// one global element, or one reading what another wrote, in one kernel without a barrier of
// their block between. Values are doubles rounded to each buffer's type, like the loop
// interpreter's, so its outputs equal the reference interpreter's for a correct schedule.
#pragma once

#include <wm/ir/interpreter.h>
#include <wm/lower/lower.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace wm::lower {

/// What a launch may ask of the device (Ansor's HardwareParams; target::GpuLimits fills it).
struct GpuLaunchLimits {
  int64_t maxThreadsPerBlock = 1024;
  int64_t sharedBytesPerBlock = 48 * 1024;
  std::array<int64_t, 3> maxBlock{1024, 1024, 64};
  std::array<int64_t, 3> maxGrid{2147483647, 65535, 65535};
};

struct GpuKernel {
  std::string name;
  /// The thread's code (see above). Its buffers: the program's (params), and shared and local
  /// ones allocated inside.
  Stmt body;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t sharedBytes = 0; ///< static shared memory of the block
};

struct GpuProgram {
  LoweredFunc func; ///< the sequential function (its inputs and outputs)
  /// Root intermediate buffers: device memory allocated for a call.
  std::vector<ir::Buffer> temporaries;
  /// In launch order; each takes params() as its arguments.
  std::vector<GpuKernel> kernels;
  /// Every kernel's arguments: inputs, outputs, then temporaries.
  std::vector<ir::Buffer> params() const;
};

/// The kernels of a lowered GPU function; UserError naming the limit or the barrier when the
/// schedule cannot run on a device with these limits.
GpuProgram splitKernels(const LoweredFunc& f, const GpuLaunchLimits& limits = {});

struct GpuEmulation {
  std::vector<ir::NDArray> outputs;
  /// Races, barriers not reached by every thread of a block, accesses out of bounds: one line
  /// each (at most 20, then a count). Empty when the program is race-free.
  std::vector<std::string> problems;
};

/// Runs p on inputs (dense row-major, in p.func.inputs order).
GpuEmulation emulateGpu(const GpuProgram& p, const std::vector<ir::NDArray>& inputs);

} // namespace wm::lower
