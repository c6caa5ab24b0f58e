//! Feeding a model: a [`Dataset`] is anything that can hand out a batch of items by index,
//! and a [`DataLoader`] walks it in batches, shuffled with a seed (a new order every epoch,
//! the same on every machine), keeping or dropping a last, smaller batch.
//! [`TensorDataset`] serves named tensors whose leading dim counts the items.

mod loader;
mod shard;
mod tensor_dataset;

pub use loader::{DataLoader, Dataset, LastBatch};
pub use shard::ShardRemainder;
pub use tensor_dataset::TensorDataset;
