//! [`DataLoader`]: batches of item indices over a [`Dataset`].
//!
//! # Invariants
//! - Each epoch visits every item exactly once (or, with [`LastBatch::Drop`], all but the
//!   `len % batch_size` items of the incomplete last batch), in order or in the permutation
//!   `randperm(len, derive_seed(seed, epoch))`.
//! - A loader never yields an empty batch.
//! - A sharded loader ([`DataLoader::shard`]) batches only its rank's share of each epoch's
//!   order (module `shard`: the same order on every rank, `num_samples` items each).
//! - An epoch that cannot start (a dataset of more than `i64::MAX` items, or a shuffled order
//!   the host cannot hold) yields one error and is not counted; nothing in it panics.

use super::shard::{Shard, ShardRemainder};
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
    /// The items at `indices` (a 1-d `i64` tensor of indices below [`len`], distinct but
    /// where a sharded loader pads a dataset smaller than its replicas), as one batch.
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
    shard: Option<Shard>,
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
            shard: None,
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

    /// Batches only rank `rank`'s share of each epoch, of `replicas` ranks in all (PyTorch's
    /// `DistributedSampler` under a `DataLoader`): every rank draws the same order (give each
    /// the same [`shuffle`](Self::shuffle) seed) and keeps every `replicas`-th item from its
    /// rank on. Every rank gets the same number of items, so every rank runs the same number
    /// of steps; `remainder` says how an epoch that does not divide evenly is made to.
    ///
    /// ```
    /// use namedtensor::data::{DataLoader, ShardRemainder, TensorDataset};
    /// use namedtensor::{dims, Tensor};
    /// dims! { Items }
    /// let ids = Tensor::<i64, (Items,)>::from_vec((0..10).collect(), [10]);
    /// let data = TensorDataset::new(ids.clone(), ids).unwrap();
    /// // Rank 1 of 3, in order: items 1, 4, 7 and, padding the epoch, item 0.
    /// let mut loader = DataLoader::new(data.clone(), 2).unwrap().shard(1, 3, ShardRemainder::Pad).unwrap();
    /// let items: Vec<i64> = loader.epoch().flat_map(|b| b.unwrap().1.as_dyn().to_vec()).collect();
    /// assert_eq!(items, [1, 4, 7, 0]);
    /// let mut loader = DataLoader::new(data, 2).unwrap().shard(1, 3, ShardRemainder::Drop).unwrap();
    /// assert_eq!(loader.num_batches(), 2); // items 1, 4, 7
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for a rank that is not below `replicas`.
    pub fn shard(
        mut self,
        rank: usize,
        replicas: usize,
        remainder: ShardRemainder,
    ) -> Result<Self> {
        self.shard = Some(Shard::new(rank, replicas, remainder)?);
        Ok(self)
    }

    /// The number of items this loader visits per epoch (its shard's share when sharded).
    pub fn epoch_len(&self) -> usize {
        match &self.shard {
            Some(s) => s.num_samples(self.data.len()),
            None => self.data.len(),
        }
    }

    /// The dataset.
    pub fn dataset(&self) -> &D {
        &self.data
    }

    /// The number of batches per epoch.
    pub fn num_batches(&self) -> usize {
        match self.last {
            LastBatch::Keep => self.epoch_len().div_ceil(self.batch_size),
            LastBatch::Drop => self.epoch_len() / self.batch_size,
        }
    }

    /// The batches of the next epoch, each item a batch or the error of making it.
    ///
    /// In order, each batch's indices are made when it is fetched, so an epoch over any
    /// dataset holds one batch's indices at a time; shuffled, the permutation of all `len`
    /// indices is made first (`len` indices of 8 bytes).
    ///
    /// # Errors
    /// An epoch that cannot start yields one error and nothing else, and is not counted (the
    /// next call draws the same permutation): [`ErrorKind::Overflow`] for a dataset of more
    /// than `i64::MAX` items (indices are `i64`), [`ErrorKind::OutOfMemory`] when the host
    /// cannot hold the shuffled order. A batch whose indices the host cannot hold, or that
    /// [`Dataset::batch`] fails to make, is an error item in its place.
    ///
    /// ```
    /// use namedtensor::data::{DataLoader, Dataset};
    /// use namedtensor::{DynTensor, ErrorKind};
    /// /// Items that are their own index, as many as `usize` counts.
    /// struct Huge;
    /// impl Dataset for Huge {
    ///     type Batch = Vec<i64>;
    ///     fn len(&self) -> usize { usize::MAX }
    ///     fn batch(&self, i: &DynTensor<i64>) -> namedtensor::Result<Vec<i64>> { Ok(i.to_vec()) }
    /// }
    /// let mut loader = DataLoader::new(Huge, 2).unwrap();
    /// let first: Vec<_> = loader.epoch().collect();
    /// assert_eq!(first.len(), 1);
    /// assert_eq!(first[0].as_ref().unwrap_err().kind(), ErrorKind::Overflow);
    /// ```
    pub fn epoch(&mut self) -> impl Iterator<Item = Result<D::Batch>> + '_ {
        let n = self.epoch_len();
        let batches = self.num_batches();
        let (failed, order, batches) = match self.order(self.data.len()) {
            Ok(order) => {
                self.epochs += 1;
                (None, order, batches)
            }
            Err(e) => (Some(e), None, 0),
        };
        let (data, size) = (&self.data, self.batch_size);
        failed
            .map(Err)
            .into_iter()
            .chain((0..batches).map(move |b| {
                // `b` is below the number of batches, so the batch starts inside the dataset.
                let start = b * size;
                let len = size.min(n - start);
                let idx = match &order {
                    Some(perm) => perm.try_narrow(0, start as isize, len)?,
                    None => index_range(start, len)?,
                };
                data.batch(&idx)
            }))
    }

    /// The epoch's order of `0..n` (none: in order and unsharded), its shard's items when
    /// sharded, or the error that keeps the epoch from starting.
    fn order(&self, n: usize) -> Result<Option<DynTensor<i64>>> {
        if i64::try_from(n).is_err() {
            return Err(Error::new(
                ErrorKind::Overflow,
                "DataLoader",
                format!(
                    "the dataset has {n} items, more than i64 indices can address (at most \
                     i64::MAX = {})",
                    i64::MAX
                ),
            ));
        }
        let perm = match self.seed {
            Some(seed) => Some(
                DynTensor::try_randperm(n, derive_seed(seed, self.epochs)).map_err(|e| {
                    Error::new(
                        e.kind(),
                        "DataLoader",
                        format!("shuffling {n} items: {}", e.message()),
                    )
                })?,
            ),
            None => None,
        };
        let Some(shard) = &self.shard else {
            return Ok(perm);
        };
        let order = match &perm {
            Some(p) => p.try_to_vec()?,
            None => {
                crate::storage::reserve_buffer::<i64>("DataLoader", n)?;
                (0..n as i64).collect()
            }
        };
        let mine = shard.take(&order);
        let len = mine.len();
        DynTensor::try_from_vec(mine, &[len]).map(Some)
    }
}

/// The indices `start..start + len` of a batch in order, allocated fallibly.
/// `start + len` is at most the dataset's length, which fits `i64` (`DataLoader::order`).
fn index_range(start: usize, len: usize) -> Result<DynTensor<i64>> {
    crate::storage::reserve_buffer::<i64>("DataLoader", len)?;
    let mut data = crate::storage::take_buffer(len);
    data.extend(start as i64..(start + len) as i64);
    DynTensor::from_contiguous_vec(data, &[len])
}
