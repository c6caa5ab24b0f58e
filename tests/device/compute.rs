//! The compute operations on every device: pointwise math, broadcasting arithmetic with type
//! promotion and in-place forms, comparisons, reductions, softmax, casts and matrix products,
//! on strided views. Each test runs on the CPU and on cuda:0 (skipped with a printed reason
//! where no GPU is usable) and compares with a reference computed here, naively, in `f64`
//! from the host values.

use super::common;

use common::{assert_close_all, indices};
use half::f16;
use namedtensor::{Device, DynTensor, Element, ErrorKind};

/// A copy of the CPU tensor `t` on `dev`.
fn on<E: Element>(dev: Device, t: &DynTensor<E>) -> DynTensor<E> {
    let moved = t.to_device(dev).unwrap();
    assert_eq!(moved.device(), dev);
    moved
}

/// The result's elements on the host, after checking it stayed on `dev`.
fn host<E: Element>(dev: Device, t: &DynTensor<E>) -> Vec<f64> {
    assert_eq!(t.device(), dev);
    t.to_vec().into_iter().map(|x| x.to_f64()).collect()
}

/// A [4, 3] grid of mixed-sign values, stored transposed (a non-contiguous view).
fn grid() -> (Vec<f64>, DynTensor<f32>) {
    let vals: Vec<f64> = (0..12).map(|i| (i as f64 - 5.5) * 0.37).collect();
    // storage [3, 4], viewed as its transpose: element [i, j] at storage [j, i]
    let mut storage = vec![0f32; 12];
    for i in 0..4 {
        for j in 0..3 {
            storage[j * 4 + i] = vals[i * 3 + j] as f32;
        }
    }
    (vals, DynTensor::from_vec(storage, &[3, 4]).t())
}

