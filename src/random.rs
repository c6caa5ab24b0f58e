//! The process's random generator, PyTorch's model: [`manual_seed`] seeds it, and layers
//! built without an explicit seed (`Linear::new`, `Embedding::new`, `Dropout::new`, …)
//! each draw a fresh seed from it with [`next_seed`]. Two layers built one after the other
//! so start different, and a program that calls `manual_seed(s)` first builds the same
//! model in every run and on every machine.
//!
//! Invariants:
//! - The generator is a counter over [`derive_seed`]: after `manual_seed(s)`, the `i`-th
//!   [`next_seed`] is `derive_seed(s, i)`, whatever the platform or thread count.
//! - It is one per process, behind a lock: draws from several threads each get a distinct
//!   seed, in the order the threads take the lock. A program whose threads build layers
//!   concurrently and needs the same model each run passes explicit seeds (the `seeded`
//!   constructors) instead.
//! - Before any `manual_seed`, the seed is [`DEFAULT_SEED`], PyTorch's default, so an
//!   unseeded program is reproducible too.
//!
//! The examples below that seed the generator are `standalone_crate` doctests: merged
//! doctests share one process, whose other examples draw from the same generator.

use std::sync::Mutex;

/// The seed of a process that never called [`manual_seed`] (PyTorch's default seed).
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// The seed the generator was last set to, and how many seeds were drawn since.
struct Generator {
    seed: u64,
    drawn: u64,
}

static GENERATOR: Mutex<Generator> = Mutex::new(Generator {
    seed: DEFAULT_SEED,
    drawn: 0,
});

/// Runs `f` on the generator. A panic while the lock was held cannot leave the two plain
/// integers half-written, so a poisoned lock is used as it is.
fn with_generator<T>(f: impl FnOnce(&mut Generator) -> T) -> T {
    let mut generator = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut generator)
}

/// Seeds the process's generator (`torch.manual_seed`): the layers built after it without
/// an explicit seed are the same in every run.
///
/// ```standalone_crate
/// use namedtensor::nn::Linear;
/// namedtensor::dims! { In, Out }
/// namedtensor::random::manual_seed(42);
/// let a = Linear::<In, Out>::new(3, 2);
/// let b = Linear::<In, Out>::new(3, 2);
/// assert_ne!(a.weight.to_vec(), b.weight.to_vec()); // each layer draws its own seed
/// namedtensor::random::manual_seed(42);
/// assert_eq!(Linear::<In, Out>::new(3, 2).weight.to_vec(), a.weight.to_vec());
/// ```
pub fn manual_seed(seed: u64) {
    with_generator(|g| {
        g.seed = seed;
        g.drawn = 0;
    });
}

/// The seed the generator was last set to (`torch.initial_seed`): [`DEFAULT_SEED`] before
/// any [`manual_seed`].
///
/// ```standalone_crate
/// namedtensor::random::manual_seed(7);
/// assert_eq!(namedtensor::random::initial_seed(), 7);
/// ```
pub fn initial_seed() -> u64 {
    with_generator(|g| g.seed)
}

/// A fresh seed from the process's generator: the next in the sequence [`manual_seed`]
/// started. What a layer built without an explicit seed is drawn from.
///
/// ```standalone_crate
/// use namedtensor::random::{derive_seed, manual_seed, next_seed};
/// manual_seed(3);
/// assert_eq!((next_seed(), next_seed()), (derive_seed(3, 0), derive_seed(3, 1)));
/// ```
pub fn next_seed() -> u64 {
    with_generator(|g| {
        let seed = derive_seed(g.seed, g.drawn);
        g.drawn = g.drawn.wrapping_add(1);
        seed
    })
}

/// The `i`-th seed derived from `seed` (SplitMix64's finaliser): a layer with several
/// parameters gives each its own stream, and the generator its draws.
///
/// ```
/// use namedtensor::random::derive_seed;
/// assert_ne!(derive_seed(7, 0), derive_seed(7, 1));
/// assert_eq!(derive_seed(7, 1), derive_seed(7, 1));
/// ```
pub fn derive_seed(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(i.wrapping_add(1)));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
