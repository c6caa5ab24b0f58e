//! The core operations on every device: views, contiguous/clone, casts, fill_, copy_,
//! element access, moving between devices, and errors for mixed devices. Each test runs on
//! the CPU and on cuda:0 (skipped with a printed reason where no GPU is usable) and compares
//! with the CPU result.

use half::{bf16, f16};
use namedtensor::{Device, DynTensor, Element, ErrorKind, Idx};

/// A view operation.
type View = fn(&DynTensor<f32>) -> DynTensor<f32>;

/// A copy of the CPU tensor `t` on `dev`.
fn on<E: Element>(dev: Device, t: &DynTensor<E>) -> DynTensor<E> {
    let moved = t.to_device(dev).unwrap();
    assert_eq!(moved.device(), dev);
    moved
}

fn grid() -> DynTensor<f32> {
    DynTensor::<f32>::arange(0.0, 24.0, 1.0).view(&[2, 3, 4])
}

device_tests! {
    fn views_read_the_same_elements_as_on_the_cpu(dev: Device) {
        let x = grid();
        let g = on(dev, &x);
        let views: [View; 8] = [
            |t| t.shallow_clone(),
            |t| t.permute(&[2, 0, 1]),
            |t| t.transpose(0, 2).narrow(1, 1, 2),
            |t| t.select(1, 2),
            |t| t.i((.., Idx::step(.., 2), 1..)),
            |t| t.select(2, 3).unsqueeze(0).expand(&[5, 2, 3]),
            |t| t.t_last(),
            |t| t.reshape(&[4, 6]).t().reshape(&[-1]),
        ];
        for view in views {
            let (cpu, dev_view) = (view(&x), view(&g));
            assert_eq!(dev_view.device(), dev);
            assert_eq!(dev_view.shape(), cpu.shape());
            assert_eq!(dev_view.stride(), cpu.stride());
            assert_eq!(dev_view.to_vec(), cpu.to_vec(), "{cpu:?}");
        }
    }

    fn contiguous_copies_only_when_needed_and_stays_on_the_device(dev: Device) {
        let g = on(dev, &grid());
        assert!(g.contiguous().shares_storage(&g));
        let t = g.permute(&[1, 2, 0]);
        let c = t.contiguous();
        assert!(!c.shares_storage(&g));
        assert_eq!(c.device(), dev);
        assert!(c.is_contiguous());
        assert_eq!(c.storage().to_vec(), grid().permute(&[1, 2, 0]).to_vec());
        // clone deep-copies on the same device
        let k = g.narrow(2, 1, 2).clone();
        assert_eq!((k.device(), k.stride()), (dev, &[6usize, 2, 1][..]));
        k.fill_(-1.0);
        assert_eq!(g.get(&[0, 0, 1]), 1.0);
    }

    fn large_transposed_gather_matches_the_cpu(dev: Device) {
        // more elements than one launch's first wave of threads; odd sizes
        let x = DynTensor::<i32>::arange(0, 1001 * 1003, 1).view(&[1001, 1003]);
        let g = on(dev, &x);
        assert_eq!(g.t().contiguous().to_vec(), x.t().contiguous().to_vec());
        assert_eq!(g.i((Idx::step(.., 3), 7)).to_vec(), x.i((Idx::step(.., 3), 7)).to_vec());
    }

    fn casts_follow_the_cpu_rules(dev: Device) {
        let x = DynTensor::from_vec(
            vec![1.7f32, -2.5, 300.0, -0.0, 1e10, f32::NAN, 0.1, -129.9],
            &[2, 4],
        );
        let g = on(dev, &x);
        let (xt, gt) = (x.t(), g.t());
        assert_eq!(gt.to_dtype::<i32>().to_vec(), xt.to_dtype::<i32>().to_vec());
        assert_eq!(gt.to_dtype::<u8>().to_vec(), xt.to_dtype::<u8>().to_vec());
        assert_eq!(gt.to_dtype::<i8>().to_vec(), xt.to_dtype::<i8>().to_vec());
        assert_eq!(gt.to_dtype::<i64>().to_vec(), xt.to_dtype::<i64>().to_vec());
        assert_eq!(gt.to_dtype::<bool>().to_vec(), xt.to_dtype::<bool>().to_vec());
        let bits = |v: Vec<f16>| v.into_iter().map(|h| if h.is_nan() { 0xffff } else { h.to_bits() }).collect::<Vec<_>>();
        assert_eq!(bits(gt.to_dtype::<f16>().to_vec()), bits(xt.to_dtype::<f16>().to_vec()));
        let bbits = |v: Vec<bf16>| v.into_iter().map(|h| if h.is_nan() { 0xffff } else { h.to_bits() }).collect::<Vec<_>>();
        assert_eq!(bbits(gt.to_dtype::<bf16>().to_vec()), bbits(xt.to_dtype::<bf16>().to_vec()));
        let d = gt.to_dtype::<f64>();
        assert_eq!(d.device(), dev);
        let (dv, cv) = (d.to_vec(), xt.to_dtype::<f64>().to_vec());
        assert!(dv.iter().zip(&cv).all(|(a, b)| a == b || (a.is_nan() && b.is_nan())));
        // integers wrap, bool converts to 0/1, f16 back to f32 exactly
        let i = on(dev, &DynTensor::from_vec(vec![300i64, -1, 128, 1 << 40], &[4]));
        assert_eq!(i.to_dtype::<i8>().to_vec(), vec![44, -1, -128, 0]);
        assert_eq!(i.to_dtype::<f32>().to_vec(), vec![300.0, -1.0, 128.0, (1u64 << 40) as f32]);
        let b = on(dev, &DynTensor::from_vec(vec![true, false], &[2]));
        assert_eq!(b.to_dtype::<f32>().to_vec(), vec![1.0, 0.0]);
        let h = on(dev, &DynTensor::from_vec(vec![f16::from_f32(0.333), f16::MAX], &[2]));
        assert_eq!(h.to_dtype::<f32>().to_vec(), vec![f16::from_f32(0.333).to_f32(), 65504.0]);
    }

    fn fill_writes_through_views(dev: Device) {
        let t = DynTensor::<i32>::zeros_on(&[3, 4], dev).unwrap();
        t.select(1, 1).fill_(9);
        t.i((2, Idx::step(.., 2))).fill_(5);
        t.narrow(0, 0, 1).t().fill_(-1);
        assert_eq!(t.to_vec(), vec![-1, -1, -1, -1, 0, 9, 0, 0, 5, 9, 5, 0]);
        t.zero_();
        assert_eq!(t.to_vec(), vec![0; 12]);
        let h = DynTensor::<bf16>::ones_on(&[2, 2], dev).unwrap();
        h.t().select(0, 1).fill_(bf16::from_f32(-2.5));
        assert_eq!(h.to_dtype::<f32>().to_vec(), vec![1.0, -2.5, 1.0, -2.5]);
        let b = DynTensor::<bool>::zeros_on(&[3], dev).unwrap();
        b.narrow(0, 1, 2).fill_(true);
        assert_eq!(b.to_vec(), vec![false, true, true]);
        // an expanded view is refused and left unchanged
        let e = DynTensor::<f32>::ones_on(&[3], dev).unwrap();
        let err = e.expand(&[2, 3]).try_fill_(0.0).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OverlappingWrite);
        assert_eq!(e.to_vec(), vec![1.0; 3]);
    }

    fn copy_broadcasts_converts_and_handles_aliasing(dev: Device) {
        let a = DynTensor::<f64>::zeros_on(&[2, 3], dev).unwrap();
        a.copy_(&on(dev, &DynTensor::<i8>::from_vec(vec![1, -2], &[2, 1])));
        assert_eq!(a.to_vec(), vec![1.0, 1.0, 1.0, -2.0, -2.0, -2.0]);
        a.t().copy_(&on(dev, &DynTensor::<f32>::from_vec(vec![0.5, 1.5, 2.5], &[3, 1])));
        assert_eq!(a.to_vec(), vec![0.5, 1.5, 2.5, 0.5, 1.5, 2.5]);
        // shifts within one storage act as if the source were copied first
        let s = on(dev, &DynTensor::<i32>::arange(0, 6, 1));
        s.narrow(0, 1, 5).copy_(&s.narrow(0, 0, 5));
        assert_eq!(s.to_vec(), vec![0, 0, 1, 2, 3, 4]);
        let m = on(dev, &DynTensor::<i32>::arange(0, 9, 1).view(&[3, 3]));
        m.copy_(&m.t());
        assert_eq!(m.to_vec(), vec![0, 3, 6, 1, 4, 7, 2, 5, 8]);
        // a source that does not broadcast is an error and writes nothing
        let err = m.try_copy_(&on(dev, &DynTensor::<i32>::zeros(&[2]))).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
        assert_eq!(m.get(&[0, 1]), 3);
        // in-place arithmetic reads an aliasing source as if it were copied first
        let v = on(dev, &DynTensor::<i32>::arange(0, 6, 1));
        v.narrow(0, 1, 5).add_(&v.narrow(0, 0, 5));
        assert_eq!(v.to_vec(), vec![0, 1, 3, 5, 7, 9]);
        let w = on(dev, &DynTensor::<i32>::arange(0, 9, 1).view(&[3, 3]));
        w.mul_(&w.t()); // (3i + j) * (3j + i)
        assert_eq!(w.to_vec(), vec![0, 3, 12, 3, 16, 35, 12, 35, 64]);
        // a destination whose strides collide is refused on every device, nothing written:
        // sliding windows, and [2, 2, 2] with strides [1, 2, 3] ((1, 1, 0) and (0, 0, 1)
        // are both element 3)
        let x = on(dev, &DynTensor::<f32>::arange(0.0, 5.0, 1.0));
        let windows = x.as_strided(&[3, 3], &[1, 1], 0);
        assert_eq!(windows.try_add_scalar_(1.0).unwrap_err().kind(), ErrorKind::OverlappingWrite);
        let ones = on(dev, &DynTensor::<f32>::ones(&[3, 3]));
        assert_eq!(windows.try_add_(&ones).unwrap_err().kind(), ErrorKind::OverlappingWrite);
        assert_eq!(x.to_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        let y = on(dev, &DynTensor::<i64>::zeros(&[8]));
        let err = y.as_strided(&[2, 2, 2], &[1, 2, 3], 0).try_add_scalar_(1).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OverlappingWrite);
        assert_eq!(y.to_vec(), vec![0; 8]);
    }

    fn element_access_through_views(dev: Device) {
        let g = on(dev, &grid());
        assert_eq!(g.get(&[1, 2, 3]), 23.0);
        assert_eq!(g.permute(&[2, 1, 0]).get(&[3, 2, 1]), 23.0);
        g.t_last().set(&[1, 0, 0], -5.0); // the view swaps dims 1 and 2
        assert_eq!(g.get(&[1, 0, 0]), -5.0);
        g.select(0, 1).set(&[2, 1], 100.0);
        assert_eq!(g.get(&[1, 2, 1]), 100.0);
        assert_eq!(g.select(2, 1).i((1, 2)).item(), 100.0);
        assert_eq!(g.try_get(&[2, 0, 0]).unwrap_err().kind(), ErrorKind::IndexOutOfRange);
        let s = g.storage();
        assert_eq!(s.device(), dev);
        s.set(0, 7.0).unwrap();
        assert_eq!(s.get(0).unwrap(), 7.0);
        assert!(s.get(24).is_err());
        assert_eq!(s.to_vec().len(), 24);
        let scalar = on(dev, &DynTensor::scalar(2.5f64));
        assert_eq!(scalar.item(), 2.5);
    }

    fn moving_round_trips_every_dtype(dev: Device) {
        fn round_trip<E: Element>(dev: Device, data: Vec<E>) {
            let n = data.len();
            let x = DynTensor::from_vec(data, &[2, n / 2]).t(); // non-contiguous source
            let g = x.to_device(dev).unwrap();
            assert_eq!((g.device(), g.shape()), (dev, x.shape()));
            // a copy to another device is contiguous; on its own device the tensor is kept
            assert_eq!(g.is_contiguous(), dev != Device::Cpu);
            let back = g.to_device(Device::Cpu).unwrap();
            assert_eq!(back.device(), Device::Cpu);
            assert_eq!(back.to_vec(), x.to_vec());
            // already there: the same storage, no copy
            assert!(g.to_device(dev).unwrap().shares_storage(&g));
        }
        round_trip(dev, vec![true, false, false, true]);
        round_trip(dev, vec![0u8, 255, 7, 128]);
        round_trip(dev, vec![-128i8, 127, 0, -1]);
        round_trip(dev, vec![i16::MIN, i16::MAX, 3, -3]);
        round_trip(dev, vec![i32::MIN, i32::MAX, 3, -3]);
        round_trip(dev, vec![i64::MIN, i64::MAX, 3, -3]);
        round_trip(dev, vec![f16::MIN, f16::MAX, f16::EPSILON, f16::NEG_INFINITY]);
        round_trip(dev, vec![bf16::MIN, bf16::MAX, bf16::EPSILON, bf16::INFINITY]);
        round_trip(dev, vec![f32::MIN, f32::MAX, f32::EPSILON, -0.0]);
        round_trip(dev, vec![f64::MIN, f64::MAX, f64::EPSILON, 1e-310]);
        // empty and 0-d tensors
        let e = DynTensor::<f32>::zeros(&[0, 3]).to_device(dev).unwrap();
        assert_eq!((e.shape(), e.to_vec()), (&[0usize, 3][..], vec![]));
        assert_eq!(e.contiguous().numel(), 0);
        let z = DynTensor::<i64>::scalar(-4).to_device(dev).unwrap();
        assert_eq!(z.to_device(Device::Cpu).unwrap().item(), -4);
    }

    fn creation_on_the_device(dev: Device) {
        let f = DynTensor::full_on(&[2, 2], 3u8, dev).unwrap();
        assert_eq!((f.device(), f.to_vec()), (dev, vec![3; 4]));
        let z = DynTensor::<f16>::zeros_on(&[3], dev).unwrap();
        assert_eq!(z.to_vec(), vec![f16::ZERO; 3]);
        let n = DynTensor::full_on(&[2], -0.0f32, dev).unwrap();
        assert!(n.to_vec().iter().all(|v| v.to_bits() == (-0.0f32).to_bits()));
        let o = DynTensor::<bool>::ones_on(&[2], dev).unwrap();
        assert_eq!(o.to_vec(), vec![true, true]);
        assert!(DynTensor::<f32>::zeros_on(&[usize::MAX, 2], dev).is_err());
    }

    fn display_shows_the_device(dev: Device) {
        let g = on(dev, &DynTensor::from_vec(vec![1.5f32, 2.0], &[2]));
        let s = g.to_string();
        match dev {
            Device::Cpu => assert_eq!(s, "tensor([1.5000, 2.0000])"),
            Device::Cuda(i) => assert_eq!(s, format!("tensor([1.5000, 2.0000], device='cuda:{i}')")),
        }
    }

    fn tensors_work_and_drop_on_other_threads(dev: Device) {
        let a = on(dev, &grid());
        let b = a.t_last().contiguous();
        let worker = std::thread::spawn(move || {
            // first use of the device on this thread, then the tensors are dropped here
            b.select(0, 1).fill_(-1.0);
            let sum: f32 = b.to_vec().iter().sum();
            drop(b);
            sum
        });
        let sum = worker.join().unwrap();
        let cpu = grid();
        let want: f32 = cpu.select(0, 0).to_vec().iter().sum::<f32>() - 12.0;
        assert_eq!(sum, want);
        // the device is still usable here afterwards
        assert_eq!(a.clone().to_vec(), cpu.to_vec());
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let t = a.select(0, i % 2).shallow_clone();
                std::thread::spawn(move || t.to_dtype::<f64>().to_vec()[0])
            })
            .collect();
        let firsts: Vec<f64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(firsts, vec![0.0, 12.0, 0.0, 12.0]);
    }

    fn ops_on_two_devices_are_errors_naming_both(dev: Device) {
        let here = DynTensor::<f32>::zeros_on(&[2], dev).unwrap();
        let cpu = DynTensor::<f32>::ones(&[2]);
        if dev == Device::Cpu {
            here.copy_(&cpu);
            assert_eq!(here.to_vec(), vec![1.0, 1.0]);
            return;
        }
        let e = here.try_copy_(&cpu).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Device);
        assert!(e.message().contains(&dev.to_string()) && e.message().contains("cpu"), "{e}");
        let e = cpu.try_copy_(&here).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Device);
        assert_eq!(here.to_vec(), vec![0.0, 0.0]);
        assert_eq!(cpu.to_vec(), vec![1.0, 1.0]);
    }
}

