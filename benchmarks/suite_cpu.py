#!/usr/bin/python3
"""The CPU subgraph suite: each workload of configs/suite-cpu.workloads tuned on its own with each
cost-model configuration and seed, one after another in one run, on an otherwise idle machine.

    /usr/bin/python3 benchmarks/suite_cpu.py --out out/suite [--trials 64] [--seeds 1 2 3]
        [--configs wm ansor ansor-warm random] [--long-trials 1000] [--min-ms 100]

Configurations: wm (the world model from the shipped checkpoint, learning online), ansor (static
features + XGBoost from scratch, as Ansor runs), ansor-warm (ansor trained first on the
pre-training log, out/pretrain/train.jsonl), random. --long-trials adds ansor at that many trials
(seed 1) for the sample-efficiency comparison: the report then also gives, from that run's log,
the best latency after 64/128/256/512/... trials relative to wm at 64, and the number of trials
ansor needed to reach wm's 64-trial latency. --report-only rewrites the report from
results.json and the logs without tuning. Results go to OUT/results.json after every tuning
run, and OUT/report.md (a Markdown table: geomean over seeds of each best latency, and the
geomean ratio of wm to each configuration) is rewritten as results come in. Runs already in
results.json are skipped, so an interrupted suite resumes.
Benchmarks unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (see the README).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def workloads(path):
    return [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])) if n else 0.0


def best_curve(log):
    """Best latency so far after each record of a tuning log (inf before the first success)."""
    curve, best = [], math.inf
    for line in open(log):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        if r.get("error", "none") == "none" and r.get("costs"):
            best = min(best, median(r["costs"]))
        curve.append(best)
    return curve


def efficiency(res, suite, out, trials, long_trials, seed):
    """Lines comparing ansor's long run (made with `seed`) with wm at `trials` trials."""
    marks = [t for t in (64, 128, 256, 512) if t < long_trials] + [long_trials]
    rows, ratios, reach = [], {t: [] for t in marks}, []
    for i, w in enumerate(suite):
        log = os.path.join(out, f"ansor-long-s{seed}-w{i}.jsonl")
        wm = [res[k]["best_s"] for k in res if res[k]["config"] == "wm" and res[k]["workload"] == w and res[k]["best_s"] > 0]
        if f"ansor-long/{seed}/{i}" not in res or not wm or not os.path.exists(log):
            continue
        target = geomean(wm)
        curve = best_curve(log)
        cells = []
        for t in marks:
            b = curve[min(t, len(curve)) - 1]
            ratios[t].append(b / target)
            cells.append(f"{b / target:.2f}")
        n = next((j + 1 for j, b in enumerate(curve) if b <= target), None)
        reach.append(n)
        rows.append(f"| {w} | {target * 1e3:.4f} ms | " + " | ".join(cells) + f" | {n if n else f'> {len(curve)}'} |")
    if not rows:
        return []
    lines = ["", f"Sample efficiency: ansor's best after n trials (one {long_trials}-trial run, seed {seed}) divided by wm's "
             f"best at {trials} trials (> 1: ansor still slower), and the trials ansor needed to reach wm's latency:", "",
             f"| workload | wm@{trials} | " + " | ".join(f"ansor@{t}" for t in marks) + " | ansor trials to reach wm |",
             "| --- | --- |" + " --- |" * (len(marks) + 1)] + rows
    lines.append("| geomean | | " + " | ".join(f"{geomean(ratios[t]):.2f}" for t in marks) + " | " +
                 f"{sum(1 for n in reach if n)} of {len(reach)} reached |")
    return lines


