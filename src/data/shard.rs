//! Sharding an epoch across the ranks of a data-parallel run (PyTorch's
//! `DistributedSampler`): every rank draws the same epoch order (same seed, same epoch
//! number) and keeps every `replicas`-th item of it, starting at its rank.
//!
//! # Invariants
//! - Every rank keeps the same number of items, `num_samples`, so that every rank runs the
//!   same number of steps (a rank with one step more would wait forever in its collective).
//! - [`ShardRemainder::Pad`] (PyTorch's `drop_last=False`): `ceil(len / replicas)` each; the
//!   order is padded at its end with its own first items (repeated if the dataset is smaller
//!   than the padding), so every item is kept by some rank and a few by two.
//! - [`ShardRemainder::Drop`] (`drop_last=True`): `floor(len / replicas)` each; the last
//!   `len % replicas` items of the order are left out, so no item is kept twice.

use crate::error::{Error, ErrorKind, Result};

/// What happens to the items of an epoch that do not divide evenly among the replicas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardRemainder {
    /// Pad the epoch with its first items so every rank gets `ceil(len / replicas)`.
    #[default]
    Pad,
    /// Leave out the last `len % replicas` items, so every rank gets `floor(len / replicas)`.
    Drop,
}

/// One rank's share of every epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shard {
    pub(super) rank: usize,
    pub(super) replicas: usize,
    pub(super) remainder: ShardRemainder,
}

impl Shard {
    /// Rank `rank` of `replicas`, or an error naming what is wrong.
    pub(super) fn new(rank: usize, replicas: usize, remainder: ShardRemainder) -> Result<Shard> {
        if rank >= replicas {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "DataLoader::shard",
                format!("rank {rank} is not below the number of replicas, {replicas}"),
            ));
        }
        Ok(Shard {
            rank,
            replicas,
            remainder,
        })
    }

    /// The items each rank keeps of an epoch of `len`.
    ///
    /// ```text
    /// len 10, 3 replicas: Pad 4 each (12 with 2 repeated), Drop 3 each (9, 1 left out)
    /// ```
    pub(super) fn num_samples(&self, len: usize) -> usize {
        match self.remainder {
            ShardRemainder::Pad => len.div_ceil(self.replicas),
            ShardRemainder::Drop => len / self.replicas,
        }
    }

    /// This rank's items of the epoch order `order`, in order.
    pub(super) fn take(&self, order: &[i64]) -> Vec<i64> {
        let n = self.num_samples(order.len());
        let total = n * self.replicas;
        (0..n)
            .map(|i| {
                // Past the end, the padding repeats the order from its start.
                let at = i * self.replicas + self.rank;
                debug_assert!(at < total);
                order[at % order.len()]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(len: usize, replicas: usize, remainder: ShardRemainder) -> Vec<Vec<i64>> {
        let order: Vec<i64> = (0..len as i64).collect();
        (0..replicas)
            .map(|r| Shard::new(r, replicas, remainder).unwrap().take(&order))
            .collect()
    }

    /// Worked out from PyTorch's `DistributedSampler(shuffle=False)` rule by hand.
    #[test]
    fn shards_follow_pytorchs_distributed_sampler() {
        use ShardRemainder::{Drop, Pad};
        assert_eq!(
            shards(10, 3, Pad),
            [vec![0, 3, 6, 9], vec![1, 4, 7, 0], vec![2, 5, 8, 1]]
        );
        assert_eq!(
            shards(10, 3, Drop),
            [vec![0, 3, 6], vec![1, 4, 7], vec![2, 5, 8]]
        );
        assert_eq!(shards(6, 2, Pad), [vec![0, 2, 4], vec![1, 3, 5]]);
        assert_eq!(shards(6, 2, Drop), [vec![0, 2, 4], vec![1, 3, 5]]);
        // Fewer items than replicas: the padding repeats the order.
        assert_eq!(
            shards(2, 5, Pad),
            [vec![0], vec![1], vec![0], vec![1], vec![0]]
        );
        assert_eq!(shards(2, 5, Drop), vec![Vec::<i64>::new(); 5]);
        assert_eq!(shards(1, 1, Pad), [vec![0]]);
    }

    #[test]
    fn ranks_outside_the_replicas_are_errors() {
        let e = Shard::new(3, 3, ShardRemainder::Pad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            e.to_string(),
            "DataLoader::shard: rank 3 is not below the number of replicas, 3"
        );
        assert!(Shard::new(0, 0, ShardRemainder::Drop).is_err());
    }
}
