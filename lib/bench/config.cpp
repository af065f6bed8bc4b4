#include <wm/bench/config.h>
#include <wm/frontend/workload.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/strings.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace wm::bench {

namespace {

constexpr int kMaxBudget = 1000000;

struct Reader {
  std::string path;

  Mark mark(const YAML::Node& n) const {
    auto m = n.Mark();
    return m.is_null() ? Mark{} : Mark{m.line + 1, m.column + 1};
  }
  std::string where(const YAML::Node& n) const {
    Mark m = mark(n);
    return m.line ? path + ":" + std::to_string(m.line) + ":" + std::to_string(m.column) : path;
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    throw UserError(where(n) + ": " + what);
  }

  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, "'" + key + "' must be a single value");
    return n.Scalar();
  }
  std::string name(const YAML::Node& n, const std::string& key) const {
    std::string s = scalar(n, key);
    if (s.empty() || s.size() > 64 || !std::all_of(s.begin(), s.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        }))
      fail(n, "'" + key + "' must be a name of 1-64 letters, digits, '-', '_' or '.', not '" + s +
                  "'");
    return s;
  }
  int integer(const YAML::Node& n, const std::string& key, int lo, int hi) const {
    auto v = parseInt(scalar(n, key));
    if (!v || *v < lo || *v > hi)
      fail(n, "'" + key + "' must be an integer in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "], not '" + n.Scalar() + "'");
    return static_cast<int>(*v);
  }
  // A list of integers, or one integer.
  std::vector<int> integers(const YAML::Node& n, const std::string& key, int lo, int hi) const {
    std::vector<int> out;
    if (n.IsScalar()) {
      out.push_back(integer(n, key, lo, hi));
    } else if (n.IsSequence()) {
      for (auto e : n) out.push_back(integer(e, key, lo, hi));
    } else {
      fail(n, "'" + key + "' must be an integer or a list of integers");
    }
    if (out.empty()) fail(n, "'" + key + "' is empty");
    std::set<int> seen;
    for (int v : out)
      if (!seen.insert(v).second) fail(n, "'" + key + "' names " + std::to_string(v) + " twice");
    return out;
  }
  void onlyKeys(const YAML::Node& map, const std::set<std::string>& keys,
                const std::string& what) const {
    for (auto kv : map) {
      std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (!keys.count(k)) {
        std::string list;
        for (auto& x : keys) list += (list.empty() ? "" : ", ") + x;
        fail(kv.first, "unknown key '" + k + "' in " + what + " (known: " + list + ")");
      }
    }
  }
};

std::string readText(const std::string& path) {
  if (!requireRegularFile(path)) throw UserError(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading");
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) throw UserError(path + ": read error");
  return os.str();
}

// A file listing workload specs, one a line ('#' comments), as configs/*.workloads.
void readWorkloadFile(const Reader& r, const YAML::Node& n, const std::string& file,
                      std::vector<BenchWorkload>* out) {
  std::string text;
  try {
    text = readText(file);
  } catch (const UserError& e) {
    r.fail(n, e.what());
  }
  std::istringstream lines(text);
  std::string line;
  int no = 0;
  while (std::getline(lines, line)) {
    ++no;
    std::string s = trim(line);
    if (s.empty() || s[0] == '#') continue;
    try {
      out->push_back({BenchWorkload::Kind::Spec, parseWorkload(s).canonical, r.mark(n)});
    } catch (const UserError& e) {
      r.fail(n, file + ":" + std::to_string(no) + ": " + e.what());
    }
  }
}

} // namespace

