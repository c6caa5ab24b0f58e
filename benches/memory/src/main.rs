//! Peak live heap bytes of one training step (forward + backward), above what the inputs and
//! parameters already hold: a counting global allocator, reset just before the step. Run with
//! the buffer pool off (`NAMEDTENSOR_POOL_BYTES=0`) so that a freed tensor is freed, as in
//! PyTorch's allocator. The models are benches/peers' (`mlp_train_64x784x256x10`,
//! `attention_train_b32_s128_h256`); `torch_memory.py` measures PyTorch's.

use namedtensor::DynTensor;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only
// observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` above with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `step` three times to warm up, then once more measured: peak live bytes above the
/// bytes live when it starts.
fn measure(name: &str, step: &dyn Fn()) {
    for _ in 0..3 {
        step();
    }
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    step();
    let peak = PEAK.load(Relaxed) - base;
    println!("{name} peak_bytes {peak}");
}

fn main() {
    namedtensor::storage::set_buffer_pool_capacity(0);
    let which = std::env::args().nth(1).unwrap_or_default();
    if which.is_empty() || which == "mlp" {
        let (batch, d_in, hidden, classes) = (64, 784, 256, 10);
        let x = DynTensor::<f32>::randn(&[batch, d_in], 1);
        let w1 = (DynTensor::<f32>::randn(&[d_in, hidden], 2) * 0.05).requires_grad_(true);
        let b1 = DynTensor::<f32>::zeros(&[hidden]).requires_grad_(true);
        let w2 = (DynTensor::<f32>::randn(&[hidden, classes], 3) * 0.05).requires_grad_(true);
        let b2 = DynTensor::<f32>::zeros(&[classes]).requires_grad_(true);
        let labels = DynTensor::<i64>::arange(0, batch as i64, 1).remainder_scalar(classes as i64);
        let step = || {
            for p in [&w1, &b1, &w2, &b2] {
                p.zero_grad();
            }
            let logits = (&x.matmul(&w1) + &b1).relu().matmul(&w2) + &b2;
            // cross-entropy: the picked log-probabilities, as F.cross_entropy
            let picked = logits.log_softmax(1).gather(1, &labels.unsqueeze(1));
            let loss = -picked.sum() / batch as f64;
            loss.backward();
        };
        measure("mlp_train_64x784x256x10", &step);
    }
    if which.is_empty() || which == "tanh" {
        // One pointwise op's backward alone: what its formula's temporaries cost.
        let z = DynTensor::<f32>::randn(&[32, 128, 256], 11).requires_grad_(true);
        let step = || {
            z.zero_grad();
            z.tanh().sum().backward();
        };
        measure("tanh_b32_s128_h256", &step);
    }
    if which.is_empty() || which == "attention" {
        let (b, s, h) = (32, 128, 256);
        let p = |shape: &[usize], seed: u64| {
            (DynTensor::<f32>::randn(shape, seed) * (1.0 / (h as f64).sqrt())).requires_grad_(true)
        };
        let (wy, wh, wr, wt) = (p(&[h, h], 1), p(&[h, h], 2), p(&[h, h], 3), p(&[h, h], 4));
        let (bm, br, w) = (p(&[h], 5), p(&[h], 6), p(&[h], 7));
        let y = DynTensor::<f32>::randn(&[b, s, h], 8);
        let ht = DynTensor::<f32>::randn(&[b, h], 9);
        let rt1 = DynTensor::<f32>::randn(&[b, h], 10);
        let step = || {
            for t in [&wy, &wh, &wr, &wt, &bm, &br, &w] {
                t.zero_grad();
            }
            let tmp = ht.matmul(&wh) + rt1.matmul(&wr);
            let mt = (y.matmul(&wy) + tmp.unsqueeze(1) + &bm).tanh();
            let at = mt.matmul(&w).softmax(-1);
            let rt = at.unsqueeze(1).matmul(&y).squeeze_dim(1) + (rt1.matmul(&wt) + &br).tanh();
            rt.sum().backward();
        };
        measure("attention_train_b32_s128_h256", &step);
    }
}
