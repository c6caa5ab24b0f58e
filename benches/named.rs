//! Zero cost of names: each named operation against the positional call it stands for, on the
//! same data, timed interleaved (named, positional, named, …) and keeping each one's best
//! time, so machine load hits both alike. Prints `named / positional` per case; 100 % means
//! the names cost nothing.
//!
//! Run: `cargo bench --bench named` (optionally `-- REPS`, default 30). One thread, so the
//! comparison is not at the mercy of the scheduler.
//!
//! Small cases time a batch of calls per sample, so a constant per-call cost of the named
//! layer (building views, checking sizes) shows; large cases show that it vanishes next to
//! the work.

use namedtensor::{Tensor, dims};
use std::hint::black_box;
use std::time::Instant;

dims! { Batch, Rows, Cols, Query, Key, Hidden }

/// Seconds per call of `named` and of `positional`: the best of `reps` samples of `calls`
/// calls each, the two alternating.
fn interleaved(
    reps: usize,
    calls: usize,
    mut named: impl FnMut(),
    mut positional: impl FnMut(),
) -> (f64, f64) {
    let sample = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        t.elapsed().as_secs_f64() / calls as f64
    };
    let (mut best_named, mut best_positional) = (f64::MAX, f64::MAX);
    for _ in 0..reps {
        best_named = best_named.min(sample(&mut named));
        best_positional = best_positional.min(sample(&mut positional));
    }
    (best_named, best_positional)
}

fn report(case: &str, shape: &str, (named, positional): (f64, f64)) {
    println!(
        "| {case} | {shape} | {:.2} µs | {:.2} µs | {:.1} % |",
        named * 1e6,
        positional * 1e6,
        100.0 * named / positional
    );
}

/// (batch, rows, cols) sizes and calls per sample: a small case where per-call costs show,
/// and a large one.
const SIZES: [([usize; 3], usize); 2] = [([2, 8, 16], 2000), ([32, 256, 256], 2)];

fn sum(reps: usize) {
    for (sizes, calls) in SIZES {
        let x = Tensor::<f32, (Batch, Rows, Cols)>::rand(sizes, 1);
        let d = x.as_dyn();
        let times = interleaved(
            reps,
            calls,
            || {
                black_box(x.sum::<Rows>());
            },
            || {
                black_box(d.sum_dims(&[1], false));
            },
        );
        report(
            "`x.sum::<Rows>()` vs `sum_dims(&[1])`",
            &format!("{sizes:?}"),
            times,
        );
    }
}

fn add(reps: usize) {
    for (sizes, calls) in SIZES {
        let a = Tensor::<f32, (Batch, Rows, Cols)>::rand(sizes, 2);
        let b = Tensor::<f32, (Batch, Rows, Cols)>::rand(sizes, 3);
        let (da, db) = (a.as_dyn(), b.as_dyn());
        let times = interleaved(
            reps,
            calls,
            || {
                black_box(&a + &b);
            },
            || {
                black_box(da + db);
            },
        );
        report("`&a + &b`, same dims", &format!("{sizes:?}"), times);

        // Broadcast by name: `(Cols,)` aligned to the right of `(Batch, Rows, Cols)`.
        let v = Tensor::<f32, (Cols,)>::rand([sizes[2]], 4);
        let dv = v.as_dyn();
        let times = interleaved(
            reps,
            calls,
            || {
                black_box(&a + &v);
            },
            || {
                black_box(da + dv);
            },
        );
        report("`&a + &v`, v: (Cols,)", &format!("{sizes:?}"), times);

        // Alignment that moves a dim: `(Cols, Batch)` needs a permute and an unsqueeze, which
        // positional code has to write out (and pay for) too.
        let w = Tensor::<f32, (Cols, Batch)>::rand([sizes[2], sizes[0]], 5);
        let dw = w.as_dyn();
        let times = interleaved(
            reps,
            calls,
            || {
                black_box(&a + &w);
            },
            || {
                black_box(da + &dw.permute(&[1, 0]).unsqueeze(1));
            },
        );
        report(
            "`&a + &w`, w: (Cols, Batch) vs `permute` + `unsqueeze`",
            &format!("{sizes:?}"),
            times,
        );
    }
}

fn dot(reps: usize) {
    // (batch, query = key, hidden) and calls per sample.
    for ([batch, len, hidden], calls) in [([2, 8, 16], 2000), ([16, 256, 64], 2)] {
        let q = Tensor::<f32, (Batch, Query, Hidden)>::rand([batch, len, hidden], 6);
        let k = Tensor::<f32, (Batch, Key, Hidden)>::rand([batch, len, hidden], 7);
        let (dq, dk) = (q.as_dyn(), k.as_dyn());
        let times = interleaved(
            reps,
            calls,
            || {
                black_box(q.dot(Hidden, &k));
            },
            || {
                black_box(dq.matmul(&dk.transpose(1, 2)));
            },
        );
        report(
            "`q.dot(Hidden, &k)` vs `q.matmul(&k.transpose(1, 2))`",
            &format!("{:?}", [batch, len, hidden]),
            times,
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the first number on the command line is the rep count.
    let reps = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(30);
    namedtensor::set_num_threads(1);
    println!("| operation | sizes | named | positional | named / positional |");
    println!("|---|---|---:|---:|---:|");
    sum(reps);
    add(reps);
    dot(reps);
}
