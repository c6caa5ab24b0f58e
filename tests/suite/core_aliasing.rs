//! Writes through views: overlapping views, aliasing sources, and several threads working on
//! one storage at once.

use namedtensor::{DynTensor, ErrorKind};
use std::sync::{Arc, Barrier};
use std::thread;

#[test]
fn overlapping_views_see_each_others_writes() {
    let a = DynTensor::<f32>::zeros(&[4, 4]);
    let top = a.narrow(0, 0, 3);
    let bottom = a.narrow(0, 1, 3);
    top.fill_(1.0);
    bottom.i(0).fill_(2.0); // row 1 of `a`, row 1 of `top`
    assert_eq!(top.i(1).to_vec(), vec![2.0; 4]);
    assert_eq!(a.i(0).to_vec(), vec![1.0; 4]);
    assert_eq!(a.i(3).to_vec(), vec![0.0; 4]);
    let col = a.t().i(2); // column 2 of `a`, stride 4
    col.fill_(7.0);
    assert_eq!(
        a.to_vec()[2..16]
            .iter()
            .step_by(4)
            .copied()
            .collect::<Vec<_>>(),
        vec![7.0; 4]
    );
    assert_eq!(bottom.get(&[2, 2]), 7.0);
}

#[test]
fn copy_from_an_overlapping_source_acts_as_if_the_source_were_copied_first() {
    // shift right by one inside one storage: a naive forward loop would smear a[0]
    let a = DynTensor::<i32>::arange(0, 6, 1);
    a.narrow(0, 1, 5).copy_(&a.narrow(0, 0, 5));
    assert_eq!(a.to_vec(), vec![0, 0, 1, 2, 3, 4]);
    // shift left
    let b = DynTensor::<i32>::arange(0, 6, 1);
    b.narrow(0, 0, 5).copy_(&b.narrow(0, 1, 5));
    assert_eq!(b.to_vec(), vec![1, 2, 3, 4, 5, 5]);
    // in-place transpose of a square matrix through its own transposed view
    let m = DynTensor::<i32>::arange(0, 9, 1).view(&[3, 3]);
    m.copy_(&m.t());
    assert_eq!(m.to_vec(), vec![0, 3, 6, 1, 4, 7, 2, 5, 8]);
}

#[test]
fn copy_broadcasts_and_converts_the_source() {
    let a = DynTensor::<f64>::zeros(&[2, 3]);
    a.copy_(&DynTensor::<i8>::from_vec(vec![1, -2], &[2, 1]));
    assert_eq!(a.to_vec(), vec![1.0, 1.0, 1.0, -2.0, -2.0, -2.0]);
}

#[test]
fn writing_into_an_expanded_view_is_refused_and_changes_nothing() {
    let base = DynTensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    let wide = base.expand(&[2, 3]);
    assert_eq!(
        wide.try_fill_(0.0).unwrap_err().kind(),
        ErrorKind::OverlappingWrite
    );
    assert_eq!(
        wide.try_copy_(&DynTensor::<f32>::zeros(&[2, 3]))
            .unwrap_err()
            .kind(),
        ErrorKind::OverlappingWrite
    );
    assert_eq!(base.to_vec(), vec![1.0, 2.0, 3.0]);
    // a single element of it can be set, and every alias sees it (as in PyTorch)
    wide.set(&[1, 0], 9.0);
    assert_eq!(wide.get(&[0, 0]), 9.0);
}

#[test]
fn writing_into_a_self_overlapping_strided_view_is_refused_and_changes_nothing() {
    // 2^20 indices over 211 elements: (1, 1, 0, …) and (0, 0, 1, …) are both element 3. Before
    // the overlap check counted the reach of all smaller strides, this view was split across
    // threads that lost each other's updates.
    let strides: Vec<usize> = (1..=20).collect();
    let base = DynTensor::<i64>::zeros(&[211]);
    let view = base.as_strided(&[2; 20], &strides, 0);
    let err = view.try_add_scalar_(1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OverlappingWrite);
    assert!(
        err.to_string().contains("two indices reach one element"),
        "{err}"
    );
    assert_eq!(
        view.try_fill_(1).unwrap_err().kind(),
        ErrorKind::OverlappingWrite
    );
    assert_eq!(
        view.try_copy_(&DynTensor::<i64>::ones(&[1]))
            .unwrap_err()
            .kind(),
        ErrorKind::OverlappingWrite
    );
    assert_eq!(base.to_vec(), vec![0; 211]);
    // the smallest case of the bug
    let small = DynTensor::<i64>::zeros(&[7]).as_strided(&[2, 2, 2], &[1, 2, 3], 0);
    assert_eq!(
        small.try_zero_().unwrap_err().kind(),
        ErrorKind::OverlappingWrite
    );
}

