//! Storage: the one flat buffer that every view of a tensor shares.
//!
//! # Aliasing rules
//! - A [`Storage`] is a reference-counted handle; cloning the handle never copies elements.
//!   Tensors made by view operations hold handles to the same storage, so a write through one
//!   of them is visible through all of them.
//! - The elements sit behind a reader-writer lock. An operation takes the lock of each storage
//!   it touches once, for its whole duration: shared for the storages it reads, exclusive for
//!   the one it writes. Several threads may therefore read and write tensors of one storage at
//!   the same time without a data race; each operation sees the storage either before or after
//!   any other operation's writes, never half of them.
//! - An operation that needs several locks takes them in a fixed global order (by the address
//!   of the shared allocation) and never takes the same lock twice, so operations cannot
//!   deadlock one another. Kernels run while the locks are held and never take locks
//!   themselves.
//! - An in-place operation whose source shares the destination's storage first copies the
//!   source, so the result is the same as if the source had been copied before the write.
//! - Writing through a view in which several indices reach one element (an `expand`ed view,
//!   stride 0, or an `as_strided` view whose strides collide) is refused with
//!   [`ErrorKind::OverlappingWrite`](crate::ErrorKind) on every device, so a write never
//!   depends on the order in which elements are visited. A writer splits its destination
//!   across threads only when [`Layout::is_provably_non_overlapping`](crate::Layout) holds.
//!
//! - A borrowed slice of the elements ([`ElementsRef`], from `DynTensor::as_slice`) holds no
//!   lock: while one is alive every write to the storage fails with
//!   [`ErrorKind::Borrowed`](crate::ErrorKind) (the count of live borrows is raised under the
//!   shared lock and checked under the exclusive one, so a write either finished before the
//!   borrow began or is refused). Reads go on as usual, on any thread.
//!
//! # Buffer pool
//! Host buffers of 64 KiB or more are aligned to a cache line ([`POOLED_ALIGN`]), recycled
//! through a process-wide pool when their storage is dropped, and, when new and large,
//! advised to use huge pages. It holds at most
//! [`buffer_pool_capacity`] bytes (1 GiB), frees a buffer no output reused within
//! [`buffer_pool_idle`] (5 s) from a background thread, never holds more than half of the
//! system's available memory, and [`release_buffer_pool`] empties
//! it (and the memory CUDA devices keep for reuse); see [`set_buffer_pool_capacity`] and [`set_buffer_pool_idle`].
//!
//! # Backends
//! A storage holds a `Buffer` per backend: the CPU's [`HostBuffer`], and with the `cuda` feature a
//! device allocation. Operations dispatch on the buffer (`dispatch.rs`), so adding a device
//! adds a variant here and kernels for it, and nothing above the storage changes. Kernels for
//! one device only ever see buffers of that device: an operation on storages of two devices
//! is an [`ErrorKind::Device`](crate::ErrorKind) error naming both.
//!
//! On a CUDA device every operation is issued to one stream while the locks above are held,
//! so the device runs them in lock order and the rules hold there too; reading elements back
//! to the host waits for the device.

use crate::backend::device::Device;
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub use crate::backend::cpu::host_buffer::HostBuffer;
use crate::backend::cpu::pool;
pub use pool::{
    MIN_POOLED_BYTES, POOLED_ALIGN, buffer_pool_bytes, buffer_pool_capacity, buffer_pool_idle,
    set_buffer_pool_capacity, set_buffer_pool_idle,
};

/// Frees every pooled host buffer now and, on each CUDA device in use, waits for the device
/// and gives the memory its allocator keeps for reuse back to the driver; pooling goes on
/// (PyTorch's `torch.cuda.empty_cache()`).
///
/// ```
/// use namedtensor::{storage, DynTensor};
/// drop(DynTensor::<f32>::zeros(&[1 << 19])); // 2 MiB, pooled
/// storage::release_buffer_pool();
/// assert_eq!(storage::buffer_pool_bytes(), 0);
/// ```
pub fn release_buffer_pool() {
    pool::release_buffer_pool();
    #[cfg(feature = "cuda")]
    crate::backend::cuda::device::release_cached_memory();
}
/// Hands a buffer back to the pool (for `dist`'s all-reduce, the one user outside storage).
#[doc(hidden)]
pub use pool::give as give_buffer;
#[doc(hidden)]
pub use pool::{reserve as reserve_buffer, take as take_buffer};

#[doc(hidden)]
pub mod dispatch;
mod elements_ref;
#[cfg(feature = "nccl")]
#[doc(hidden)]
pub mod nccl;
pub use elements_ref::ElementsRef;

