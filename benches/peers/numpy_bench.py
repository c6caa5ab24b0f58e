"""NumPy side of the peer comparison (src/main.rs), run as a worker: after building its data it
prints `ready`, then reads requests `CASE WARM_MS COUNT` from stdin, one per line, runs that
case for WARM_MS milliseconds untimed (at least once), then COUNT times timed, and prints the
milliseconds of each timed run on one line (`-` for a case it does not have).
The Rust program asks for a block of runs between its own libraries' blocks of the same case,
so every library is timed under the same machine load. OPENBLAS_NUM_THREADS is set by the
caller."""
import numpy as np
from worker import serve


def cases():
    rng = np.random.default_rng(0)
    n16 = 16 * 1024 * 1024
    a = rng.standard_normal(n16, dtype=np.float32)
    b = rng.standard_normal(n16, dtype=np.float32)
    m = rng.standard_normal((4096, 4096), dtype=np.float32)
    col = rng.standard_normal((4096, 1), dtype=np.float32)
    h1, h2 = a.astype(np.float16), b.astype(np.float16)
    s1 = rng.standard_normal((2, 8, 16), dtype=np.float32)
    s2 = rng.standard_normal((2, 8, 16), dtype=np.float32)
    table = {
        "add_f32_2x8x16": lambda: s1 + s2,
        "sum_f32_2x8x16": lambda: s1.sum(),
        "add_f32_16M_new": lambda: a + b,
        "bcast_add_4096x4096+4096x1": lambda: m + col,
        "sum_last_4096x4096": lambda: m.sum(axis=1),
        "sum_first_4096x4096": lambda: m.sum(axis=0),
        "transpose_contiguous_4096x4096": lambda: np.ascontiguousarray(m.T),
        "add_f16_16M_new": lambda: h1 + h2,
    }
    for n in (256, 1024, 2048):
        for dt, name in ((np.float32, "f32"), (np.float64, "f64")):
            x = rng.standard_normal((n, n)).astype(dt)
            y = rng.standard_normal((n, n)).astype(dt)
            table[f"matmul_{name}_{n}"] = lambda x=x, y=y: x @ y
    return table


def main():
    serve(cases())


if __name__ == "__main__":
    main()
