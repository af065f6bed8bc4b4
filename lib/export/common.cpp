// What kernel and model exports share (see common.h).
#include "common.h"

#include <wm/export/export.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace wm::exporter {

namespace fs = std::filesystem;

namespace {

/// Runs a tool (found on PATH) with its output captured; UserError with the command and its
/// output when it cannot start or fails.
void runTool(const std::vector<std::string>& argv, const std::string& outputFile) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, outputFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  std::string cmd;
  for (auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (rc != 0)
    WM_USER_ERROR() << "cannot run '" << argv[0] << "' (" << std::strerror(rc)
                    << "): exporting a library needs a C compiler and linker (set CC) and, for "
                       "--static, an archiver (set AR)";
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::ifstream in(outputFile);
  std::stringstream out;
  out << in.rdbuf();
  WM_USER_ERROR() << "'" << cmd << "' failed:\n" << out.str();
}

std::string toolFromEnv(const std::string& given, const char* env, const char* fallback) {
  if (!given.empty()) return given;
  const char* v = std::getenv(env);
  return v && *v ? v : fallback;
}

/// Whether every argument buffer is dense row-major (what the header promises).
bool denseArguments(const lower::LoweredFunc& f) {
  auto dense = [](const ir::Buffer& b) {
    int64_t stride = 1;
    for (size_t d = b->shape.size(); d-- > 0;) {
      if (b->strides[d] != stride && b->shape[d] != 1) return false;
      stride *= b->shape[d];
    }
    return b->allocElements() == stride;
  };
  for (auto& b : f.inputs)
    if (!dense(b)) return false;
  for (auto& b : f.outputs)
    if (!dense(b)) return false;
  return true;
}

} // namespace

bool isCIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

/// A C identifier made of s: other characters become '_', a leading digit gets one before it.
std::string toCIdentifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

const char* cType(ir::DType t) {
  switch (t) {
  case ir::DType::F32: return "float";
  case ir::DType::F16: return "uint16_t"; // IEEE binary16 bits
  case ir::DType::I32: return "int32_t";
  case ir::DType::I64: return "int64_t";
  case ir::DType::Bool: return "uint8_t";
  }
  return "void";
}

std::string shapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool lowerWith(const ir::ComputeDAG& dag, const std::vector<sched::Step>& steps,
               lower::LoweredFunc* f, std::string* why) {
  auto r = sched::replay(dag, steps);
  if (!r.error.empty()) {
    *why = "step " + std::to_string(r.failedStep) + ": " + r.error;
    return false;
  }
  try {
    *f = lower::lower(r.state);
  } catch (const UserError& e) {
    *why = e.what();
    return false;
  }
  if (!denseArguments(*f)) {
    *why = "the schedule pads an argument buffer";
    return false;
  }
  return true;
}

nlohmann::json targetJson(const target::Target& t) {
  return {{"key", t.key()}, {"kind", target::kindName(t.kind)}, {"triple", t.triple},
          {"cpu", t.cpu},   {"features", t.features},           {"cores", t.cores}};
}

void addScheduleJson(nlohmann::json& j, const std::vector<sched::Step>& steps,
                     const search::TuningRecord* record, const std::string& log) {
  j["schedule"] = nlohmann::json::parse(sched::stepsToJson(steps));
  j["tuned"] = record != nullptr;
  if (record)
    j["measured"] = {{"median_ms", record->median() * 1e3},
                     {"log", log},
                     {"line", record->line},
                     {"target", record->target}};
}

Staging::Staging(const ExportOptions& o) : dir_(o.dir) {
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    if (!fs::is_directory(dir_, ec)) WM_USER_ERROR() << dir_ << ": exists and is not a directory";
    bool empty = fs::directory_iterator(dir_, ec) == fs::directory_iterator();
    if (ec) WM_USER_ERROR() << dir_ << ": cannot read the directory: " << ec.message();
    if (!empty && !o.force)
      WM_USER_ERROR() << dir_ << ": the directory is not empty (give --force to export into it)";
  } else {
    fs::create_directories(dir_, ec);
    if (ec) WM_USER_ERROR() << dir_ << ": cannot create the directory: " << ec.message();
  }
  std::string templ = (fs::path(dir_) / ".export-XXXXXX").string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    WM_USER_ERROR() << dir_ << ": cannot create a temporary directory: " << std::strerror(errno);
  tmp_ = buf.data();
}

Staging::~Staging() {
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

std::string Staging::tmp(const std::string& file) const {
  return (fs::path(tmp_) / file).string();
}

void Staging::write(const std::string& file, const std::string& contents) {
  writeFileAtomically(tmp(file), contents);
  keep(file);
}

void Staging::keep(const std::string& file) {
  files_.push_back(file);
}

void Staging::commit(const std::string& last) {
  std::error_code ec;
  fs::remove(fs::path(dir_) / last, ec); // a directory without it is not a whole export
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& f : files_) {
      if ((f == last) != (pass == 1)) continue;
      fs::rename(tmp(f), fs::path(dir_) / f, ec);
      if (ec) WM_USER_ERROR() << (fs::path(dir_) / f).string() << ": " << ec.message();
    }
}

BestRecords loadBestRecords(const ExportOptions& o, const target::Target& target) {
  BestRecords r;
  if (o.log.empty()) return r;
  r.log = std::make_unique<search::TuningLog>(o.log, search::TuningLog::Mode::Read);
  int other = 0;
  r.best = search::bestRecords(r.log->records(), target, &other);
  if (other > 0)
    spdlog::warn("{}: {} record(s) were measured on another target than '{}'; they are not used",
                 o.log, other, target.key());
  return r;
}

void checkName(const ExportOptions& o) {
  if (!isCIdentifier(o.name))
    WM_USER_ERROR() << "--name " << o.name
                    << ": not a C identifier (letters, digits and '_', not starting with a digit)";
  // lib<name>.so would shadow a system library in `-L. -l<name>` (and `-lm` would find ours)
  for (const char* system : {"c", "m", "pthread", "dl", "rt", "gcc", "gcc_s", "stdc++", "util"})
    if (o.name == system)
      WM_USER_ERROR() << "--name " << o.name << ": lib" << o.name
                      << " is a system library; choose another name";
}

void linkLibrary(Staging& out, const ExportOptions& o, const std::vector<std::string>& objects,
                 const std::vector<std::string>& exportPatterns) {
  std::string map = "{\n  global:\n";
  for (const auto& p : exportPatterns) map += "    " + p + ";\n";
  map += "  local:\n    *;\n};\n";
  writeFileAtomically(out.tmp("exports.map"), map);
  std::string cc = toolFromEnv(o.cc, "CC", "cc");
  std::string so = "lib" + o.name + ".so";
  std::vector<std::string> argv = {cc,
                                   "-shared",
                                   "-o",
                                   out.tmp(so),
                                   "-Wl,-soname," + so,
                                   "-Wl,--version-script=" + out.tmp("exports.map"),
                                   "-Wl,-z,defs",
                                   "-Wl,-z,noexecstack"};
  for (const auto& obj : objects) argv.push_back(out.tmp(obj));
  argv.push_back("-lm");
  argv.push_back("-lpthread");
  runTool(argv, out.tmp("link.out"));
  out.keep(so);
  if (o.staticLib) {
    std::string a = "lib" + o.name + ".a";
    std::vector<std::string> ar = {toolFromEnv(o.ar, "AR", "ar"), "rcs", out.tmp(a)};
    for (const auto& obj : objects) ar.push_back(out.tmp(obj));
    runTool(ar, out.tmp("ar.out"));
    out.keep(a);
  }
}

} // namespace wm::exporter
