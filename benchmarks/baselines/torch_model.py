#!/usr/bin/python3
"""PyTorch baseline of a generated model: rebuilds the module the ONNX file was exported from
(scripts/gen_models.py, named by the file: resnet18, resnet50, mobilenetv2, bert, vit, mlp; the same weights),
and times it eager and TorchScript-frozen on the same thread count, inference mode.
Prints one JSON line: {"ms": best of the two, "eager_ms": ..., "frozen_ms": ...}, or
{"unavailable": "why"} for a model it does not know.

    /usr/bin/python3 benchmarks/baselines/torch_model.py out/models/resnet18.onnx --threads 2
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from timing import parse_args, time_call  # noqa: E402


def main():
    args = parse_args(__doc__)
    name = os.path.splitext(os.path.basename(args.model))[0]
    import gen_models
    if name not in gen_models.MODULES:
        print(json.dumps({"unavailable": f"no PyTorch module for '{name}' in scripts/gen_models.py"}))
        return
    import torch
    import torchvision as tv
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    model, example = gen_models.MODULES[name](torch, tv)
    out = {}
    with torch.inference_mode():
        out["eager_ms"] = time_call(lambda: model(example), args.min_ms)
    try:
        with torch.no_grad():
            frozen = torch.jit.freeze(torch.jit.trace(model, example).eval())
            out["frozen_ms"] = time_call(lambda: frozen(example), args.min_ms)
    except Exception as e:  # a model TorchScript cannot trace: eager only
        out["frozen_error"] = str(e).splitlines()[0][:200]
    out["ms"] = min(v for k, v in out.items() if k.endswith("_ms"))
    out["threads"] = torch.get_num_threads()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