def report(res, suite, configs, seeds, trials, long_trials, path):
    lines = ["| workload | " + " | ".join(configs) + (f" | ansor@{long_trials}" if long_trials else "") + " |",
             "| --- |" + " --- |" * (len(configs) + (1 if long_trials else 0))]
    best = {}  # (config, workload) -> geomean over seeds of best latency
    for w in suite:
        row = [w]
        for c in configs + (["ansor-long"] if long_trials else []):
            vals = [res[k]["best_s"] for k in res if res[k]["config"] == c and res[k]["workload"] == w and res[k]["best_s"] > 0]
            if vals:
                best[(c, w)] = geomean(vals)
                row.append(f"{best[(c, w)] * 1e3:.4f} ms" + (f" ({len(vals)})" if c != "ansor-long" else ""))
            else:
                row.append("-")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("Geomean ratio of wm's latency to each configuration's (< 1: wm is faster), over the workloads both have:")
    lines.append("")
    for c in configs[1:] + (["ansor-long"] if long_trials else []):
        common = [w for w in suite if (c, w) in best and ("wm", w) in best]
        if common:
            r = geomean([best[("wm", w)] / best[(c, w)] for w in common])
            lines.append(f"- wm / {c}: {r:.3f} ({len(common)} workloads; {c}'s latency is {1 / r:.2f}x wm's)")
    walls = {}
    for k, v in res.items():
        walls.setdefault(v["config"], []).append(v["wall_s"])
    lines.append("")
    lines.append("Mean tuning wall time per workload: " + ", ".join(f"{c} {sum(v) / len(v):.1f} s" for c, v in walls.items()))
    if long_trials:
        lines += efficiency(res, suite, os.path.dirname(path), trials, long_trials, seeds[0])
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "suite"))
    ap.add_argument("--suite", default=os.path.join(ROOT, "configs", "suite-cpu.workloads"))
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--configs", nargs="+", default=["wm", "ansor", "ansor-warm", "random"])
    ap.add_argument("--long-trials", type=int, default=0)
    ap.add_argument("--min-ms", type=float, default=100)
    ap.add_argument("--wmtune", default=os.path.join(ROOT, "build", "apps", "wmtune", "wmtune"))
    ap.add_argument("--report-only", action="store_true", help="rewrite OUT/report.md from results.json and the logs")
    ap.add_argument("--pretrain-log", default=os.path.join(ROOT, "out", "pretrain", "train.jsonl"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    suite = workloads(args.suite)
    rpath = os.path.join(args.out, "results.json")
    res = json.load(open(rpath)) if os.path.exists(rpath) else {}
    if args.report_only:
        report(res, suite, args.configs, args.seeds, args.trials, args.long_trials, os.path.join(args.out, "report.md"))
        return
    runs = [(s, c, args.trials) for s in args.seeds for c in args.configs]
    if args.long_trials:
        runs.append((args.seeds[0], "ansor-long", args.long_trials))
    for seed, config, trials in runs:
        for i, w in enumerate(suite):
            key = f"{config}/{seed}/{i}"
            if key in res:
                continue
            log = os.path.join(args.out, f"{config}-s{seed}-w{i}.jsonl")
            summary = os.path.join(args.out, f"{config}-s{seed}-w{i}.json")
            if os.path.exists(log):
                os.remove(log)
            model = {"wm": "wm", "ansor": "ansor", "ansor-warm": "ansor", "random": "random", "ansor-long": "ansor"}[config]
            cmd = [args.wmtune, "tune", "-w", w, "--trials", str(trials), "--cost-model", model, "--seed", str(seed),
                   "--log", log, "--json", summary, "--min-ms", str(args.min_ms)]
            if config == "ansor-warm":
                cmd += ["--warm-start", args.pretrain_log]
            t0 = time.time()
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            wall = time.time() - t0
            if p.returncode != 0:
                print(p.stdout[-2000:], file=sys.stderr)
                sys.exit(f"suite: {' '.join(cmd)} exited {p.returncode}")
            s = json.load(open(summary))
            res[key] = {"config": config, "seed": seed, "workload": w, "trials": trials,
                        "best_s": s["tasks"][0]["best_latency_s"], "wall_s": wall}
            json.dump(res, open(rpath, "w"), indent=1)
            print(f"{config:11s} seed {seed} {w:60s} best {res[key]['best_s'] * 1e3:9.4f} ms  ({wall:.0f} s)", flush=True)
            report(res, suite, args.configs, args.seeds, args.trials, args.long_trials, os.path.join(args.out, "report.md"))


if __name__ == "__main__":
    main()
