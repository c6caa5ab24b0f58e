"""The cases of benches/cuda.rs in PyTorch on the same GPU, timed the same way.

Each case runs 3 times to warm up, then REPS times, each timed alone on the host clock from the
call to the end of torch.cuda.synchronize(); the median is printed with the bandwidth or rate
it implies, in the same table format as `cargo bench --features cuda --bench cuda`. Inputs are
random (never zeros). PyTorch's default for float32 matrix products is full float32 (TF32 off),
as in namedtensor's cuBLAS call.

Run: python3 benches/cuda_torch.py [filter ...]
"""

import statistics
import sys
import time

import torch

REPS = 20


def median_ms(f):
    for _ in range(3):
        f()
        torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        start = time.perf_counter()
        r = f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
        del r
    return statistics.median_low(times)


def main():
    wanted = sys.argv[1:]
    dev = torch.device("cuda:0")
    g = torch.Generator(device="cpu").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(dev)

    n = 1 << 26
    side = 8192
    f = 4.0
    a, b = randn(n), randn(n)
    m, row = randn(side, side), randn(side)

    def sort_case():
        s = randn(4096, 4096)
        return median_ms(lambda: torch.sort(s, dim=-1, stable=True))

    def sort_shape_case(*shape):
        s = randn(*shape)
        return median_ms(lambda: torch.sort(s, dim=-1, stable=True))

    def index_case():
        table = randn(32768, 1024)
        ids = ((torch.arange(65536, dtype=torch.int64) * 7919) % 32768).to(dev)
        return median_ms(lambda: table.index_select(0, ids))

    def matmul_case(side, dtype):
        x = randn(side, side).to(dtype)
        y = randn(side, side).to(dtype)
        return median_ms(lambda: x @ y)

    cases = [
        ("add_f32_64M", 3 * n * f, 0, lambda: median_ms(lambda: a + b)),
        ("exp_f32_64M", 2 * n * f, 0, lambda: median_ms(lambda: a.exp())),
        ("add_row_broadcast_8192sq", 2 * n * f, 0, lambda: median_ms(lambda: m + row)),
        ("sum_all_f32_64M", n * f, 0, lambda: median_ms(lambda: a.sum())),
        ("sum_rows_8192sq", n * f, 0, lambda: median_ms(lambda: m.sum(1))),
        ("sum_cols_8192sq", n * f, 0, lambda: median_ms(lambda: m.sum(0))),
        ("argmax_rows_8192sq", n * f, 0, lambda: median_ms(lambda: m.argmax(1))),
        ("softmax_rows_8192sq", 2 * n * f, 0, lambda: median_ms(lambda: m.softmax(-1))),
        ("cumsum_rows_8192sq", 2 * n * f, 0, lambda: median_ms(lambda: m.cumsum(-1))),
        ("transpose_copy_8192sq", 2 * n * f, 0, lambda: median_ms(lambda: m.t().contiguous())),
        ("cast_f32_bf16_64M", n * (f + 2), 0, lambda: median_ms(lambda: a.to(torch.bfloat16))),
        ("sort_rows_4096sq", 4096 * 4096 * (2 * f + 8), 0, sort_case),
        ("sort_rows_16384x1024", 16384 * 1024 * (2 * f + 8), 0,
         lambda: sort_shape_case(16384, 1024)),
        ("sort_1_row_16M", n / 4 * (2 * f + 8), 0, lambda: sort_shape_case(1 << 24)),
        ("index_select_rows_64k_of_32k", 2 * 65536 * 1024 * f, 0, index_case),
        ("matmul_f32_4096", 0, 2 * 4096**3, lambda: matmul_case(4096, torch.float32)),
        ("matmul_bf16_8192", 0, 2 * 8192**3, lambda: matmul_case(8192, torch.bfloat16)),
    ]
    print(f"{'case (torch ' + torch.__version__ + ')':<28} {'median':>13}  rate")
    for name, nbytes, flop, run in cases:
        if wanted and not any(w in name for w in wanted):
            continue
        ms = run()
        if flop:
            rate = f"{flop / ms / 1e9:8.1f} TFLOP/s"
        else:
            rate = f"{nbytes / ms / 1e6:8.0f} GB/s   "
        print(f"{name:<28} {ms:>10.3f} ms  {rate}")


if __name__ == "__main__":
    main()
