// The one description of the machine a program is tuned for and runs on (DESIGN.md §7): kind
// (llvm: a CPU; cuda: an NVIDIA GPU), the LLVM triple, CPU name and features, cores, vector
// width, cache sizes, and the GPU's limits when the kind is cuda. It is built once from
// `--target` and the flags (makeTarget), stored in every tuning-log record (key()), sent to
// measurement workers (toJson), and read by the sketch rules, the cost models and code
// generation. Nothing else asks the machine about itself.
//
// How to add a target kind: docs/contributing.md ("A target").
#pragma once

#include <wm/support/options.h>

#include <cstdint>
#include <string>

namespace wm::target {

enum class Kind : uint8_t { Llvm, Cuda };
const char* kindName(Kind k);

/// Limits of a GPU (Ansor's HardwareParams for GPUs).
struct GpuLimits {
  std::string arch = "sm_90";
  int sms = 132;
  int maxThreadsPerBlock = 1024;
  int warpSize = 32;
  int maxVthread = 8; ///< warp size / 4
  int sharedBytesPerBlock = 48 * 1024;
  int registersPerBlock = 65536;
  std::string device; ///< the GPU's name as its driver reports it (empty: not read from one)
};

/// What code generation knows about a CPU (LLVM's names; codegen::describeCpu fills it).
struct CpuDescription {
  std::string triple;   ///< e.g. x86_64-pc-linux-gnu
  std::string cpu;      ///< e.g. znver4
  std::string features; ///< e.g. +avx512f,+fma,... (sorted); empty: the CPU's own
  int vectorBytes = 16; ///< widest vector register
};

struct Target {
  Kind kind = Kind::Llvm;
  std::string triple, cpu, features;
  std::string mattr; ///< features the user asked for (part of the key); empty: the CPU's own
  int cores = 1;     ///< threads of parallel loops
  int vectorBytes = 64;
  int cacheLineBytes = 64;
  int64_t l1Bytes = 32 << 10, l2Bytes = 1 << 20, l3Bytes = 32 << 20;
  double ghz = 3.0; ///< nominal clock (never the instantaneous reading: it drifts)
  GpuLimits gpu;    ///< meaningful when kind is Cuda

  bool isGpu() const { return kind == Kind::Cuda; }
  /// Vector registers of a CPU, from its triple and vector width (x86-64: 32 with AVX-512,
  /// else 16; AArch64: 32): what a register tile of accumulators must fit in.
  int vectorRegisters() const;
  /// The identity stored in tuning-log records: "llvm -mcpu=znver4 -num-cores=2" (with
  /// "-mattr=..." when features were given). Records with another key are another target's.
  std::string key() const;
  /// Everything, as one JSON object (what measurement workers receive).
  std::string toJson() const;
  /// Parses toJson's output; false and *error when it is not a target.
  static bool fromJson(const std::string& text, Target* out, std::string* error);
};

/// How a target is asked for on the command line (one option table: options.h).
struct TargetOptions {
  std::string target = "llvm"; ///< kind
  std::string mcpu, mattr;     ///< CPU override (default: this machine's)
  int threads = 0;             ///< kernel threads; 0: all hardware threads
  std::string arch;            ///< cuda: SM version, e.g. sm_90 (default: the device's)
};
const OptionTable<TargetOptions>& targetOptionTable();

/// A CPU target from code generation's description of the CPU and the options; caches and the
/// nominal clock are read from sysfs (defaults where unreadable). `threads` 0 means all of this
/// machine's hardware threads — the one place that rule lives.
Target makeCpuTarget(const CpuDescription& cpu, const TargetOptions& opts);

/// Ansor's default CPU parameters (a 64-byte vector unit) with `cores` cores, for tests and
/// tools that must not depend on the machine they run on.
Target ansorCpuDefaults(int cores);
/// A typical NVIDIA GPU's limits (sm_90).
Target gpuDefaults();
/// gpuDefaults() for SM version `arch` ("sm_" and 2-3 digits; UserError otherwise).
Target gpuTarget(const std::string& arch);

/// Whether a log record written for target `recordKey` is a record of target t. Records of
/// logs written before targets were recorded say only "llvm" and are taken as this machine's.
bool sameTarget(const std::string& recordKey, const Target& t);

/// This machine's hardware threads (at least 1).
int hardwareThreads();

} // namespace wm::target
