// The bench report, from OUT/results.jsonl alone: summary.md, summary.csv, summary.json and the
// SVG plots. Figures: per workload and config, the best latency at each trial budget (geomean
// over seeds, with min-max); at a config's largest budget that is the tuner's re-measured best,
// at a smaller one the tuning curve's best after that many trials (as first measured).
#include <wm/bench/bench.h>
#include <wm/bench/svg.h>
#include <wm/support/error.h>
#include <wm/support/files.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

namespace wm::bench {

namespace {

using json = nlohmann::json;
const double kInf = std::numeric_limits<double>::infinity();

double geomean(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v)
    if (x > 0 && std::isfinite(x)) s += std::log(x), ++n;
  return n ? std::exp(s / n) : kInf;
}

double median(std::vector<double> v) {
  if (v.empty()) return kInf;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

double getNum(const json& j, const char* k, double dflt = kInf) {
  return j.contains(k) && j[k].is_number() ? j[k].get<double>() : dflt;
}

std::vector<double> curveOf(const json& cell) {
  std::vector<double> c;
  if (cell.contains("curve") && cell["curve"].is_array())
    for (auto& v : cell["curve"]) c.push_back(v.is_number() ? v.get<double>() : kInf);
  return c;
}

// The cell's best after `budget` trials (per task when the bench counts them so: budget_scale).
double atBudget(const json& cell, int budget) {
  // doubles throughout: the record is data, its numbers may be anything
  double trials = getNum(cell, "trials", 0), scale = getNum(cell, "budget_scale", 1);
  double b = static_cast<double>(budget) * (scale >= 1 && scale <= 1e6 ? std::floor(scale) : 1);
  if (!(b >= 1)) return kInf;
  if (b >= trials) return getNum(cell, "best_s");
  auto c = curveOf(cell);
  if (c.empty()) return kInf;
  return c[static_cast<size_t>(std::min(static_cast<double>(c.size()), b)) - 1];
}

struct Stat {
  double geo = kInf, lo = kInf, hi = kInf;
  int n = 0;
};
Stat stat(const std::vector<double>& v) {
  Stat s;
  for (double x : v)
    if (x > 0 && std::isfinite(x)) {
      s.lo = s.n ? std::min(s.lo, x) : x;
      s.hi = s.n ? std::max(s.hi, x) : x;
      ++s.n;
    }
  s.geo = geomean(v);
  return s;
}

// The median over seeds of the best-so-far after each trial (and the min-max band).
void medianCurve(const std::vector<json>& cells, std::vector<double>* med, std::vector<double>* lo,
                 std::vector<double>* hi) {
  std::vector<std::vector<double>> cs;
  size_t n = 0;
  for (auto& c : cells) {
    cs.push_back(curveOf(c));
    n = std::max(n, cs.back().size());
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> v;
    for (auto& c : cs)
      if (!c.empty()) v.push_back(c[std::min(i, c.size() - 1)]);
    med->push_back(median(v));
    lo->push_back(*std::min_element(v.begin(), v.end()));
    hi->push_back(*std::max_element(v.begin(), v.end()));
  }
}

// The first trial at which a curve reaches `target` (0: never).
int trialsToReach(const std::vector<double>& curve, double target) {
  for (size_t i = 0; i < curve.size(); ++i)
    if (curve[i] <= target * (1 + 1e-9)) return static_cast<int>(i) + 1;
  return 0;
}

std::string fileSafe(const std::string& s) {
  std::string o;
  for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return o.substr(0, 60);
}

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

} // namespace

namespace {

// Budgets of a run record: positive integers only.
std::vector<int> budgetList(const json& v) {
  std::vector<int> out;
  for (auto& b : v) {
    if (!b.is_number_integer() || b.get<int64_t>() < 1 || b.get<int64_t>() > 1000000000)
      throw UserError("a trial budget must be a positive integer, not " + b.dump());
    out.push_back(static_cast<int>(b.get<int64_t>()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> writeReportImpl(const std::string& dir, const std::vector<json>& records);

} // namespace

std::vector<std::string> writeReport(const std::string& dir, const std::vector<json>& records) {
  try {
    return writeReportImpl(dir, records);
  } catch (const json::exception& e) {
    throw UserError(dir + "/results.jsonl: a record is malformed: " + e.what());
  } catch (const UserError& e) {
    throw UserError(dir + "/results.jsonl: " + e.what());
  }
}

namespace {

std::vector<std::string> writeReportImpl(const std::string& dir, const std::vector<json>& records) {
  // The newest run record says what the bench is (its configs, workloads and order).
  const json* run = nullptr;
  std::vector<const json*> machines;
  for (auto& r : records) {
    if (r["type"] == "run") run = &r;
    if ((r["type"] == "run" || r["type"] == "end") && r.contains("machine")) machines.push_back(&r);
  }
  if (!run) throw UserError("no run record (is this a bench output folder?)");
  std::vector<std::string> configs, workloads, baselines;
  std::map<std::string, std::vector<int>> budgets;
  std::map<std::string, std::string> kindOf;
  for (auto& c : run->at("configs")) configs.push_back(c.get<std::string>());
  for (auto& w : run->at("workloads")) {
    workloads.push_back(w.at("name").get<std::string>());
    kindOf[workloads.back()] = w.value("kind", "spec");
  }
  for (auto& b : run->at("baselines")) baselines.push_back(b.get<std::string>());
  for (auto& [k, v] : run->at("budgets").items()) budgets[k] = budgetList(v);
  std::string ref = run->value("reference", configs.empty() ? "" : configs.front());
  const std::string bench = run->value("bench", "bench");

  // cells[workload][config] = one record per seed (the newest); baseline[workload][name]
  std::map<std::string, std::map<std::string, std::map<int, json>>> cells;
  std::map<std::string, std::map<std::string, json>> base;
  // runs[workload][config][seed]: a model cell's whole-model run (`wmtune run --bench`)
  std::map<std::string, std::map<std::string, std::map<int, json>>> runs;
  std::map<std::string, double> flopsOf;
  for (auto& r : records) {
    if (r["type"] == "model_run" && r.contains("workload") && r.contains("config") &&
        r.contains("seed") && r["workload"].is_string() && r["config"].is_string() &&
        r["seed"].is_number_integer()) {
      runs[r["workload"]][r["config"]][r["seed"].get<int>()] = r;
      continue;
    }
    if (r["type"] == "cell" && r.contains("workload") && r.contains("config") &&
        r.contains("seed")) {
      if (!r["workload"].is_string() || !r["config"].is_string() || !r["seed"].is_number_integer())
        continue;
      cells[r["workload"]][r["config"]][r["seed"].get<int>()] = r;
      if (getNum(r, "flops", 0) > 0) flopsOf[r["workload"]] = getNum(r, "flops");
    } else if (r["type"] == "baseline" && r.contains("workload") && r.contains("name") &&
               r["workload"].is_string() && r["name"].is_string()) {
      base[r["workload"]][r["name"]] = r;
    }
  }
  auto seedCells = [&](const std::string& w, const std::string& c) {
    std::vector<json> v;
    if (cells.count(w) && cells[w].count(c))
      for (auto& [s, j] : cells[w][c]) v.push_back(j);
    return v;
  };
  auto finalStat = [&](const std::string& w, const std::string& c) {
    std::vector<double> v;
    auto b = budgets[c].empty() ? 0 : budgets[c].back();
    for (auto& j : seedCells(w, c)) v.push_back(atBudget(j, b));
    return stat(v);
  };
  // A config's whole-model latency (s), geomean over its seeds' runs; errors are listed.
  auto wholeModel = [&](const std::string& w, const std::string& c, const char* key = "ms") {
    std::vector<double> v;
    if (runs.count(w) && runs[w].count(c))
      for (auto& [seed, r] : runs[w][c]) v.push_back(getNum(r, key) * 1e-3);
    return stat(v);
  };
  auto baselineMs = [&](const std::string& w, const std::string& b) {
    if (!base.count(w) || !base[w].count(b)) return kInf;
    return getNum(base[w][b], "ms");
  };

  std::ostringstream md, csv;
  json sj = {{"bench", bench}, {"reference", ref}, {"workloads", json::array()}};
  md << "# Bench `" << bench << "`\n\n";
  md << "Made by `wmtune bench " << run->value("file", std::string("?"))
     << "`; re-render with `wmtune bench --report OUT`.\n\n";
  md << "## Machine\n\n| when | CPU | cores | threads | FMA peak GFLOP/s | governor | load (1 min) "
        "|\n|---|---|---:|---:|---:|---|---:|\n";
  json mj = json::array();
  for (auto* m : machines) {
    auto& mm = (*m)["machine"];
    md << "| " << (*m)["type"].get<std::string>() << " " << m->value("time", std::string(""))
       << " | " << mm.value("cpu", std::string("?")) << " | " << mm.value("cores", 0) << " | "
       << mm.value("threads", 0) << " | " << fmt("%.1f", getNum(mm, "peak_gflops")) << " | "
       << mm.value("governor", std::string("?")) << " | " << fmt("%.2f", getNum(mm, "load1"))
       << " |\n";
    mj.push_back(
        {{"type", (*m)["type"]}, {"time", m->value("time", std::string(""))}, {"machine", mm}});
  }
  sj["machines"] = mj;

  // Latency table.
  md << "\n## Best latency\n\nms, geomean over seeds [min-max] (seeds); at a config's largest "
        "budget the tuner's re-measured best, at a smaller one the tuning curve after that many "
        "trials. Baselines in ms.\n\n| workload | GFLOP |";
  std::vector<std::pair<std::string, int>> cols;
  for (auto& c : configs)
    for (int b : budgets[c]) cols.emplace_back(c, b);
  for (auto& [c, b] : cols) md << " " << c << "@" << b << " |";
  for (auto& b : baselines) md << " " << b << " |";
  md << "\n|---|---:|";
  for (size_t i = 0; i < cols.size() + baselines.size(); ++i) md << "---:|";
  md << "\n";
  csv << "workload,kind,config,budget,seeds,latency_ms_geomean,latency_ms_min,latency_ms_max,"
         "gflops,speedup_vs_reference,wall_s,search_s,build_s,run_s\n";
  std::map<std::string, std::vector<double>> speedups; // config -> per-workload speed-up
  for (auto& w : workloads) {
    double flops = flopsOf.count(w) ? flopsOf[w] : 0;
    md << "| `" << w << "` | " << (flops > 0 ? fmt("%.4g", flops * 1e-9) : "-") << " |";
    json wj = {{"workload", w},
               {"kind", kindOf[w]},
               {"flops", flops},
               {"configs", json::object()},
               {"baselines", json::object()}};
    Stat refFinal = finalStat(w, ref);
    for (auto& [c, b] : cols) {
      std::vector<double> v;
      double wall = 0, search = 0, build = 0, runS = 0;
      auto sc = seedCells(w, c);
      for (auto& j : sc) {
        v.push_back(atBudget(j, b));
        wall += getNum(j, "wall_s", 0), search += getNum(j, "search_s", 0);
        build += getNum(j, "build_s", 0), runS += getNum(j, "run_s", 0);
      }
      Stat s = stat(v);
      double n = std::max<size_t>(1, sc.size());
      double sp = refFinal.geo / s.geo;
      md << " " << fmt("%.4f", s.geo * 1e3);
      if (s.n > 1) md << " [" << fmt("%.4f", s.lo * 1e3) << "-" << fmt("%.4f", s.hi * 1e3) << "]";
      md << " (" << s.n << ") |";
      bool last = b == budgets[c].back();
      if (last && std::isfinite(sp)) speedups[c].push_back(sp);
      csv << csvField(w) << "," << kindOf[w] << "," << csvField(c) << "," << b << "," << s.n << ","
          << fmt("%.6f", s.geo * 1e3) << "," << fmt("%.6f", s.lo * 1e3) << ","
          << fmt("%.6f", s.hi * 1e3) << "," << (flops > 0 ? fmt("%.2f", flops / s.geo * 1e-9) : "")
          << "," << fmt("%.4f", sp) << "," << fmt("%.1f", wall / n) << ","
          << fmt("%.1f", search / n) << "," << fmt("%.1f", build / n) << ","
          << fmt("%.1f", runS / n) << "\n";
      wj["configs"][c][std::to_string(b)] = {
          {"seeds", s.n},
          {"latency_s_geomean", std::isfinite(s.geo) ? json(s.geo) : json(nullptr)},
          {"latency_s_min", std::isfinite(s.lo) ? json(s.lo) : json(nullptr)},
          {"latency_s_max", std::isfinite(s.hi) ? json(s.hi) : json(nullptr)},
          {"gflops",
           flops > 0 && std::isfinite(s.geo) ? json(flops / s.geo * 1e-9) : json(nullptr)},
          {"speedup_vs_reference", std::isfinite(sp) ? json(sp) : json(nullptr)},
          {"mean_wall_s", wall / n},
          {"mean_search_s", search / n},
          {"mean_build_s", build / n},
          {"mean_run_s", runS / n}};
    }
    for (auto& b : baselines) {
      double ms = baselineMs(w, b);
      std::string why;
      if (base.count(w) && base[w].count(b) && base[w][b].contains("unavailable"))
        why = base[w][b]["unavailable"].is_string() ? base[w][b]["unavailable"].get<std::string>()
                                                    : "unavailable";
      md << " " << (std::isfinite(ms) ? fmt("%.4f", ms) : why.empty() ? "-" : "n/a") << " |";
      csv << csvField(w) << "," << kindOf[w] << ",baseline:" << csvField(b) << ",,,"
          << fmt("%.6f", ms) << ",,,"
          << (flops > 0 && std::isfinite(ms) ? fmt("%.2f", flops / (ms * 1e-3) * 1e-9) : "") << ","
          << fmt("%.4f", refFinal.geo * 1e3 / ms) << ",,,,\n";
      wj["baselines"][b] = std::isfinite(ms) ? json{{"ms", ms}}
                                             : json{{"unavailable", why.empty() ? "not run" : why}};
    }
    md << "\n";
    sj["workloads"].push_back(wj);
  }
  // Unavailable baselines, said once each.
  for (auto& b : baselines)
    for (auto& w : workloads)
      if (base.count(w) && base[w].count(b) && base[w][b].contains("unavailable")) {
        md << "\n- baseline `" << b << "` on `" << w << "`: unavailable ("
           << base[w][b]["unavailable"].dump() << ")";
      }
  md << "\n";

  // Speed-ups against the reference.
  md << "\n## Speed-up over `" << ref << "`\n\nThe reference's latency at its largest budget "
     << "divided by each config's at its largest (> 1: faster than the reference); geomean over "
        "the workloads both finished.\n\n| config | geomean speed-up | workloads "
        "|\n|---|---:|---:|\n";
  BarChart bars{"Geomean speed-up over " + ref + " (" + bench + ")",
                "speed-up (x); whisker: min-max over workloads",
                {},
                1.0};
  json gj = json::object();
  for (auto& c : configs) {
    auto& v = speedups[c];
    double g = geomean(v);
    md << "| " << c << " | " << fmt("%.3f", g) << " | " << v.size() << " |\n";
    if (std::isfinite(g)) {
      bars.bars.push_back({c, g, v.empty() ? g : *std::min_element(v.begin(), v.end()),
                           v.empty() ? g : *std::max_element(v.begin(), v.end())});
      gj[c] = g;
    }
  }
  sj["geomean_speedup_vs_reference"] = gj;
  // Against the baselines: baseline latency / config latency.
  if (!baselines.empty()) {
    md << "\nAgainst the baselines (baseline latency / config latency at its largest budget; > 1: "
          "the tuned kernels are faster):\n\n| workload |";
    for (auto& c : configs)
      for (auto& b : baselines) md << " " << c << " vs " << b << " |";
    md << "\n|---|";
    for (size_t i = 0; i < configs.size() * baselines.size(); ++i) md << "---:|";
    md << "\n";
    bool anyModel = false;
    for (auto& w : workloads) {
      bool model = kindOf[w] == "model";
      anyModel |= model;
      md << "| `" << w << "`" << (model ? " (whole model)" : "") << " |";
      for (auto& c : configs)
        for (auto& b : baselines)
          md << " "
             << fmt("%.2f",
                    baselineMs(w, b) * 1e-3 / (model ? wholeModel(w, c).geo : finalStat(w, c).geo))
             << " |";
      md << "\n";
    }
    if (anyModel)
      md << "\nA model is compared as the user runs it: the whole model with the tuned log "
            "(`wmtune run --bench`), not the sum of its tuned kernels.\n";
  }

  // Whole models: the tuned log run end to end, against the sum of its tasks' bests.
  bool anyRun = false;
  for (auto& w : workloads) anyRun |= runs.count(w) > 0;
  if (anyRun) {
    md << "\n## Whole models, end to end\n\nms, geomean over seeds (seeds): the model run with "
          "the cell's log by `wmtune run --bench` (median of its samples); beside it the sum of "
          "its kernels timed one by one, and the tuner's estimate (the sum over tasks of weight x "
          "best, the figure of the tables above). The libtorch reference executor is an op-by-op "
          "checker, not a speed baseline.\n\n| workload | config | whole model | kernels "
          "alone, sum | tuner's estimate | reference executor (checker) |\n|---|---|---:|---:|"
          "---:|---:|\n";
    for (auto& w : workloads) {
      if (!runs.count(w)) continue;
      json ej = json::object();
      for (auto& c : configs) {
        if (!runs[w].count(c)) continue;
        Stat e = wholeModel(w, c), k = wholeModel(w, c, "kernels_sum_ms"),
             r = wholeModel(w, c, "reference_executor_ms");
        Stat est = finalStat(w, c);
        md << "| `" << w << "` | " << c << " | " << fmt("%.3f", e.geo * 1e3) << " (" << e.n
           << ") | " << fmt("%.3f", k.geo * 1e3) << " | " << fmt("%.3f", est.geo * 1e3) << " | "
           << fmt("%.3f", r.geo * 1e3) << " |\n";
        for (auto& [seed, rr] : runs[w][c])
          if (rr.contains("error"))
            md << "\n- `" << w << "` " << c << " seed " << seed
               << ": the whole-model run failed: " << rr["error"].dump() << "\n\n";
        Stat refE = wholeModel(w, ref);
        double sp = refE.geo / e.geo;
        auto budget = budgets[c].empty() ? 0 : budgets[c].back();
        csv << csvField(w) << "," << kindOf[w] << ",whole-model:" << csvField(c) << "," << budget
            << "," << e.n << "," << fmt("%.6f", e.geo * 1e3) << "," << fmt("%.6f", e.lo * 1e3)
            << "," << fmt("%.6f", e.hi * 1e3) << ","
            << (flopsOf.count(w) && std::isfinite(e.geo) ? fmt("%.2f", flopsOf[w] / e.geo * 1e-9)
                                                         : "")
            << "," << fmt("%.4f", sp) << ",,,,\n";
        ej[c] = {{"seeds", e.n},
                 {"latency_s_geomean", std::isfinite(e.geo) ? json(e.geo) : json(nullptr)},
                 {"kernels_sum_s", std::isfinite(k.geo) ? json(k.geo) : json(nullptr)},
                 {"reference_executor_s", std::isfinite(r.geo) ? json(r.geo) : json(nullptr)},
                 {"speedup_vs_reference", std::isfinite(sp) ? json(sp) : json(nullptr)}};
      }
      for (auto& wj : sj["workloads"])
        if (wj["workload"] == w) wj["whole_model"] = ej;
    }
  }

  // Sample efficiency: trials one config needs to reach another's final latency.
  md << "\n## Sample efficiency\n\nTrials the reference `" << ref
     << "` needs (median curve over seeds) to reach each config's final latency, and trials each "
        "config needs to reach the reference's final latency (`>N`: not within its N).\n\n"
        "| workload | config | "
     << ref << " to reach config | config to reach " << ref << " |\n|---|---|---:|---:|\n";
  json ej = json::array();
  for (auto& w : workloads) {
    std::vector<double> refMed, lo, hi;
    medianCurve(seedCells(w, ref), &refMed, &lo, &hi);
    double refFinal = finalStat(w, ref).geo;
    for (auto& c : configs) {
      if (c == ref) continue;
      std::vector<double> med, l2, h2;
      medianCurve(seedCells(w, c), &med, &l2, &h2);
      double final = finalStat(w, c).geo;
      if (med.empty() || refMed.empty()) continue;
      int a = trialsToReach(refMed, final), b = trialsToReach(med, refFinal);
      md << "| `" << w << "` | " << c << " | "
         << (a ? std::to_string(a) : ">" + std::to_string(refMed.size())) << " | "
         << (b ? std::to_string(b) : ">" + std::to_string(med.size())) << " |\n";
      ej.push_back({{"workload", w},
                    {"config", c},
                    {"reference_trials_to_reach", a ? json(a) : json(nullptr)},
                    {"trials_to_reach_reference", b ? json(b) : json(nullptr)}});
    }
  }
  sj["sample_efficiency"] = ej;

  // Tuning wall time.
  md << "\n## Tuning time\n\nMean seconds per cell (search / build / run = wall).\n\n| workload |";
  for (auto& c : configs) md << " " << c << " |";
  md << "\n|---|";
  for (size_t i = 0; i < configs.size(); ++i) md << "---:|";
  md << "\n";
  for (auto& w : workloads) {
    md << "| `" << w << "` |";
    for (auto& c : configs) {
      auto sc = seedCells(w, c);
      double n = std::max<size_t>(1, sc.size()), wall = 0, s = 0, b = 0, r = 0;
      for (auto& j : sc)
        wall += getNum(j, "wall_s", 0), s += getNum(j, "search_s", 0), b += getNum(j, "build_s", 0),
            r += getNum(j, "run_s", 0);
      md << " "
         << (sc.empty() ? "-"
                        : fmt("%.1f", s / n) + " / " + fmt("%.1f", b / n) + " / " +
                              fmt("%.1f", r / n) + " = " + fmt("%.1f", wall / n))
         << " |";
    }
    md << "\n";
  }

  // Plots.
  std::vector<std::string> written;
  std::filesystem::create_directories(dir + "/plots");
  md << "\n## Plots\n\n![geomean speed-up](plots/speedup.svg)\n";
  writeFileAtomically(dir + "/plots/speedup.svg", renderSvg(bars));
  written.push_back(dir + "/plots/speedup.svg");
  for (size_t wi = 0; wi < workloads.size(); ++wi) {
    auto& w = workloads[wi];
    LinePlot p;
    p.title = w.size() > 70 ? w.substr(0, 67) + "..." : w;
    p.xLabel = "trials";
    p.yLabel = "best latency so far (ms)";
    p.logX = true;
    p.steps = true;
    for (auto& c : configs) {
      Series s;
      s.name = c;
      std::vector<double> med, lo, hi;
      medianCurve(seedCells(w, c), &med, &lo, &hi);
      for (size_t i = 0; i < med.size(); ++i) {
        s.x.push_back(static_cast<double>(i + 1));
        s.y.push_back(med[i] * 1e3), s.lo.push_back(lo[i] * 1e3), s.hi.push_back(hi[i] * 1e3);
      }
      if (!s.x.empty()) p.series.push_back(std::move(s));
    }
    for (auto& b : baselines)
      if (double ms = baselineMs(w, b); std::isfinite(ms)) p.refs.push_back({b, ms});
    std::string name =
        "plots/curve-" + std::to_string(wi + 1) + "-" + fileSafe(w.substr(0, w.find(':'))) + ".svg";
    writeFileAtomically(dir + "/" + name, renderSvg(p));
    written.push_back(dir + "/" + name);
    md << "\n![" << w << "](" << name << ")\n";
  }
  writeFileAtomically(dir + "/summary.md", md.str());
  writeFileAtomically(dir + "/summary.csv", csv.str());
  writeFileAtomically(dir + "/summary.json", sj.dump(1) + "\n");
  written.insert(written.begin(),
                 {dir + "/summary.md", dir + "/summary.csv", dir + "/summary.json"});
  return written;
}

} // namespace

} // namespace wm::bench
