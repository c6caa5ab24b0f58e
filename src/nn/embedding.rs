//! [`Embedding`]: a lookup table from indices `(…)` to vectors `(…, D)`.

use super::module::{Module, Visitor};
use crate::dtype::Float;
use crate::error::{Error, ErrorKind, Result};
use crate::named::{Dim, DimTuple, ReplaceDim, Shape};
use crate::named_tensor::Tensor;
use crate::random::next_seed;
use crate::tensor::{DynTensor, or_panic};

/// The result of an `Embedding<Vocab, D>` on indices of dims `I`: `I`, then `D`.
pub type Embedded<E, Vocab, D, I> = Tensor<E, <(Vocab, D) as ReplaceDim<Vocab, I>>::Out>;

/// A table of `Vocab` vectors of size `D`; indices of any dims `I` become `(I…, D)`.
/// PyTorch's `nn.Embedding`: parameter `weight` `(Vocab, D)`, standard normal. An index out
/// of range is an error naming it; its gradient adds up repeated indices.
///
/// ```
/// use namedtensor::nn::Embedding;
/// use namedtensor::{dims, Tensor};
/// dims! { Vocab, Model, Batch, Seq }
/// let emb = Embedding::<Vocab, Model>::new(100, 16);
/// let ids = Tensor::<i64, (Batch, Seq)>::from_vec(vec![1, 5, 99, 0], [2, 2]);
/// let x = emb.forward(&ids);                  // (Batch, Seq, Model)
/// assert_eq!(x.names(), ["Batch", "Seq", "Model"]);
/// assert!(emb.try_forward(&Tensor::<i64, (Seq,)>::from_vec(vec![100], [1])).is_err());
/// ```
pub struct Embedding<Vocab: Dim, D: Dim, E: Float = f32> {
    /// `(Vocab, D)`.
    pub weight: Tensor<E, (Vocab, D)>,
}

impl<Vocab: Dim, D: Dim, E: Float> Embedding<Vocab, D, E> {
    /// `vocab` vectors of size `size`, standard normal, drawn from the process's generator
    /// ([`manual_seed`](crate::random::manual_seed)); the table requires grad. Panics where
    /// [`Embedding::try_new`] fails.
    #[track_caller]
    pub fn new(vocab: usize, size: usize) -> Self
    where
        (Vocab, D): Shape,
    {
        or_panic(Embedding::try_new(vocab, size))
    }

    /// [`Embedding::new`], or an error when the table's element count overflows or the host
    /// cannot hold it.
    pub fn try_new(vocab: usize, size: usize) -> Result<Self>
    where
        (Vocab, D): Shape,
    {
        Embedding::try_seeded(vocab, size, next_seed())
    }

    /// [`Embedding::new`] drawn from `seed` instead of the process's generator.
    #[track_caller]
    pub fn seeded(vocab: usize, size: usize, seed: u64) -> Self
    where
        (Vocab, D): Shape,
    {
        or_panic(Embedding::try_seeded(vocab, size, seed))
    }

    /// [`Embedding::seeded`], or an error as [`Embedding::try_new`].
    pub fn try_seeded(vocab: usize, size: usize, seed: u64) -> Result<Self>
    where
        (Vocab, D): Shape,
    {
        let weight = DynTensor::try_randn(&[vocab, size], seed)?.try_refine_names()?;
        Ok(Embedding::from_weight(weight))
    }

    /// A table with the given values (detached, then marked as a leaf that requires grad).
    pub fn from_weight(weight: Tensor<E, (Vocab, D)>) -> Self {
        Embedding {
            weight: or_panic(weight.detach().try_requires_grad_(true)),
        }
    }

    /// The vectors at `ids`. Panics where [`Embedding::try_forward`] fails.
    #[track_caller]
    pub fn forward<I: DimTuple>(&self, ids: &Tensor<i64, I>) -> Embedded<E, Vocab, D, I>
    where
        (Vocab, D): ReplaceDim<Vocab, I>,
    {
        or_panic(self.try_forward(ids))
    }

    /// [`Embedding::forward`], or an error.
    ///
    /// # Errors
    /// [`ErrorKind::IndexOutOfRange`] naming the layer, the first id outside `0..vocab` and
    /// the vocabulary size; the errors of `index_select` otherwise (e.g. an output the host
    /// cannot hold).
    ///
    /// ```
    /// use namedtensor::nn::Embedding;
    /// use namedtensor::{dims, Tensor};
    /// dims! { Vocab, Model, Seq }
    /// let emb = Embedding::<Vocab, Model>::new(5, 2);
    /// let err = emb.try_forward(&Tensor::<i64, (Seq,)>::from_vec(vec![1, 5], [2])).unwrap_err();
    /// assert!(err.to_string().starts_with("Embedding: id 5 is out of range for the 5"), "{err}");
    /// ```
    pub fn try_forward<I: DimTuple>(&self, ids: &Tensor<i64, I>) -> Result<Embedded<E, Vocab, D, I>>
    where
        (Vocab, D): ReplaceDim<Vocab, I>,
    {
        // `index_select` checks every id before it copies anything; only its error is
        // rephrased, so the ids are read a second time only when one is out of range.
        self.weight
            .try_index_select(Vocab::default(), ids)
            .map_err(|e| match e.kind() {
                ErrorKind::IndexOutOfRange => self.id_error(ids.as_dyn()).unwrap_or(e),
                _ => e,
            })
    }

    /// The error for the first id of `ids` outside the vocabulary, if there is one.
    fn id_error(&self, ids: &DynTensor<i64>) -> Option<Error> {
        let vocab = self.weight.shape()[0];
        let valid = 0..i64::try_from(vocab).unwrap_or(i64::MAX);
        let bad = ids
            .try_to_vec()
            .ok()?
            .into_iter()
            .find(|id| !valid.contains(id))?;
        Some(Error::new(
            ErrorKind::IndexOutOfRange,
            "Embedding",
            format!(
                "id {bad} is out of range for the {vocab} entries of the vocabulary `{}` (valid \
                 ids are 0..{vocab})",
                Vocab::NAME
            ),
        ))
    }
}

impl<Vocab: Dim, D: Dim, E: Float> Module<E> for Embedding<Vocab, D, E> {
    fn visit(&self, v: &mut Visitor<'_, E>) {
        v.param("weight", &self.weight);
    }
}