#[test]
fn unavailable_devices_are_clear_errors_not_panics() {
    let count = Device::cuda_count();
    assert_eq!(namedtensor::cuda_is_available(), count > 0);
    let missing = Device::Cuda(count + 3);
    let e = missing.check_available().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    assert!(!missing.is_available());
    let t = DynTensor::<f32>::ones(&[2]);
    let e = t.to_device(missing).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    let e = DynTensor::<f32>::zeros_on(&[2], missing).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    eprintln!("cuda:{} unavailable: {}", count + 3, e.message());
    if count == 0 {
        let e = t.cuda(0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Device);
    }
}

trait LastTwo {
    /// Swaps the last two dims.
    fn t_last(&self) -> Self;
}

impl<E: Element> LastTwo for DynTensor<E> {
    fn t_last(&self) -> Self {
        self.transpose(-1, -2)
    }
}

/// Scalar operands (masked_fill's value, a triangle's zero, isinf's infinity) and uploads are
/// issued without waiting for the device; only reading on the host waits. Counted on the
/// emulator, which records every wait of the calling thread.
#[cfg(feature = "cuda-emu")]
#[test]
fn scalar_operands_and_uploads_do_not_wait_for_the_device() {
    use crate::backend::cuda::emu::waits_on_this_thread as waits;
    let x = DynTensor::<f32>::from_vec(vec![1.0, -2.0, f32::INFINITY, 4.0, 5.0, -6.0], &[2, 3]);
    let mask = DynTensor::from_vec(vec![true, false, false, false, true, false], &[2, 3]);
    let before = waits();
    let g = x.to_device(Device::Cuda(0)).unwrap();
    let m = mask.to_device(Device::Cuda(0)).unwrap();
    let filled = g.masked_fill(&m, 9.0);
    let lower = g.tril(0);
    let inf = g.isinf();
    let finite = g.isfinite();
    let inplace = x.to_device(Device::Cuda(0)).unwrap();
    inplace.masked_fill_(&m, -1.0);
    assert_eq!(
        waits(),
        before,
        "an upload or a scalar operand waited for the device"
    );
    assert_eq!(filled.to_vec(), [9.0, -2.0, f32::INFINITY, 4.0, 9.0, -6.0]);
    assert_eq!(waits(), before + 2, "a read waits (copy + sync)");
    assert_eq!(lower.to_vec(), [1.0, 0.0, 0.0, 4.0, 5.0, 0.0]);
    assert_eq!(inf.to_vec(), [false, false, true, false, false, false]);
    assert_eq!(finite.to_vec(), [true, true, false, true, true, true]);
    assert_eq!(
        inplace.to_vec(),
        [-1.0, -2.0, f32::INFINITY, 4.0, -1.0, -6.0]
    );
}
