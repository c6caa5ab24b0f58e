//! Seeded random tensors. A seed gives the same numbers on every machine and in every run:
//! the generator is ChaCha8 (`rand_chacha`), whose output is specified bit for bit, and the
//! samplers are `rand_distr`'s.

use super::{DynTensor, or_panic};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

impl<E: Float> DynTensor<E> {
    /// Uniform samples from `[0, 1)`, seeded. Panics where [`DynTensor::try_rand`] fails.
    ///
    /// Each value is `k / 2^p` for a uniformly drawn integer `k < 2^p`, where `p` is the type's
    /// precision, so every value is exact in `E` and never rounds up to 1.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let a = DynTensor::<f32>::rand(&[1000], 7);
    /// assert_eq!(a.to_vec(), DynTensor::<f32>::rand(&[1000], 7).to_vec());
    /// assert!(a.to_vec().iter().all(|&x| (0.0..1.0).contains(&x)));
    /// ```
    #[track_caller]
    pub fn rand(shape: &[usize], seed: u64) -> Self {
        or_panic(Self::try_rand(shape, seed))
    }

    /// [`DynTensor::rand`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind::Overflow`] when the element count of `shape` overflows `usize`;
    /// [`ErrorKind::OutOfMemory`] when the host cannot hold the samples.
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let e = DynTensor::<f32>::try_rand(&[1 << 40, 1 << 40], 0).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::Overflow);
    /// ```
    pub fn try_rand(shape: &[usize], seed: u64) -> Result<Self> {
        let n = checked_len("rand", shape)?;
        crate::storage::reserve_buffer::<E>("rand", n)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let bits = E::MANTISSA_DIGITS;
        let scale = 0.5f64.powi(bits as i32);
        let mut data = crate::storage::take_buffer(n);
        data.extend(
            (0..n).map(|_| E::from_f64((rng.random::<u64>() >> (64 - bits)) as f64 * scale)),
        );
        DynTensor::from_contiguous_vec(data, shape)
    }

    /// Standard normal samples (mean 0, standard deviation 1), seeded.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f64>::randn(&[10_000], 1);
    /// let mean = t.to_vec().iter().sum::<f64>() / 10_000.0;
    /// assert!(mean.abs() < 0.05);
    /// ```
    #[track_caller]
    pub fn randn(shape: &[usize], seed: u64) -> Self {
        or_panic(Self::try_randn(shape, seed))
    }

    /// [`DynTensor::randn`], or an error as [`DynTensor::try_rand`].
    pub fn try_randn(shape: &[usize], seed: u64) -> Result<Self> {
        Self::try_normal(shape, 0.0, 1.0, seed)
    }

    /// Normal samples with the given mean and standard deviation, seeded.
    /// Panics where [`DynTensor::try_normal`] fails.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::normal(&[4], 10.0, 0.0, 3);
    /// assert_eq!(t.to_vec(), vec![10.0; 4]);
    /// ```
    #[track_caller]
    pub fn normal(shape: &[usize], mean: f64, std: f64, seed: u64) -> Self {
        or_panic(Self::try_normal(shape, mean, std, seed))
    }

    /// [`DynTensor::normal`], or an error for a negative or non-finite standard deviation.
    pub fn try_normal(shape: &[usize], mean: f64, std: f64, seed: u64) -> Result<Self> {
        let dist = Normal::new(mean, std)
            .ok()
            .filter(|_| std.is_finite() && std >= 0.0 && mean.is_finite())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    "normal",
                    format!("mean {mean} and std {std} must be finite and std non-negative"),
                )
            })?;
        let n = checked_len("normal", shape)?;
        crate::storage::reserve_buffer::<E>("normal", n)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut data = crate::storage::take_buffer(n);
        data.extend((0..n).map(|_| E::from_f64(dist.sample(&mut rng))));
        DynTensor::from_contiguous_vec(data, shape)
    }
}

impl<E: crate::dtype::Numeric> DynTensor<E> {
    /// Integers drawn uniformly from `[low, high)`, seeded, as values of `E` (PyTorch's
    /// `randint`; `E` is usually `i64`). Panics where [`DynTensor::try_randint`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<i64>::randint(-3, 4, &[1000], 5);
    /// assert!(t.to_vec().iter().all(|v| (-3..4).contains(v)));
    /// assert_eq!(t.to_vec(), DynTensor::<i64>::randint(-3, 4, &[1000], 5).to_vec());
    /// assert!((-3..4).all(|v| t.to_vec().contains(&v))); // every value occurs
    /// ```
    #[track_caller]
    pub fn randint(low: i64, high: i64, shape: &[usize], seed: u64) -> Self {
        or_panic(Self::try_randint(low, high, shape, seed))
    }

    /// [`DynTensor::randint`], or an error when `low >= high` or a value in the range does
    /// not fit `E` exactly.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// assert!(DynTensor::<i64>::try_randint(3, 3, &[2], 0).is_err());
    /// assert!(DynTensor::<u8>::try_randint(0, 300, &[2], 0).is_err());
    /// ```
    pub fn try_randint(low: i64, high: i64, shape: &[usize], seed: u64) -> Result<Self> {
        let fits = |v: i64| E::from_i64(v).to_i64() == v;
        if low >= high || !fits(low) || !fits(high - 1) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "randint",
                format!(
                    "the range [{low}, {high}) is empty or does not fit {}",
                    E::DTYPE
                ),
            ));
        }
        let n = checked_len("randint", shape)?;
        crate::storage::reserve_buffer::<E>("randint", n)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut data = crate::storage::take_buffer(n);
        data.extend((0..n).map(|_| E::from_i64(rng.random_range(low..high))));
        DynTensor::from_contiguous_vec(data, shape)
    }
}

impl DynTensor<i64> {
    /// A random permutation of `0..n`, seeded (PyTorch's `randperm`): a Fisher–Yates shuffle
    /// driven by ChaCha8, the same on every machine. Panics where
    /// [`DynTensor::try_randperm`] fails.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let p = DynTensor::randperm(10, 3).to_vec();
    /// let mut sorted = p.clone();
    /// sorted.sort();
    /// assert_eq!(sorted, (0..10).collect::<Vec<i64>>());
    /// assert_eq!(p, DynTensor::randperm(10, 3).to_vec());
    /// assert_ne!(p, DynTensor::randperm(10, 4).to_vec());
    /// ```
    #[track_caller]
    pub fn randperm(n: usize, seed: u64) -> Self {
        or_panic(Self::try_randperm(n, seed))
    }

    /// [`DynTensor::randperm`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfMemory`] when the host cannot hold `n` indices of 8 bytes (every `n`
    /// from 2^60 on, whose byte count exceeds `isize::MAX`, and any `n` beyond the host's
    /// memory).
    ///
    /// ```
    /// use namedtensor::{DynTensor, ErrorKind};
    /// let e = DynTensor::try_randperm(1 << 62, 0).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    /// ```
    pub fn try_randperm(n: usize, seed: u64) -> Result<Self> {
        crate::storage::reserve_buffer::<i64>("randperm", n)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut data = crate::storage::take_buffer(n);
        // `n · 8` bytes fit `isize` (`reserve_buffer`), so every index fits `i64`.
        data.extend(0..n as i64);
        for i in (1..n).rev() {
            data.swap(i, rng.random_range(0..=i));
        }
        DynTensor::from_contiguous_vec(data, &[n])
    }
}

fn checked_len(op: &'static str, shape: &[usize]) -> Result<usize> {
    crate::layout::checked_numel(shape)
        .ok_or_else(|| Error::overflow(op, format!("the element count of {shape:?}")))
}
