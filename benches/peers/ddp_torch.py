"""PyTorch's side of `benches/dist.rs`'s `ddp` case: the nn_transformer step (torch_bench.py's
CharTransformer, 16 sequences of 64 a rank, AdamW) bare and under DistributedDataParallel
with the gloo backend, one thread a rank. Run from benches/peers:

    OMP_NUM_THREADS=1 torchrun --nproc_per_node 1 ddp_torch.py
    OMP_NUM_THREADS=1 torchrun --nproc_per_node 2 ddp_torch.py

Rank 0 prints the median step of 41 (after 5 warm-up steps) in µs, each step followed by a
barrier outside the clock, as the Rust side times it."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from torch_bench import CharTransformer


def median_us(step, warm=5, count=41):
    for _ in range(warm):
        step()
        dist.barrier()
    times = []
    for _ in range(count):
        t = time.perf_counter()
        step()
        times.append((time.perf_counter() - t) * 1e6)
        dist.barrier()
    return sorted(times)[len(times) // 2]


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    ids = torch.randint(0, 96, (16, 65), generator=torch.Generator().manual_seed(rank))
    x, y = ids[:, :-1], ids[:, 1:].reshape(-1)

    def step_of(model):
        opt = torch.optim.AdamW(model.parameters())

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x).reshape(-1, 96), y).backward()
            opt.step()
        return step

    torch.manual_seed(0)
    bare = median_us(step_of(CharTransformer()))
    torch.manual_seed(0)
    wrapped = DistributedDataParallel(CharTransformer())
    ddp = median_us(step_of(wrapped))
    if rank == 0:
        n = sum(p.numel() for p in wrapped.parameters())
        print(f"{size} ranks, PyTorch {torch.__version__} gloo, nn_transformer step, "
              f"{n} parameters, median of 41:")
        print(f"  {'bare model':55} {bare:12.1f} µs")
        print(f"  {'DistributedDataParallel':55} {ddp:12.1f} µs")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
