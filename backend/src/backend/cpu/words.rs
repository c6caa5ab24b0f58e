//! The kernels that move elements without looking at them (gathers, strided copies between
//! equal types, fills), instantiated here once per element *size*: every type of one size is
//! moved as the unsigned integer of that size ([`Word`]).
//!
//! # Why
//! A generic function is compiled in the crate that instantiates it, at that crate's
//! opt-level (see `instances.rs`). These copies run on every `contiguous()`, transposed
//! matmul operand and parameter update of a training step; generic, they were compiled into a
//! user's debug build unoptimised. Instantiated per dtype they would cost ten copies of each
//! kernel's code; per size they cost four.
//!
//! # Invariants
//! - [`as_words`], [`as_words_mut`], [`into_elements`] and [`to_word`] only reinterpret an
//!   [`Element`] as the unsigned integer of its size and alignment (asserted), or back;
//! - values are only moved, never made, so a `bool` read back from words holds 0 or 1.

use super::copy::{copy_same, fill_strided, full, gather_to_vec};
use super::host_buffer::HostBuffer;
use crate::dtype::Element;
use crate::layout::{Layout, Window2d};

/// An unsigned integer that stands for the elements of its size.
pub trait Word: Copy + Send + Sync + 'static {
    /// The elements of `layout` over `src`, in row-major order.
    fn gather(src: &[Self], layout: &Layout) -> HostBuffer<Self>;
    /// Writes `value` at every element of `layout` over `dst`.
    fn fill(dst: &mut [Self], layout: &Layout, value: Self);
    /// Copies the elements of `src_layout` over `src` to `dst_layout` over `dst` (same sizes).
    fn copy(dst: &mut [Self], dst_layout: &Layout, src: &[Self], src_layout: &Layout);
    /// `len` copies of `value`.
    fn full(len: usize, value: Self) -> HostBuffer<Self>;
    /// The windows of `window` over `layout` (see [`super::window::unfold2d`]).
    fn unfold2d(src: &[Self], layout: &Layout, window: &Window2d, pad: Self) -> HostBuffer<Self>;
}

macro_rules! words {
    ($($t:ty),*) => {$(
        impl Word for $t {
            fn gather(src: &[$t], layout: &Layout) -> HostBuffer<$t> {
                gather_to_vec(src, layout)
            }
            fn fill(dst: &mut [$t], layout: &Layout, value: $t) {
                fill_strided(dst, layout, value)
            }
            fn copy(dst: &mut [$t], dst_layout: &Layout, src: &[$t], src_layout: &Layout) {
                copy_same(dst, dst_layout, src, src_layout)
            }
            fn full(len: usize, value: $t) -> HostBuffer<$t> {
                full(len, value)
            }
            fn unfold2d(src: &[$t], layout: &Layout, window: &Window2d, pad: $t) -> HostBuffer<$t> {
                super::window::unfold2d(src, layout, window, pad)
            }
        }
    )*};
}
words!(u8, u16, u32, u64);

/// Runs `$body` with the type alias `$w` bound to the [`Word`] of `$e`'s size. The arms are
/// chosen by `const` conditions, so an instance compiles only its own.
macro_rules! by_size {
    ($e:ty, $w:ident => $body:expr) => {
        if const { size_of::<$e>() == 1 } {
            type $w = u8;
            $body
        } else if const { size_of::<$e>() == 2 } {
            type $w = u16;
            $body
        } else if const { size_of::<$e>() == 4 } {
            type $w = u32;
            $body
        } else if const { size_of::<$e>() == 8 } {
            type $w = u64;
            $body
        } else {
            unreachable!("every element type is 1, 2, 4 or 8 bytes")
        }
    };
}

fn assert_same_layout<A, B>() {
    assert!(size_of::<A>() == size_of::<B>() && align_of::<A>() == align_of::<B>());
}

/// `s` seen as words.
fn as_words<E: Element, W: Word>(s: &[E]) -> &[W] {
    assert_same_layout::<E, W>();
    // SAFETY: same size and alignment (asserted); every bit pattern is a valid `W`.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<W>(), s.len()) }
}

