//! [`SaveTensor`]: a tensor of any element type, as the file writers take it, so that one
//! file can hold `f32` weights beside `i64` indices (`&DynTensor<E>` for every `E` coerces to
//! `&dyn SaveTensor`).

use super::serialize::encode;
use crate::dtype::{DType, Element};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::DynTensor;
use half::{bf16, f16};
use std::any::Any;

/// A tensor whose element type is known at run time only: what [`save_tensors`](crate::save_tensors)
/// and [`save_npz`](crate::save_npz) write. Implemented for `DynTensor<E>` of every element
/// type (sealed); pass `&tensor` where a `&dyn SaveTensor` is expected.
///
/// ```
/// use namedtensor::{DynTensor, SaveTensor, DType};
/// let ids = DynTensor::<i16>::from_vec(vec![1, -2], &[2]);
/// let t: &dyn SaveTensor = &ids;
/// assert_eq!((t.dtype(), t.shape()), (DType::I16, &[2][..]));
/// assert_eq!(&*t.to_le_bytes(), &[1, 0, 0xfe, 0xff]);
/// ```
pub trait SaveTensor: sealed::Sealed {
    /// The element type.
    fn dtype(&self) -> DType;
    /// The sizes.
    fn shape(&self) -> &[usize];
    /// The elements in row-major order as little-endian bytes (`bool`: one byte, 0 or 1). On
    /// a little-endian machine these are the bytes of one row-major copy of the elements, not
    /// a second copy of them.
    fn to_le_bytes(&self) -> LeBytes;
}

mod sealed {
    pub trait Sealed {}
    impl<E: crate::dtype::Element> Sealed for crate::tensor::DynTensor<E> {}
}

/// Little-endian element bytes ([`SaveTensor::to_le_bytes`]); dereferences to `[u8]`.
pub struct LeBytes(Box<dyn AsRef<[u8]> + Send + Sync>);

impl std::ops::Deref for LeBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl std::fmt::Debug for LeBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LeBytes({} bytes)", self.len())
    }
}

/// Elements whose in-memory bytes are their little-endian bytes (on a little-endian machine).
struct Native<T>(Vec<T>);

impl<T: bytemuck::Pod> AsRef<[u8]> for Native<T> {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}

impl<E: Element> SaveTensor for DynTensor<E> {
    fn dtype(&self) -> DType {
        E::DTYPE
    }

    fn shape(&self) -> &[usize] {
        DynTensor::shape(self)
    }

    fn to_le_bytes(&self) -> LeBytes {
        let values = self.to_vec();
        if cfg!(target_endian = "big") || E::DTYPE == DType::Bool {
            return LeBytes(Box::new(encode(values)));
        }
        let values: Box<dyn Any> = Box::new(values);
        macro_rules! native {
            ($t:ty) => {
                LeBytes(Box::new(Native(
                    *values
                        .downcast::<Vec<$t>>()
                        .expect("the dtype names the type"),
                )))
            };
        }
        match E::DTYPE {
            DType::Bool => unreachable!("encoded above"),
            DType::U8 => native!(u8),
            DType::I8 => native!(i8),
            DType::I16 => native!(i16),
            DType::I32 => native!(i32),
            DType::I64 => native!(i64),
            DType::F16 => native!(f16),
            DType::BF16 => native!(bf16),
            DType::F32 => native!(f32),
            DType::F64 => native!(f64),
        }
    }
}

/// The names of `items` (what a writer is about to put in one file), sorted; an error of `op`
/// naming the first name given to two of them (`things`: "tensors", "arrays").
pub(super) fn distinct_names<'a>(
    op: &'static str,
    items: &[(&'a str, &dyn SaveTensor)],
    things: &str,
) -> Result<Vec<&'a str>> {
    let mut names: Vec<&str> = items.iter().map(|item| item.0).collect();
    names.sort_unstable();
    match names.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            format!("the name {:?} is given to two {things}", w[0]),
        )),
        None => Ok(names),
    }
}
