//! The CPU backend's buffer: a growable array whose allocation may be aligned beyond its
//! element type.
//!
//! Invariants:
//! - `ptr` points at an allocation of the global allocator of exactly
//!   `cap * size_of::<E>()` bytes made with alignment `align` (a power of two, at least
//!   `align_of::<E>()`), or is dangling (well aligned for `E`) when that size is 0;
//! - the first `len <= cap` elements are initialised;
//! - the buffer owns the allocation: nothing else frees it or writes it.
//!
//! Why not `Vec<E>`: a `Vec` frees its allocation with `align_of::<E>()`, so it cannot hold
//! memory allocated with a larger alignment. The buffer pool ([`super::pool`]) hands out large
//! buffers aligned to a cache line, as PyTorch's allocator does: glibc gives large blocks an
//! address 16 bytes past a 64-byte line, which makes every 64-byte load of a streaming kernel
//! straddle two lines (BENCHMARKS.md, "Why the last-dim sum trails"). A `Vec` handed in by a
//! user is adopted as it is (with its own alignment), without a copy.

use std::alloc::Layout as AllocLayout;
use std::fmt;
use std::mem::{ManuallyDrop, MaybeUninit, align_of, needs_drop, size_of};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// A host array of `E` whose allocation may be over-aligned (see the module docs).
///
/// ```
/// use namedtensor::storage::HostBuffer;
/// let mut b = HostBuffer::with_capacity_aligned(3, 64);
/// b.extend_from_slice(&[1.0f32, 2.0]);
/// b.push(3.0);
/// assert_eq!(&b[..], &[1.0, 2.0, 3.0]);
/// assert_eq!(b.as_ptr() as usize % 64, 0);
/// assert_eq!(b.into_vec(), vec![1.0, 2.0, 3.0]);
/// ```
pub struct HostBuffer<E> {
    ptr: NonNull<E>,
    len: usize,
    cap: usize,
    align: usize,
}

// SAFETY: the buffer owns its elements (invariants), like a `Vec<E>`.
unsafe impl<E: Send> Send for HostBuffer<E> {}
// SAFETY: shared access only reads the elements, like `&Vec<E>`.
unsafe impl<E: Sync> Sync for HostBuffer<E> {}

impl<E> HostBuffer<E> {
    /// An empty buffer that has allocated nothing.
    ///
    /// ```
    /// let b = namedtensor::storage::HostBuffer::<u8>::new();
    /// assert!(b.is_empty() && b.capacity() == 0);
    /// ```
    pub const fn new() -> Self {
        HostBuffer {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
            align: align_of::<E>(),
        }
    }

    /// The allocation layout for `cap` elements at `align`, if it is a valid one.
    fn alloc_layout(cap: usize, align: usize) -> Option<AllocLayout> {
        let bytes = cap.checked_mul(size_of::<E>())?;
        AllocLayout::from_size_align(bytes, align.max(align_of::<E>())).ok()
    }

