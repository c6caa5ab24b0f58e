"""PyTorch's peak live CPU bytes during one training step of benches/peers' MLP and attention,
above what is live when the step starts (the counterpart of src/main.rs).

The C heap is counted by live_bytes.c, preloaded (every malloc/posix_memalign/free, by
malloc_usable_size): PyTorch's CPU allocator allocates through it.
Run: gcc -O2 -shared -fPIC live_bytes.c -o /tmp/live_bytes.so -ldl
     LD_PRELOAD=/tmp/live_bytes.so <venv>/bin/python torch_memory.py
"""

import ctypes
import sys

import torch
import torch.nn.functional as F


counter = ctypes.CDLL(None)  # the preloaded shim's symbols
counter.nt_live.restype = counter.nt_peak.restype = ctypes.c_long


def peak(step):
    for _ in range(3):
        step()
    base = counter.nt_live()
    counter.nt_reset_peak()
    step()
    return counter.nt_peak() - base


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    if which in ("", "mlp"):
        batch, d_in, hidden, classes = 64, 784, 256, 10
        x = torch.randn(batch, d_in)
        w1 = (torch.randn(d_in, hidden) * 0.05).requires_grad_()
        b1 = torch.zeros(hidden, requires_grad=True)
        w2 = (torch.randn(hidden, classes) * 0.05).requires_grad_()
        b2 = torch.zeros(classes, requires_grad=True)
        labels = torch.arange(batch) % classes

        def mlp():
            for p in (w1, b1, w2, b2):
                p.grad = None
            logits = torch.relu(x @ w1 + b1) @ w2 + b2
            F.cross_entropy(logits, labels).backward()

        print("mlp_train_64x784x256x10 peak_bytes", peak(mlp))
    if which in ("", "tanh"):
        z = torch.randn(32, 128, 256, requires_grad=True)

        def tanh():
            z.grad = None
            torch.tanh(z).sum().backward()

        print("tanh_b32_s128_h256 peak_bytes", peak(tanh))
    if which in ("", "attention"):
        bs, s, h = 32, 128, 256
        p = [(torch.randn(h, h) / h**0.5).requires_grad_() for _ in range(4)]
        v = [(torch.randn(h) / h**0.5).requires_grad_() for _ in range(3)]
        wy, wh, wr, wt = p
        bm, br, w = v
        y, ht, rt1 = torch.randn(bs, s, h), torch.randn(bs, h), torch.randn(bs, h)

        def attention():
            for t in p + v:
                t.grad = None
            tmp = ht @ wh + rt1 @ wr
            mt = torch.tanh(y @ wy + tmp.unsqueeze(1) + bm)
            at = torch.softmax(mt @ w, -1)
            rt = (at.unsqueeze(1) @ y).squeeze(1) + torch.tanh(rt1 @ wt + br)
            rt.sum().backward()

        print("attention_train_b32_s128_h256 peak_bytes", peak(attention))


if __name__ == "__main__":
    main()
