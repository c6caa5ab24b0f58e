//! Creation: constants, ranges, identity matrices and tensors from data.

use super::{DynTensor, or_panic};
use crate::backend::device::Device;
use crate::dtype::{Element, Float};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::checked_numel;
use crate::storage::Buffer;

fn numel_of(op: &'static str, shape: &[usize]) -> Result<usize> {
    checked_numel(shape)
        .ok_or_else(|| Error::overflow(op, format!("the element count of {shape:?}")))
}

impl<E: Element> DynTensor<E> {
    /// A tensor of `shape` filled with `value`. Panics where [`DynTensor::try_full`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::full(&[2, 2], 7i32);
    /// assert_eq!(t.to_vec(), vec![7; 4]);
    /// ```
    #[track_caller]
    pub fn full(shape: &[usize], value: E) -> Self {
        or_panic(Self::try_full(shape, value))
    }

    /// [`DynTensor::full`], or an error if the element count overflows.
    pub fn try_full(shape: &[usize], value: E) -> Result<Self> {
        Self::full_with("full", shape, value, Device::Cpu)
    }

    fn full_with(op: &'static str, shape: &[usize], value: E, device: Device) -> Result<Self> {
        let n = numel_of(op, shape)?;
        let buffer = Buffer::full(op, n, value, device)?;
        DynTensor::from_contiguous_buffer(buffer, shape)
    }

    /// A tensor of `shape` filled with `value`, created on `device` (no host copy for a CUDA
    /// device). Fails if the element count overflows or the device is unavailable.
    ///
    /// The other creation functions build CPU tensors; move them with
    /// [`DynTensor::to_device`].
    ///
    /// ```
    /// use namedtensor::{Device, DynTensor};
    /// let t = DynTensor::full_on(&[2, 3], 1.5f32, Device::Cpu).unwrap();
    /// assert_eq!(t.to_vec(), vec![1.5; 6]);
    /// if namedtensor::cuda_is_available() {
    ///     let g = DynTensor::full_on(&[2, 3], 7i64, Device::Cuda(0)).unwrap();
    ///     assert_eq!(g.to_vec(), vec![7; 6]);
    /// }
    /// ```
    pub fn full_on(shape: &[usize], value: E, device: Device) -> Result<Self> {
        Self::full_with("full_on", shape, value, device)
    }

    /// Zeros (`false` for bool) of `shape` on `device`; see [`DynTensor::full_on`].
    ///
    /// ```
    /// use namedtensor::{Device, DynTensor};
    /// let z = DynTensor::<f64>::zeros_on(&[4], Device::Cpu).unwrap();
    /// assert_eq!(z.to_vec(), vec![0.0; 4]);
    /// ```
    pub fn zeros_on(shape: &[usize], device: Device) -> Result<Self> {
        Self::full_on(shape, E::ZERO, device)
    }

    /// Ones (`true` for bool) of `shape` on `device`; see [`DynTensor::full_on`].
    ///
    /// ```
    /// use namedtensor::{Device, DynTensor};
    /// let device = if namedtensor::cuda_is_available() { Device::Cuda(0) } else { Device::Cpu };
    /// let o = DynTensor::<i32>::ones_on(&[2, 2], device).unwrap();
    /// assert_eq!((o.device(), o.to_vec()), (device, vec![1; 4]));
    /// ```
    pub fn ones_on(shape: &[usize], device: Device) -> Result<Self> {
        Self::full_on(shape, E::ONE, device)
    }

    /// A tensor of zeros (`false` for bool).
    ///
    /// ```
    /// assert_eq!(namedtensor::DynTensor::<f32>::zeros(&[3]).to_vec(), vec![0.0; 3]);
    /// ```
    #[track_caller]
    pub fn zeros(shape: &[usize]) -> Self {
        Self::full(shape, E::ZERO)
    }

    /// A tensor of ones (`true` for bool).
    ///
    /// ```
    /// assert_eq!(namedtensor::DynTensor::<u8>::ones(&[2]).to_vec(), vec![1, 1]);
    /// ```
    #[track_caller]
    pub fn ones(shape: &[usize]) -> Self {
        Self::full(shape, E::ONE)
    }

    /// Zeros with the shape of `other`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let z = DynTensor::<f64>::zeros_like(&DynTensor::<i32>::ones(&[2, 3]));
    /// assert_eq!(z.shape(), &[2, 3]);
    /// ```
    pub fn zeros_like<F: Element>(other: &DynTensor<F>) -> Self {
        Self::zeros(other.shape())
    }