    /// An empty buffer with room for exactly `cap` elements, its allocation aligned to
    /// `align` bytes (a power of two; at least `E`'s own alignment is used), or `None` where
    /// the allocator refuses (or the size overflows).
    ///
    /// ```
    /// use namedtensor::storage::HostBuffer;
    /// assert!(HostBuffer::<f64>::try_with_capacity_aligned(usize::MAX / 4, 64).is_none());
    /// assert_eq!(HostBuffer::<f64>::try_with_capacity_aligned(5, 64).unwrap().capacity(), 5);
    /// ```
    pub fn try_with_capacity_aligned(cap: usize, align: usize) -> Option<Self> {
        let layout = Self::alloc_layout(cap, align).filter(|l| l.size() <= isize::MAX as usize)?;
        if layout.size() == 0 {
            return Some(HostBuffer { cap, ..Self::new() });
        }
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc(layout) })?;
        Some(HostBuffer {
            ptr: ptr.cast(),
            len: 0,
            cap,
            align: layout.align(),
        })
    }

    /// [`HostBuffer::try_with_capacity_aligned`], aborting like `Vec` where the allocator
    /// refuses.
    ///
    /// ```
    /// let b = namedtensor::storage::HostBuffer::<u16>::with_capacity_aligned(100, 64);
    /// assert_eq!((b.len(), b.capacity()), (0, 100));
    /// ```
    pub fn with_capacity_aligned(cap: usize, align: usize) -> Self {
        match Self::try_with_capacity_aligned(cap, align) {
            Some(b) => b,
            None => match Self::alloc_layout(cap, align) {
                Some(layout) if layout.size() <= isize::MAX as usize => {
                    std::alloc::handle_alloc_error(layout)
                }
                _ => panic!(
                    "capacity overflow: {cap} elements of {} bytes",
                    size_of::<E>()
                ),
            },
        }
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of elements the allocation has room for.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The alignment, in bytes, the allocation was made with.
    ///
    /// ```
    /// use namedtensor::storage::HostBuffer;
    /// assert_eq!(HostBuffer::from(vec![1u32]).alignment(), 4);
    /// ```
    #[inline]
    pub fn alignment(&self) -> usize {
        self.align
    }

    /// The elements as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[E] {
        // SAFETY: `ptr` is valid for `len` initialised elements (invariants).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements as a mutable slice.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [E] {
        // SAFETY: `ptr` is valid for `len` initialised elements, owned by `self` (invariants).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The slots after the elements, up to the capacity.
    #[inline]
    pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<E>] {
        // SAFETY: the allocation has room for `cap` elements; slots `len..cap` are owned by
        // `self` and may be uninitialised, which `MaybeUninit` allows.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr().add(self.len).cast::<MaybeUninit<E>>(),
                self.cap - self.len,
            )
        }
    }

    /// Sets the number of elements.
    ///
    /// # Safety
    /// `len <= capacity()`, and the first `len` elements are initialised.
    #[inline]
    pub unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.cap);
        self.len = len;
    }

    /// Makes room for at least `additional` more elements, keeping the alignment.
    pub fn reserve(&mut self, additional: usize) {
        let need = self.len.checked_add(additional).expect("capacity overflow");
        if need <= self.cap {
            return;
        }
        let mut grown = Self::with_capacity_aligned(need.max(2 * self.cap).max(4), self.align);
        // SAFETY: the new allocation has room for `len` elements and does not overlap the old
        // one; the elements move (the old buffer's length is set to 0 so they are not dropped
        // twice).
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), grown.ptr.as_ptr(), self.len);
            grown.len = self.len;
            self.len = 0;
        }
        *self = grown;
    }

    /// Appends an element.
    #[inline]
    pub fn push(&mut self, value: E) {
        if self.len == self.cap {
            self.reserve(1);
        }
        // SAFETY: `len < cap` after the reserve; the slot is owned and uninitialised.
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
    }

    /// Drops the elements from `len` on.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let tail = std::ptr::slice_from_raw_parts_mut(
            // SAFETY: `len < self.len`, inside the allocation.
            unsafe { self.ptr.as_ptr().add(len) },
            self.len - len,
        );
        self.len = len;
        // SAFETY: the tail was initialised and is no longer reachable through `self`.
        unsafe { std::ptr::drop_in_place(tail) };
    }

    /// Drops every element, keeping the allocation.
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// A `Vec` of the elements: the same allocation where it has the element type's own
    /// alignment, else a copy.
    ///
    /// ```
    /// use namedtensor::storage::HostBuffer;
    /// let v = vec![1i64, 2, 3];
    /// let p = v.as_ptr();
    /// assert_eq!(HostBuffer::from(v).into_vec().as_ptr(), p);
    /// ```
    pub fn into_vec(self) -> Vec<E> {
        let mut me = ManuallyDrop::new(self);
        if me.align == align_of::<E>() {
            // A zero-sized type allocates nothing; a `Vec`'s capacity is at least its length.
            let cap = if size_of::<E>() == 0 { me.len } else { me.cap };
            // SAFETY: the allocation was made by the global allocator for `cap` elements at
            // `E`'s alignment, which is how a `Vec<E>` of that capacity allocates (or is
            // dangling with nothing allocated); `me` is not dropped.
            return unsafe { Vec::from_raw_parts(me.ptr.as_ptr(), me.len, cap) };
        }
        let mut v = Vec::with_capacity(me.len);
        // SAFETY: the elements move into `v`'s spare capacity; `me`'s length is set to 0 so
        // its drop only frees the allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(me.ptr.as_ptr(), v.as_mut_ptr(), me.len);
            v.set_len(me.len);
            me.len = 0;
            ManuallyDrop::drop(&mut me);
        }
        v
    }

    /// The same allocation holding `T`s: `T` must be `E` (checked by size and alignment; the
    /// CPU backend calls it where a dtype match has already selected `E`'s own type).
    ///
    /// # Safety
    /// Every initialised `E` must be a valid `T`.
    pub unsafe fn retype<T>(self) -> HostBuffer<T> {
        assert!(size_of::<T>() == size_of::<E>() && align_of::<T>() == align_of::<E>());
        let me = ManuallyDrop::new(self);
        HostBuffer {
            ptr: me.ptr.cast(),
            len: me.len,
            cap: me.cap,
            align: me.align,
        }
    }

    /// Gives up the allocation: pointer, capacity in bytes and alignment, with the elements
    /// left as they are (not dropped). `None` for a buffer that allocated nothing.
    pub fn into_raw_allocation(self) -> Option<(NonNull<u8>, usize, usize)> {
        let mut me = ManuallyDrop::new(self);
        me.clear();
        let bytes = me.cap * size_of::<E>();
        (bytes > 0).then(|| (me.ptr.cast(), bytes, me.align))
    }

    /// An empty buffer over an allocation given up by [`HostBuffer::into_raw_allocation`]
    /// (of any element type) of `cap * size_of::<E>()` bytes.
    ///
    /// # Safety
    /// `ptr` was allocated by the global allocator with exactly `cap * size_of::<E>()` bytes
    /// (non-zero) and alignment `align >= align_of::<E>()`, and nothing else owns it.
    pub unsafe fn from_raw_allocation(ptr: NonNull<u8>, cap: usize, align: usize) -> Self {
        debug_assert!(align >= align_of::<E>() && (ptr.as_ptr() as usize).is_multiple_of(align));
        HostBuffer {
            ptr: ptr.cast(),
            len: 0,
            cap,
            align,
        }
    }
}

