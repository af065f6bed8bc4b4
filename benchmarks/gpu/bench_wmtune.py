"""The GPU benchmark of wmtune itself, on the device (docs/gpu.md): each operator tuned with
`wmtune tune --target cuda --trials T` for each cost model, its best kernel against PyTorch on
the same GPU (fp32, TF32 off, cuDNN benchmark mode; torch_ops.py); then, with --model, a whole
model tuned (TRIALS_PER_TASK x its tasks) and run with `wmtune run --bench` against PyTorch eager
and CUDA-graph replay of the same architecture (torchvision's ResNet-18 for resnet18.onnx).
Cells run interleaved per workload; a deadline leaves later cells out (said in the table).
Writes OUT/gpu-bench.md, OUT/gpu-bench.json and the logs under OUT/logs.

usage: python3 bench_wmtune.py WMTUNE OUT [--trials 64] [--models wm,ansor] [--seconds S]
                               [--model resnet18.onnx --trials-per-task N]"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import torch

from torch_ops import reference, spec_args, time_torch

WORKLOADS = ["gemm:M=1024,N=1024,K=1024", "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
             "depthwise_conv2d:N=1,C=32,H=112,W=112,R=3,S=3,pad=1", "softmax:M=1536,N=128",
             "batch_matmul:B=12,M=128,N=128,K=64"]


def inputs_for(spec):
    op, kv = spec_args(spec)
    k = {key: int(v) for key, v in kv.items()}
    if op == "gemm":
        return [(k["M"], k["K"]), (k["K"], k["N"])]
    if op == "batch_matmul":
        return [(k["B"], k["M"], k["K"]), (k["B"], k["K"], k["N"])]
    if op == "conv2d":
        return [(k.get("N", 1), k["C"], k["H"], k["W"]), (k["K"], k["C"], k["R"], k["S"])]
    if op == "depthwise_conv2d":
        return [(k.get("N", 1), k["C"], k["H"], k["W"]), (k["C"], 1, k["R"], k["S"])]
    if op == "softmax":
        return [(k["M"], k["N"])]
    raise SystemExit(f"no PyTorch inputs for {spec}")


def flops_of(spec):
    op, kv = spec_args(spec)
    k = {key: int(v) for key, v in kv.items()}
    if op == "gemm":
        return 2 * k["M"] * k["N"] * k["K"]
    if op == "batch_matmul":
        return 2 * k["B"] * k["M"] * k["N"] * k["K"]
    if op == "conv2d":
        return 2 * k.get("N", 1) * k["K"] * k["H"] * k["W"] * k["C"] * k["R"] * k["S"]
    if op == "depthwise_conv2d":
        return 2 * k.get("N", 1) * k["C"] * k["H"] * k["W"] * k["R"] * k["S"]
    return 0


def error_kinds(log):
    kinds = {}
    if os.path.exists(log):
        for line in open(log):
            try:
                e = json.loads(line).get("error", "?")
            except ValueError:
                continue
            kinds[e] = kinds.get(e, 0) + 1
    return kinds


def tune(wm, args, out, name, extra):
    log, js = os.path.join(out, "logs", name + ".jsonl"), os.path.join(out, "logs", name + ".json")
    cmd = [wm, "tune", *extra, "--target", "cuda", "--seed", "1", "--log", log, "--json", js]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    with open(os.path.join(out, "logs", name + ".out"), "w") as f:
        f.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
    if r.returncode != 0:
        print(f"{name}: tune exited {r.returncode}: {(r.stdout + r.stderr)[-400:]}", flush=True)
        return None, wall, log
    summary = json.load(open(js))
    return summary, wall, log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wmtune")
    ap.add_argument("out")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--models", default="ansor,wm")
    ap.add_argument("--seconds", type=float, default=1e9)
    ap.add_argument("--model")
    ap.add_argument("--trials-per-task", type=int, default=64)
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    deadline = time.time() + a.seconds
    dev = torch.device("cuda")
    configs = a.models.split(",")
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "trials": a.trials, "operators": [], "model": None}
    g = torch.Generator().manual_seed(7)
    lines = [f"# wmtune on {results['device']} (PyTorch {torch.__version__}, fp32, TF32 off)", "",
             f"Operators: best kernel after {a.trials} trials (`wmtune tune --target cuda "
             f"--trials {a.trials} --seed 1`), median by CUDA events; PyTorch / wmtune > 1 means "
             "wmtune is faster. The records of each run by error (Ansor's codes) are in "
             "gpu-bench.json.", "",
             "| workload | PyTorch ms | " + " | ".join(f"{c} ms | PyTorch/{c} | {c} GFLOP/s | "
                                                     f"{c} tune s" for c in configs) + " |",
             "|---|---|" + "---|---|---|---|" * len(configs)]
    for spec in WORKLOADS:
        ins = [torch.randn(*s, generator=g).to(dev) for s in inputs_for(spec)]
        with torch.no_grad():
            ref_ms = time_torch(lambda: reference(spec, ins))
        row = {"workload": spec, "torch_ms": ref_ms}
        cells = []
        for c in configs:
            if time.time() > deadline:
                cells.append("not run (deadline) | | | ")
                continue
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", spec.split(":")[0]) + "-" + c
            s, wall, log = tune(a.wmtune, a, a.out, name,
                                ["-w", spec, "--trials", str(a.trials), "--cost-model", c])
            best = s["tasks"][0]["best_latency_s"] * 1e3 if s and s["tasks"][0]["best_latency_s"] > 0 else None
            row[c] = {"best_ms": best, "tune_s": wall, "records": error_kinds(log)}
            if best:
                gf = flops_of(spec) / best * 1e-6 if flops_of(spec) else 0
                cells.append(f"{best:.4f} | {ref_ms / best:.3f} | {gf:.0f} | {wall:.0f}")
            else:
                cells.append(f"failed | | | {wall:.0f}")
            print(spec, c, row[c], flush=True)
            json.dump(results | {"partial": row}, open(os.path.join(a.out, "gpu-bench.json"), "w"), indent=2)
        results["operators"].append(row)
        lines.append(f"| {spec} | {ref_ms:.4f} | " + " | ".join(cells) + " |")
        open(os.path.join(a.out, "gpu-bench.md"), "w").write("\n".join(lines) + "\n")

    if a.model and time.time() < deadline:
        import torchvision
        name = os.path.basename(a.model).replace(".onnx", "")
        tasks = json.loads(subprocess.run([a.wmtune, "tasks", a.model, "--json"], capture_output=True,
                                          text=True, check=True).stdout)
        ntasks = len(tasks["tasks"]) if isinstance(tasks, dict) else len(tasks)
        trials = a.trials_per_task * ntasks
        s, wall, log = tune(a.wmtune, a, a.out, name, [a.model, "--trials", str(trials)])
        r = subprocess.run([a.wmtune, "run", a.model, "--target", "cuda", "--log", log, "--bench",
                            "--check", "--tolerance", "1e-3"], capture_output=True, text=True)
        open(os.path.join(a.out, "logs", name + "-run.out"), "w").write(r.stdout + r.stderr)
        m = re.search(r"wmtune ([0-9.]+) ms", r.stdout)
        ours = float(m.group(1)) if m else None
        checked = "-> ok" in r.stdout and "FAILED" not in r.stdout
        net = torchvision.models.resnet18().eval().to(dev)
        x = torch.randn(1, 3, 224, 224, device=dev)
        with torch.no_grad():
            eager = time_torch(lambda: net(x))
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):
                    net(x)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                net(x)
            replay = time_torch(graph.replay)
        results["model"] = {"model": a.model, "tasks": ntasks, "trials": trials, "tune_s": wall,
                            "wmtune_ms": ours, "checked": checked, "torch_eager_ms": eager,
                            "torch_graph_ms": replay}
        lines += ["", f"Model {name}, batch 1: `wmtune tune {name}.onnx --target cuda --trials "
                  f"{trials}` ({a.trials_per_task} x {ntasks} tasks, {wall:.0f} s), then `wmtune run "
                  "--target cuda --log LOG --bench --check` (libtorch CPU reference); PyTorch: "
                  "torchvision's resnet18 in eval mode (its batch norms unfolded), same GPU.", "",
                  "| wmtune ms | checked | PyTorch eager ms | PyTorch CUDA graph ms | eager / wmtune | "
                  "graph / wmtune |", "|---|---|---|---|---|---|",
                  f"| {ours if ours else 'failed'} | {'ok' if checked else 'FAILED'} | {eager:.3f} | "
                  f"{replay:.3f} | {eager / ours if ours else 0:.2f} | {replay / ours if ours else 0:.2f} |"]
    open(os.path.join(a.out, "gpu-bench.md"), "w").write("\n".join(lines) + "\n")
    json.dump(results, open(os.path.join(a.out, "gpu-bench.json"), "w"), indent=2)
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