/// The elements of a storage, on one device.
#[derive(Debug)]
#[doc(hidden)]
pub enum Buffer<E> {
    /// Host memory.
    Cpu(HostBuffer<E>),
    /// Memory of a CUDA device.
    #[cfg(feature = "cuda")]
    Cuda(crate::backend::cuda::CudaBuffer),
}

impl<E: Element> Buffer<E> {
    /// The host slice; an error naming `op` for a buffer on another device.
    #[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
    #[doc(hidden)]
    pub fn cpu(&self, op: &'static str) -> Result<&[E]> {
        match self {
            Buffer::Cpu(v) => Ok(v),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Err(not_on_cpu(op, b.device())),
        }
    }

    /// The host slice, mutably; an error naming `op` for a buffer on another device.
    #[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
    #[doc(hidden)]
    pub fn cpu_mut(&mut self, op: &'static str) -> Result<&mut [E]> {
        match self {
            Buffer::Cpu(v) => Ok(v),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Err(not_on_cpu(op, b.device())),
        }
    }
}

/// The error for a CPU-only operation on a tensor of another device.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[doc(hidden)]
pub fn not_on_cpu(op: &'static str, device: Device) -> Error {
    Error::new(
        ErrorKind::Device,
        op,
        format!(
            "{op} is not implemented for tensors on {device} yet; move the tensor to the CPU \
             first with to_device(Device::Cpu)"
        ),
    )
}

struct Shared<E> {
    buffer: RwLock<Buffer<E>>,
    /// Bumped by every write (see [`Storage::version`]).
    version: AtomicU64,
    /// How many [`ElementsRef`]s of the elements are alive; writes are refused while any is.
    /// Raised only under the shared lock, read under the exclusive one.
    borrows: AtomicUsize,
    len: usize,
    /// The device of `buffer`, encoded by [`encode_device`]; changed only under the exclusive
    /// lock, by [`Storage::move_to`]. Readers that act on it take a lock and dispatch on the
    /// buffer itself, so one that read it just before a move gets a device error, never a
    /// kernel of the wrong device.
    device: AtomicUsize,
}

/// `Device::Cpu` as 0, `Device::Cuda(n)` as `n + 1`.
fn encode_device(device: Device) -> usize {
    match device {
        Device::Cpu => 0,
        Device::Cuda(n) => n + 1,
    }
}

fn decode_device(code: usize) -> Device {
    match code {
        0 => Device::Cpu,
        n => Device::Cuda(n - 1),
    }
}

impl<E> Drop for Shared<E> {
    /// A large host buffer goes back to the buffer pool rather than to the allocator.
    fn drop(&mut self) {
        match self
            .buffer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Buffer::Cpu(v) => pool::give(std::mem::take(v)),
            // A device allocation frees itself (see `backend::cuda::storage`).
            #[cfg(feature = "cuda")]
            Buffer::Cuda(_) => {}
        }
    }
}

/// A shared, flat, one-dimensional buffer of elements: what tensors are views of.
///
/// Cloning a `Storage` clones the handle, not the elements.
///
/// ```
/// use namedtensor::DynTensor;
/// let points = DynTensor::from_vec(vec![4.0f32, 1.0, 5.0, 3.0, 2.0, 1.0], &[3, 2]);
/// let second = points.select(0, 1);
/// assert!(second.storage().same_storage(points.storage()));
/// assert_eq!(points.storage().to_vec(), vec![4.0, 1.0, 5.0, 3.0, 2.0, 1.0]);
/// points.storage().set(2, 10.0).unwrap();
/// assert_eq!(second.get(&[0]), 10.0);
/// ```
pub struct Storage<E: Element> {
    shared: Arc<Shared<E>>,
}

