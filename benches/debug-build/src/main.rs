//! Times 16M-element `add`, `exp` and `sum` (f32) in this crate's build. Run it twice and
//! compare the medians:
//!
//! ```sh
//! cd benches/debug-build
//! cargo run              # this crate at opt-level 0, namedtensor at 3 (Cargo.toml)
//! cargo run --release    # everything at opt-level 3
//! ```
//!
//! The first argument sets the number of rounds (default 15); the lines printed are
//! `op median_ms min_ms`.

use namedtensor::DynTensor;
use std::time::Instant;

fn time(rounds: usize, mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm-up: pools, page faults
    let mut ms: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[0])
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    let n = 1 << 24;
    let a = DynTensor::<f32>::rand(&[n], 1);
    let b = DynTensor::<f32>::rand(&[n], 2);
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!("# {profile} build of this crate, 16M f32, {rounds} rounds");
    let cases: [(&str, Box<dyn FnMut()>); 3] = [
        ("add", Box::new(|| drop(&a + &b))),
        ("exp", Box::new(|| drop(a.exp()))),
        ("sum", Box::new(|| drop(a.sum()))),
    ];
    for (name, mut f) in cases {
        let (median, min) = time(rounds, &mut f);
        println!("{name} {median:.2} {min:.2}");
    }
}
