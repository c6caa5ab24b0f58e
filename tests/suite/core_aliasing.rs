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