impl<E: Element> Clone for Storage<E> {
    fn clone(&self) -> Self {
        Storage {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<E: Element> Storage<E> {
    /// A host storage owning `data`.
    ///
    /// ```
    /// let s = namedtensor::Storage::from_vec(vec![1u8, 2, 3]);
    /// assert_eq!(s.len(), 3);
    /// ```
    pub fn from_vec(data: Vec<E>) -> Self {
        Storage::from_buffer(Buffer::Cpu(data.into()))
    }

    /// A host storage owning `data` (a buffer from the pool keeps its alignment).
    #[doc(hidden)]
    pub fn from_host_buffer(data: HostBuffer<E>) -> Self {
        Storage::from_buffer(Buffer::Cpu(data))
    }

    /// A storage owning `buffer`.
    #[doc(hidden)]
    pub fn from_buffer(buffer: Buffer<E>) -> Self {
        let (len, device) = (buffer.len(), buffer.device());
        Storage {
            shared: Arc::new(Shared {
                buffer: RwLock::new(buffer),
                version: AtomicU64::new(0),
                borrows: AtomicUsize::new(0),
                len,
                device: AtomicUsize::new(encode_device(device)),
            }),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shared.len
    }

    /// Whether the storage holds no element.
    pub fn is_empty(&self) -> bool {
        self.shared.len == 0
    }

    /// The device holding the elements.
    pub fn device(&self) -> Device {
        decode_device(self.shared.device.load(Ordering::Acquire))
    }

    /// Moves the elements to `device` in place: every tensor viewing this storage finds them
    /// there, with the same layout. It is a write (refused while a slice is borrowed, and it
    /// bumps the version, so a graph that saved one of these tensors refuses to run backward
    /// through it); on failure nothing has changed.
    #[doc(hidden)]
    pub fn move_to(&self, op: &'static str, device: Device) -> Result<()> {
        if self.device() == device {
            return Ok(());
        }
        let whole = crate::layout::Layout::contiguous(&[self.len()])?;
        // SAFETY: the buffer is replaced by its copy on `device`, of the same length and type.
        let mut guard = unsafe { self.write(op) }?;
        let moved = guard.to_device(op, &whole, device)?;
        match std::mem::replace(&mut *guard, moved) {
            Buffer::Cpu(old) => pool::give(old),
            // A device allocation frees itself.
            #[cfg(feature = "cuda")]
            Buffer::Cuda(_) => {}
        }
        self.shared
            .device
            .store(encode_device(device), Ordering::Release);
        Ok(())
    }

    /// Whether `self` and `other` are handles to the same buffer.
    ///
    /// ```
    /// use namedtensor::DynTensor;
    /// let t = DynTensor::<f32>::ones(&[2, 2]);
    /// assert!(t.t().storage().same_storage(t.storage()));
    /// assert!(!t.clone().storage().same_storage(t.storage()));
    /// ```
    pub fn same_storage(&self, other: &Storage<E>) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The element at storage position `index`.
    ///
    /// ```
    /// let s = namedtensor::Storage::from_vec(vec![1.5f64, 2.5]);
    /// assert_eq!(s.get(1).unwrap(), 2.5);
    /// assert!(s.get(2).is_err());
    /// ```
    pub fn get(&self, index: usize) -> Result<E> {
        self.check_index("Storage::get", index)?;
        self.read().get("Storage::get", index)
    }

    /// Overwrites the element at storage position `index`; every view sees the change.
    ///
    /// ```
    /// let s = namedtensor::Storage::from_vec(vec![0i32; 3]);
    /// s.set(1, 7).unwrap();
    /// assert_eq!(s.to_vec(), vec![0, 7, 0]);
    /// ```
    pub fn set(&self, index: usize, value: E) -> Result<()> {
        self.check_index("Storage::set", index)?;
        // SAFETY: one element is written.
        unsafe { self.write("Storage::set") }?.set("Storage::set", index, value)
    }

    /// A copy of all elements, in storage order (copied from the device for a CUDA storage).
    /// Panics where [`Storage::try_to_vec`] fails.
    ///
    /// ```
    /// let s = namedtensor::Storage::from_vec(vec![1u8, 2]);
    /// assert_eq!(s.to_vec(), vec![1, 2]);
    /// ```
    #[track_caller]
    pub fn to_vec(&self) -> Vec<E> {
        crate::error::or_panic(self.try_to_vec())
    }

    /// [`Storage::to_vec`], or an error if the device fails.
    ///
    /// ```
    /// let s = namedtensor::Storage::from_vec(vec![1i64, 2]);
    /// assert_eq!(s.try_to_vec().unwrap(), vec![1, 2]);
    /// ```
    pub fn try_to_vec(&self) -> Result<Vec<E>> {
        self.read().to_vec("Storage::to_vec")
    }

    fn check_index(&self, op: &'static str, index: usize) -> Result<()> {
        if index >= self.len() {
            return Err(Error::new(
                ErrorKind::IndexOutOfRange,
                op,
                format!(
                    "storage index {index} is out of range for a storage of length {}",
                    self.len()
                ),
            ));
        }
        Ok(())
    }

    /// Shared access for the duration of one operation.
    #[doc(hidden)]
    pub fn read(&self) -> RwLockReadGuard<'_, Buffer<E>> {
        // A panic while the lock was held cannot leave elements in an invalid state (they are
        // plain values), so a poisoned lock is used as it is.
        self.shared
            .buffer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Exclusive access for the duration of one operation `op`, or
    /// [`ErrorKind::Borrowed`] while a slice of the elements is borrowed. Every write to the
    /// elements goes through here, so it bumps the version.
    ///
    /// # Safety
    /// The buffer must keep its length and element type: the layouts of the storage's tensors
    /// were checked against them once, and the kernels read and write through them
    /// unchecked. Write elements; replace the buffer only with one of the same length, as
    /// [`Storage::move_to`] does (which also records the new device).
    #[doc(hidden)]
    pub unsafe fn write(&self, op: &'static str) -> Result<RwLockWriteGuard<'_, Buffer<E>>> {
        let guard = self
            .shared
            .buffer
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // Borrows are raised under the shared lock, so none begins while this guard lives;
        // Acquire pairs with the Release of a borrow's end.
        let borrows = self.shared.borrows.load(Ordering::Acquire);
        if borrows > 0 {
            return Err(Error::new(
                ErrorKind::Borrowed,
                op,
                format!(
                    "cannot write into a tensor while a slice of its storage is borrowed \
                     ({borrows} ElementsRef alive, from as_slice or with_contiguous); drop the \
                     slice first"
                ),
            ));
        }
        self.shared.version.fetch_add(1, Ordering::Relaxed);
        Ok(guard)
    }

    /// How many handles share this storage: tensors and views over it, and tensors that
    /// autograd saved for a backward pass (which it drops once the pass used them).
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[4]);
    /// let v = t.narrow(0, 1, 2);
    /// assert_eq!(t.storage().handle_count(), 2);
    /// drop(v);
    /// assert_eq!(t.storage().handle_count(), 1);
    /// ```
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.shared)
    }

    /// How many writes the elements have had (PyTorch's version counter). Autograd compares
    /// it with the version a saved tensor had, to refuse a gradient computed from elements
    /// that were overwritten since.
    ///
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[2]);
    /// let v = t.storage().version();
    /// t.fill_(1.0);
    /// assert!(t.storage().version() > v);
    /// ```
    pub fn version(&self) -> u64 {
        self.shared.version.load(Ordering::Relaxed)
    }

    /// The address that orders lock acquisition across storages.
    #[doc(hidden)]
    pub fn lock_order(&self) -> usize {
        Arc::as_ptr(&self.shared) as *const () as usize
    }
}

/// Runs `f` with the buffers of `a` and `b` under their shared locks, taking each lock once
/// and in the global order (the same storage is locked once and handed to `f` twice).
#[doc(hidden)]
pub fn with_read_buffers2<A: Element, B: Element, R>(
    a: &Storage<A>,
    b: &Storage<B>,
    f: impl FnOnce(&Buffer<A>, &Buffer<B>) -> Result<R>,
) -> Result<R> {
    if a.lock_order() == b.lock_order() {
        let guard = a.read();
        // One allocation holds one element type, so `A` is `B` here and the downcast succeeds.
        let same = (&*guard as &dyn std::any::Any)
            .downcast_ref::<Buffer<B>>()
            .expect("one storage has one element type");
        return f(&guard, same);
    }
    let (ga, gb);
    if a.lock_order() < b.lock_order() {
        ga = a.read();
        gb = b.read();
    } else {
        gb = b.read();
        ga = a.read();
    }
    f(&ga, &gb)
}

/// Runs `f` with the buffers of `a`, `b` and `c` under their shared locks, taking each
/// distinct storage's lock once and in the global order (storages that appear twice are
/// locked once and handed out twice).
#[doc(hidden)]
pub fn with_read_buffers3<A: Element, B: Element, C: Element, R>(
    a: &Storage<A>,
    b: &Storage<B>,
    c: &Storage<C>,
    f: impl FnOnce(&Buffer<A>, &Buffer<B>, &Buffer<C>) -> Result<R>,
) -> Result<R> {
    let keys = [a.lock_order(), b.lock_order(), c.lock_order()];
    let mut order = [0usize, 1, 2];
    order.sort_by_key(|&i| keys[i]);
    let (mut ga, mut gb, mut gc) = (None, None, None);
    let mut last = None;
    for i in order {
        if last == Some(keys[i]) {
            continue;
        }
        last = Some(keys[i]);
        match i {
            0 => ga = Some(a.read()),
            1 => gb = Some(b.read()),
            _ => gc = Some(c.read()),
        }
    }
    // The buffer behind each key; a storage holds one element type, so the downcasts below
    // succeed exactly when two operands share a storage.
    let held: Vec<(usize, &dyn std::any::Any)> = [
        ga.as_deref().map(|g| (keys[0], g as &dyn std::any::Any)),
        gb.as_deref().map(|g| (keys[1], g as &dyn std::any::Any)),
        gc.as_deref().map(|g| (keys[2], g as &dyn std::any::Any)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let find = |k: usize| {
        held.iter()
            .find(|(key, _)| *key == k)
            .expect("every operand's storage is locked")
            .1
    };
    let expect = "one storage has one element type";
    let ba = find(keys[0]).downcast_ref::<Buffer<A>>().expect(expect);
    let bb = find(keys[1]).downcast_ref::<Buffer<B>>().expect(expect);
    let bc = find(keys[2]).downcast_ref::<Buffer<C>>().expect(expect);
    f(ba, bb, bc)
}

/// Runs `f` with exclusive access to `dst`'s buffer and shared access to `src`'s, which must
/// be a different storage (in-place ops copy an aliasing source first), locking in global
/// order.
///
/// # Safety
/// As [`Storage::write`]: `f` keeps the length and type of `dst`'s buffer.
#[doc(hidden)]
pub unsafe fn with_write_read_buffers<A: Element, B: Element, R>(
    op: &'static str,
    dst: &Storage<A>,
    src: &Storage<B>,
    f: impl FnOnce(&mut Buffer<A>, &Buffer<B>) -> Result<R>,
) -> Result<R> {
    assert_ne!(
        dst.lock_order(),
        src.lock_order(),
        "with_write_read needs distinct storages"
    );
    let (mut gd, gs);
    // SAFETY: this function's own contract: `f` keeps the buffer's length and type.
    if dst.lock_order() < src.lock_order() {
        gd = unsafe { dst.write(op) }?;
        gs = src.read();
    } else {
        gs = src.read();
        gd = unsafe { dst.write(op) }?;
    }
    f(&mut gd, &gs)
}

/// Runs `f` with exclusive access to the buffers of `dsts` (in the same order) and shared
/// access to `src`'s, locking in the global order; all must be distinct storages (else an
/// [`ErrorKind::InvalidArgument`] error, before anything is locked).
///
/// # Safety
/// As [`Storage::write`]: `f` keeps the length and type of every buffer in `dsts`.
#[doc(hidden)]
pub unsafe fn with_write_buffers_read<E: Element, R>(
    op: &'static str,
    dsts: &[&Storage<E>],
    src: &Storage<E>,
    f: impl FnOnce(&mut [&mut Buffer<E>], &Buffer<E>) -> Result<R>,
) -> Result<R> {
    // (lock order, index into `dsts`, or `None` for `src`)
    let mut order: Vec<(usize, Option<usize>)> = dsts
        .iter()
        .enumerate()
        .map(|(i, s)| (s.lock_order(), Some(i)))
        .chain([(src.lock_order(), None)])
        .collect();
    order.sort_unstable();
    if order.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            op,
            "the tensors written and read must not share a storage",
        ));
    }
    let mut writes: Vec<Option<RwLockWriteGuard<'_, Buffer<E>>>> =
        dsts.iter().map(|_| None).collect();
    let mut read = None;
    for (_, who) in order {
        match who {
            // SAFETY: this function's own contract: `f` keeps the buffers' lengths and types.
            Some(i) => writes[i] = Some(unsafe { dsts[i].write(op) }?),
            None => read = Some(src.read()),
        }
    }
    let read = read.expect("the source is in the lock order");
    let mut bufs: Vec<&mut Buffer<E>> = writes
        .iter_mut()
        .map(|g| &mut **g.as_mut().expect("every destination is locked"))
        .collect();
    f(&mut bufs, &read)
}

/// Runs `f` with the buffers of every storage in `storages` (in the same order; a storage
/// given several times is locked once and handed out several times), under their shared
/// locks, taken in the global order.
#[doc(hidden)]
pub fn with_read_buffers_all<E: Element, R>(
    storages: &[&Storage<E>],
    f: impl FnOnce(&[&Buffer<E>]) -> Result<R>,
) -> Result<R> {
    let mut order: Vec<usize> = (0..storages.len()).collect();
    order.sort_by_key(|&i| storages[i].lock_order());
    order.dedup_by_key(|i| storages[*i].lock_order());
    let guards: Vec<(usize, RwLockReadGuard<'_, Buffer<E>>)> = order
        .iter()
        .map(|&i| (storages[i].lock_order(), storages[i].read()))
        .collect();
    let buffers: Vec<&Buffer<E>> = storages
        .iter()
        .map(|s| &*guards[guards.partition_point(|(key, _)| *key < s.lock_order())].1)
        .collect();
    f(&buffers)
}
