"""PyTorch on the GPU as the baseline of the GPU benchmarks (run_smoke.py, bench_wmtune.py): the
operator of a wmtune workload spec, and timing by CUDA events (3 warm-ups; repeats filling
>= 20 ms; median of 5). Importing it sets fp32 without TF32 and cuDNN's benchmark mode."""
import statistics

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def spec_args(spec):
    op, _, rest = spec.partition(":")
    kv = dict(p.split("=") for p in rest.split(",") if p)
    return op, kv


def reference(spec, ins):
    op, kv = spec_args(spec)
    if op in ("gemm", "matmul"):
        return ins[0] @ ins[1]
    if op == "batch_matmul":
        return torch.bmm(ins[0], ins[1])
    if op in ("conv2d", "depthwise_conv2d"):
        x, w = ins[0], ins[1]
        groups = x.shape[1] // w.shape[1]
        return F.conv2d(x, w, stride=int(kv.get("stride", 1)), padding=int(kv.get("pad", 0)),
                        dilation=int(kv.get("dilation", 1)), groups=groups)
    if op == "softmax":
        return torch.softmax(ins[0], dim=-1)
    raise SystemExit(f"no PyTorch reference for {spec}")


def time_torch(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    one = max(start.elapsed_time(end), 1e-4)
    reps = int(min(max(20.0 / one, 3), 2000))
    samples = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / reps)
    return statistics.median(samples)
