//! Peer comparison: the same work through namedtensor, ndarray, candle-core, the `gemm` crate
//! called directly, and NumPy (python3, if installed), in one run, with ratios.
//!
//! ```sh
//! cd benches/peers && cargo run --release -- --threads 2 [CASE ...]
//! ```
//! `--threads N` sets every library's thread count (namedtensor's pool, rayon's global pool
//! used by ndarray/candle/gemm, `MATMUL_NUM_THREADS` for ndarray's matrixmultiply,
//! `OPENBLAS_NUM_THREADS` for NumPy). Naming cases runs only those.
//!
//! The libraries are timed *interleaved*: every round runs a block of calls of each library's
//! version of a case, in an order rotated from round to round, and NumPy (a worker process, see
//! `numpy_bench.py`) runs its blocks between the others. On a shared machine whose speed drifts
//! by tens of percent from one second to the next, every library then sees the same drift, and
//! the ratios hold still where medians taken one library after the other did not. Before each
//! block the program sleeps for [`SETTLE`], so that the previous library's idle threads (which
//! spin for a while after a call: OpenBLAS's for about 2^28 cycles) have gone to sleep, then
//! calls the library for [`WARM_UP`] without counting (at least once: the virtual CPUs of a
//! shared machine run slowly for a few milliseconds after an idle spell). Times are medians
//! over all counted calls, in milliseconds. (`PEERS_SETTLE_MS=0` shows how much the libraries
//! disturb each other without the pause.)

use half::{bf16, f16};
use namedtensor::DynTensor;
use ndarray::{Array1, Array2, Axis};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Results: case -> library -> median ms.
type Table = BTreeMap<String, BTreeMap<&'static str, f64>>;

/// One library's version of a case: runs it once and returns the milliseconds it took.
type Run<'a> = Box<dyn FnMut() -> f64 + 'a>;

/// The pause before each block of calls (see the module docs); `PEERS_SETTLE_MS` overrides it.
const SETTLE: Duration = Duration::from_millis(150);

/// How long each block runs uncounted calls first (see the module docs).
const WARM_UP: Duration = Duration::from_millis(30);

/// Wraps `f` (which drops its result, so freeing is timed too) as a timed [`Run`].
fn timed<'a>(mut f: impl FnMut() + 'a) -> Run<'a> {
    Box::new(move || {
        let start = Instant::now();
        f();
        start.elapsed().as_secs_f64() * 1e3
    })
}

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    t[t.len() / 2]
}

/// A Python peer (NumPy, PyTorch) in a worker process that runs one case per request (see
/// `numpy_bench.py`, `torch_bench.py`).
struct Worker {
    name: &'static str,
    process: Option<(Child, ChildStdin, BufReader<ChildStdout>)>,
}