/// `s` seen as mutable words.
fn as_words_mut<E: Element, W: Word>(s: &mut [E]) -> &mut [W] {
    assert_same_layout::<E, W>();
    // SAFETY: same size and alignment (asserted); only words read from elements of `E` are
    // written back (see the invariants), so every element stays a valid `E`.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<W>(), s.len()) }
}

/// `value` as a word.
fn to_word<E: Element, W: Word>(value: E) -> W {
    assert_same_layout::<E, W>();
    // SAFETY: same size (asserted); every bit pattern is a valid `W`.
    unsafe { std::mem::transmute_copy(&value) }
}

/// Words moved from elements of `E`, as a vector of `E` again.
fn into_elements<W: Word, E: Element>(v: HostBuffer<W>) -> HostBuffer<E> {
    assert_same_layout::<E, W>();
    // SAFETY: same size and alignment (asserted); the words were moved from elements of `E`
    // (see the invariants), so each is a valid `E`.
    unsafe { v.retype::<E>() }
}

/// The elements of `layout` over `src`, in row-major order.
pub fn gather<E: Element>(src: &[E], layout: &Layout) -> HostBuffer<E> {
    by_size!(E, W => into_elements(W::gather(as_words::<E, W>(src), layout)))
}

/// Writes `value` at every element of `layout` over `dst`.
pub fn fill<E: Element>(dst: &mut [E], layout: &Layout, value: E) {
    by_size!(E, W => W::fill(as_words_mut::<E, W>(dst), layout, to_word(value)))
}

/// Copies the elements of `src_layout` over `src` to `dst_layout` over `dst` (same sizes).
pub fn copy<E: Element>(dst: &mut [E], dst_layout: &Layout, src: &[E], src_layout: &Layout) {
    by_size!(E, W => W::copy(as_words_mut::<E, W>(dst), dst_layout, as_words(src), src_layout))
}

/// The windows of `window` over `layout` (see [`super::window::unfold2d`]).
pub fn unfold2d<E: Element>(
    src: &[E],
    layout: &Layout,
    window: &Window2d,
    pad: E,
) -> HostBuffer<E> {
    by_size!(E, W => into_elements(W::unfold2d(as_words::<E, W>(src), layout, window, to_word(pad))))
}

/// `len` copies of `value`.
pub fn full_of<E: Element>(len: usize, value: E) -> HostBuffer<E> {
    by_size!(E, W => into_elements(W::full(len, to_word::<E, W>(value))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    /// Every size moves its elements bit for bit, through strided and transposed views.
    #[test]
    fn words_move_elements_of_every_size() {
        let l = Layout::contiguous(&[3, 4])
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        let src: Vec<bf16> = (0..12).map(|i| bf16::from_f32(i as f32 - 5.5)).collect();
        let want: Vec<bf16> = [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
            .map(|i| src[i])
            .to_vec();
        assert_eq!(gather(&src, &l), want);
        let b: Vec<bool> = (0..12).map(|i| i % 3 == 0).collect();
        assert_eq!(
            gather(&b, &l),
            [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11].map(|i| b[i])
        );
        let x: Vec<i64> = (0..12).map(|i| i * 1_000_000_007).collect();
        let mut y = vec![0i64; 12];
        copy(&mut y, &Layout::contiguous(&[4, 3]).unwrap(), &x, &l);
        assert_eq!(y, [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11].map(|i| x[i]));
        let mut f = vec![1.5f32; 12];
        fill(&mut f, &l.narrow(0, 1, 2).unwrap(), -0.0);
        let neg: Vec<bool> = f.iter().map(|v| v.is_sign_negative()).collect();
        assert_eq!(
            neg,
            (0..12)
                .map(|i| i % 4 == 1 || i % 4 == 2)
                .collect::<Vec<_>>()
        );
        assert_eq!(full_of(5, i8::MIN), vec![i8::MIN; 5]);
    }
}
