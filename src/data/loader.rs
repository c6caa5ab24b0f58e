//! [`DataLoader`]: batches of item indices over a [`Dataset`].
//!
//! # Invariants
//! - Each epoch visits every item exactly once (or, with [`LastBatch::Drop`], all but the
//!   `len % batch_size` items of the incomplete last batch), in order or in the permutation
//!   `randperm(len, derive_seed(seed, epoch))`.
//! - A loader never yields an empty batch.

use crate::error::{Error, ErrorKind, Result};
use crate::nn::init::derive_seed;
use crate::tensor::DynTensor;

/// A collection of items that can be fetched as a batch by index.
pub trait Dataset {
    /// What one batch is (for example a pair of input and label tensors).
    type Batch;
    /// The number of items.
    fn len(&self) -> usize;
    /// Whether there are no items.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The items at `indices` (a 1-d `i64` tensor of distinct indices below [`len`]), as one
    /// batch.
    ///
    /// [`len`]: Dataset::len
    fn batch(&self, indices: &DynTensor<i64>) -> Result<Self::Batch>;
}

/// What happens to a last batch smaller than the batch size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LastBatch {
    /// It is yielded, smaller (PyTorch's `drop_last=False`).
    #[default]
    Keep,
    /// It is skipped (`drop_last=True`).
    Drop,
}

/// Batches over a dataset, optionally shuffled; [`DataLoader::epoch`] starts the next pass.
///
/// ```
/// use namedtensor::data::{DataLoader, LastBatch, TensorDataset};
/// use namedtensor::{dims, Tensor};
/// dims! { Items, Features }
/// let x = Tensor::<f32, (Items, Features)>::zeros([10, 3]);
/// let y = Tensor::<i64, (Items,)>::from_vec((0..10).collect(), [10]);
/// let mut loader = DataLoader::new(TensorDataset::new(x, y).unwrap(), 4).unwrap().shuffle(7);
/// let sizes: Vec<usize> = loader.epoch().map(|b| b.unwrap().1.numel()).collect();
/// assert_eq!(sizes, [4, 4, 2]);
/// let mut dropped = DataLoader::new(loader.dataset().clone(), 4).unwrap().last_batch(LastBatch::Drop);
/// assert_eq!(dropped.epoch().count(), 2);
/// ```
#[derive(Debug)]
pub struct DataLoader<D: Dataset> {
    data: D,
    batch_size: usize,
    seed: Option<u64>,
    last: LastBatch,
    epochs: u64,
}

impl<D: Dataset> DataLoader<D> {
    /// Batches of `batch_size` items of `data`, in order; an error for an empty dataset or a
    /// batch size of 0.
    pub fn new(data: D, batch_size: usize) -> Result<Self> {
        let err = |msg: String| Err(Error::new(ErrorKind::InvalidArgument, "DataLoader", msg));
        if data.is_empty() {
            return err("the dataset is empty: there is nothing to batch".into());
        }
        if batch_size == 0 {
            return err("the batch size is 0".into());
        }
        Ok(DataLoader {
            data,
            batch_size,
            seed: None,
            last: LastBatch::Keep,
            epochs: 0,
        })
    }

    /// Shuffles every epoch with a permutation drawn from `seed` and the epoch's number.
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets what happens to a smaller last batch.
    pub fn last_batch(mut self, last: LastBatch) -> Self {
        self.last = last;
        self
    }

    /// The dataset.
    pub fn dataset(&self) -> &D {
        &self.data
    }

    /// The number of batches per epoch.
    pub fn num_batches(&self) -> usize {
        match self.last {
            LastBatch::Keep => self.data.len().div_ceil(self.batch_size),
            LastBatch::Drop => self.data.len() / self.batch_size,
        }
    }

    /// The batches of the next epoch.
    pub fn epoch(&mut self) -> impl Iterator<Item = Result<D::Batch>> + '_ {
        let n = self.data.len();
        let order = match self.seed {
            Some(seed) => DynTensor::randperm(n, derive_seed(seed, self.epochs)),
            None => DynTensor::arange(0, n as i64, 1),
        };
        self.epochs += 1;
        let size = self.batch_size;
        (0..self.num_batches()).map(move |b| {
            let start = b * size;
            let idx = order.try_narrow(0, start as isize, size.min(n - start))?;
            self.data.batch(&idx)
        })
    }
}
