"""NumPy's side of the exp, softmax and transpose cases of examples/timing.rs: min and median
of N timings, each after reading a 512 MiB buffer (cold operands), as timing.rs does.

    python3 benches/numpy_timing.py [reps]
"""
import sys
import time

import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x):
    d = x - x.max(axis=-1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=-1, keepdims=True))


def logsumexp(x):
    m = x.max(axis=-1, keepdims=True)
    return (np.log(np.exp(x - m).sum(axis=-1, keepdims=True)) + m)[:, 0]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    rng = np.random.default_rng(0)
    n = 1 << 24
    g = rng.standard_normal(n, dtype=np.float32)
    g64 = g.astype(np.float64)
    gm = rng.standard_normal((4096, 4096), dtype=np.float32)
    dst = np.zeros((4096, 4096), dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    cases = [
        ("np.exp f32 16M new", lambda: np.exp(g)),
        ("np.exp f32 16M into existing (out=)", lambda: np.exp(g, out=out)),
        ("np.exp f64 16M new", lambda: np.exp(g64)),
        ("sigmoid f32 16M new (1/(1+exp(-x)))", lambda: 1.0 / (1.0 + np.exp(-g))),
        ("softmax 4096² last dim", lambda: softmax(gm)),
        ("log_softmax 4096² last dim", lambda: log_softmax(gm)),
        ("logsumexp 4096² last dim", lambda: logsumexp(gm)),
        ("transpose 4096² ascontiguousarray(a.T)", lambda: np.ascontiguousarray(gm.T)),
        ("transpose 4096² copyto existing", lambda: np.copyto(dst, gm.T)),
    ]
    flush = np.ones(512 << 20, dtype=np.uint8)
    times = [[] for _ in cases]
    for _ in range(reps):
        for k, (_, f) in enumerate(cases):
            flush[::4096].sum()
            flush.sum()
            t0 = time.perf_counter()
            r = f()
            times[k].append((time.perf_counter() - t0) * 1e3)
            del r
    print(f"numpy {np.__version__}")
    for (name, _), t in zip(cases, times):
        t.sort()
        print(f"{name:45} min {t[0]:7.2f} ms   median {t[len(t) // 2]:7.2f} ms")


if __name__ == "__main__":
    main()