fn erf(x: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26 is too coarse; integrate instead (Simpson, 2000 steps).
    let n = 2000;
    let h = x / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(0.0) + f(x);
    for k in 1..n {
        s += f(k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

device_tests! {
    fn unary_math_on_a_transposed_view(dev: Device) {
        let (vals, x) = grid();
        // to_device copies contiguously; transposing on the device keeps the view strided.
        let g = on(dev, &x.t()).t();
        assert!(!g.is_contiguous());
        type Case = (fn(&DynTensor<f32>) -> DynTensor<f32>, fn(f64) -> f64, &'static str);
        let cases: [Case; 12] = [
            (|t| t.exp(), f64::exp, "exp"),
            (|t| t.neg(), |v| -v, "neg"),
            (|t| t.abs(), f64::abs, "abs"),
            (|t| t.relu(), |v| v.max(0.0), "relu"),
            (|t| t.sigmoid(), |v| 1.0 / (1.0 + (-v).exp()), "sigmoid"),
            (|t| t.tanh(), f64::tanh, "tanh"),
            (|t| t.gelu(), |v| 0.5 * v * (1.0 + erf(v / 2f64.sqrt())), "gelu"),
            (|t| t.silu(), |v| v / (1.0 + (-v).exp()), "silu"),
            (
                |t| t.gelu_tanh(),
                |v| 0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh()),
                "gelu_tanh",
            ),
            (|t| t.clamp(-0.5, 1.0), |v| v.clamp(-0.5, 1.0), "clamp"),
            (|t| t.abs().powf(1.5), |v| v.abs().powf(1.5), "powf"),
            (|t| t.round(), |v| v.round_ties_even(), "round"),
        ];
        for (f, r, what) in cases {
            let want: Vec<f64> = vals.iter().map(|&v| r((v as f32) as f64)).collect();
            assert_close_all(&host(dev, &f(&g)), &want, 1e-5, 1e-6, what);
        }
        // in place through the view: the storage's other order is respected
        g.exp_();
        let want: Vec<f64> = vals.iter().map(|&v| ((v as f32) as f64).exp()).collect();
        assert_close_all(&host(dev, &g), &want, 1e-5, 1e-6, "exp_");
        g.clamp_(0.0, 2.0);
        let want: Vec<f64> = want.iter().map(|v| v.clamp(0.0, 2.0)).collect();
        assert_close_all(&host(dev, &g), &want, 1e-5, 1e-6, "clamp_");
    }

    fn broadcasting_arithmetic_promotes_and_writes_in_place(dev: Device) {
        let a = DynTensor::from_vec(vec![1.5f32, -2.0, 3.25], &[3, 1]);
        let b = DynTensor::from_vec(vec![10i64, -20], &[2]);
        let (ga, gb) = (on(dev, &a), on(dev, &b));
        let want = |f: fn(f64, f64) -> f64| -> Vec<f64> {
            indices(&[3, 2])
                .iter()
                .map(|ix| f([1.5, -2.0, 3.25][ix[0]], [10.0, -20.0][ix[1]]))
                .collect()
        };
        let sum = ga.add(&gb); // f32 + i64 → f32
        assert_eq!((sum.shape(), sum.dtype()), (&[3usize, 2][..], namedtensor::DType::F32));
        assert_close_all(&host(dev, &sum), &want(|x, y| x + y), 0.0, 0.0, "add");
        assert_close_all(&host(dev, &ga.mul(&gb)), &want(|x, y| x * y), 0.0, 0.0, "mul");
        assert_close_all(&host(dev, &ga.div(&gb)), &want(|x, y| x / y), 1e-7, 0.0, "div");
        assert_close_all(&host(dev, &ga.maximum(&gb.to_dtype::<f32>())), &want(f64::max), 0.0, 0.0, "maximum");
        // integers: u8 - i8 → i16, wrapping rules of the promoted type
        let u = on(dev, &DynTensor::from_vec(vec![5u8, 200], &[2]));
        let i = on(dev, &DynTensor::from_vec(vec![-1i8, 100], &[2]));
        assert_eq!(u.sub(&i).to_vec(), vec![6i16, 100]);
        // scalars on either side
        assert_close_all(&host(dev, &ga.mul_scalar(2)), &[3.0, -4.0, 6.5], 0.0, 0.0, "mul_scalar");
        // integer division by zero is refused on every device
        assert!(u.try_remainder(&on(dev, &DynTensor::from_vec(vec![0u8], &[1]))).is_err());
        // in place through a transposed view, with a broadcast source
        let m = on(dev, &DynTensor::<f32>::arange(0.0, 6.0, 1.0).view(&[2, 3]));
        let mt = m.t(); // [3, 2]
        mt.add_(&on(dev, &DynTensor::from_vec(vec![100.0f32, 200.0], &[2])));
        assert_eq!(m.to_vec(), vec![100.0, 101.0, 102.0, 203.0, 204.0, 205.0]);
        m.sub_scalar_(100.0);
        assert_eq!(m.to_vec(), vec![0.0, 1.0, 2.0, 103.0, 104.0, 105.0]);
        // an expanded destination is refused
        assert!(on(dev, &DynTensor::<f32>::ones(&[3])).expand(&[2, 3]).try_add_scalar_(1.0).is_err());
    }

    fn comparisons_and_logic_give_bool(dev: Device) {
        let a = on(dev, &DynTensor::from_vec(vec![1.0f32, f32::NAN, 3.0, -1.0], &[2, 2]));
        let b = on(dev, &DynTensor::from_vec(vec![2i32, 2], &[2]));
        assert_eq!(a.gt(&b).to_vec(), vec![false, false, true, false]);
        assert_eq!(a.le(&b).to_vec(), vec![true, false, false, true]);
        assert_eq!(a.ne(&a).to_vec(), vec![false, true, false, false]);
        assert_eq!(a.lt_scalar(2.5).to_vec(), vec![true, false, false, true]);
        assert_eq!(a.isnan().to_vec(), vec![false, true, false, false]);
        assert_eq!(a.isfinite().to_vec(), vec![true, false, true, true]);
        let p = on(dev, &DynTensor::from_vec(vec![true, false, true, false], &[4]));
        let q = on(dev, &DynTensor::from_vec(vec![1.0f32, 1.0, 0.0, 0.0], &[4]));
        assert_eq!(p.logical_and(&q).to_vec(), vec![true, false, false, false]);
        assert_eq!(p.logical_or(&q).to_vec(), vec![true, true, true, false]);
        assert_eq!(p.logical_xor(&q).to_vec(), vec![false, true, true, false]);
        assert_eq!(q.logical_not().to_vec(), vec![false, false, true, true]);
        // bool arithmetic stays bool (+ and maximum are or, * and minimum are and), also
        // through a broadcast, transposed operand
        let r = on(dev, &DynTensor::from_vec(vec![false, true, true, true], &[2, 2])).t();
        let p2 = p.view(&[2, 2]);
        let (or, and) = (vec![true, true, true, true], vec![false, false, true, false]);
        assert_eq!(p2.add(&r).to_vec(), or);
        assert_eq!(p2.maximum(&r).to_vec(), or);
        assert_eq!(p2.mul(&r).to_vec(), and);
        assert_eq!(p2.minimum(&r).to_vec(), and);
        let col = on(dev, &DynTensor::from_vec(vec![false, true], &[2, 1]));
        assert_eq!(p2.add(&col).to_vec(), vec![true, false, true, true]);
        assert_eq!(p2.mul(&col).to_vec(), vec![false, false, true, false]);
    }

    fn reductions_over_dims_with_keepdim(dev: Device) {
        let (vals, x) = grid(); // [4, 3], transposed storage
        let g = on(dev, &x);
        let v = |i: usize, j: usize| (vals[i * 3 + j] as f32) as f64;
        let rows: Vec<Vec<f64>> = (0..4).map(|i| (0..3).map(|j| v(i, j)).collect()).collect();
        let cols: Vec<Vec<f64>> = (0..3).map(|j| (0..4).map(|i| v(i, j)).collect()).collect();
        let mean = |xs: &Vec<f64>| xs.iter().sum::<f64>() / xs.len() as f64;
        let var = |xs: &Vec<f64>| {
            let m = mean(xs);
            xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
        };
        let (rt, at) = (1e-5, 1e-5);
        let s = g.sum_dim(0, true);
        assert_eq!(s.shape(), &[1, 3]);
        assert_close_all(&host(dev, &s), &cols.iter().map(|c| c.iter().sum()).collect::<Vec<_>>(), rt, at, "sum");
        assert_close_all(&host(dev, &g.mean_dims(&[1], false)), &rows.iter().map(mean).collect::<Vec<_>>(), rt, at, "mean");
        assert_close_all(&host(dev, &g.var_dims(&[0], 1, false)), &cols.iter().map(var).collect::<Vec<_>>(), rt, at, "var");
        assert_close_all(&host(dev, &g.std_dims(&[1], 1, true)), &rows.iter().map(|r| var(r).sqrt()).collect::<Vec<_>>(), rt, at, "std");
        let n2: f64 = vals.iter().map(|&x| ((x as f32) as f64).powi(2)).sum::<f64>().sqrt();
        assert_close_all(&host(dev, &g.norm(2.0)), &[n2], rt, at, "norm");
        let n3: Vec<f64> = rows.iter().map(|r| r.iter().map(|x| x.abs().powi(3)).sum::<f64>().cbrt()).collect();
        assert_close_all(&host(dev, &g.norm_dims(3.0, &[1], false)), &n3, 1e-4, at, "norm3");
        assert_close_all(&host(dev, &g.prod_dim(1, false)), &rows.iter().map(|r| r.iter().product()).collect::<Vec<_>>(), rt, at, "prod");
        let lse: Vec<f64> = rows.iter().map(|r| r.iter().map(|x| x.exp()).sum::<f64>().ln()).collect();
        assert_close_all(&host(dev, &g.logsumexp_dims(&[1], false)), &lse, rt, at, "logsumexp");
        // max over dim 0: values and the index of the first maximum
        let (mv, mi) = g.max_dim(0, false);
        let want_i: Vec<i64> = cols
            .iter()
            .map(|c| (0..4).fold(0, |b, i| if c[i] > c[b] { i } else { b }) as i64)
            .collect();
        assert_eq!(mi.to_vec(), want_i);
        assert_close_all(&host(dev, &mv), &cols.iter().map(|c| c.iter().cloned().fold(f64::MIN, f64::max)).collect::<Vec<_>>(), 0.0, 0.0, "max");
        assert_eq!(g.argmin().item(), (0..12).fold(0, |b, k| if v(k / 3, k % 3) < v(b / 3, b % 3) { k } else { b }) as i64);
        assert_close_all(&host(dev, &g.amax_dim(1, false)), &rows.iter().map(|r| r.iter().cloned().fold(f64::MIN, f64::max)).collect::<Vec<_>>(), 0.0, 0.0, "amax");
        // integers sum to i64; truth values
        let i = on(dev, &DynTensor::from_vec(vec![100i8, 100, 100, -3], &[2, 2]));
        assert_eq!(i.sum_dim(1, false).to_vec(), vec![200i64, 97]);
        assert!(g.gt_scalar(0.0).any());
        assert!(!g.gt_scalar(0.0).all());
        assert_eq!(i.gt_scalar(0).all_dim(0, false).to_vec(), vec![true, false]);
        // NaN propagates through max; an empty max is an error
        let nan = on(dev, &DynTensor::from_vec(vec![1.0f32, f32::NAN, 2.0], &[3]));
        assert!(nan.max().item().is_nan());
        assert_eq!(nan.argmax().item(), 1);
        let empty = on(dev, &DynTensor::<f32>::zeros(&[2, 0]));
        assert_eq!(empty.try_amax_dim(1, false).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(empty.sum_dim(1, false).to_vec(), vec![0.0, 0.0]);
    }

    fn softmax_along_each_dim(dev: Device) {
        let (vals, x) = grid();
        let g = on(dev, &x);
        for dim in [0usize, 1] {
            let want: Vec<f64> = indices(&[4, 3])
                .iter()
                .map(|ix| {
                    let along = |k: usize| {
                        let mut jx = ix.clone();
                        jx[dim] = k;
                        (vals[jx[0] * 3 + jx[1]] as f32) as f64
                    };
                    let n = [4, 3][dim];
                    let m = (0..n).map(along).fold(f64::MIN, f64::max);
                    let z: f64 = (0..n).map(|k| (along(k) - m).exp()).sum();
                    (along(ix[dim]) - m).exp() / z
                })
                .collect();
            assert_close_all(&host(dev, &g.softmax(dim as isize)), &want, 1e-5, 1e-6, "softmax");
            let logs: Vec<f64> = want.iter().map(|p| p.ln()).collect();
            assert_close_all(&host(dev, &g.log_softmax(dim as isize)), &logs, 1e-5, 1e-5, "log_softmax");
        }
    }

    fn layer_and_rms_norm_along_each_dim(dev: Device) {
        use namedtensor::nn::{LayerNorm, Module, RmsNorm};
        namedtensor::dims! { NormA, NormB, NormC }
        // [3, 4, 5] seen through a permutation (strided), and a gradient expanded along dim 1,
        // both views made on the device.
        let vals: Vec<f32> = (0..60).map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.3).collect();
        let base = DynTensor::from_vec(vals, &[5, 3, 4]);
        let gvals: Vec<f32> = (0..15).map(|i| (i as f32 - 7.0) * 0.25).collect();
        let gbase = DynTensor::from_vec(gvals, &[3, 1, 5]);
        let (x, g) = (base.permute(&[1, 2, 0]), gbase.expand(&[3, 4, 5]));
        let (xd, gd) = (on(dev, &base).permute(&[1, 2, 0]), on(dev, &gbase).expand(&[3, 4, 5]));
        assert!(!xd.is_contiguous());
        for d in 0..3usize {
            for center in [true, false] {
                let x = xd.detach().requires_grad_(true);
                let n = x.shallow_clone().refine_names::<(NormA, NormB, NormC)>();
                let size = x.shape()[d];
                macro_rules! apply {
                    ($dim:ty) => {
                        if center {
                            let l = LayerNorm::<$dim, f32>::new(size);
                            l.to_device(dev).unwrap();
                            l.forward(&n).into_dyn()
                        } else {
                            let l = RmsNorm::<$dim, f32>::new(size);
                            l.to_device(dev).unwrap();
                            l.forward(&n).into_dyn()
                        }
                    };
                }
                let y = match d {
                    0 => apply!(NormA),
                    1 => apply!(NormB),
                    _ => apply!(NormC),
                };
                y.backward_with(&gd, namedtensor::autograd::BackwardOptions::default()).unwrap();
                let gx = x.grad().unwrap();
                // The formula in f64 on the host.
                let (xf, gf, di) = (x.to_dtype::<f64>(), g.to_dtype::<f64>(), d as isize);
                let xf = xf.to_device(Device::Cpu).unwrap();
                let eps = if center { 1e-5 } else { f32::EPSILON as f64 };
                let xc = if center { &xf - &xf.mean_dim(di, true) } else { xf.shallow_clone() };
                let r = (&xc * &xc).mean_dim(di, true).add_scalar(eps).rsqrt();
                let want_y = &xc * &r;
                let mg = if center { gf.mean_dim(di, true) } else { gf.mul_scalar(0.0) };
                let want_gx = &r * &(&(&gf - &mg) - &(&want_y * &(&gf * &want_y).mean_dim(di, true)));
                let what = format!("dim {d} center {center}");
                assert_close_all(&host(dev, &y), &want_y.to_vec(), 1e-5, 1e-5, &format!("y {what}"));
                assert_close_all(&host(dev, &gx), &want_gx.to_vec(), 1e-4, 1e-4, &format!("gx {what}"));
            }
        }
        let _ = x;
    }

    fn casts_and_half_precision_compute(dev: Device) {
        let (vals, x) = grid();
        let g = on(dev, &x);
        let h = g.to_dtype::<f16>();
        assert_eq!(h.device(), dev);
        let want: Vec<f64> = vals.iter().map(|&v| f16::from_f64((v as f32) as f64).to_f64()).collect();
        assert_close_all(&host(dev, &h), &want, 0.0, 0.0, "to f16");
        // f16 + f16 computes in f32 and rounds once
        let s = h.add(&h);
        let want2: Vec<f64> = want.iter().map(|&v| f16::from_f64(v + v).to_f64()).collect();
        assert_close_all(&host(dev, &s), &want2, 0.0, 0.0, "f16 add");
        assert_eq!(g.to_dtype::<i32>().to_vec(), vals.iter().map(|&v| (v as f32) as i32).collect::<Vec<_>>());
        let c = g.contiguous();
        assert!(c.is_contiguous() && c.device() == dev);
    }

    fn einsum_composes_on_the_device(dev: Device) {
        // Products, a diagonal (a strided view), an ellipsis and size-1 broadcasting: each
        // built from the device's own ops, compared with the same equation on the CPU.
        let (_, x) = grid(); // [4, 3], transposed storage
        let y = DynTensor::from_vec((0..24).map(|i| i as f32 * 0.25 - 3.0).collect(), &[2, 3, 4]);
        let sq = DynTensor::from_vec((0..9).map(|i| i as f32 - 4.0).collect(), &[3, 3]);
        let one = DynTensor::from_vec(vec![0.5f32, -1.0, 2.0], &[3, 1]);
        let cases: [(&str, Vec<&DynTensor<f32>>); 5] = [
            ("ij,bjk->bik", vec![&x, &y]),
            ("ii->i", vec![&sq]),
            ("...jk,ij->...ik", vec![&y, &x]),
            ("ij,kj->ik", vec![&x, &one]),
            ("ij,jk,bkl->bil", vec![&x, &sq, &y]),
        ];
        for (eq, ops) in cases {
            let want: Vec<f64> = namedtensor::einsum(eq, &ops).to_vec().into_iter().map(f64::from).collect();
            let moved: Vec<DynTensor<f32>> = ops.iter().map(|t| on(dev, t)).collect();
            let refs: Vec<&DynTensor<f32>> = moved.iter().collect();
            assert_close_all(&host(dev, &namedtensor::einsum(eq, &refs)), &want, 1e-5, 1e-5, eq);
        }
    }

    fn matrix_products_through_views_and_batches(dev: Device) {
        let a_vals: Vec<f64> = (0..6).map(|i| i as f64 - 2.0).collect(); // [2, 3]
        let b_vals: Vec<f64> = (0..12).map(|i| (i as f64) * 0.5 - 1.0).collect(); // [3, 4]
        let mm = |a: &[f64], b: &[f64], m: usize, k: usize, n: usize| -> Vec<f64> {
            indices(&[m, n]).iter().map(|ix| (0..k).map(|p| a[ix[0] * k + p] * b[p * n + ix[1]]).sum()).collect()
        };
        let a = on(dev, &DynTensor::from_vec(a_vals.iter().map(|&v| v as f32).collect(), &[2, 3]));
        let b = on(dev, &DynTensor::from_vec(b_vals.iter().map(|&v| v as f32).collect(), &[3, 4]));
        let want = mm(&a_vals, &b_vals, 2, 3, 4);
        assert_close_all(&host(dev, &a.matmul(&b)), &want, 1e-6, 1e-6, "mm");
        // a transposed operand: (bᵀ)ᵀ is b, read without a copy
        let bt = b.t().contiguous().t();
        assert_close_all(&host(dev, &a.matmul(&bt)), &want, 1e-6, 1e-6, "mm transposed");
        // batched with a broadcast batch dim: [2, 2, 3] @ [3, 4]
        let batch = a.unsqueeze(0).expand(&[2, 2, 3]);
        let r = batch.matmul(&b);
        assert_eq!(r.shape(), &[2, 2, 4]);
        let both: Vec<f64> = want.iter().chain(&want).cloned().collect();
        assert_close_all(&host(dev, &r), &both, 1e-6, 1e-6, "batched");
        // vectors
        let v = on(dev, &DynTensor::from_vec(vec![1.0f32, -1.0, 2.0], &[3]));
        let mv: Vec<f64> = (0..2).map(|i| a_vals[i * 3] - a_vals[i * 3 + 1] + 2.0 * a_vals[i * 3 + 2]).collect();
        assert_close_all(&host(dev, &a.mv(&v)), &mv, 1e-6, 1e-6, "mv");
        assert_close_all(&host(dev, &v.dot(&v)), &[6.0], 0.0, 0.0, "dot");
        // f16 through cuBLAS / gemm: f32 accumulation, one rounding
        let ah = a.to_dtype::<f16>();
        let bh = b.to_dtype::<f16>();
        let want_h: Vec<f64> = want.iter().map(|&x| f16::from_f64(x).to_f64()).collect();
        assert_close_all(&host(dev, &ah.matmul(&bh)), &want_h, 1e-3, 1e-3, "f16 mm");
    }

    fn mixed_devices_and_unsupported_ops_are_errors(dev: Device) {
        let cpu = DynTensor::<f32>::ones(&[3]);
        let g = on(dev, &cpu);
        if dev == Device::Cpu {
            return;
        }
        for e in [
            cpu.try_add(&g).unwrap_err(),
            g.try_mul(&cpu).unwrap_err(),
            g.try_matmul(&cpu).unwrap_err(),
            g.try_add_(&cpu).unwrap_err(),
        ] {
            assert_eq!(e.kind(), ErrorKind::Device, "{e}");
            assert!(e.to_string().contains("cpu") && e.to_string().contains("cuda:0"), "{e}");
        }
        // joining, selecting and indexing refuse a part on another device, naming both
        let mask = DynTensor::from_vec(vec![true, false, true], &[3]);
        let idx = DynTensor::from_vec(vec![0i64, 2], &[2]);
        for e in [
            DynTensor::try_cat(&[&g, &cpu], 0).unwrap_err(),
            DynTensor::try_stack(&[&cpu, &g], 0).unwrap_err(),
            namedtensor::ops::try_where_(&mask, &g, &g).unwrap_err(),
            g.try_masked_fill(&mask, 0.0).unwrap_err(),
            g.try_masked_fill_(&mask, 0.0).unwrap_err(),
            g.try_index_select(0, &idx).unwrap_err(),
            g.try_gather(0, &idx).unwrap_err(),
        ] {
            assert_eq!(e.kind(), ErrorKind::Device, "{e}");
            assert!(e.to_string().contains("cpu") && e.to_string().contains("cuda:0"), "{e}");
        }
        // integer powers have no kernel: an error, never a wrong value
        let i = on(dev, &DynTensor::from_vec(vec![2i32, 3], &[2]));
        assert!(i.try_pow(&i).is_err());
        // Display copies to the host
        assert!(format!("{g}").contains("cuda:0"));
    }

    fn where_and_masked_fill_broadcast_promote_and_write_in_place(dev: Device) {
        let (vals, x) = grid(); // [4, 3] f32, transposed storage
        let g = on(dev, &x);
        // condition [4, 1] (an expanded column), other operand an i32 row with an offset
        let cond_v = [true, false, false, true];
        let cond = on(dev, &DynTensor::from_vec(cond_v.to_vec(), &[4, 1]));
        let row = on(dev, &DynTensor::from_vec(vec![9i32, 7, 8, -1, -2, -3], &[6]).narrow(0, 3, 3));
        let want: Vec<f64> = (0..12)
            .map(|k| if cond_v[k / 3] { vals[k] as f32 as f64 } else { [-1.0, -2.0, -3.0][k % 3] })
            .collect();
        let r = namedtensor::where_(&cond, &g, &row); // f32 (promoted)
        assert_eq!(r.shape(), &[4, 3]);
        assert_eq!(host(dev, &r), want);
        // i32 with a 0-d f64: f64 result
        let r = namedtensor::where_(&cond, &row, &on(dev, &DynTensor::scalar(0.5f64)));
        assert_eq!(r.shape(), &[4, 3]);
        let want: Vec<f64> = (0..12)
            .map(|k| if cond_v[k / 3] { [-1.0, -2.0, -3.0][k % 3] } else { 0.5 })
            .collect();
        assert_eq!(host(dev, &r), want);
        // f16 operands stay f16 (a bit copy)
        let h = g.to_dtype::<f16>();
        let hz = on(dev, &DynTensor::<f16>::zeros(&[3]));
        let r = namedtensor::where_(&cond, &h, &hz);
        let want: Vec<f64> = (0..12)
            .map(|k| if cond_v[k / 3] { f16::from_f64(vals[k] as f32 as f64).to_f64() } else { 0.0 })
            .collect();
        assert_eq!(host(dev, &r), want);
        let bad = on(dev, &DynTensor::from_vec(vec![true; 5], &[5]));
        assert_eq!(namedtensor::ops::try_where_(&bad, &g, &g).unwrap_err().kind(), ErrorKind::ShapeMismatch);

        // masked_fill with a mask row broadcast over the transposed view
        let mask_v = [false, true, true];
        let mask = on(dev, &DynTensor::from_vec(mask_v.to_vec(), &[3]));
        let want: Vec<f64> = (0..12)
            .map(|k| if mask_v[k % 3] { -4.0 } else { vals[k] as f32 as f64 })
            .collect();
        assert_eq!(host(dev, &g.masked_fill(&mask, -4.0)), want);
        // in place, through the transposed view: the storage's order is respected
        let t = on(dev, &x);
        t.masked_fill_(&mask, -4.0);
        assert_eq!(host(dev, &t), want);
        // a mask computed from the destination itself (shares no storage, but the same values)
        let i = on(dev, &DynTensor::from_vec(vec![1i64, 5, -3, 7], &[4]));
        i.masked_fill_(&i.gt_scalar(2), 0);
        assert_eq!(host(dev, &i), vec![1.0, 0.0, -3.0, 0.0]);
        // an expanded destination is refused
        let e = on(dev, &DynTensor::<f32>::ones(&[3])).expand(&[2, 3]);
        assert!(e.try_masked_fill_(&mask, 0.0).is_err());
    }

    fn cat_and_stack_on_strided_parts(dev: Device) {
        let (vals, x) = grid(); // [4, 3] transposed
        let a = on(dev, &x);
        let b = on(dev, &DynTensor::from_vec((0..9).map(|v| v as f32).collect(), &[3, 3]).narrow(0, 1, 2)); // [2, 3], offset 3
        let c = on(dev, &DynTensor::from_vec(vec![100f32, 200.0, 300.0], &[3]).unsqueeze(0).expand(&[2, 3]));
        let r = DynTensor::cat(&[&a, &b, &c], 0);
        assert_eq!(r.shape(), &[8, 3]);
        let mut want: Vec<f64> = vals.iter().map(|&v| v as f32 as f64).collect();
        want.extend([3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 100.0, 200.0, 300.0, 100.0, 200.0, 300.0]);
        assert_eq!(host(dev, &r), want);
        // along dim 1: [4, 3] with [4, 2] (a transposed narrow)
        let d = on(dev, &DynTensor::from_vec((0..8).map(|v| v as f32).collect(), &[2, 4]).t());
        let r = DynTensor::cat(&[&a, &d], 1);
        assert_eq!(r.shape(), &[4, 5]);
        let want: Vec<f64> = (0..20)
            .map(|k| {
                let (i, j) = (k / 5, k % 5);
                if j < 3 { vals[i * 3 + j] as f32 as f64 } else { ((j - 3) * 4 + i) as f64 }
            })
            .collect();
        assert_eq!(host(dev, &r), want);
        // stack along a new last dim
        let p = on(dev, &DynTensor::from_vec(vec![1i64, 2, 3], &[3]));
        let q = on(dev, &DynTensor::from_vec(vec![4i64, 5, 6, 0], &[4]).narrow(0, 0, 3));
        let s = DynTensor::stack(&[&p, &q], -1);
        assert_eq!(s.shape(), &[3, 2]);
        assert_eq!(host(dev, &s), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(DynTensor::try_cat(&[&a, &d], 0).unwrap_err().kind(), ErrorKind::ShapeMismatch);
        // split / chunk / unbind are views on any device
        let parts = r.split(2, 1);
        assert_eq!(parts.len(), 3);
        assert_eq!(host(dev, &parts[2].contiguous()), (0..4).map(|i| want[i * 5 + 4]).collect::<Vec<_>>());
        let rows = r.unbind(0);
        assert_eq!(host(dev, &rows[3].contiguous()), want[15..20].to_vec());
        assert_eq!(r.chunk(2, 0)[1].shape(), &[2, 5]);
    }

    fn index_select_and_gather_check_indices(dev: Device) {
        let (vals, x) = grid(); // [4, 3] transposed
        let g = on(dev, &x);
        let v = |i: usize, j: usize| vals[i * 3 + j] as f32 as f64;
        // index with an offset and a stride: [3, 0, 3]
        let idx = on(dev, &DynTensor::from_vec(vec![9i64, 3, 9, 0, 9, 3], &[6]).narrow(0, 1, 5).slice(0, Some(0), Some(5), 2));
        assert_eq!(idx.shape(), &[3]);
        let r = g.index_select(0, &idx);
        assert_eq!(r.shape(), &[3, 3]);
        let want: Vec<f64> = [3, 0, 3].iter().flat_map(|&i| (0..3).map(move |j| v(i, j))).collect();
        assert_eq!(host(dev, &r), want);
        let r = g.index_select(1, &on(dev, &DynTensor::from_vec(vec![2i64, 2], &[2])));
        let want: Vec<f64> = (0..4).flat_map(|i| [v(i, 2), v(i, 2)]).collect();
        assert_eq!(host(dev, &r), want);
        // a 0-d index
        let r = g.index_select(1, &on(dev, &DynTensor::scalar(1i64)));
        assert_eq!(r.shape(), &[4, 1]);
        assert_eq!(host(dev, &r), (0..4).map(|i| v(i, 1)).collect::<Vec<_>>());
        // gather along dim 1 with a transposed index smaller than the input in dim 0
        let gi = on(dev, &DynTensor::from_vec(vec![0i64, 2, 1, 1, 2, 0], &[2, 3]).t()); // [3, 2]
        let r = g.gather(1, &gi);
        assert_eq!(r.shape(), &[3, 2]);
        let gv = [[0usize, 1], [2, 2], [1, 0]];
        let want: Vec<f64> = (0..3).flat_map(|i| gv[i].map(|c| v(i, c))).collect();
        assert_eq!(host(dev, &r), want);
        // gather along dim 0 with an expanded index
        let ei = on(dev, &DynTensor::from_vec(vec![3i64, 1, 0], &[3]).unsqueeze(0).expand(&[2, 3]));
        let r = g.gather(0, &ei);
        assert_eq!(host(dev, &r), vec![v(3, 0), v(1, 1), v(0, 2), v(3, 0), v(1, 1), v(0, 2)]);
        // out-of-range indices are errors (never a read outside the tensor)
        for bad in [vec![0i64, 4], vec![-1i64, 0], vec![1i64 << 40]] {
            let b = on(dev, &DynTensor::from_vec(bad.clone(), &[bad.len()]));
            let e = g.try_index_select(0, &b).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::IndexOutOfRange, "{e}");
            assert!(e.to_string().contains("out of range for dim 0 of size 4"), "{e}");
            let e = g.try_gather(0, &b.unsqueeze(0)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::IndexOutOfRange, "{e}");
        }
        let e = g.try_index_select(1, &on(dev, &DynTensor::from_vec(vec![3i64], &[1]))).unwrap_err();
        assert!(e.to_string().contains("index 3 is out of range for dim 1 of size 3"), "{e}");
        // an empty index gives an empty result
        let r = g.index_select(0, &on(dev, &DynTensor::<i64>::zeros(&[0])));
        assert_eq!(r.shape(), &[0, 3]);
    }

    fn scatter_add_and_index_add_on_views(dev: Device) {
        let (vals, x) = grid(); // [4, 3] transposed
        let g = on(dev, &x);
        let v = |i: usize, j: usize| vals[i * 3 + j] as f32 as f64;
        // index_add along dim 0 with repeats, a stepped index and a transposed source
        let idx = on(dev, &DynTensor::from_vec(vec![3i64, 9, 0, 9, 3], &[5]).slice(0, Some(0), None, 2));
        let src = on(dev, &DynTensor::from_vec((0..9).map(|i| i as f32).collect(), &[3, 3]).t());
        let r = g.index_add(0, &idx, &src);
        // f32 additions in index order, as the kernels make them
        let mut want: Vec<f32> = (0..12).map(|k| v(k / 3, k % 3) as f32).collect();
        for (j, &row) in [3usize, 0, 3].iter().enumerate() {
            for c in 0..3 {
                want[row * 3 + c] += (c * 3 + j) as f32;
            }
        }
        assert_eq!(host(dev, &r), want.iter().map(|&w| w as f64).collect::<Vec<_>>());
        // scatter_add along dim 1 with an index smaller than the source, an expanded index
        let si = on(dev, &DynTensor::from_vec(vec![2i64, 2], &[1, 2]).expand(&[4, 2]));
        let ones = on(dev, &DynTensor::<f32>::ones(&[4, 3]));
        let r = g.scatter_add(1, &si, &ones);
        let want: Vec<f64> = (0..12).map(|k| (v(k / 3, k % 3) as f32 + if k % 3 == 2 { 2.0 } else { 0.0 }) as f64).collect();
        assert_eq!(host(dev, &r), want);
        // in place through a column view
        let t = on(dev, &DynTensor::<i64>::zeros(&[2, 3]));
        t.narrow(1, 1, 1).scatter_add_(0, &on(dev, &DynTensor::from_vec(vec![1i64, 1, 0], &[3, 1])), &on(dev, &DynTensor::from_vec(vec![5i64, 6, 7], &[3, 1])));
        assert_eq!(host(dev, &t), vec![0.0, 7.0, 0.0, 0.0, 11.0, 0.0]);
        // out of range: an error, and nothing written
        let e = t.try_index_add_(1, &on(dev, &DynTensor::from_vec(vec![3i64], &[1])), &on(dev, &DynTensor::<i64>::ones(&[2, 1]))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IndexOutOfRange, "{e}");
        assert_eq!(host(dev, &t), vec![0.0, 7.0, 0.0, 0.0, 11.0, 0.0]);
        // gradients of index_select and gather go through them on the device
        let w = on(dev, &DynTensor::<f32>::zeros(&[3, 2])).requires_grad_(true);
        w.index_select(0, &on(dev, &DynTensor::from_vec(vec![2i64, 2, 0], &[3]))).sum().backward();
        assert_eq!(host(dev, &w.grad().unwrap()), vec![1.0, 1.0, 0.0, 0.0, 2.0, 2.0]);
    }

    fn in_place_ops_in_a_graph_differentiate_as_on_the_cpu(dev: Device) {
        // A write through a transposed view (CopySlices), an activation in place on a row,
        // and the earlier view read again after its base moved on: the same values and
        // gradients as on the CPU.
        let run = |d: Device| {
            let x = on(d, &DynTensor::<f64>::randn(&[4, 3], 5)).requires_grad_(true);
            let z = on(d, &DynTensor::<f64>::randn(&[2, 4], 6)).requires_grad_(true);
            let h = &x.tanh() * 2.0;
            let v = h.t().narrow(0, 1, 2);
            v.mul_(&z);
            h.select(0, 1).relu_();
            let loss = (&h * &h).sum() + (&v * &v).sum();
            loss.backward();
            [host(d, &loss), host(d, &x.grad().unwrap()), host(d, &z.grad().unwrap())]
        };
        let (got, want) = (run(dev), run(Device::Cpu));
        for (g, w) in got.iter().zip(&want) {
            assert_close_all(g, w, 1e-12, 1e-12, "in place in a graph");
        }
    }

    fn flip_repeat_and_triangles_on_views(dev: Device) {
        let (vals, x) = grid(); // [4, 3] transposed
        let g = on(dev, &x);
        let v = |i: usize, j: usize| vals[i * 3 + j] as f32 as f64;
        let want: Vec<f64> = (0..4).rev().flat_map(|i| (0..3).map(move |j| v(i, j))).collect();
        assert_eq!(host(dev, &g.flip(&[0])), want);
        let want: Vec<f64> = (0..4).rev().flat_map(|i| (0..3).rev().map(move |j| v(i, j))).collect();
        assert_eq!(host(dev, &g.flip(&[0, 1])), want);
        // an offset, expanded i16 view
        let e = on(dev, &DynTensor::from_vec(vec![0i16, 1, 2, 3], &[4]).narrow(0, 1, 3).unsqueeze(0).expand(&[2, 3]));
        assert_eq!(host(dev, &e.flip(&[1])), vec![3.0, 2.0, 1.0, 3.0, 2.0, 1.0]);
        assert_eq!(e.flip(&[0]).shape(), &[2, 3]);
        assert_eq!(on(dev, &DynTensor::<f32>::zeros(&[0, 2])).flip(&[0]).shape(), &[0, 2]);

        // repeat: [2, 2] tiling of the transposed [4, 3], and a leading dim
        let r = g.repeat(&[2, 2]);
        assert_eq!(r.shape(), &[8, 6]);
        let want: Vec<f64> = (0..48).map(|k| v((k / 6) % 4, (k % 6) % 3)).collect();
        assert_eq!(host(dev, &r), want);
        let r = e.repeat(&[2, 1, 2]);
        assert_eq!(r.shape(), &[2, 2, 6]);
        assert_eq!(host(dev, &r)[..6].to_vec(), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);

        // tril / triu over a batch of transposed matrices
        let b = on(dev, &DynTensor::from_vec((1..=24).collect::<Vec<i32>>(), &[2, 3, 4]).transpose(1, 2)); // [2, 4, 3]
        let bv = |n: usize, i: usize, j: usize| (n * 12 + j * 4 + i + 1) as f64;
        for diag in [-1isize, 0, 2] {
            let lo: Vec<f64> = (0..24)
                .map(|k| {
                    let (n, i, j) = (k / 12, (k / 3) % 4, k % 3);
                    if j as isize <= i as isize + diag { bv(n, i, j) } else { 0.0 }
                })
                .collect();
            assert_eq!(host(dev, &b.tril(diag)), lo, "tril {diag}");
            let up: Vec<f64> = (0..24)
                .map(|k| {
                    let (n, i, j) = (k / 12, (k / 3) % 4, k % 3);
                    if j as isize >= i as isize + diag { bv(n, i, j) } else { 0.0 }
                })
                .collect();
            assert_eq!(host(dev, &b.triu(diag)), up, "triu {diag}");
        }
        assert!(on(dev, &DynTensor::<f32>::ones(&[3])).try_tril(0).is_err());
    }

    fn cumsum_and_cumprod_along_each_dim(dev: Device) {
        let (vals, x) = grid(); // [4, 3] transposed
        let g = on(dev, &x);
        let v = |i: usize, j: usize| vals[i * 3 + j] as f32 as f64;
        // along dim 0 (inner 3) and dim 1 (inner 1), accumulated in f64, rounded on store
        let mut want0 = vec![0.0; 12];
        let mut want1 = vec![0.0; 12];
        for j in 0..3 {
            let mut acc = 0.0;
            for i in 0..4 {
                acc += v(i, j);
                want0[i * 3 + j] = acc as f32 as f64;
            }
        }
        for i in 0..4 {
            let mut acc = 1.0;
            for j in 0..3 {
                acc *= v(i, j);
                want1[i * 3 + j] = acc as f32 as f64;
            }
        }
        assert_eq!(host(dev, &g.cumsum(0)), want0);
        assert_eq!(host(dev, &g.cumprod(-1)), want1);
        // integers and bool give i64; an offset, expanded view
        let e = on(dev, &DynTensor::from_vec(vec![9i32, 1, 2, 3], &[4]).narrow(0, 1, 3).unsqueeze(0).expand(&[2, 3]));
        let c = e.cumsum(1);
        assert_eq!(c.dtype(), namedtensor::DType::I64);
        assert_eq!(host(dev, &c), vec![1.0, 3.0, 6.0, 1.0, 3.0, 6.0]);
        assert_eq!(host(dev, &e.cumprod(0)), vec![1.0, 2.0, 3.0, 1.0, 4.0, 9.0]);
        let bl = on(dev, &DynTensor::from_vec(vec![true, false, true], &[3]));
        assert_eq!(host(dev, &bl.cumsum(0)), vec![1.0, 1.0, 2.0]);
        // f16 stays f16; a 0-d tensor and an empty one
        let h = on(dev, &DynTensor::from_vec(vec![f16::from_f64(0.1); 4], &[4]));
        let want: Vec<f64> = (1..=4).map(|k| f16::from_f64(f16::from_f64(0.1).to_f64() * k as f64).to_f64()).collect();
        assert_eq!(host(dev, &h.cumsum(0)), want);
        assert_eq!(host(dev, &on(dev, &DynTensor::scalar(2.5f64)).cumsum(0)), vec![2.5]);
        assert_eq!(on(dev, &DynTensor::<f32>::zeros(&[2, 0])).cumsum(1).shape(), &[2, 0]);
        assert!(g.try_cumsum(2).is_err());
    }

    // Sorting on the device (`sort.cu`: tiles of 4096 sorted in shared memory, then merge
    // passes) against the CPU's `sort_by` of (entry, position) pairs: rows shorter than a
    // tile, exactly one, one entry over, and several merge passes with a short last run; NaN,
    // signed zeros and many ties (stability decides the indices); every dtype; lanes along a
    // middle dim of a transposed view; argsort and topk, which sort underneath.
    fn sort_matches_the_cpu_on_every_pass_count(dev: Device) {
        fn same<E: Element>(dev: Device, t: &DynTensor<E>, what: &str) {
            let g = on(dev, t);
            for dim in 0..t.dim() as isize {
                for desc in [false, true] {
                    let (cv, ci) = t.sort(dim, desc);
                    let (gv, gi) = g.sort(dim, desc);
                    assert_eq!(gv.device(), dev);
                    assert_eq!(gv.shape(), t.shape());
                    let (cv, gv) = (cv.to_vec(), gv.to_vec());
                    let (ci, gi) = (ci.to_vec(), gi.to_vec());
                    let bits = |v: &[E]| -> Vec<String> { v.iter().map(|x| format!("{x:?}")).collect() };
                    if let Some(k) = (0..ci.len()).find(|&k| ci[k] != gi[k] || bits(&cv[k..=k]) != bits(&gv[k..=k])) {
                        panic!(
                            "{what}, sort({dim}, descending {desc}), element {k}: ({:?}, {}) on the CPU, ({:?}, {}) on {dev}",
                            cv[k], ci[k], gv[k], gi[k]
                        );
                    }
                }
            }
        }
        // mixed values with ties, NaN and both zeros
        let special = |i: u64| -> f64 {
            match (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) % 9 {
                0 => f64::NAN,
                1 => -0.0,
                2 => 0.0,
                3 => f64::INFINITY,
                4 => f64::NEG_INFINITY,
                k => ((i.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 60) as f64 - 8.0) * k as f64 / 4.0,
            }
        };
        for n in [1usize, 2, 7, 4095, 4096, 4097, 8200, 13000] {
            let v: Vec<f32> = (0..n as u64).map(|i| special(i) as f32).collect();
            same(dev, &DynTensor::from_vec(v, &[n]), &format!("f32 row of {n}"));
        }
        // many short rows, and a long row with only 7 distinct values (stability across merges)
        let v: Vec<f64> = (0..300 * 33).map(special).collect();
        same(dev, &DynTensor::from_vec(v, &[300, 33]), "f64 [300, 33]");
        let v: Vec<f32> = (0..(1u64 << 15)).map(|i| ((i * 2654435761) % 7) as f32).collect();
        same(dev, &DynTensor::from_vec(v, &[1 << 15]), "f32 row of 2^15 with 7 values");
        // lanes along a middle dim of a transposed, offset view
        let v: Vec<f32> = (0..2 * 2500 * 3).map(|i| special(i) as f32).collect();
        let t = DynTensor::from_vec(v, &[3, 2500, 2]).permute(&[2, 1, 0]).narrow(1, 5, 2490);
        same(dev, &t, "f32 [2, 2490, 3] permuted and narrowed");
        // integers beyond f64's precision, bool, bytes, half precision
        let big = vec![i64::MAX, i64::MAX - 1, i64::MIN, -1, 0, i64::MAX - 1, 1 << 53, (1 << 53) + 1];
        same(dev, &DynTensor::from_vec(big, &[2, 4]), "i64 [2, 4]");
        let v: Vec<bool> = (0..3000u64).map(|i| special(i) > 0.0).collect();
        same(dev, &DynTensor::from_vec(v, &[3000]), "bool row of 3000");
        let v: Vec<u8> = (0..3000u64).map(|i| (i * 2654435761 % 251) as u8).collect();
        same(dev, &DynTensor::from_vec(v, &[2, 1500]), "u8 [2, 1500]");
        let v: Vec<i8> = (0..100i64).map(|i| (i * 37 % 255 - 127) as i8).collect();
        same(dev, &DynTensor::from_vec(v, &[10, 10]), "i8 [10, 10]");
        let v: Vec<f16> = (0..2100u64).map(|i| f16::from_f64(special(i))).collect();
        same(dev, &DynTensor::from_vec(v, &[2100]), "f16 row of 2100");
        let v: Vec<half::bf16> = (0..64u64).map(|i| half::bf16::from_f64(special(i))).collect();
        same(dev, &DynTensor::from_vec(v, &[8, 8]), "bf16 [8, 8]");
        // empty lanes and no lanes, a 0-d tensor
        same(dev, &DynTensor::<f32>::zeros(&[3, 0]), "[3, 0]");
        same(dev, &DynTensor::<f32>::zeros(&[0, 3]), "[0, 3]");
        let (v, i) = on(dev, &DynTensor::scalar(2.5f32)).sort(0, false);
        assert_eq!((v.to_vec(), i.to_vec()), (vec![2.5], vec![0]));
        // argsort and topk on the device
        let t = DynTensor::from_vec((0..5000u64).map(|i| special(i) as f32).collect(), &[2, 2500]);
        let g = on(dev, &t);
        assert_eq!(g.argsort(-1, true).to_vec(), t.argsort(-1, true).to_vec());
        let ((cv, ci), (gv, gi)) = (t.topk(5, -1, true), g.topk(5, -1, true));
        assert_eq!(gv.device(), dev);
        assert_eq!(format!("{:?}", gv.to_vec()), format!("{:?}", cv.to_vec()));
        assert_eq!(gi.to_vec(), ci.to_vec());
    }

    // The CUDA backend picks threads per row of a reduction, and a thread or a block per lane
    // of a scan, by shape (launch::reduce_group, launch::scan_block_per_lane): each shape here
    // takes another path. Values are multiples of 1/4 (sums are exact in any order) and tie
    // often (argmax/argmin must give the first index).
    fn reductions_and_scans_on_every_launch_strategy(dev: Device) {
        // long results: name the first element that differs, not all of them
        fn same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
            assert_eq!(got.len(), want.len(), "{what}: lengths");
            if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                panic!("{what}: element {i} of {}: got {:?}, want {:?}", got.len(), got[i], want[i]);
            }
        }
        let quarters = |n: usize, seed: usize| -> Vec<f32> {
            (0..n).map(|i| ((i * 7919 + seed) % 13) as f32 / 4.0 - 1.5).collect()
        };
        let reduce_naive = |v: &[f32], shape: [usize; 2], dim: usize| {
            let (r, c) = (shape[0], shape[1]);
            let lines: Vec<Vec<f64>> = if dim == 0 {
                (0..c).map(|j| (0..r).map(|i| v[i * c + j] as f64).collect()).collect()
            } else {
                (0..r).map(|i| (0..c).map(|j| v[i * c + j] as f64).collect()).collect()
            };
            let sum: Vec<f64> = lines.iter().map(|l| l.iter().sum()).collect();
            let max: Vec<f64> = lines.iter().map(|l| l.iter().cloned().fold(f64::MIN, f64::max)).collect();
            let argmax: Vec<i64> = lines.iter().map(|l| (0..l.len()).fold(0, |b, k| if l[k] > l[b] { k } else { b }) as i64).collect();
            let argmin: Vec<i64> = lines.iter().map(|l| (0..l.len()).fold(0, |b, k| if l[k] < l[b] { k } else { b }) as i64).collect();
            (sum, max, argmax, argmin, lines)
        };
        // [rows, len] and the reduced dim: a thread per row (sum(0), 16387 adjacent rows), a
        // block per row (3000-long rows; 40-long rows but only 30 of them), 16 and 32 threads
        // per row, and one-element rows.
        let cases: [([usize; 2], usize); 6] =
            [([64, 16387], 0), ([8, 3000], 1), ([30, 40], 1), ([300, 10], 1), ([300, 40], 1), ([300, 1], 1)];
        for (k, (shape, dim)) in cases.into_iter().enumerate() {
            let v = quarters(shape[0] * shape[1], k);
            let x = on(dev, &DynTensor::from_vec(v.clone(), &shape));
            let (sum, max, argmax, argmin, lines) = reduce_naive(&v, shape, dim);
            let d = dim as isize;
            let what = format!("{shape:?} over dim {dim}");
            same(&host(dev, &x.sum_dim(d, false)), &sum, &format!("sum {what}"));
            same(&host(dev, &x.amax_dim(d, false)), &max, &format!("amax {what}"));
            same(&x.argmax_dim(d, false).to_vec(), &argmax, &format!("argmax {what}"));
            same(&x.argmin_dim(d, false).to_vec(), &argmin, &format!("argmin {what}"));
            let mean: Vec<f64> = sum.iter().map(|s| s / lines[0].len() as f64).collect();
            assert_close_all(&host(dev, &x.mean_dim(d, false)), &mean, 1e-6, 0.0, &format!("mean {what}"));
            let ints = x.mul_scalar(4.0).to_dtype::<i64>();
            let isum: Vec<i64> = sum.iter().map(|s| (s * 4.0) as i64).collect();
            same(&ints.sum_dim(d, false).to_vec(), &isum, &format!("i64 sum {what}"));
            // the same rows through a transposed view: reduced dim and rows swap strides
            let t = on(dev, &DynTensor::from_vec(v.clone(), &shape).t().contiguous()).t();
            same(&host(dev, &t.sum_dim(d, false)), &sum, &format!("sum of a transposed view, {what}"));
        }
        // Scans: a block per lane for few long lanes (inner 1 and inner 5, a partial last
        // chunk), exact for quarters in f32/f64 and wrapping like the CPU for i64.
        for (shape, dim) in [([3usize, 1000usize], 1usize), ([700, 5], 0)] {
            let v = quarters(shape[0] * shape[1], dim);
            let (r, c) = (shape[0], shape[1]);
            let mut want = vec![0f64; r * c];
            for lane in 0..if dim == 1 { r } else { c } {
                let mut acc = 0.0;
                for k in 0..if dim == 1 { c } else { r } {
                    let at = if dim == 1 { lane * c + k } else { k * c + lane };
                    acc += v[at] as f64;
                    want[at] = acc;
                }
            }
            let x = DynTensor::from_vec(v.clone(), &shape);
            let what = format!("{shape:?} along dim {dim}");
            same(&host(dev, &on(dev, &x).cumsum(dim as isize)), &want, &format!("f32 cumsum {what}"));
            same(&host(dev, &on(dev, &x.to_dtype::<f64>()).cumsum(dim as isize)), &want, &format!("f64 cumsum {what}"));
        }
        let big: Vec<i64> = (0..600).map(|i| i64::MAX / 7 - i * 1_000_003).collect();
        let mut acc = 0i64;
        let want: Vec<i64> = big.iter().map(|&b| { acc = acc.wrapping_add(b); acc }).collect();
        same(&on(dev, &DynTensor::from_vec(big.clone(), &[600])).cumsum(0).to_vec(), &want, "wrapping i64 cumsum");
        let mut acc = 1i64;
        let want: Vec<i64> = big.iter().map(|&b| { acc = acc.wrapping_mul(b | 1); acc }).collect();
        let odd: Vec<i64> = big.iter().map(|&b| b | 1).collect();
        same(&on(dev, &DynTensor::from_vec(odd, &[600])).cumprod(0).to_vec(), &want, "wrapping i64 cumprod");
        // a float product of two lanes of 200 factors near 1 (rounded in another order than
        // on the CPU, so within a tolerance)
        let f: Vec<f64> = (0..400).map(|i| 1.0 + ((i % 17) as f64 - 8.0) * 1e-3).collect();
        let mut want = f.clone();
        for lane in want.chunks_mut(200) {
            let mut acc = 1.0;
            for x in lane {
                acc *= *x;
                *x = acc;
            }
        }
        let p = on(dev, &DynTensor::from_vec(f, &[2, 200])).cumprod(1);
        assert_close_all(&host(dev, &p), &want, 1e-13, 0.0, "f64 cumprod");
    }

    fn save_copies_to_the_host_first(dev: Device) {
        let (_, x) = grid();
        let g = on(dev, &x);
        let path = std::env::temp_dir().join(format!(
            "nt-device-save-{}-{}.safetensors",
            std::process::id(),
            dev
        ));
        g.save(&path).unwrap();
        let back = DynTensor::<f32>::load(&path).unwrap();
        assert_eq!((back.shape(), back.to_vec()), (x.shape(), x.to_vec()));
        std::fs::remove_file(&path).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Random views: the device against the CPU on the same view chain.

/// Applies the view op chosen by `seed` to both tensors (the CPU one and its copy on the
/// device), keeping them the same view; what was done, for the failure message.
fn random_view(
    c: &DynTensor<f32>,
    d: &DynTensor<f32>,
    seed: u64,
) -> (DynTensor<f32>, DynTensor<f32>, String) {
    let shape = c.shape().to_vec();
    let rank = shape.len();
    let pick = |k: u32, n: usize| ((seed >> (8 * k)) % n.max(1) as u64) as usize;
    let dim = pick(1, rank) as isize;
    match (pick(0, 5), rank) {
        (_, 0) => (c.shallow_clone(), d.shallow_clone(), "none".into()),
        (0, _) => {
            let mut order: Vec<isize> = (0..rank as isize).collect();
            order.rotate_left(pick(2, rank));
            if rank > 1 && pick(3, 2) == 1 {
                order.swap(0, rank - 1);
            }
            (
                c.permute(&order),
                d.permute(&order),
                format!("permute {order:?}"),
            )
        }
        (1, _) => {
            let size = shape[dim as usize];
            let start = pick(2, size);
            let len = pick(3, size - start + 1);
            (
                c.narrow(dim, start as isize, len),
                d.narrow(dim, start as isize, len),
                format!("narrow({dim}, {start}, {len})"),
            )
        }
        (2, _) => (c.flip(&[dim]), d.flip(&[dim]), format!("flip {dim}")),
        (3, _) if shape[dim as usize] > 0 => {
            let i = pick(2, shape[dim as usize]) as isize;
            // select, then put a size-1 dim back and broadcast it: a stride-0 view
            let n = 1 + pick(3, 3) as isize;
            let mut sizes: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
            sizes[dim as usize] = n;
            let f = |t: &DynTensor<f32>| t.select(dim, i).unsqueeze(dim).expand(&sizes);
            (
                f(c),
                f(d),
                format!("select({dim}, {i}) then expand {sizes:?}"),
            )
        }
        _ => (
            c.transpose(0, -1),
            d.transpose(0, -1),
            "transpose(0, -1)".into(),
        ),
    }
}

/// Equal shapes, and values within `tol` relative (NaN where NaN).
fn close(
    what: &str,
    c: &DynTensor<f32>,
    d: &DynTensor<f32>,
    tol: f32,
) -> Result<(), proptest::test_runner::TestCaseError> {
    proptest::prop_assert_eq!(c.shape(), d.shape(), "{}: shapes", what);
    proptest::prop_assert_eq!(d.device(), Device::Cuda(0), "{}: left the device", what);
    for (i, (x, y)) in c.to_vec().into_iter().zip(d.to_vec()).enumerate() {
        let ok =
            (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * x.abs().max(y.abs());
        proptest::prop_assert!(
            ok,
            "{}: element {} is {} on the CPU, {} on the device",
            what,
            i,
            x,
            y
        );
    }
    Ok(())
}

proptest::proptest! {
    #![proptest_config(common::proptest_cases(96))]

    /// Random shapes (rank 1-4, sizes 0-5) and chains of up to four views (permute, narrow,
    /// flip, a broadcast dim, transpose) on both devices; every op on the view agrees with the
    /// CPU: bit for bit for data movement and exact arithmetic (the values are multiples of
    /// 1/4, so sums are exact), within a few ulp for transcendental functions.
    #[test]
    fn ops_on_random_views_match_the_cpu(
        shape in proptest::collection::vec(0usize..6, 1..5),
        seeds in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..5),
        other_seeds in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..3),
        value_seed in proptest::prelude::any::<u64>(),
    ) {
        let Some(dev) = common::devices::available(Device::Cuda(0)) else { return Ok(()) };
        let n: usize = shape.iter().product();
        let vals = |salt: u64, n: usize| -> Vec<f32> {
            (0..n as u64)
                .map(|i| (((i ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as f32 - 16.0) / 4.0)
                .collect()
        };
        let base = DynTensor::from_vec(vals(value_seed, n), &shape);
        let (mut c, mut d) = (base.shallow_clone(), on(dev, &base));
        let mut chain = Vec::new();
        for &s in &seeds {
            let (c2, d2, what) = random_view(&c, &d, s);
            (c, d) = (c2, d2);
            chain.push(what);
        }
        let ctx = format!("{shape:?} then {chain:?}");
        // A second operand broadcast against the first: its own base, size-1 dims expanded.
        let oshape: Vec<usize> = c.shape().iter().enumerate()
            .map(|(k, &s)| if (value_seed >> k) & 1 == 1 { 1 } else { s }).collect();
        let obase = DynTensor::from_vec(vals(!value_seed, oshape.iter().product()), &oshape);
        let (mut oc, mut od) = (obase.shallow_clone(), on(dev, &obase));
        for &s in &other_seeds {
            // only shape-preserving views: flip and permute-then-back
            let dim = (s % oshape.len() as u64) as isize;
            (oc, od) = (oc.flip(&[dim]), od.flip(&[dim]));
        }
        let full: Vec<isize> = c.shape().iter().map(|&s| s as isize).collect();
        let (oc, od) = (oc.expand(&full), od.expand(&full));

        close(&format!("contiguous of {ctx}"), &c.contiguous(), &d.contiguous(), 0.0)?;
        close(&format!("neg of {ctx}"), &c.neg(), &d.neg(), 0.0)?;
        close(&format!("abs of {ctx}"), &c.abs(), &d.abs(), 0.0)?;
        close(&format!("relu of {ctx}"), &c.relu(), &d.relu(), 0.0)?;
        let relu_grad = |x: &DynTensor<f32>, g: &DynTensor<f32>| {
            let x = x.detach().requires_grad_(true);
            x.relu().backward_with(g, namedtensor::autograd::BackwardOptions::default()).unwrap();
            x.grad().unwrap()
        };
        close(&format!("relu gradient of {ctx}"), &relu_grad(&c, &oc), &relu_grad(&d, &od), 0.0)?;
        close(&format!("exp of {ctx}"), &c.exp(), &d.exp(), 4e-7)?;
        close(&format!("tanh of {ctx}"), &c.tanh(), &d.tanh(), 4e-7)?;
        close(&format!("sigmoid of {ctx}"), &c.sigmoid(), &d.sigmoid(), 4e-7)?;
        close(&format!("add with {ctx}"), &c.add(&oc), &d.add(&od), 0.0)?;
        close(&format!("mul with {ctx}"), &c.mul(&oc), &d.mul(&od), 0.0)?;
        close(&format!("maximum with {ctx}"), &c.maximum(&oc), &d.maximum(&od), 0.0)?;
        close(&format!("where with {ctx}"), &c.where_(&c.gt(&oc), &oc), &d.where_(&d.gt(&od), &od), 0.0)?;
        let rank = c.shape().len() as isize;
        for dim in 0..rank {
            close(&format!("sum_dim({dim}) of {ctx}"), &c.sum_dim(dim, false), &d.sum_dim(dim, false), 0.0)?;
            close(&format!("cumsum({dim}) of {ctx}"), &c.cumsum(dim), &d.cumsum(dim), 0.0)?;
            close(&format!("softmax({dim}) of {ctx}"), &c.softmax(dim), &d.softmax(dim), 2e-6)?;
            // The backend's softmax gradient, with the broadcast operand as the gradient.
            for log in [false, true] {
                let grad_of = |x: &DynTensor<f32>, g: &DynTensor<f32>| {
                    let x = x.detach().requires_grad_(true);
                    let y = if log { x.log_softmax(dim) } else { x.softmax(dim) };
                    y.backward_with(g, namedtensor::autograd::BackwardOptions::default()).unwrap();
                    x.grad().unwrap()
                };
                let what = format!("softmax({dim}, log {log}) gradient of {ctx}");
                let (gc, gd) = (grad_of(&c, &oc), grad_of(&d, &od));
                proptest::prop_assert_eq!(gd.device(), Device::Cuda(0), "{}: left the device", what);
                // `g − Σ g·y` cancels: the rounding is relative to the gradient's inputs (at
                // most 4 here), not to the result, which may be 0 on one side only.
                for (i, (x, y)) in gc.to_vec().into_iter().zip(gd.to_vec()).enumerate() {
                    proptest::prop_assert!(
                        (x - y).abs() <= 1e-5 * (1.0 + x.abs()),
                        "{}: element {} is {} on the CPU, {} on the device", what, i, x, y
                    );
                }
            }
            if c.shape()[dim as usize] > 0 {
                close(&format!("amax_dim({dim}) of {ctx}"), &c.amax_dim(dim, true), &d.amax_dim(dim, true), 0.0)?;
            }
            // the values tie often (multiples of 1/4 in -4..4): stability decides the indices
            for desc in [false, true] {
                let ((cv, ci), (dv, di)) = (c.sort(dim, desc), d.sort(dim, desc));
                close(&format!("sort({dim}, {desc}) of {ctx}"), &cv, &dv, 0.0)?;
                proptest::prop_assert_eq!(ci.to_vec(), di.to_vec(), "sort({}, {}) indices of {}", dim, desc, ctx);
            }
        }
        // Writes through the view reach the same base elements (expanded views are refused on
        // both devices alike).
        let (bc, bd) = (base.contiguous(), on(dev, &base));
        let (mut vc, mut vd) = (bc.shallow_clone(), bd.shallow_clone());
        for &s in &seeds {
            let (c2, d2, _) = random_view(&vc, &vd, s);
            (vc, vd) = (c2, d2);
        }
        let (rc, rd) = (vc.try_add_scalar_(1.0).is_ok(), vd.try_add_scalar_(1.0).is_ok());
        proptest::prop_assert_eq!(rc, rd, "in-place add through {}: accepted on one device only", ctx);
        close(&format!("base after an in-place add through {ctx}"), &bc, &bd, 0.0)?;
    }
}

proptest::proptest! {
    #![proptest_config(common::proptest_cases(48))]

    /// The window kernels (`unfold2d`, `fold2d`, `max_pool2d` and its gradient, which is
    /// `fold2d` of the winners) on random 4-d views and geometries agree with the CPU bit for
    /// bit: the values are multiples of 1/4, so every sum is exact, and both backends add each
    /// input element's taps in the same order anyway.
    #[test]
    fn window_kernels_on_random_views_match_the_cpu(
        shape in proptest::collection::vec(1usize..4, 2..3),
        hw in (1usize..7, 1usize..7),
        geometry in proptest::collection::vec(0usize..3, 8),
        seeds in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..3),
        value_seed in proptest::prelude::any::<u64>(),
    ) {
        use namedtensor::ops::Window2d;
        let Some(dev) = common::devices::available(Device::Cuda(0)) else { return Ok(()) };
        let g = |k: usize| geometry[k];
        let win = Window2d {
            kernel: (1 + g(0), 1 + g(1)),
            stride: (1 + g(2) % 2, 1 + g(3) % 2),
            padding: (g(4) % 2, g(5) % 2),
            dilation: (1 + g(6) % 2, 1 + g(7) % 2),
        };
        let mut full = shape.clone();
        full.extend([hw.0, hw.1]);
        let n: usize = full.iter().product();
        let vals: Vec<f32> = (0..n as u64)
            .map(|i| (((i ^ value_seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as f32 - 16.0) / 4.0)
            // some NaNs when the seed says so: pooling takes the first NaN of a window
            .map(|v| if value_seed % 3 == 0 && v == 3.75 { f32::NAN } else { v })
            .collect();
        let base = DynTensor::from_vec(vals, &full);
        let (mut c, mut d) = (base.shallow_clone(), on(dev, &base));
        for &s in &seeds {
            // views that keep rank 4 with the last two dims possibly swapped or narrowed
            let (c2, d2, _) = random_view(&c, &d, s);
            (c, d) = (c2, d2);
        }
        let r = c.dim();
        let (h, w) = (c.shape()[r - 2], c.shape()[r - 1]);
        let ctx = format!("{:?} through {seeds:?}, window {win:?}", full);
        let Ok(_) = win.output_size(h, w) else {
            proptest::prop_assert!(d.try_unfold2d(win, 0.5).is_err(), "{}", ctx);
            return Ok(());
        };
        let (uc, ud) = (c.unfold2d(win, 0.5), d.unfold2d(win, 0.5));
        close(&format!("unfold2d of {ctx}"), &uc, &ud, 0.0)?;
        let (uc, ud) = (uc.flip(&[-1]), ud.flip(&[-1]));
        close(&format!("fold2d of {ctx}"), &uc.fold2d(win, (h, w)), &ud.fold2d(win, (h, w)), 0.0)?;
        let (pc, pd) = (c.max_pool2d(win), d.max_pool2d(win));
        close(&format!("max_pool2d of {ctx}"), &pc, &pd, 0.0)?;
        let (xc, xd) = (c.contiguous().requires_grad_(true), d.contiguous().requires_grad_(true));
        let gy = DynTensor::from_vec((0..pc.numel()).map(|i| (i % 7) as f32 - 3.0).collect(), pc.shape());
        (&xc.max_pool2d(win) * &gy).sum().backward();
        (&xd.max_pool2d(win) * &on(dev, &gy)).sum().backward();
        close(&format!("max_pool2d gradient of {ctx}"), &xc.grad().unwrap(), &xd.grad().unwrap(), 0.0)?;
    }
}

mod training {
    use super::*;
    use namedtensor::nn::loss::CrossEntropy;
    use namedtensor::nn::{Conv2d, Linear, MaxPool2d, Module, Visitor};
    use namedtensor::ops::Window2d;
    use namedtensor::optim::{Adam, AdamConfig, Optimizer};
    use namedtensor::{Tensor, dims};

    dims! { Batch, Channels, Features, Rows, Cols, Flat, Classes }

    struct Cnn {
        conv: Conv2d<Channels, Features, Rows, Cols, f64>,
        fc: Linear<Flat, Classes, f64>,
    }

    impl Module<f64> for Cnn {
        fn visit(&self, v: &mut Visitor<'_, f64>) {
            v.module("conv", &self.conv);
            v.module("fc", &self.fc);
        }
    }

    impl Cnn {
        /// The same parameters as `cpu`'s, on `dev`.
        fn on(dev: Device, cpu: &Cnn) -> Cnn {
            fn mv<S: namedtensor::Shape>(dev: Device, t: &Tensor<f64, S>) -> Tensor<f64, S> {
                t.as_dyn().to_device(dev).unwrap().clone().refine_names() // a copy on the CPU too
            }
            let (conv, fc) = (&cpu.conv, &cpu.fc);
            Cnn {
                conv: Conv2d::try_from_parameters(
                    mv(dev, &conv.weight),
                    conv.bias.as_ref().map(|b| mv(dev, b)),
                    conv.window,
                )
                .unwrap(),
                fc: Linear::from_parameters(
                    mv(dev, &fc.weight),
                    fc.bias.as_ref().map(|b| mv(dev, b)),
                ),
            }
        }

        fn forward(
            &self,
            x: &Tensor<f64, (Batch, Channels, Rows, Cols)>,
        ) -> Tensor<f64, (Batch, Classes)> {
            let h = MaxPool2d::<Rows, Cols>::new(2).forward(&self.conv.forward(x).relu());
            self.fc.forward(&h.merge::<(Features, Rows, Cols), Flat>())
        }
    }

    device_tests! {
        /// Three steps of a small CNN (conv with padding, ReLU, max pooling, linear,
        /// cross-entropy with label smoothing, AdamW) give the CPU's losses and parameters:
        /// unfold2d, its index_add gradient and the optimiser's in-place updates on the device.
        fn a_cnn_trains_as_on_the_cpu(dev: Device) {
            let cpu = Cnn {
                conv: Conv2d::seeded(2, 3, Window2d::new(3, 3).padding(1), 0),
                fc: Linear::seeded(12, 4, 1),
            };
            let gpu = Cnn::on(dev, &cpu);
            let x = DynTensor::<f64>::randn(&[5, 2, 4, 4], 2);
            let y = DynTensor::from_vec(vec![0i64, 3, 1, 1, 2], &[5]);
            let ce = CrossEntropy { label_smoothing: 0.1, ..CrossEntropy::default() };
            let run = |m: &Cnn| {
                let mut opt = Adam::new(m.parameters(), AdamConfig { lr: 0.05, ..AdamConfig::adamw() });
                let xd: Tensor<f64, (Batch, Channels, Rows, Cols)> = on(m.fc.weight.as_dyn().device(), &x).refine_names();
                let yd: Tensor<i64, (Batch,)> = on(m.fc.weight.as_dyn().device(), &y).refine_names();
                let mut losses = Vec::new();
                for _ in 0..3 {
                    opt.zero_grad();
                    let loss = ce.forward(&m.forward(&xd), Classes, &yd);
                    loss.backward();
                    opt.step().unwrap();
                    losses.push(loss.item());
                }
                losses
            };
            let (lc, ld) = (run(&cpu), run(&gpu));
            assert_close_all(&ld, &lc, 1e-10, 1e-12, "losses");
            for (p, q) in cpu.parameters().iter().zip(gpu.parameters()) {
                assert_close_all(&host(dev, &q.tensor), &host(Device::Cpu, &p.tensor), 1e-10, 1e-12, &p.name);
            }
        }
    }
}

mod attention {
    use super::*;
    use namedtensor::nn::{AttentionMasks, MultiHeadAttention};
    use namedtensor::{Shape, Tensor, dims};

    dims! { Batch, Seq, Key, Model, Heads, HeadDim }

    type Attention = MultiHeadAttention<Model, Heads, HeadDim, f64>;

    /// A copy of `t` on `dev`, a leaf of its own.
    fn mv<S: Shape>(dev: Device, t: &Tensor<f64, S>) -> Tensor<f64, S> {
        t.as_dyn().to_device(dev).unwrap().clone().refine_names()
    }

    device_tests! {
        /// Causal attention under a key padding mask (one batch entry all padding) and an
        /// additive (query, key) mask, kept on the CPU, gives the CPU's output and gradients:
        /// the masks move to the input's device.
        fn masked_attention_matches_the_cpu(dev: Device) {
            let cpu = Attention::seeded(8, 2, 3).causal(true);
            let gpu = Attention::try_from_parameters(
                [&cpu.q, &cpu.k, &cpu.v].map(|t| mv(dev, t)),
                [&cpu.q_bias, &cpu.k_bias, &cpu.v_bias].map(|t| mv(dev, t)),
                mv(dev, &cpu.out),
                mv(dev, &cpu.out_bias),
            )
            .unwrap()
            .causal(true);
            let mut pad = vec![false; 12];
            pad[7] = true;
            pad[8..].fill(true);
            let pad = Tensor::<bool, (Batch, Seq)>::from_vec(pad, [3, 4]);
            // Query 1 may not see key 0.
            let mut bias = DynTensor::<f64>::randn(&[4, 4], 5).to_vec();
            bias[4] = f64::NEG_INFINITY;
            let bias = Tensor::<f64, (Seq, Key)>::from_vec(bias, [4, 4]);
            let x = DynTensor::<f64>::randn(&[3, 4, 8], 6);
            let run = |m: &Attention| {
                let xd: Tensor<f64, (Batch, Seq, Model)> =
                    on(m.q.as_dyn().device(), &x).requires_grad_(true).refine_names();
                let masks = AttentionMasks::new().key_padding(&pad).attn(&bias);
                let y = m.forward_masked(&xd, Seq, &masks);
                (y.as_dyn() * y.as_dyn()).sum().backward();
                (y.into_dyn(), xd.grad().unwrap().into_dyn())
            };
            let ((yc, gc), (yd, gd)) = (run(&cpu), run(&gpu));
            assert_close_all(&host(dev, &yd), &host(Device::Cpu, &yc), 1e-10, 1e-12, "output");
            assert_close_all(&host(dev, &gd), &host(Device::Cpu, &gc), 1e-10, 1e-12, "input gradient");
            for (p, q) in [(&cpu.q, &gpu.q), (&cpu.k, &gpu.k), (&cpu.v, &gpu.v)] {
                let (p, q) = (p.grad().unwrap().into_dyn(), q.grad().unwrap().into_dyn());
                assert_close_all(&host(dev, &q), &host(Device::Cpu, &p), 1e-10, 1e-12, "projection gradient");
            }
        }
    }
}
