#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (test/fuzz/corpus/<name>/) from the test inputs:
workload specs of every built-in operator, the test schedules (and broken variants), tuning-log
lines, small .npy files and small ONNX models (good ones and the hostile ones of issue 14).
The output is checked in; rerun after adding seeds (findings of long fuzz runs are added to the
corpora by hand, named finding-*).

    /usr/bin/python3 test/fuzz/make_seeds.py [build/apps/wmtune/wmtune]
"""
import io
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "test", "fuzz", "corpus")
WM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "apps", "wmtune", "wmtune")


def put(kind, name, data):
    d = os.path.join(OUT, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# specs: every operator's documented example, plus hostile ones
out = subprocess.run([WM, "workloads"], capture_output=True, text=True, check=True).stdout
n = 0
for line in out.splitlines():
    for tok in line.split():
        if ":" in tok and "=" in tok and not tok.startswith("-"):
            put("spec", f"op{n:02d}", tok)
            n += 1
for i, s in enumerate(["relu:shape=4294967296x4294967296", "gemm:M=4294967296,N=4294967296,K=4294967296",
                       "depthwise_conv2d:N=1,C=4611686018427387904,H=8,W=8,multiplier=4,R=3,S=3",
                       "conv2d:N=1,C=4,H=8,W=8,K=4,R=3,S=3,dilation=4611686018427387904",
                       "add:shape=3x4,shape_b=3x0", "softmax:M=4,N=-1", "gemm:M=2,N=2,K=2,M=3",
                       "max_pool2d:N=1,C=1,H=4,W=4,R=9,S=9,stride=1"]):
    put("spec", f"hostile{i}", s)

# schedules: first byte picks the workload (fuzz_schedule.cpp), the rest is the JSON
sched_dir = os.path.join(ROOT, "test", "schedule", "schedules")
for i, f in enumerate(sorted(os.listdir(sched_dir))):
    text = open(os.path.join(sched_dir, f)).read()
    for w in range(6):
        put("schedule", f"{os.path.splitext(f)[0]}-w{w}", bytes([w]) + text.encode())
small = {
    "split": [["SP", 2, 0, 16, [4], 1]],
    "huge_split": [["SP", 2, 0, 16, [4294967296, 4294967296], 1]],
    "over_split": [["SP", 2, 0, 16, [8, 8], 1]],
    "align": [["SA", 2, 0, 9223372036854775807, 0]],
    "stage_wrap": [["SP", 4294967298, 0, 16, [4], 1]],
    "parallel": [["SP", 2, 0, 16, [4], 1], ["AN", 2, 0, "parallel"], ["AN", 2, 3, "vectorize"]],
    "cache_write": [["CHW", 2, "local"], ["SP", 3, 0, 16, [2, 4], 1], ["CA", 2, 3, 1]],
    "rfactor": [["SP", 2, 2, 16, [4], 1], ["RF", 2, 2, 0]],
    "inline": [["CI", 1]],
    "deep": json.loads("[" * 70 + "]" * 70),
}
for name, steps in small.items():
    for w in (0, 1):
        put("schedule", f"{name}-w{w}", bytes([w]) + json.dumps(steps).encode())

# log lines: a record of each workload kind, and broken ones
rec = {"v": 1, "workload": "gemm:M=16,N=16,K=16", "task": "3c3e8760425978a5", "target": "llvm",
       "steps": small["split"], "costs": [1e-5, 1.1e-5], "error": "none", "message": "",
       "build_s": 0.1, "time": 0, "model": "random", "seed": 1, "median_s": 1.05e-5, "iqr_s": 0}
put("log", "record", json.dumps(rec) + "\n")
bad = dict(rec, steps=small["huge_split"])
put("log", "huge_split", json.dumps(bad) + "\n" + json.dumps(rec) + "\n")
put("log", "remeasure", json.dumps(rec) + "\n" + json.dumps(dict(rec, remeasure=True, costs=[2e-5])) + "\n")
put("log", "onnx", json.dumps(dict(rec, workload="onnx:/dev/zero#abc")) + "\n")
put("log", "deep", '{"v": 1, "steps": ' + "[" * 5000 + "]" * 5000 + "}\n")
put("log", "torn", json.dumps(rec) + "\n" + json.dumps(rec)[:40])
put("log", "failed", json.dumps(dict(rec, error="run_timeout", costs=[])) + "\n")

# .npy files
def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()
put("npy", "f32", npy(np.arange(6, dtype=np.float32).reshape(2, 3)))
put("npy", "i64", npy(np.array([3, -4], dtype=np.int64)))
put("npy", "bool", npy(np.array([True, False])))
put("npy", "f64_scalar", npy(np.float64(2.5)))
hdr = lambda h: b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h
put("npy", "abc", hdr(b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, abc), }\n"))
put("npy", "neg", hdr(b"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }\n"))
put("npy", "big", hdr(b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }\n") + b"\0" * 16)
put("npy", "overflow", hdr(b"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n"))

# ONNX models
def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()
V = helper.make_tensor_value_info
T = lambda name, arr: helper.make_tensor(name, TensorProto.FLOAT if arr.dtype == np.float32 else TensorProto.INT64,
                                          arr.shape, arr.tobytes(), raw=True)
x = V("x", TensorProto.FLOAT, [1, 3, 8, 8])
w = T("w", np.ones((4, 3, 3, 3), np.float32))
put("onnx", "conv_relu", model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                                 helper.make_node("Relu", ["c"], ["y"])], [x], [V("y", TensorProto.FLOAT, None)], [w]))
put("onnx", "gemm", model([helper.make_node("Gemm", ["a", "b"], ["y"], transB=1)],
                          [V("a", TensorProto.FLOAT, [2, 8])], [V("y", TensorProto.FLOAT, None)],
                          [T("b", np.ones((4, 8), np.float32))]))
put("onnx", "gather_input", model([helper.make_node("Gather", ["d", "i"], ["y"], axis=0)],
                                  [V("i", TensorProto.INT64, [2])], [V("y", TensorProto.FLOAT, None)],
                                  [T("d", np.arange(12, dtype=np.float32).reshape(4, 3))]))
put("onnx", "reshape_softmax", model([helper.make_node("Reshape", ["x", "s"], ["r"]),
                                      helper.make_node("Softmax", ["r"], ["y"], axis=-1)],
                                     [V("x", TensorProto.FLOAT, [2, 6])], [V("y", TensorProto.FLOAT, None)],
                                     [T("s", np.array([3, 4], np.int64))]))
put("onnx", "pool_pad", model([helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                               helper.make_node("GlobalAveragePool", ["p"], ["y"])], [x], [V("y", TensorProto.FLOAT, None)]))
short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 27], raw_data=b"\0" * 16)
put("onnx", "short_init", model([helper.make_node("Relu", ["w"], ["y"])], [], [V("y", TensorProto.FLOAT, [1 << 27])], [short]))
put("onnx", "huge_shape", model([helper.make_node("Relu", ["x"], ["y"])], [V("x", TensorProto.FLOAT, [1 << 32, 1 << 32])],
                                [V("y", TensorProto.FLOAT, None)]))
put("onnx", "cycle", model([helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
                           [], [V("a", TensorProto.FLOAT, [1])]))
put("onnx", "not_onnx", b"this is not a protobuf")
# checkpoints: a tiny trained one, and broken variants of it
import tempfile
tmp = tempfile.mkdtemp()
subprocess.run([WM, "tune", "-w", "gemm:M=16,N=16,K=16", "--trials", "8", "--per-round", "8", "--population", "16",
                "--simulated-costs", "--seed", "1", "--log", f"{tmp}/l.jsonl"], capture_output=True, check=True)
subprocess.run([WM, "train", f"{tmp}/l.jsonl", "-o", f"{tmp}/ck.pt", "--steps", "2", "--wm-latent", "8",
                "--wm-hidden", "16", "--seed", "1"], capture_output=True, check=True)
ck = open(f"{tmp}/ck.pt", "rb").read()
put("checkpoint", "tiny", ck)
put("checkpoint", "half", ck[: len(ck) // 2])
put("checkpoint", "header", ck[:64])
for k, off in enumerate([100, len(ck) // 3, len(ck) - 200]):
    b = bytearray(ck)
    b[off] ^= 0x5A
    put("checkpoint", f"flip{k}", bytes(b))
put("checkpoint", "empty", b"")
# bench files: the shipped ones, and broken or hostile variants
import glob
for f in sorted(glob.glob(os.path.join(ROOT, "configs", "bench", "*.yaml"))):
    put("bench_yaml", os.path.basename(f)[:-5], open(f, "rb").read())
small = "name: t\nworkloads:\n  - gemm:M=8,N=8,K=8\n  - relu:shape=4x4\nconfigs:\n  a: {cost-model: ansor, trials: [4, 8]}\n  b: {flush: , seeds: 2}\n"
put("bench_yaml", "small", small)
put("bench_yaml", "flow_trap", "name: t\nworkloads: [gemm:M=8,N=8,K=8]\nconfigs: {a: {}}\n")
put("bench_yaml", "deep", "name: t\nworkloads: " + "[" * 5000 + "]" * 5000 + "\n")
put("bench_yaml", "aliases", "name: t\nx: &a [1, 2]\nworkloads: *a\nconfigs: {a: {}}\n")
put("bench_yaml", "huge_budget", small.replace("[4, 8]", "[99999999999999999999]"))
put("bench_yaml", "tabs", "name:\tt\n\tworkloads: x\n")
put("bench_yaml", "baselines", small + "baselines:\n  - command: \"echo {\\\"ms\\\": 1}\"\n  - {name: x, command: \"true {model}\"}\ncompare: {reference: b}\n")
# bench results (results.jsonl): a small well-formed run, and broken variants
run = {"type": "run", "bench": "t", "file": "t.yaml", "time": "2026-01-01T00:00:00Z", "target": "llvm", "threads": 2,
       "reference": "a", "per_task": False, "machine": {"cpu": "x", "cores": 2, "threads": 2, "peak_gflops": 100.0,
       "governor": "unknown", "load1": 0.5}, "configs": ["a", "b"], "budgets": {"a": [2, 4], "b": [4]},
       "workloads": [{"name": "gemm:M=8,N=8,K=8", "kind": "spec", "tasks": 1}], "baselines": ["torch"]}
cells = []
for cfg, seed, curve in [("a", 1, [3e-6, 2e-6, 2e-6, 1e-6]), ("b", 1, [None, 4e-6, 3e-6, 3e-6]), ("a", 2, [2e-6, 2e-6, 1.5e-6, 1.5e-6])]:
    cells.append({"type": "cell", "id": f"g.{cfg}.s{seed}", "workload": "gemm:M=8,N=8,K=8", "kind": "spec", "config": cfg,
                  "seed": seed, "trials": 4, "budget_scale": 1, "best_s": curve[-1], "flops": 1024, "tasks": [], "curve": curve,
                  "wall_s": 2.0, "search_s": 0.1, "build_s": 1.0, "run_s": 0.5, "resumed": False, "log": "logs/x.jsonl"})
base = [{"type": "baseline", "name": "torch", "workload": "gemm:M=8,N=8,K=8", "ms": 0.002},
        {"type": "baseline", "name": "torch", "workload": "other", "unavailable": "why"}]
end = {"type": "end", "time": "2026-01-01T00:01:00Z", "machine": run["machine"]}
lines = [json.dumps(r) for r in [run] + cells + base + [end]]
put("bench_results", "run", "\n".join(lines) + "\n")
put("bench_results", "torn", "\n".join(lines) + "\n" + lines[1][:40])
put("bench_results", "no_run", "\n".join(lines[1:]) + "\n")
bad = dict(run, budgets={"a": [0, -3, 1e300]}, configs="ab")
put("bench_results", "bad_run", json.dumps(bad) + "\n" + "\n".join(lines[1:]) + "\n")
odd = [dict(c, trials=1e300, budget_scale=-7, curve=[1e308, "x", None]) for c in cells]
put("bench_results", "odd_cells", "\n".join([lines[0]] + [json.dumps(c) for c in odd]) + "\n")
print("seeds written under", OUT)
