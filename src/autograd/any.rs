//! [`AnyTensor`]: a gradient whose element type is known at run time only.
//!
//! One graph may hold tensors of several float types (`to_dtype`, promotion), so the engine
//! moves gradients between nodes type-erased; each node's backward function knows its own
//! types and turns them back into `DynTensor<E>` with [`AnyTensor::into_typed`].

use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::DynTensor;
use std::any::Any;

/// What the engine does with a gradient without knowing its element type.
trait Erased: Any + Send + Sync {
    fn dtype(&self) -> DType;
    fn shape(&self) -> &[usize];
    fn add(&self, other: &AnyTensor) -> Result<AnyTensor>;
    fn handle(&self) -> AnyTensor;
    fn detached(&self) -> AnyTensor;
    fn owned(&self) -> Result<AnyTensor>;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<E: Element> Erased for DynTensor<E> {
    fn dtype(&self) -> DType {
        E::DTYPE
    }
    fn shape(&self) -> &[usize] {
        DynTensor::shape(self)
    }
    fn add(&self, other: &AnyTensor) -> Result<AnyTensor> {
        let other = other.handle().into_typed::<E>("accumulate the gradient")?;
        Ok(AnyTensor::new(crate::ops::binary::<E, E, E>(
            "accumulate the gradient",
            crate::backend::op::BinaryOp::Add,
            self,
            &other,
        )?))
    }
    fn handle(&self) -> AnyTensor {
        AnyTensor::new(self.shallow_clone())
    }
    fn detached(&self) -> AnyTensor {
        AnyTensor::new(self.detach())
    }
    fn owned(&self) -> Result<AnyTensor> {
        let sole = self.storage().handle_count() == 1
            && self.is_contiguous()
            && self.numel() == self.storage().len();
        if sole {
            Ok(self.handle())
        } else {
            Ok(AnyTensor::new(self.deep_copy("grad")?))
        }
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A `DynTensor<E>` of some element type `E`.
pub(crate) struct AnyTensor(Box<dyn Erased>);

impl AnyTensor {
    pub(crate) fn new<E: Element>(t: DynTensor<E>) -> AnyTensor {
        AnyTensor(Box::new(t))
    }

    pub(crate) fn dtype(&self) -> DType {
        self.0.dtype()
    }

    pub(crate) fn shape(&self) -> &[usize] {
        self.0.shape()
    }

    /// `self + other` (same type and shape); recorded when grad mode is on.
    pub(crate) fn add(&self, other: &AnyTensor) -> Result<AnyTensor> {
        self.0.add(other)
    }

    /// Another handle to the same tensor (graph membership included).
    pub(crate) fn handle(&self) -> AnyTensor {
        self.0.handle()
    }

    /// The same elements, outside any graph.
    pub(crate) fn detached(&self) -> AnyTensor {
        self.0.detached()
    }

    /// The tensor itself if it is the only handle on a contiguous storage of its own size,
    /// else a copy: what a gradient slot stores, so that no two slots (and no tensor the user
    /// holds) share elements, and in-place updates of one gradient never reach another.
    pub(crate) fn owned(&self) -> Result<AnyTensor> {
        self.0.owned()
    }

    /// The tensor as `DynTensor<E>`; an error naming `op` if it holds another type.
    pub(crate) fn into_typed<E: Element>(self, op: &'static str) -> Result<DynTensor<E>> {
        let found = self.dtype();
        self.0
            .into_any()
            .downcast::<DynTensor<E>>()
            .map(|b| *b)
            .map_err(|_| {
                Error::new(
                    ErrorKind::DTypeMismatch,
                    op,
                    format!("expected a gradient of type {}, got {found}", E::DTYPE),
                )
            })
    }
}

/// `value` as type `B`, which the caller has checked is the same type as `A`.
pub(crate) fn same_type<A: 'static, B: 'static>(value: A) -> B {
    let mut slot = Some(value);
    (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<B>>()
        .and_then(Option::take)
        .expect("same_type: the types differ")
}
