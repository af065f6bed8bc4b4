"""Timing shared by the baseline scripts: warm-up, then samples of `number` calls lasting at least
min_ms each, the median sample per call (the same rule as wmtune's own timing)."""
import argparse
import time


def parse_args(doc):
    """The arguments every baseline script takes: MODEL.onnx --threads N --min-ms MS."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: the library's default)")
    ap.add_argument("--min-ms", type=float, default=50.0, help="each timing sample lasts at least this long")
    return ap.parse_args()


def time_call(fn, min_ms=50.0, repeat=9):
    for _ in range(3):
        fn()
    number = 1
    while True:  # calls per sample: enough for min_ms
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt * 1e3 >= min_ms or number >= 1 << 20:
            break
        number *= 2
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    samples.sort()
    return samples[len(samples) // 2] * 1e3
