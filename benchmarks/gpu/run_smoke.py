"""The GPU smoke run on the device (benchmarks/gpu/README.md): wm_gpu_cases' programs run by
cuda_smoke, each output checked against PyTorch on the same GPU (fp32, TF32 off), and timed
against PyTorch (cuDNN benchmark mode on). Writes OUT/gpu-smoke.md and OUT/gpu-smoke.tsv.

usage: python3 run_smoke.py CASES OUT RUNNER"""
import os
import statistics
import subprocess
import sys
import time

import torch

from torch_ops import reference, time_torch

cases, out, runner = sys.argv[1], sys.argv[2], sys.argv[3]
data = os.path.join(out, "data")
os.makedirs(data, exist_ok=True)
dev = torch.device("cuda")

workloads, programs, params = {}, {}, {}
for line in open(os.path.join(cases, "manifest.tsv")):
    f = line.split()
    if f[0] == "workload":
        workloads[f[1]] = f[2]
    elif f[0] == "program":
        programs[f[1]] = f[2]
    elif f[0] == "param":
        params.setdefault(f[1], []).append((f[3], f[4], [int(x) for x in f[6:]]))


refs, torch_ms, first_program = {}, {}, {}
for pid, j in programs.items():
    first_program.setdefault(j, pid)
for j, spec in workloads.items():
    g = torch.Generator().manual_seed(int(j) + 7)
    ins = []
    for role, name, dims in params[first_program[j]]:
        if role == "in":
            t = torch.randn(*dims, generator=g, dtype=torch.float32)
            t.numpy().tofile(os.path.join(data, f"w{j}_in{len(ins)}.bin"))
            ins.append(t.to(dev))
    with torch.no_grad():
        refs[j] = reference(spec, ins).float().cpu()
        torch_ms[j] = time_torch(lambda: reference(spec, ins))

rows = []
deadline = time.time() + float(os.environ.get("WM_SMOKE_SECONDS", "300"))
# Round-robin over the workloads, so that a deadline leaves every workload some programs.
order = sorted(programs.items(), key=lambda kv: (sum(1 for p, jj in programs.items()
                                                     if jj == kv[1] and int(p) < int(kv[0])), int(kv[0])))
for pid, j in order:
    if time.time() > deadline:
        print(f"deadline: {len(programs) - len(rows)} programs not run", flush=True)
        break
    t0 = time.time()
    try:
        r = subprocess.run([runner, cases, data, pid], capture_output=True, text=True,
                           timeout=float(os.environ.get("WM_SMOKE_TIMEOUT", "20")))
        msg = (r.stdout.strip() or r.stderr.strip()).splitlines()[-1] if (r.stdout or r.stderr) else ""
        rc = r.returncode
    except subprocess.TimeoutExpired as e:
        last = (e.stderr or b"").decode(errors="replace").strip().splitlines()
        msg, rc = "timeout after " + (last[-1] if last else "nothing"), 1
    status, ms, err = "error", None, None
    if rc == 0 and msg.startswith("ok "):
        ms = float(msg.split()[2])
        got = torch.from_numpy(
            __import__("numpy").fromfile(os.path.join(data, f"p{int(pid):03d}_out0.bin"), dtype="float32"))
        want = refs[j].reshape(-1)
        if got.numel() != want.numel():
            status, msg = "wrong-size", f"{got.numel()} elements, want {want.numel()}"
        else:
            err = ((got - want).abs() / want.abs().clamp(min=1.0)).max().item()
            status = "ok" if err <= 1e-3 else "WRONG"
    rows.append((pid, workloads[j], status, ms, err, msg if status != "ok" else ""))
    print(pid, workloads[j], status, ms, err, msg if status != "ok" else "", f"({time.time() - t0:.1f} s)",
          flush=True)

with open(os.path.join(out, "gpu-smoke.tsv"), "w") as f:
    for row in rows:
        f.write("\t".join("" if x is None else str(x) for x in row) + "\n")

name = torch.cuda.get_device_name(0)
lines = [f"# GPU smoke run on {name} (torch {torch.__version__})", "",
         "| workload | programs ok / run | max rel. error | best ms | median ms | PyTorch ms | PyTorch / best |",
         "|---|---|---|---|---|---|---|"]
for j, spec in workloads.items():
    mine = [r for r in rows if r[1] == spec]
    good = [r for r in mine if r[2] == "ok"]
    errs = [r[4] for r in mine if r[4] is not None]
    if good:
        best = min(r[3] for r in good)
        med = statistics.median(r[3] for r in good)
        lines.append(f"| {spec} | {len(good)} / {len(mine)} | {max(errs):.2e} | {best:.4f} | {med:.4f} | "
                     f"{torch_ms[j]:.4f} | {torch_ms[j] / best:.3f} |")
    else:
        lines.append(f"| {spec} | 0 / {len(mine)} | - | - | - | {torch_ms[j]:.4f} | - |")
bad = [r for r in rows if r[2] != "ok"]
if bad:
    lines += ["", "Failures:", ""] + [f"- {r[0]} {r[1]}: {r[2]} {r[5]}" for r in bad]
open(os.path.join(out, "gpu-smoke.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