BenchConfig parseBenchConfig(const std::string& text, const std::string& path,
                             const FlagCheck& checkFlag) {
  Reader r{path};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                    std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw UserError(path + ": a bench file is a mapping (name:, workloads:, ...)");
  r.onlyKeys(root,
             {"name", "target", "threads", "trials", "per-task", "seeds", "workloads", "configs",
              "tune", "baselines", "compare"},
             "the bench file");
  BenchConfig c;
  c.path = path;
  if (!root["name"]) throw UserError(path + ": 'name' is missing");
  c.name = r.name(root["name"], "name");
  if (auto t = root["target"]) {
    c.target = r.scalar(t, "target");
    if (c.target != "llvm" && c.target != "cuda")
      r.fail(t, "'target' must be llvm or cuda, not '" + c.target + "'");
  }
  if (auto t = root["threads"]) c.threads = r.integer(t, "threads", 0, 4096);
  if (auto t = root["trials"]) c.trials = r.integers(t, "trials", 1, kMaxBudget);
  if (auto t = root["per-task"]) {
    std::string v = r.scalar(t, "per-task");
    if (v != "true" && v != "false") r.fail(t, "'per-task' must be true or false, not '" + v + "'");
    c.perTask = v == "true";
  }
  if (auto t = root["seeds"]) c.seeds = r.integers(t, "seeds", 0, 1 << 30);

  // Workloads: specs, {model: PATH} or {file: PATH}.
  auto ws = root["workloads"];
  if (!ws || !ws.IsSequence() || ws.size() == 0)
    throw UserError(r.where(ws ? ws : root) + ": 'workloads' must be a non-empty list");
  for (auto w : ws) {
    if (w.IsScalar()) {
      try {
        c.workloads.push_back(
            {BenchWorkload::Kind::Spec, parseWorkload(w.Scalar()).canonical, r.mark(w)});
      } catch (const UserError& e) {
        r.fail(w, e.what());
      }
    } else if (w.IsMap() && w.size() == 1 && (w["model"] || w["file"])) {
      if (auto m = w["model"]) {
        std::string file = r.scalar(m, "model");
        bool exists = false;
        try {
          exists = requireRegularFile(file);
        } catch (const UserError& e) {
          r.fail(m, e.what());
        }
        if (!exists) r.fail(m, "model '" + file + "' does not exist");
        c.workloads.push_back({BenchWorkload::Kind::Model, file, r.mark(m)});
      } else {
        readWorkloadFile(r, w["file"], r.scalar(w["file"], "file"), &c.workloads);
      }
    } else {
      r.fail(w, "a workload is a spec (op:key=value,...), {model: FILE.onnx} or {file: FILE}");
    }
  }
  std::set<std::string> seenW;
  for (auto& w : c.workloads)
    if (!seenW.insert(w.value).second)
      throw UserError(path + ":" + std::to_string(w.mark.line) + ":" +
                      std::to_string(w.mark.column) + ": workload '" + w.value + "' given twice");

  // Flags every config shares (tune:), then each config's own.
  auto flagsOf = [&](const YAML::Node& map, TunerConfig* tc, bool own) {
    for (auto kv : map) {
      std::string key = r.scalar(kv.first, "a tune flag");
      if (own && key == "trials") {
        tc->trials = r.integers(kv.second, "trials", 1, kMaxBudget);
        continue;
      }
      if (own && key == "seeds") {
        tc->seeds = r.integers(kv.second, "seeds", 0, 1 << 30);
        continue;
      }
      static const std::set<std::string> owned{"trials",  "seed",   "log",      "json",
                                               "threads", "target", "workload", "w"};
      if (owned.count(key))
        r.fail(kv.first, "'" + key + "' is set by bench itself (" +
                             (key == "trials" || key == "seed"
                                  ? std::string("use trials:/seeds: in a config")
                                  : std::string("use the top-level key or leave it out")) +
                             ")");
      std::vector<std::string> values;
      if (kv.second.IsSequence()) {
        for (auto v : kv.second) values.push_back(r.scalar(v, key));
      } else if (kv.second.IsNull()) {
        values.push_back(""); // a switch: `flush:`
      } else {
        values.push_back(r.scalar(kv.second, key));
      }
      for (auto& v : values) {
        FlagProblem err = checkFlag(key, &v);
        if (!err.message.empty())
          r.fail(err.aboutFlag || kv.second.IsNull() ? kv.first : kv.second, err.message);
        tc->flags.emplace_back(key, v);
      }
    }
  };
  TunerConfig shared;
  if (auto t = root["tune"]) {
    if (!t.IsMap()) r.fail(t, "'tune' must be a mapping of tune flags to values");
    flagsOf(t, &shared, false);
  }
  auto cs = root["configs"];
  if (!cs || !cs.IsMap() || cs.size() == 0)
    throw UserError(r.where(cs ? cs : root) +
                    ": 'configs' must be a non-empty mapping of names to tune flags");
  std::set<std::string> seenC;
  for (auto kv : cs) {
    TunerConfig tc;
    tc.name = r.name(kv.first, "a config name");
    tc.mark = r.mark(kv.first);
    if (!seenC.insert(tc.name).second) r.fail(kv.first, "config '" + tc.name + "' given twice");
    tc.flags = shared.flags;
    if (kv.second.IsMap())
      flagsOf(kv.second, &tc, true);
    else if (!kv.second.IsNull())
      r.fail(kv.second, "config '" + tc.name + "' must be a mapping of tune flags to values");
    c.configs.push_back(std::move(tc));
  }

  if (auto bs = root["baselines"]) {
    if (!bs.IsSequence()) r.fail(bs, "'baselines' must be a list");
    std::set<std::string> seenB;
    for (auto b : bs) {
      Baseline bl;
      bl.mark = r.mark(b);
      if (b.IsMap()) {
        r.onlyKeys(b, {"name", "command"}, "a baseline");
        if (!b["command"]) r.fail(b, "a baseline needs 'command'");
        bl.command = r.scalar(b["command"], "command");
        if (trim(bl.command).empty()) r.fail(b["command"], "'command' is empty");
        bl.name = b["name"] ? r.name(b["name"], "name") : "";
        if (bl.name.empty()) {
          // the command's script name: ".../torch_model.py {model}" -> torch_model
          std::string first;
          for (auto& word : split(bl.command, ' '))
            if (!word.empty() && word.find('/') != std::string::npos) first = word;
          if (first.empty()) first = split(trim(bl.command), ' ')[0];
          first = first.substr(first.rfind('/') + 1);
          first = first.substr(0, first.find('.'));
          bl.name = first.empty() ? "command" : first;
        }
      } else if (b.IsScalar()) {
        bl.name = b.Scalar();
        bool known = false;
        for (const char* k : kBuiltinBaselines) known = known || bl.name == k;
        if (!known)
          r.fail(b, "unknown built-in baseline '" + bl.name +
                        "' (built in: libtorch; or {command: \"...\", name: NAME})");
      } else {
        r.fail(b, "a baseline is libtorch or {command: \"...\", name: NAME} (the command prints "
                  "{\"ms\": ...})");
      }
      if (!seenB.insert(bl.name).second) r.fail(b, "baseline '" + bl.name + "' given twice");
      if (seenC.count(bl.name)) r.fail(b, "'" + bl.name + "' names a config and a baseline");
      c.baselines.push_back(std::move(bl));
    }
  }

  if (auto cmp = root["compare"]) {
    if (!cmp.IsMap()) r.fail(cmp, "'compare' must be {reference: CONFIG}");
    r.onlyKeys(cmp, {"reference"}, "compare");
    if (auto ref = cmp["reference"]) {
      c.reference = r.scalar(ref, "reference");
      if (!seenC.count(c.reference))
        r.fail(ref, "reference '" + c.reference + "' is not one of the configs");
    }
  }
  if (c.reference.empty()) c.reference = c.configs.front().name;
  return c;
}

BenchConfig loadBenchConfig(const std::string& path, const FlagCheck& checkFlag) {
  return parseBenchConfig(readText(path), path, checkFlag);
}

} // namespace wm::bench
