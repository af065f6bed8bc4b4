#!/usr/bin/python3
"""Generates the test models (random weights; nothing is downloaded or committed).

    /usr/bin/python3 scripts/gen_models.py OUT_DIR [--only NAME...]

Writes resnet18.onnx, resnet50.onnx, mobilenetv2.onnx (torchvision), bert.onnx (a 2-layer
BERT-style encoder: seq 128, hidden 768, 12 heads, FFN 3072), vit.onnx (a ViT-style encoder:
torchvision's VisionTransformer with ViT-S/16 widths, 224x224, 4 layers), mlp.onnx (a small MLP),
and malformed inputs for the error tests: truncated.onnx, not_onnx.onnx, cycle.onnx,
missing_initializer.onnx (all of them without --only).
Needs Debian's python3-torch, python3-torchvision and python3-onnx (run with /usr/bin/python3).
"""
import argparse
import os
import sys

import onnx
from onnx import TensorProto, helper


def randomize(model, torch):
    # Default init makes folded biases zero and repeated layers identical: draw every parameter.
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (1.0 / max(1, p[0].numel()) ** 0.5 if p.dim() > 1 else 0.1))
        for name, b in model.named_buffers():
            if name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
            elif name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
    return model.eval()


def export(torch, model, example, path, grad=False):
    # The TorchScript exporter at opset 13 (PyTorch 2.9+ defaults to its dynamo exporter, which
    # writes opset 18 and other graphs): the same models from Debian's PyTorch and from the GPU
    # machine's.
    import inspect
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with torch.set_grad_enabled(grad):
        torch.onnx.export(model, example, path, opset_version=13, do_constant_folding=True,
                          input_names=["input"], output_names=["output"], **legacy)


def module_resnet18(torch, tv):
    return randomize(tv.models.resnet18(), torch), torch.randn(1, 3, 224, 224)


def module_resnet50(torch, tv):
    return randomize(tv.models.resnet50(), torch), torch.randn(1, 3, 224, 224)


def module_vit(torch, tv):
    from torchvision.models.vision_transformer import VisionTransformer
    vit = VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=6, hidden_dim=384, mlp_dim=1536)
    return randomize(vit, torch), torch.randn(1, 3, 224, 224)


def module_mobilenetv2(torch, tv):
    return randomize(tv.models.mobilenet_v2(), torch), torch.randn(1, 3, 224, 224)


def module_bert(torch, tv):
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
    enc = randomize(torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                    if "enable_nested_tensor" in torch.nn.TransformerEncoder.__init__.__code__.co_varnames
                    else torch.nn.TransformerEncoder(layer, 2), torch)
    return enc, torch.randn(1, 128, 768)


def module_mlp(torch, tv):
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, 10), torch.nn.Softmax(dim=1))
    return randomize(mlp, torch), torch.randn(8, 256)


# The PyTorch modules the ONNX files are exported from (benchmarks/baselines/torch_model.py
# rebuilds them: the same weights, since randomize() draws them from a fixed seed).
MODULES = {"resnet18": module_resnet18, "resnet50": module_resnet50, "mobilenetv2": module_mobilenetv2,
           "bert": module_bert, "vit": module_vit, "mlp": module_mlp}


def gen_module(name):
    def gen(out, torch, tv):
        model, example = MODULES[name](torch, tv)
        # bert, vit: the fused attention fast path has no ONNX form; it is off with grad enabled
        export(torch, model, example, os.path.join(out, name + ".onnx"), grad=(name in ("bert", "vit")))
    return gen


def gen_malformed(out, torch, tv):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    good = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 13)])
    data = good.SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        big = onnx.load(os.path.join(out, "mlp.onnx")).SerializeToString() if os.path.exists(os.path.join(out, "mlp.onnx")) else data
        f.write(big[: len(big) // 2])
    with open(os.path.join(out, "not_onnx.onnx"), "w") as f:
        f.write("this is not an ONNX model\n" * 20)
    # a cycle: a reads b, b reads a
    cyc = helper.make_graph([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                             helper.make_node("Relu", ["a"], ["b"], name="second"),
                             helper.make_node("Identity", ["b"], ["y"], name="out")], "cycle", [x], [y])
    with open(os.path.join(out, "cycle.onnx"), "wb") as f:
        f.write(helper.make_model(cyc, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    # a MatMul whose weight initializer is missing
    miss = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")], "missing", [x], [y])
    with open(os.path.join(out, "missing_initializer.onnx"), "wb") as f:
        f.write(helper.make_model(miss, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())


GENERATORS = {name: gen_module(name) for name in MODULES}
GENERATORS["malformed"] = gen_malformed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*", choices=sorted(GENERATORS), help="generate only these")
    args = ap.parse_args()
    import torch
    import torchvision as tv
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    for name in args.only or ["resnet18", "resnet50", "mobilenetv2", "bert", "vit", "mlp", "malformed"]:
        GENERATORS[name](args.out, torch, tv)
        print("generated", name, file=sys.stderr)


if __name__ == "__main__":
    main()