    /// Ones with the shape of `other`.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::<f32>::ones_like(&DynTensor::<f32>::zeros(&[2])).to_vec(), vec![1.0; 2]);
    /// ```
    pub fn ones_like<F: Element>(other: &DynTensor<F>) -> Self {
        Self::ones(other.shape())
    }

    /// A 0-d tensor holding `value`.
    ///
    /// ```
    /// let s = namedtensor::DynTensor::scalar(2.5f32);
    /// assert_eq!((s.dim(), s.item()), (0, 2.5));
    /// ```
    pub fn scalar(value: E) -> Self {
        Self::full(&[], value)
    }

    /// A tensor of `shape` holding `data` in row-major order.
    /// Panics where [`DynTensor::try_from_vec`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_vec(vec![4., 1., 5., 3., 2., 1.], &[3, 2]);
    /// assert_eq!(t.get(&[2, 0]), 2.0);
    /// ```
    #[track_caller]
    pub fn from_vec(data: Vec<E>, shape: &[usize]) -> Self {
        or_panic(Self::try_from_vec(data, shape))
    }

    /// [`DynTensor::from_vec`], or [`ErrorKind::DataLength`] when `data.len()` is not the
    /// shape's element count.
    ///
    /// ```
    /// assert!(namedtensor::DynTensor::try_from_vec(vec![1, 2, 3], &[2, 2]).is_err());
    /// ```
    pub fn try_from_vec(data: Vec<E>, shape: &[usize]) -> Result<Self> {
        let n = numel_of("from_vec", shape)?;
        if data.len() != n {
            return Err(Error::new(
                ErrorKind::DataLength,
                "from_vec",
                format!(
                    "{} elements given for shape {shape:?}, which holds {n}",
                    data.len()
                ),
            ));
        }
        DynTensor::from_contiguous_vec(data, shape)
    }

    /// A 1-d tensor copied from `data`.
    ///
    /// ```
    /// assert_eq!(namedtensor::DynTensor::from_slice(&[1i8, 2]).shape(), &[2]);
    /// ```
    pub fn from_slice(data: &[E]) -> Self {
        Self::from_vec(data.to_vec(), &[data.len()])
    }

    /// A tensor from nested arrays, whose nesting gives the shape.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::from_nested([[4.0f32, 1.0], [5.0, 3.0], [2.0, 1.0]]);
    /// assert_eq!(t.shape(), &[3, 2]);
    /// assert_eq!(t.to_vec(), vec![4.0, 1.0, 5.0, 3.0, 2.0, 1.0]);
    /// ```
    pub fn from_nested<A: NestedData<E>>(data: A) -> Self {
        let mut shape = Vec::new();
        A::shape(&mut shape);
        let mut flat = Vec::with_capacity(shape.iter().product());
        data.flatten_into(&mut flat);
        Self::from_vec(flat, &shape)
    }

    /// Values `start, start + step, …` below `end` (above it for a negative step).
    /// Panics where [`DynTensor::try_arange`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert_eq!(DynTensor::<i64>::arange(0, 5, 2).to_vec(), vec![0, 2, 4]);
    /// assert_eq!(DynTensor::<f32>::arange(1.0, 0.0, -0.25).to_vec(), vec![1.0, 0.75, 0.5, 0.25]);
    /// ```
    #[track_caller]
    pub fn arange(start: E, end: E, step: E) -> Self {
        or_panic(Self::try_arange(start, end, step))
    }