impl<E: Copy> HostBuffer<E> {
    /// Appends copies of `values`.
    pub fn extend_from_slice(&mut self, values: &[E]) {
        self.reserve(values.len());
        // SAFETY: there is room for `values.len()` more elements (reserved); the slots are
        // owned and uninitialised, and do not overlap `values` (a borrow of other memory).
        unsafe {
            std::ptr::copy_nonoverlapping(
                values.as_ptr(),
                self.ptr.as_ptr().add(self.len),
                values.len(),
            );
        }
        self.len += values.len();
    }
}

impl<E> Drop for HostBuffer<E> {
    fn drop(&mut self) {
        if needs_drop::<E>() {
            self.clear();
        }
        let bytes = self.cap * size_of::<E>();
        if bytes > 0 {
            // SAFETY: the allocation was made with exactly this size and alignment
            // (invariants) and is owned by `self`.
            unsafe {
                std::alloc::dealloc(
                    self.ptr.as_ptr().cast(),
                    AllocLayout::from_size_align_unchecked(bytes, self.align),
                )
            }
        }
    }
}

impl<E> From<Vec<E>> for HostBuffer<E> {
    /// Adopts the vector's allocation as it is: no copy.
    fn from(v: Vec<E>) -> Self {
        let mut v = ManuallyDrop::new(v);
        let cap = if size_of::<E>() == 0 { 0 } else { v.capacity() };
        HostBuffer {
            // SAFETY: a `Vec`'s pointer is never null.
            ptr: unsafe { NonNull::new_unchecked(v.as_mut_ptr()) },
            len: v.len(),
            cap,
            align: align_of::<E>(),
        }
    }
}

impl<E> Default for HostBuffer<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Deref for HostBuffer<E> {
    type Target = [E];
    #[inline]
    fn deref(&self) -> &[E] {
        self.as_slice()
    }
}

impl<E> DerefMut for HostBuffer<E> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [E] {
        self.as_mut_slice()
    }
}

