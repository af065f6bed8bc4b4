#!/usr/bin/python3
"""ONNX Runtime baseline of an ONNX model: CPU execution provider, all graph optimizations, the
same thread count, random inputs of the model's shapes (symbolic dimensions taken as 1).
Prints one JSON line {"ms": ...}, or {"unavailable": "why"} when onnxruntime is not installed
(pip install --target DIR onnxruntime, then PYTHONPATH=DIR).

    /usr/bin/python3 benchmarks/baselines/ort_model.py out/models/resnet18.onnx --threads 2
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import parse_args, time_call  # noqa: E402


def main():
    args = parse_args(__doc__)
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(json.dumps({"unavailable": f"onnxruntime is not installed ({e})"}))
        return
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if args.threads > 0:
        so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    ms = time_call(lambda: sess.run(None, feeds), args.min_ms)
    print(json.dumps({"ms": ms, "onnxruntime": ort.__version__}))


if __name__ == "__main__":
    main()
