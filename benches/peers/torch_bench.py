"""PyTorch side of the peer comparison (src/main.rs), run as a worker with the protocol of
numpy_bench.py: prints `ready`, then answers `CASE WARM_MS COUNT` requests with the
milliseconds of COUNT timed runs (`-` for a case it does not have). Threads: the caller's
OMP_NUM_THREADS, also passed to torch.set_num_threads. Run under a python with torch
(PEERS_TORCH_PYTHON); without torch the worker exits and the comparison goes on without it."""
import os
import torch
import torch.nn.functional as F
from worker import serve


# The char_transformer example's model (examples/char_transformer): vocabulary 96, causal
# pre-norm layers; by default its sizes in the nn_transformer cases (model 64, 4 heads, hidden
# 256, 2 layers, sequences of 64).
class CharTransformer(torch.nn.Module):
    def __init__(self, model=64, heads=4, hidden=256, context=64, layers=2):
        super().__init__()
        self.tokens = torch.nn.Embedding(96, model)
        self.positions = torch.nn.Embedding(context, model)
        self.blocks = torch.nn.ModuleList([
            torch.nn.TransformerEncoderLayer(model, heads, hidden, dropout=0.0,
                                             activation="gelu", batch_first=True,
                                             norm_first=True)
            for _ in range(layers)])
        self.norm = torch.nn.LayerNorm(model)
        self.head = torch.nn.Linear(model, 96)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.tokens(ids) + self.positions(torch.arange(s))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(s)
        for b in self.blocks:
            x = b(x, src_mask=mask, is_causal=True)
        return self.head(self.norm(x))


def cases():
    torch.manual_seed(0)
    n16 = 16 * 1024 * 1024
    a, b = torch.randn(n16), torch.randn(n16)
    m, col = torch.randn(4096, 4096), torch.randn(4096, 1)
    h1, h2 = a.half(), b.half()
    s1, s2 = torch.randn(2, 8, 16), torch.randn(2, 8, 16)
    table = {
        "add_f32_16M_new": lambda: a + b,
        "bcast_add_4096x4096+4096x1": lambda: m + col,
        "sum_last_4096x4096": lambda: m.sum(1),
        "sum_first_4096x4096": lambda: m.sum(0),
        "transpose_contiguous_4096x4096": lambda: m.t().contiguous(),
        "add_f16_16M_new": lambda: h1 + h2,
        "add_f32_2x8x16": lambda: s1 + s2,
        "sum_f32_2x8x16": lambda: s1.sum(),
    }
    for n in (256, 1024, 2048):
        for dt, name in ((torch.float32, "f32"), (torch.float64, "f64")):
            x, y = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
            table[f"matmul_{name}_{n}"] = lambda x=x, y=y: x @ y

    # MLP with cross-entropy, batch 64, 784-256-10.
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

    table["mlp_train_64x784x256x10"] = mlp

    # Seed 004's attention at batch 32, seqlen 128, hidden 256.
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

    table["attention_train_b32_s128_h256"] = attention

    # Whole nn training steps (src/main.rs, nn_training_cases): AdamW, batch 32 of 8x8.
    xd = torch.rand(32, 64)
    yd = torch.arange(32) % 10
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    cnn = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 8, 8)),
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(128, 10))

    def train_step(model):
        opt = torch.optim.AdamW(model.parameters())

        def step():
            opt.zero_grad()
            F.cross_entropy(model(xd), yd).backward()
            opt.step()
        return step

    table["nn_mlp_adamw_b32_64x128x10"] = train_step(mlp)
    table["nn_cnn_adamw_b32_8x8"] = train_step(cnn)

    ids = torch.randint(0, 96, (16, 65), generator=torch.Generator().manual_seed(0))
    lm = CharTransformer()
    lm_opt = torch.optim.AdamW(lm.parameters())

    def lm_step():
        lm_opt.zero_grad()
        F.cross_entropy(lm(ids[:, :-1]).reshape(-1, 96), ids[:, 1:].reshape(-1)).backward()
        lm_opt.step()

    table["nn_transformer_adamw_b16_s64_m64"] = lm_step

    # Real image size: 3x32x32, three conv layers (src/main.rs, training_steps::cnn32).
    img = torch.rand(32, 3, 32, 32)
    cnn32 = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(1024, 10))
    cnn32_opt = torch.optim.AdamW(cnn32.parameters())

    def cnn32_step():
        cnn32_opt.zero_grad()
        F.cross_entropy(cnn32(img), yd).backward()
        cnn32_opt.step()

    table["nn_cnn_adamw_b32_3x32x32"] = cnn32_step

    # GPT-2-small width: model 768, 12 heads, hidden 3072, 2 layers, 4 sequences of 128.
    wide_ids = torch.randint(0, 96, (4, 129), generator=torch.Generator().manual_seed(0))
    wide = CharTransformer(768, 12, 3072, 128, 2)
    wide_opt = torch.optim.AdamW(wide.parameters())

    def wide_step():
        wide_opt.zero_grad()
        logits = wide(wide_ids[:, :-1]).reshape(-1, 96)
        F.cross_entropy(logits, wide_ids[:, 1:].reshape(-1)).backward()
        wide_opt.step()

    table["nn_transformer_adamw_b4_s128_m768"] = wide_step

    def bf16(step):
        def low():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                step()
        return low

    table["nn_mlp_adamw_b32_64x128x10_bf16"] = bf16(train_step(mlp))
    table["nn_transformer_adamw_b16_s64_m64_bf16"] = bf16(lm_step)
    return table


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    serve(cases())


if __name__ == "__main__":
    main()