impl Worker {
    /// Starts `script` under `python` with `threads` threads; if it cannot start (no python3,
    /// no NumPy, no torch) the comparison goes on without it.
    fn start(name: &'static str, python: &str, script: &str, threads: usize) -> Self {
        let child = Command::new(python)
            .arg(script)
            .env("OPENBLAS_NUM_THREADS", threads.to_string())
            .env("OMP_NUM_THREADS", threads.to_string())
            .env("MKL_NUM_THREADS", threads.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{name} skipped: {python} not runnable ({e})");
                return Worker {
                    name,
                    process: None,
                };
            }
        };
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        if stdout.read_line(&mut line).is_err() || line.trim() != "ready" {
            eprintln!("{name} skipped: the worker did not start (its error is above)");
            let _ = child.kill();
            return Worker {
                name,
                process: None,
            };
        }
        Worker {
            name,
            process: Some((child, stdin, stdout)),
        }
    }

    /// `count` timed runs of `case` after [`WARM_UP`] of untimed ones; `None` without a
    /// worker or for a case it lacks.
    fn run(&mut self, case: &str, count: usize) -> Option<Vec<f64>> {
        let (_, stdin, stdout) = self.process.as_mut()?;
        writeln!(stdin, "{case} {} {count}", WARM_UP.as_millis()).ok()?;
        stdin.flush().ok()?;
        let mut line = String::new();
        stdout.read_line(&mut line).ok()?;
        line.split_whitespace().map(|t| t.parse().ok()).collect()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some((mut child, stdin, _)) = self.process.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// Times `case` through every library in `libs` and the Python workers that have it: `rounds`
/// rounds, each of which runs,
/// for every library in an order rotated every round, a pause ([`SETTLE`]), uncounted calls for
/// [`WARM_UP`] and `block` timed calls. Records the medians.
fn compare(
    table: &mut Table,
    workers: &mut [Worker],
    case: &str,
    [rounds, block]: [usize; 2],
    mut libs: Vec<(&'static str, Run)>,
) {
    let settle = std::env::var("PEERS_SETTLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(SETTLE, Duration::from_millis);
    let present: Vec<usize> = (0..workers.len())
        .filter(|&w| workers[w].run(case, 1).is_some())
        .collect();
    let count = libs.len() + present.len();
    let mut times = vec![Vec::with_capacity(rounds * block); count];
    for round in 0..rounds {
        for i in (0..count).map(|i| (i + round) % count) {
            std::thread::sleep(settle);
            let runs = match libs.get_mut(i) {
                Some((_, run)) => {
                    let warm = Instant::now();
                    run();
                    while warm.elapsed() < WARM_UP {
                        run();
                    }
                    (0..block).map(|_| run()).collect()
                }
                None => {
                    let w = &mut workers[present[i - libs.len()]];
                    w.run(case, block).expect("a python worker stopped")
                }
            };
            times[i].extend(runs);
        }
    }
    let names = libs
        .iter()
        .map(|(name, _)| *name)
        .chain(present.iter().map(|&w| workers[w].name));
    for (lib, t) in names.zip(times) {
        let ms = median(t);
        println!("{case:<34} {lib:<12} {ms:>10.3} ms");
        table.entry(case.to_string()).or_default().insert(lib, ms);
    }
}

#[path = "../../support/read_loop.rs"]
mod read_loop;

/// A STREAM-like read of `data`: its sum split across rayon's pool in 64 Ki-element chunks,
/// each summed by the shared read loop (`benches/support/read_loop.rs`).
fn stream_read(data: &[f32]) -> f32 {
    data.par_chunks(1 << 16).map(read_loop::read_sum).sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads: usize = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let only: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with("--") && a.parse::<usize>().is_err())
        .cloned()
        .collect();
    let want = |c: &str| only.is_empty() || only.iter().any(|o| o == c);
    // SAFETY: set before any other thread exists (first statements of main).
    unsafe {
        std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
        std::env::set_var("MATMUL_NUM_THREADS", threads.to_string());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .unwrap();
    namedtensor::set_num_threads(threads);
    println!("threads: {threads}");
    let mut table = Table::new();
    let here = env!("CARGO_MANIFEST_DIR");
    // PyTorch's worker runs under `PEERS_TORCH_PYTHON` (a venv's python with torch), else
    // python3; without torch it is skipped.
    let torch_python = std::env::var("PEERS_TORCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut workers = vec![
        Worker::start(
            "numpy",
            "python3",
            &format!("{here}/numpy_bench.py"),
            threads,
        ),
        Worker::start(
            "torch",
            &torch_python,
            &format!("{here}/torch_bench.py"),
            threads,
        ),
    ];
    let numpy = &mut workers[..];
    small_and_training_cases(&mut table, numpy, &want);
    nn_training_cases(&mut table, numpy, &want);
    let dev = candle_core::Device::Cpu;

    const N16: usize = 16 << 20;
    // ---- elementwise add into a new tensor
    if want("add_f32_16M_new") {
        let a = DynTensor::<f32>::randn(&[N16], 1);
        let b = DynTensor::<f32>::randn(&[N16], 2);
        let (x, y) = (Array1::from(a.to_vec()), Array1::from(b.to_vec()));
        let (cx, cy) = (
            candle_core::Tensor::new(a.to_vec(), &dev).unwrap(),
            candle_core::Tensor::new(b.to_vec(), &dev).unwrap(),
        );
        compare(
            &mut table,
            numpy,
            "add_f32_16M_new",
            [5, 3],
            vec![
                ("namedtensor", timed(|| drop(&a + &b))),
                ("ndarray", timed(|| drop(&x + &y))),
                ("candle", timed(|| drop((&cx + &cy).unwrap()))),
            ],
        );
    }
    if want("add_f16_16M_new") || want("add_bf16_16M_new") {
        let a = DynTensor::<f32>::randn(&[N16], 1);
        let b = DynTensor::<f32>::randn(&[N16], 2);
        let x = candle_core::Tensor::new(a.to_vec(), &dev).unwrap();
        let y = candle_core::Tensor::new(b.to_vec(), &dev).unwrap();
        let (ha, hb) = (a.to_dtype::<f16>(), b.to_dtype::<f16>());
        let (ba, bb) = (a.to_dtype::<bf16>(), b.to_dtype::<bf16>());
        for (case, dt) in [
            ("add_f16_16M_new", candle_core::DType::F16),
            ("add_bf16_16M_new", candle_core::DType::BF16),
        ] {
            if !want(case) {
                continue;
            }
            let (cx, cy) = (x.to_dtype(dt).unwrap(), y.to_dtype(dt).unwrap());
            let ours: Run = if dt == candle_core::DType::F16 {
                timed(|| drop(&ha + &hb))
            } else {
                timed(|| drop(&ba + &bb))
            };
            compare(
                &mut table,
                numpy,
                case,
                [5, 3],
                vec![
                    ("namedtensor", ours),
                    ("candle", timed(|| drop((&cx + &cy).unwrap()))),
                ],
            );
        }
    }
    // ---- broadcast add, reductions, transpose copy on 4096²
    let m = DynTensor::<f32>::randn(&[4096, 4096], 3);
    let col = DynTensor::<f32>::randn(&[4096, 1], 4);
    let md = m.to_vec();
    let xm = Array2::from_shape_vec((4096, 4096), m.to_vec()).unwrap();
    let xc = Array2::from_shape_vec((4096, 1), col.to_vec()).unwrap();
    let cm = candle_core::Tensor::new(m.to_vec(), &dev)
        .unwrap()
        .reshape((4096, 4096))
        .unwrap();
    let cc = candle_core::Tensor::new(col.to_vec(), &dev)
        .unwrap()
        .reshape((4096, 1))
        .unwrap();
    if want("bcast_add_4096x4096+4096x1") {
        compare(
            &mut table,
            numpy,
            "bcast_add_4096x4096+4096x1",
            [5, 3],
            vec![
                ("namedtensor", timed(|| drop(&m + &col))),
                ("ndarray", timed(|| drop(&xm + &xc))),
                ("candle", timed(|| drop(cm.broadcast_add(&cc).unwrap()))),
            ],
        );
    }
    for (c, dim) in [("sum_last_4096x4096", 1usize), ("sum_first_4096x4096", 0)] {
        if !want(c) {
            continue;
        }
        compare(
            &mut table,
            numpy,
            c,
            [5, 3],
            vec![
                (
                    "namedtensor",
                    timed(|| drop(m.sum_dim(dim as isize, false))),
                ),
                ("ndarray", timed(|| drop(xm.sum_axis(Axis(dim))))),
                ("candle", timed(|| drop(cm.sum(dim).unwrap()))),
                (
                    "stream-read",
                    timed(|| {
                        std::hint::black_box(stream_read(&md));
                    }),
                ),
            ],
        );
        let gbs = |ms: f64| 4096.0 * 4096.0 * 4.0 / (ms * 1e-3) / 1e9;
        let (ours, read) = (gbs(table[c]["namedtensor"]), gbs(table[c]["stream-read"]));
        println!(
            "{c}: namedtensor reads at {ours:.1} GB/s = {:.0} % of the stream-like read of the \
             same matrix in the same rounds ({read:.1} GB/s)",
            100.0 * ours / read
        );
    }
    if want("transpose_contiguous_4096x4096") {
        compare(
            &mut table,
            numpy,
            "transpose_contiguous_4096x4096",
            [5, 3],
            vec![
                ("namedtensor", timed(|| drop(m.t().contiguous()))),
                (
                    "ndarray",
                    timed(|| drop(xm.t().as_standard_layout().into_owned())),
                ),
                (
                    "candle",
                    timed(|| drop(cm.t().unwrap().contiguous().unwrap())),
                ),
            ],
        );
    }
    // ---- matmul
    for n in [256usize, 1024, 2048] {
        let rounds = if n <= 256 {
            [15, 20]
        } else if n <= 1024 {
            [9, 2]
        } else {
            [9, 1]
        };
        for dt in ["f32", "f64"] {
            let c = format!("matmul_{dt}_{n}");
            if !want(&c) {
                continue;
            }
            if dt == "f32" {
                matmul_case::<f32>(&mut table, numpy, &c, n, rounds, threads, &dev);
            } else {
                matmul_case::<f64>(&mut table, numpy, &c, n, rounds, threads, &dev);
            }
        }
    }
    drop(workers);

    // ---- the table of ratios: peer time / namedtensor time (> 1 means namedtensor is faster)
    let peers = ["torch", "numpy", "ndarray", "candle", "gemm"];
    println!(
        "\n| case | namedtensor ms | {} |",
        peers.map(|p| format!("{p} ms (ratio)")).join(" | ")
    );
    println!("|---|---:|{}", "---:|".repeat(peers.len()));
    for (case, libs) in &table {
        let Some(&ours) = libs.get("namedtensor") else {
            continue;
        };
        let cells: Vec<String> = peers
            .iter()
            .map(|p| {
                libs.get(p)
                    .map_or("–".into(), |&t| format!("{t:.2} ({:.2}×)", t / ours))
            })
            .collect();
        println!("| {case} | {ours:.2} | {} |", cells.join(" | "));
    }
    println!("\nthreads: {threads}");
}

trait MatElem:
    namedtensor::Float + candle_core::WithDType + ndarray::LinalgScalar + Default + Copy
{
}
impl MatElem for f32 {}
impl MatElem for f64 {}

fn matmul_case<T: MatElem>(
    table: &mut Table,
    numpy: &mut [Worker],
    c: &str,
    n: usize,
    rounds: [usize; 2],
    threads: usize,
    dev: &candle_core::Device,
) {
    let a = DynTensor::<T>::randn(&[n, n], 5);
    let b = DynTensor::<T>::randn(&[n, n], 6);
    let (va, vb) = (a.to_vec(), b.to_vec());
    let mut dst = vec![T::default(); n * n];
    let xa = Array2::from_shape_vec((n, n), va.clone()).unwrap();
    let xb = Array2::from_shape_vec((n, n), vb.clone()).unwrap();
    let ca = candle_core::Tensor::from_vec(va.clone(), (n, n), dev).unwrap();
    let cb = candle_core::Tensor::from_vec(vb.clone(), (n, n), dev).unwrap();
    let gemm_direct = timed(|| {
        // SAFETY: all three buffers hold n*n elements in row-major order (row stride n,
        // column stride 1) and `dst` does not alias the inputs.
        unsafe {
            gemm::gemm(
                n,
                n,
                n,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                va.as_ptr(),
                1,
                n as isize,
                vb.as_ptr(),
                1,
                n as isize,
                T::default(),
                <T as namedtensor::Element>::ONE,
                false,
                false,
                false,
                if threads > 1 {
                    gemm::Parallelism::Rayon(threads)
                } else {
                    gemm::Parallelism::None
                },
            )
        }
    });
    compare(
        table,
        numpy,
        c,
        rounds,
        vec![
            ("namedtensor", timed(|| drop(a.matmul(&b)))),
            ("gemm", gemm_direct),
            ("ndarray", timed(|| drop(xa.dot(&xb)))),
            ("candle", timed(|| drop(ca.matmul(&cb).unwrap()))),
        ],
    );
}

/// Per-call overhead on tiny tensors that do not require grad (what inference pays for
/// autograd), and training steps: forward and backward of an MLP with cross-entropy and of
/// seed 004's attention. A step frees the previous gradients, as `zero_grad(set_to_none)`.
fn small_and_training_cases(
    table: &mut Table,
    workers: &mut [Worker],
    want: &dyn Fn(&str) -> bool,
) {
    if want("add_f32_2x8x16") {
        let a = DynTensor::<f32>::randn(&[2, 8, 16], 1);
        let b = DynTensor::<f32>::randn(&[2, 8, 16], 2);
        let (x, y) = (
            ndarray::Array3::from_shape_vec((2, 8, 16), a.to_vec()).unwrap(),
            ndarray::Array3::from_shape_vec((2, 8, 16), b.to_vec()).unwrap(),
        );
        compare(
            table,
            workers,
            "add_f32_2x8x16",
            [5, 20000],
            vec![
                ("namedtensor", timed(|| drop(&a + &b))),
                ("ndarray", timed(|| drop(&x + &y))),
            ],
        );
    }
    if want("sum_f32_2x8x16") {
        let a = DynTensor::<f32>::randn(&[2, 8, 16], 1);
        let x = ndarray::Array3::from_shape_vec((2, 8, 16), a.to_vec()).unwrap();
        compare(
            table,
            workers,
            "sum_f32_2x8x16",
            [5, 20000],
            vec![
                ("namedtensor", timed(|| drop(a.sum()))),
                (
                    "ndarray",
                    timed(|| {
                        std::hint::black_box(x.sum());
                    }),
                ),
            ],
        );
    }
    if want("mlp_train_64x784x256x10") {
        let (batch, d_in, hidden, classes) = (64, 784, 256, 10);
        let x = DynTensor::<f32>::randn(&[batch, d_in], 1);
        let w1 = (DynTensor::<f32>::randn(&[d_in, hidden], 2) * 0.05).requires_grad_(true);
        let b1 = DynTensor::<f32>::zeros(&[hidden]).requires_grad_(true);
        let w2 = (DynTensor::<f32>::randn(&[hidden, classes], 3) * 0.05).requires_grad_(true);
        let b2 = DynTensor::<f32>::zeros(&[classes]).requires_grad_(true);
        let labels = DynTensor::<i64>::arange(0, batch as i64, 1).remainder_scalar(classes as i64);
        let one_hot = DynTensor::<i64>::arange(0, classes as i64, 1)
            .eq(&labels.unsqueeze(1))
            .to_dtype::<f32>();
        let step = || {
            for p in [&w1, &b1, &w2, &b2] {
                p.zero_grad();
            }
            let logits = (&x.matmul(&w1) + &b1).relu().matmul(&w2) + &b2;
            let loss = -(&logits.log_softmax(1) * &one_hot).sum() / batch as f64;
            loss.backward();
        };
        compare(
            table,
            workers,
            "mlp_train_64x784x256x10",
            [5, 20],
            vec![("namedtensor", timed(step))],
        );
    }
    if want("attention_train_b32_s128_h256") {
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
            let tmp = ht.matmul(&wh) + rt1.matmul(&wr); // [b, h]
            let mt = (y.matmul(&wy) + tmp.unsqueeze(1) + &bm).tanh(); // [b, s, h]
            let at = mt.matmul(&w).softmax(-1); // [b, s]
            let rt = at.unsqueeze(1).matmul(&y).squeeze_dim(1) + (rt1.matmul(&wt) + &br).tanh();
            rt.sum().backward();
        };
        compare(
            table,
            workers,
            "attention_train_b32_s128_h256",
            [5, 10],
            vec![("namedtensor", timed(step))],
        );
    }
}

/// Whole training steps written with `nn` and `optim` (`benches/support/training_steps.rs`,
/// shared with `benches/debug-build`).
fn nn_training_cases(table: &mut Table, workers: &mut [Worker], want: &dyn Fn(&str) -> bool) {
    if want("nn_mlp_adamw_b32_64x128x10") {
        let step = training_steps::mlp();
        compare(
            table,
            workers,
            "nn_mlp_adamw_b32_64x128x10",
            [5, 200],
            vec![("namedtensor", timed(step))],
        );
    }
    if want("nn_cnn_adamw_b32_8x8") {
        let step = training_steps::cnn();
        compare(
            table,
            workers,
            "nn_cnn_adamw_b32_8x8",
            [5, 100],
            vec![("namedtensor", timed(step))],
        );
    }
    if want("nn_cnn_adamw_b32_3x32x32") {
        let step = training_steps::cnn32();
        compare(
            table,
            workers,
            "nn_cnn_adamw_b32_3x32x32",
            [2, 10],
            vec![("namedtensor", timed(step))],
        );
    }
    if want("nn_transformer_adamw_b16_s64_m64") {
        let step = training_steps::transformer();
        compare(
            table,
            workers,
            "nn_transformer_adamw_b16_s64_m64",
            [3, 30],
            vec![("namedtensor", timed(step))],
        );
    }
    if want("nn_transformer_adamw_b4_s128_m768") {
        let step = training_steps::transformer_wide();
        compare(
            table,
            workers,
            "nn_transformer_adamw_b4_s128_m768",
            [1, 5],
            vec![("namedtensor", timed(step))],
        );
    }
    // The same steps with bf16 matrix products (autocast) and f32 master weights.
    if want("nn_mlp_adamw_b32_64x128x10_bf16") {
        let step = training_steps::bf16(training_steps::mlp());
        compare(
            table,
            workers,
            "nn_mlp_adamw_b32_64x128x10_bf16",
            [5, 200],
            vec![("namedtensor", timed(step))],
        );
    }
    if want("nn_transformer_adamw_b16_s64_m64_bf16") {
        let step = training_steps::bf16(training_steps::transformer());
        compare(
            table,
            workers,
            "nn_transformer_adamw_b16_s64_m64_bf16",
            [3, 30],
            vec![("namedtensor", timed(step))],
        );
    }
}

#[path = "../../support/training_steps.rs"]
mod training_steps;