impl<E> Extend<E> for HostBuffer<E> {
    fn extend<I: IntoIterator<Item = E>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        self.reserve(iter.size_hint().0);
        for v in iter {
            self.push(v);
        }
    }
}

impl<E> FromIterator<E> for HostBuffer<E> {
    fn from_iter<I: IntoIterator<Item = E>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<E: Copy> Clone for HostBuffer<E> {
    /// A copy with the same alignment.
    fn clone(&self) -> Self {
        let mut c = Self::with_capacity_aligned(self.len, self.align);
        c.extend_from_slice(self);
        c
    }
}

impl<E: fmt::Debug> fmt::Debug for HostBuffer<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<E: PartialEq> PartialEq for HostBuffer<E> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<E: PartialEq> PartialEq<Vec<E>> for HostBuffer<E> {
    fn eq(&self, other: &Vec<E>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<E: PartialEq, const N: usize> PartialEq<[E; N]> for HostBuffer<E> {
    fn eq(&self, other: &[E; N]) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<E: PartialEq> PartialEq<[E]> for HostBuffer<E> {
    fn eq(&self, other: &[E]) -> bool {
        self.as_slice() == other
    }
}

impl<'a, E> IntoIterator for &'a HostBuffer<E> {
    type Item = &'a E;
    type IntoIter = std::slice::Iter<'a, E>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a, E> IntoIterator for &'a mut HostBuffer<E> {
    type Item = &'a mut E;
    type IntoIter = std::slice::IterMut<'a, E>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
    }
}

/// Elements borrowed where they already are laid out as needed, else a buffer of their own
/// (the `Cow` of a slice, for a [`HostBuffer`]).
pub enum BorrowedOrOwned<'a, E> {
    /// Elements of another buffer.
    Borrowed(&'a [E]),
    /// A new buffer.
    Owned(HostBuffer<E>),
}

impl<E> Deref for BorrowedOrOwned<'_, E> {
    type Target = [E];
    #[inline]
    fn deref(&self) -> &[E] {
        match self {
            BorrowedOrOwned::Borrowed(s) => s,
            BorrowedOrOwned::Owned(b) => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_allocation_round_trips_through_a_vec_copy() {
        let mut b = HostBuffer::<f32>::with_capacity_aligned(1000, 64);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        b.extend((0..1000).map(|i| i as f32));
        let v = b.clone().into_vec();
        assert_eq!(v.len(), 1000);
        assert_eq!(v[999], 999.0);
        assert_eq!(b.clone().alignment(), 64);
        assert_eq!(b, v);
    }

    #[test]
    fn growth_keeps_alignment_and_elements() {
        let mut b = HostBuffer::<u8>::with_capacity_aligned(1, 128);
        for i in 0..300u32 {
            b.push(i as u8);
        }
        assert_eq!(b.as_ptr() as usize % 128, 0);
        assert!(b.iter().enumerate().all(|(i, &x)| x == i as u8));
        b.truncate(3);
        assert_eq!(&b[..], &[0, 1, 2]);
    }

    #[test]
    fn elements_with_drop_glue_are_dropped_once() {
        let rc = std::rc::Rc::new(());
        let mut b = HostBuffer::with_capacity_aligned(2, 64);
        b.push(rc.clone());
        b.push(rc.clone());
        assert_eq!(std::rc::Rc::strong_count(&rc), 3);
        b.truncate(1);
        assert_eq!(std::rc::Rc::strong_count(&rc), 2);
        drop(b);
        assert_eq!(std::rc::Rc::strong_count(&rc), 1);
    }

    #[test]
    fn zero_sized_and_empty_buffers_allocate_nothing() {
        let mut z = HostBuffer::<()>::with_capacity_aligned(10, 64);
        z.push(());
        assert_eq!(z.len(), 1);
        let mut z = HostBuffer::<()>::new();
        z.extend([(), (), ()]);
        assert_eq!(z.into_vec().len(), 3);
        assert!(HostBuffer::<f32>::new().into_raw_allocation().is_none());
        assert_eq!(HostBuffer::<f32>::new().into_vec(), Vec::<f32>::new());
    }
}
