"""The request loop shared by the Python peers of src/main.rs (numpy_bench.py,
torch_bench.py): print `ready`, then for each request `CASE WARM_MS COUNT` on stdin run that
case for WARM_MS milliseconds untimed (at least once), then COUNT times timed, and print the
milliseconds of each timed run on one line (`-` for a case the table does not have)."""
import sys
import time


def serve(table):
    print("ready", flush=True)
    for line in sys.stdin:
        case, warm_ms, count = line.split()
        f = table.get(case)
        if f is None:
            print("-", flush=True)
            continue
        warm_until = time.perf_counter() + float(warm_ms) / 1e3
        f()
        while time.perf_counter() < warm_until:
            f()
        times = []
        for _ in range(int(count)):
            t0 = time.perf_counter()
            f()
            times.append((time.perf_counter() - t0) * 1e3)
        print(" ".join(f"{t:.6f}" for t in times), flush=True)