    /// [`DynTensor::arange`], or an error for a zero step or a step pointing away from `end`.
    pub fn try_arange(start: E, end: E, step: E) -> Result<Self> {
        let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
        if st == 0.0 || !st.is_finite() || !s.is_finite() || !e.is_finite() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "arange",
                format!(
                    "step must be finite and non-zero, and bounds finite (start {start}, end {end}, step {step})"
                ),
            ));
        }
        if (e - s) * st < 0.0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "arange",
                format!("step {step} points away from end {end} (start {start})"),
            ));
        }
        let len = ((e - s) / st).ceil().max(0.0);
        if len >= usize::MAX as f64 {
            return Err(Error::overflow("arange", format!("a length of {len}")));
        }
        let len = len as usize;
        crate::storage::reserve_buffer::<E>("arange", len)?;
        let mut data = crate::storage::take_buffer(len);
        data.extend((0..len).map(|i| {
            if E::DTYPE.is_float() {
                E::from_f64(s + i as f64 * st)
            } else {
                E::from_i64(
                    start
                        .to_i64()
                        .wrapping_add((i as i64).wrapping_mul(step.to_i64())),
                )
            }
        }));
        DynTensor::from_contiguous_vec(data, &[len])
    }

    /// The `n × n` identity matrix.
    ///
    /// ```
    /// let i = namedtensor::DynTensor::<i32>::eye(2);
    /// assert_eq!(i.to_vec(), vec![1, 0, 0, 1]);
    /// ```
    #[track_caller]
    pub fn eye(n: usize) -> Self {
        Self::eye_rect(n, n)
    }

    /// A `rows × cols` matrix with ones on the main diagonal.
    ///
    /// ```
    /// let i = namedtensor::DynTensor::<f32>::eye_rect(2, 3);
    /// assert_eq!(i.to_vec(), vec![1., 0., 0., 0., 1., 0.]);
    /// ```
    #[track_caller]
    pub fn eye_rect(rows: usize, cols: usize) -> Self {
        let t = Self::zeros(&[rows, cols]);
        {
            // SAFETY: elements of the new buffer are written.
            let mut guard = or_panic(unsafe { t.storage.write("eye") });
            let data = or_panic(guard.cpu_mut("eye"));
            for i in 0..rows.min(cols) {
                data[i * cols + i] = E::ONE;
            }
        }
        t
    }
}

impl<E: Float> DynTensor<E> {
    /// `steps` evenly spaced values from `start` to `end`, both included.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f64>::linspace(0.0, 1.0, 5);
    /// assert_eq!(t.to_vec(), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    /// ```
    pub fn linspace(start: f64, end: f64, steps: usize) -> Self {
        let step = if steps > 1 {
            (end - start) / (steps - 1) as f64
        } else {
            0.0
        };
        // Fill the first half from `start` and the second from `end`, so both ends are exact.
        let data: Vec<E> = (0..steps)
            .map(|i| {
                let v = if steps == 1 || i < steps / 2 {
                    start + step * i as f64
                } else {
                    end - step * (steps - 1 - i) as f64
                };
                E::from_f64(v)
            })
            .collect();
        or_panic(DynTensor::from_contiguous_vec(data, &[steps]))
    }
}

/// Nested arrays of elements, as taken by [`DynTensor::from_nested`] and [`tensor!`](crate::tensor).
pub trait NestedData<E: Element> {
    /// Appends the sizes of the nesting levels, outermost first.
    fn shape(out: &mut Vec<usize>);
    /// Appends the elements in row-major order.
    fn flatten_into(self, out: &mut Vec<E>);
}

/// One impl per element type rather than `impl<E: Element> NestedData<E> for E`: `Element`
/// is `namedtensor-core`'s trait, and coherence cannot rule out arrays implementing it there.
macro_rules! nested_element {
    ($($t:ty),*) => {$(
        impl NestedData<$t> for $t {
            fn shape(_: &mut Vec<usize>) {}
            fn flatten_into(self, out: &mut Vec<$t>) {
                out.push(self);
            }
        }
    )*};
}
nested_element!(bool, u8, i8, i16, i32, i64, half::f16, half::bf16, f32, f64);

impl<E: Element, T: NestedData<E>, const N: usize> NestedData<E> for [T; N] {
    fn shape(out: &mut Vec<usize>) {
        out.push(N);
        T::shape(out);
    }
    fn flatten_into(self, out: &mut Vec<E>) {
        for item in self {
            item.flatten_into(out);
        }
    }
}

/// A [`DynTensor`] from nested array literals; `f32` unless an element type is given.
///
/// ```
/// use namedtensor::tensor;
/// let points = tensor!([[4., 1.], [5., 3.], [2., 1.]]);
/// assert_eq!(points.shape(), &[3, 2]);
/// let ids = tensor!([1, 2, 3]; i64);
/// assert_eq!(ids.dtype(), namedtensor::DType::I64);
/// ```
#[macro_export]
macro_rules! tensor {
    ($data:expr; $t:ty) => {
        $crate::DynTensor::<$t>::from_nested($data)
    };
    ($data:expr) => {
        $crate::DynTensor::<f32>::from_nested($data)
    };
}
