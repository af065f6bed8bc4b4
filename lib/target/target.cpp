// Targets (see target.h).
#include <wm/support/error.h>
#include <wm/support/strings.h>
#include <wm/target/target.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace wm::target {

namespace {

/// A sysfs cache size ("48K", "1024K", "32M") in bytes; def where unreadable.
int64_t readCacheBytes(int index, int64_t def) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::string s;
  if (!(in >> s) || s.empty()) return def;
  int64_t v = std::atoll(s.c_str());
  if (s.back() == 'K') v <<= 10;
  if (s.back() == 'M') v <<= 20;
  return v > 0 ? v : def;
}

/// The nominal clock: cpufreq's maximum, else the "@ 2.45GHz" of the model name, else def.
/// Never /proc/cpuinfo's "cpu MHz", which is the instantaneous clock and drifts.
double nominalGhz(double def) {
  {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    double khz = 0;
    if (in >> khz && khz > 0) return khz / 1e6;
  }
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t at = line.find('@');
    if (at == std::string::npos) break;
    double ghz = std::atof(line.c_str() + at + 1);
    size_t unit = line.find("GHz", at);
    if (ghz > 0 && unit != std::string::npos) return ghz;
    break;
  }
  return def;
}

} // namespace

const OptionTable<TargetOptions>& targetOptionTable() {
  using T = TargetOptions;
  static const OptionTable<T> t = {
      {"target", "--target", "Target kind", &T::target, {"llvm", "cuda"}},
      {"mcpu", "--mcpu", "Target CPU (default: this machine's)", &T::mcpu},
      {"mattr", "--mattr", "Target features, e.g. +avx2,+fma (default: the CPU's)", &T::mattr},
      {"threads", "--threads", "Kernel threads (0: all cores)", &T::threads, 0, 4096},
      {"arch", "--arch", "cuda: SM version, e.g. sm_90 (default: the device's; sm_90 without one)",
       &T::arch},
  };
  return t;
}

const char* kindName(Kind k) {
  return k == Kind::Cuda ? "cuda" : "llvm";
}

int hardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

std::string Target::key() const {
  std::ostringstream os;
  os << kindName(kind);
  if (kind == Kind::Cuda)
    os << " -arch=" << gpu.arch;
  else {
    os << " -mcpu=" << cpu;
    if (!mattr.empty()) os << " -mattr=" << mattr;
    os << " -num-cores=" << cores;
  }
  return os.str();
}

std::string Target::toJson() const {
  nlohmann::json j = {{"kind", kindName(kind)},
                      {"triple", triple},
                      {"cpu", cpu},
                      {"features", features},
                      {"mattr", mattr},
                      {"cores", cores},
                      {"vector_bytes", vectorBytes},
                      {"cache_line_bytes", cacheLineBytes},
                      {"l1_bytes", l1Bytes},
                      {"l2_bytes", l2Bytes},
                      {"l3_bytes", l3Bytes},
                      {"ghz", ghz},
                      {"gpu",
                       {{"arch", gpu.arch},
                        {"sms", gpu.sms},
                        {"max_threads_per_block", gpu.maxThreadsPerBlock},
                        {"warp_size", gpu.warpSize},
                        {"max_vthread", gpu.maxVthread},
                        {"shared_bytes_per_block", gpu.sharedBytesPerBlock},
                        {"registers_per_block", gpu.registersPerBlock},
                        {"device", gpu.device}}}};
  return j.dump();
}

bool Target::fromJson(const std::string& text, Target* out, std::string* error) {
  try {
    if (jsonDepth(text) > kMaxJsonDepth) throw std::runtime_error("nested too deeply");
    auto j = nlohmann::json::parse(text);
    Target t;
    std::string kind = j.at("kind").get<std::string>();
    if (kind != "llvm" && kind != "cuda")
      throw std::runtime_error("unknown target kind '" + kind + "'");
    t.kind = kind == "cuda" ? Kind::Cuda : Kind::Llvm;
    t.triple = j.at("triple").get<std::string>();
    t.cpu = j.at("cpu").get<std::string>();
    t.features = j.at("features").get<std::string>();
    t.mattr = j.at("mattr").get<std::string>();
    t.cores = j.at("cores").get<int>();
    t.vectorBytes = j.at("vector_bytes").get<int>();
    t.cacheLineBytes = j.at("cache_line_bytes").get<int>();
    t.l1Bytes = j.at("l1_bytes").get<int64_t>();
    t.l2Bytes = j.at("l2_bytes").get<int64_t>();
    t.l3Bytes = j.at("l3_bytes").get<int64_t>();
    t.ghz = j.at("ghz").get<double>();
    const auto& g = j.at("gpu");
    t.gpu.arch = g.at("arch").get<std::string>();
    t.gpu.sms = g.at("sms").get<int>();
    t.gpu.maxThreadsPerBlock = g.at("max_threads_per_block").get<int>();
    t.gpu.warpSize = g.at("warp_size").get<int>();
    t.gpu.maxVthread = g.at("max_vthread").get<int>();
    t.gpu.sharedBytesPerBlock = g.at("shared_bytes_per_block").get<int>();
    t.gpu.registersPerBlock = g.at("registers_per_block").get<int>();
    t.gpu.device = g.value("device", "");
    if (t.cores < 1) throw std::runtime_error("cores must be positive");
    *out = std::move(t);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
}

int Target::vectorRegisters() const {
  if (triple.rfind("aarch64", 0) == 0 || triple.rfind("arm64", 0) == 0) return 32;
  return vectorBytes >= 64 ? 32 : 16;
}

Target makeCpuTarget(const CpuDescription& cpu, const TargetOptions& opts) {
  Target t;
  t.kind = Kind::Llvm;
  t.triple = cpu.triple;
  t.cpu = cpu.cpu;
  t.features = cpu.features;
  t.mattr = opts.mattr;
  t.cores = opts.threads > 0 ? opts.threads : hardwareThreads();
  t.vectorBytes = cpu.vectorBytes;
  t.l1Bytes = readCacheBytes(0, t.l1Bytes);
  t.l2Bytes = readCacheBytes(2, t.l2Bytes);
  t.l3Bytes = readCacheBytes(3, t.l3Bytes);
  t.ghz = nominalGhz(t.ghz);
  return t;
}

Target ansorCpuDefaults(int cores) {
  Target t;
  t.triple = "x86_64-unknown-linux-gnu";
  t.cpu = "generic";
  t.cores = cores;
  return t;
}

Target gpuDefaults() {
  Target t;
  t.kind = Kind::Cuda;
  t.triple = "nvptx64-nvidia-cuda";
  t.cpu = "sm_90";
  t.cores = 1;
  t.vectorBytes = 16;
  return t;
}

Target gpuTarget(const std::string& arch) {
  bool ok = arch.size() >= 5 && arch.size() <= 6 && arch.rfind("sm_", 0) == 0;
  for (size_t i = 3; ok && i < arch.size(); ++i) ok = arch[i] >= '0' && arch[i] <= '9';
  if (!ok || std::stoi(arch.substr(3)) < 50)
    throw UserError("--arch " + arch + ": not an SM version such as sm_90 (sm_50 or newer)");
  Target t = gpuDefaults();
  t.cpu = t.gpu.arch = arch;
  return t;
}

bool sameTarget(const std::string& recordKey, const Target& t) {
  if (recordKey == "llvm") return t.kind == Kind::Llvm; // logs from before targets were recorded
  return recordKey == t.key();
}

} // namespace wm::target