#[test]
fn threads_writing_in_place_through_interleaved_strided_views_lose_no_update() {
    // Two views that interleave without overlapping: `even` is a permuted 2^18-element layout
    // (provably free of overlap, so each op is split across the pool); `odd` has strides under
    // which the quick test cannot prove it (sizes [2, 3, L], strides [3L, 2L, 1] place blocks
    // at 0, 2L, 4L, 3L, 5L, 7L), so it is checked exactly and written in one task.
    const L: usize = 1 << 12;
    let n = 1usize << 19;
    let base = DynTensor::<i64>::zeros(&[n]);
    let strides: Vec<usize> = (0..18).rev().map(|k| 2usize << k).collect();
    let mut order: Vec<usize> = (0..18).collect();
    order.reverse(); // smallest stride first: anything but row-major
    let even = base
        .as_strided(&[2; 18], &strides, 0)
        .permute(&order.iter().map(|&d| d as isize).collect::<Vec<_>>());
    let odd = base.as_strided(&[2, 3, L], &[6 * L, 4 * L, 2], 1);
    namedtensor::set_parallel_threshold(1 << 10);
    const ROUNDS: i64 = 50;
    let handles: Vec<_> = [even, odd]
        .into_iter()
        .flat_map(|v| [v.shallow_clone(), v])
        .map(|v| {
            thread::spawn(move || {
                for _ in 0..ROUNDS {
                    v.add_scalar_(1);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let v = base.to_vec();
    let mut odd_hits = vec![false; n];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..L {
                odd_hits[1 + i * 6 * L + j * 4 * L + 2 * k] = true;
            }
        }
    }
    for (p, &x) in v.iter().enumerate() {
        let want = if p % 2 == 0 || odd_hits[p] {
            2 * ROUNDS
        } else {
            0
        };
        assert_eq!(x, want, "element {p}");
    }
}

#[test]
fn threads_reading_and_writing_views_of_one_storage_never_see_half_an_operation() {
    const ROWS: usize = 8;
    const COLS: usize = 2000;
    let a = DynTensor::<i64>::zeros(&[ROWS, COLS]);
    let barrier = Arc::new(Barrier::new(ROWS + 2));
    let mut handles = vec![];
    for r in 0..ROWS {
        let row = a.i(r as isize); // a view on the shared storage
        let barrier = barrier.clone();
        handles.push(thread::spawn(move || {
            barrier.wait();
            for v in 1..=200i64 {
                row.fill_(v);
            }
        }));
    }
    // a reader: every row is constant at every moment, because each fill_ is one locked op
    let reader = {
        let a = a.shallow_clone();
        let barrier = barrier.clone();
        thread::spawn(move || {
            barrier.wait();
            for _ in 0..200 {
                let snapshot = a.to_vec();
                for row in snapshot.chunks(COLS) {
                    assert!(row.iter().all(|&x| x == row[0]), "torn row");
                }
            }
        })
    };
    barrier.wait();
    for h in handles {
        h.join().unwrap();
    }
    reader.join().unwrap();
    assert_eq!(a.to_vec(), vec![200; ROWS * COLS]);
}

#[test]
fn opposite_copies_between_two_storages_do_not_deadlock() {
    let a = DynTensor::<f32>::ones(&[64, 64]);
    let b = DynTensor::<f32>::zeros(&[64, 64]);
    let t1 = {
        let (a, b) = (a.shallow_clone(), b.shallow_clone());
        thread::spawn(move || {
            for _ in 0..2000 {
                a.copy_(&b.t());
            }
        })
    };
    let t2 = {
        let (a, b) = (a.shallow_clone(), b.shallow_clone());
        thread::spawn(move || {
            for _ in 0..2000 {
                b.copy_(&a);
            }
        })
    };
    t1.join().unwrap();
    t2.join().unwrap();
    // both hold the same constant everywhere (each op copies a whole constant tensor)
    let (va, vb) = (a.to_vec(), b.to_vec());
    assert!(va.iter().all(|&x| x == va[0]) && vb.iter().all(|&x| x == vb[0]));
}

#[test]
fn in_place_writes_through_a_storage_handle_are_visible_to_tensors() {
    let t = DynTensor::<u8>::zeros(&[2, 2]);
    t.storage().set(3, 5).unwrap();
    assert_eq!(t.get(&[1, 1]), 5);
    assert!(t.storage().set(4, 1).is_err());
}

#[test]
fn writes_are_refused_while_a_slice_is_borrowed_and_reads_go_on() {
    let t = DynTensor::from_vec((0..12).map(|i| i as f32).collect(), &[3, 4]);
    let row = t.select(0, 1);
    let other_view = t.t();
    let before = t.storage().version();
    let s = row.as_slice().unwrap();
    assert_eq!(&*s, &[4.0, 5.0, 6.0, 7.0]);
    let src = DynTensor::<f32>::ones(&[3, 4]);
    let mask = DynTensor::from_vec(vec![true; 12], &[3, 4]);
    let index = DynTensor::from_vec(vec![0i64], &[1]);
    let refused: Vec<(&str, namedtensor::Error)> = vec![
        ("fill_", row.try_fill_(0.0).unwrap_err()),
        ("fill_", other_view.try_fill_(0.0).unwrap_err()),
        ("set", t.try_set(&[0, 0], 1.0).unwrap_err()),
        ("copy_", t.try_copy_(&src).unwrap_err()),
        ("add_", t.try_add_(&src).unwrap_err()),
        ("exp_", t.try_exp_().unwrap_err()),
        ("masked_fill_", t.try_masked_fill_(&mask, 0.0).unwrap_err()),
        (
            "index_add_",
            t.try_index_add_(0, &index, &src.narrow(0, 0, 1))
                .unwrap_err(),
        ),
        ("Storage::set", t.storage().set(0, 1.0).unwrap_err()),
    ];
    for (op, e) in refused {
        assert_eq!(e.kind(), ErrorKind::Borrowed, "{op}: {e}");
        assert_eq!(e.op(), op);
        assert!(e.to_string().contains("borrowed"), "{e}");
    }
    // Nothing was written; reads, new tensors and other storages are unaffected.
    assert_eq!(t.storage().version(), before);
    assert_eq!(t.to_vec(), (0..12).map(|i| i as f32).collect::<Vec<_>>());
    assert_eq!((&t * 2.0).sum().item(), 132.0);
    src.fill_(3.0);
    // A second borrow keeps writes refused after the first ends.
    let s2 = t.as_slice().unwrap();
    drop(s);
    assert_eq!(t.try_fill_(0.0).unwrap_err().kind(), ErrorKind::Borrowed);
    drop(s2);
    t.fill_(0.0);
    assert_eq!(row.to_vec(), vec![0.0; 4]);
}

#[test]
fn a_write_inside_with_contiguous_is_an_error_not_a_deadlock() {
    let t = DynTensor::<i32>::arange(0, 6, 1);
    let (sum, write) = t.with_contiguous(|s| (s.iter().sum::<i32>(), t.try_fill_(0)));
    assert_eq!(sum, 15);
    assert_eq!(write.unwrap_err().kind(), ErrorKind::Borrowed);
    // Not contiguous: the closure reads a copy, and a write inside it goes through.
    let m = t.view(&[2, 3]).t();
    let (copy, write) = m.with_contiguous(|s| (s.to_vec(), m.try_fill_(1).map(|_| ())));
    assert_eq!(copy, vec![0, 3, 1, 4, 2, 5]);
    assert!(write.is_ok());
    assert_eq!(t.to_vec(), vec![1; 6]);
}

#[test]
fn borrowed_slices_cross_threads_and_other_threads_writes_are_refused() {
    let t = DynTensor::<f64>::ones(&[1000]);
    let s = t.as_slice().unwrap();
    let u = t.shallow_clone();
    thread::scope(|scope| {
        // Another thread reads and is refused a write; it does not block.
        scope.spawn(|| {
            assert_eq!(u.sum().item(), 1000.0);
            assert_eq!(u.try_fill_(2.0).unwrap_err().kind(), ErrorKind::Borrowed);
        });
        // The slice itself is read on two threads.
        let (a, b) = s.split_at(500);
        let h = scope.spawn(move || a.iter().sum::<f64>());
        assert_eq!(b.iter().sum::<f64>() + h.join().unwrap(), 1000.0);
    });
    // The borrow moves to another thread and ends there.
    thread::scope(|scope| {
        scope
            .spawn(move || assert_eq!(s.len(), 1000))
            .join()
            .unwrap()
    });
    t.fill_(2.0);
    assert_eq!(t.sum().item(), 2000.0);
}

#[test]
fn only_contiguous_host_views_borrow() {
    let t = DynTensor::<u8>::arange(0, 24, 1).view(&[2, 3, 4]);
    assert!(t.transpose(1, 2).as_slice().is_none());
    assert!(t.slice(2, None, None, 2).as_slice().is_none());
    assert!(t.select(2, 0).as_slice().is_none());
    assert!(t.i(0).unsqueeze(0).expand(&[2, 3, 4]).as_slice().is_none());
    assert_eq!(
        &*t.narrow(0, 1, 1).as_slice().unwrap(),
        &(12..24).collect::<Vec<u8>>()[..]
    );
    assert_eq!(t.narrow(1, 1, 0).as_slice().unwrap().len(), 0);
    assert_eq!(
        &*t.select(1, 2).select(0, 1).as_slice().unwrap(),
        &[20, 21, 22, 23]
    );
    let z = DynTensor::<u8>::zeros(&[0]);
    assert!(z.as_slice().unwrap().is_empty());
}
