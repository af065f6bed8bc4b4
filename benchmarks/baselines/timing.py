"""Timing shared by the baseline scripts: warm-up, then samples of `number` calls lasting at least
min_ms each, the median sample per call (the same rule as wmtune's own timing)."""
import time


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
