"""NumPy side of the peer comparison: the same cases as src/main.rs, printed one per line as
`case<TAB>median_ms`. Run by the Rust program with OPENBLAS_NUM_THREADS set."""
import sys
import time

import numpy as np


def median_ms(f, reps):
    f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    rng = np.random.default_rng(0)
    n16 = 16 * 1024 * 1024
    a = rng.standard_normal(n16, dtype=np.float32)
    b = rng.standard_normal(n16, dtype=np.float32)
    m = rng.standard_normal((4096, 4096), dtype=np.float32)
    col = rng.standard_normal((4096, 1), dtype=np.float32)
    h1, h2 = a.astype(np.float16), b.astype(np.float16)
    cases = {
        "add_f32_16M_new": (lambda: a + b, 15),
        "bcast_add_4096x4096+4096x1": (lambda: m + col, 15),
        "sum_last_4096x4096": (lambda: m.sum(axis=1), 15),
        "sum_first_4096x4096": (lambda: m.sum(axis=0), 15),
        "transpose_contiguous_4096x4096": (lambda: np.ascontiguousarray(m.T), 7),
        "add_f16_16M_new": (lambda: h1 + h2, 7),
    }
    for n in (256, 1024, 2048):
        for dt, name in ((np.float32, "f32"), (np.float64, "f64")):
            x = rng.standard_normal((n, n)).astype(dt)
            y = rng.standard_normal((n, n)).astype(dt)
            reps = 100 if n <= 256 else (11 if n <= 1024 else 5)
            cases[f"matmul_{name}_{n}"] = ((lambda x=x, y=y: x @ y), reps)
    only = set(sys.argv[1:])
    for name, (f, reps) in cases.items():
        if only and name not in only:
            continue
        print(f"{name}\t{median_ms(f, reps):.3f}", flush=True)


if __name__ == "__main__":
    main()
