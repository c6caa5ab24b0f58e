//! `flip`, `repeat`, `tril` and `triu` against their definitions, element by element, on
//! every kind of view.

mod common;

use common::{indices, make_view, shape, view_kind};
use namedtensor::{DynTensor, ErrorKind};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn flip_reverses_the_chosen_dims(
        s in shape(0..=4, 0..5),
        mask in 0u32..16,
        kind in view_kind(),
    ) {
        let t: DynTensor<i16> = make_view(&s, kind, 1);
        let dims: Vec<isize> = (0..s.len()).filter(|&d| mask >> d & 1 == 1).map(|d| d as isize).collect();
        let out = t.flip(&dims);
        prop_assert_eq!(out.shape(), &s[..]);
        for i in indices(&s) {
            let src: Vec<usize> = i
                .iter()
                .enumerate()
                .map(|(d, &x)| if mask >> d & 1 == 1 { s[d] - 1 - x } else { x })
                .collect();
            prop_assert_eq!(out.get(&i), t.get(&src));
        }
    }

    #[test]
    fn repeat_tiles_the_tensor(
        s in shape(0..=3, 0..4),
        reps in prop::collection::vec(0usize..4, 0..=2),
        kind in view_kind(),
    ) {
        let t: DynTensor<f64> = make_view(&s, kind, 2);
        let mut repeats = reps.clone();
        repeats.extend(std::iter::repeat_n(2, s.len()));
        let lead = reps.len();
        let out = t.repeat(&repeats);
        let want_shape: Vec<usize> = repeats
            .iter()
            .enumerate()
            .map(|(d, &r)| r * if d < lead { 1 } else { s[d - lead] })
            .collect();
        prop_assert_eq!(out.shape(), &want_shape[..]);
        for i in indices(&want_shape) {
            let src: Vec<usize> = i[lead..].iter().zip(&s).map(|(&x, &n)| x % n).collect();
            prop_assert_eq!(out.get(&i), t.get(&src));
        }
    }

    #[test]
    fn tril_and_triu_keep_one_side_of_a_diagonal(
        s in shape(2..=4, 0..5),
        k in -5isize..6,
        kind in view_kind(),
    ) {
        let t: DynTensor<f32> = make_view(&s, kind, 3);
        let (lower, upper) = (t.tril(k), t.triu(k));
        let r = s.len();
        for i in indices(&s) {
            let (row, col) = (i[r - 2] as isize, i[r - 1] as isize);
            let x = t.get(&i);
            prop_assert_eq!(lower.get(&i), if col <= row + k { x } else { 0.0 });
            prop_assert_eq!(upper.get(&i), if col >= row + k { x } else { 0.0 });
        }
    }
}

#[test]
fn large_copies_across_threads() {
    namedtensor::set_num_threads(2);
    let t = DynTensor::<i32>::arange(0, 300 * 200, 1).view(&[300, 200]);
    let f = t.t().flip(&[1]);
    assert_eq!(f.get(&[3, 0]), t.get(&[299, 3]));
    assert_eq!(t.tril(0).get(&[10, 11]), 0);
    assert_eq!(t.tril(0).get(&[11, 10]), t.get(&[11, 10]));
    let r = t.repeat(&[1, 2]);
    assert_eq!(r.narrow(1, 200, 200).to_vec(), t.to_vec());
}

#[test]
fn errors() {
    let t = DynTensor::<f32>::zeros(&[2, 3]);
    assert_eq!(
        t.try_flip(&[2]).unwrap_err().kind(),
        ErrorKind::DimOutOfRange
    );
    assert_eq!(
        t.try_flip(&[0, -2]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        t.try_repeat(&[2]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        t.try_repeat(&[usize::MAX, 2]).unwrap_err().kind(),
        ErrorKind::Overflow
    );
    let v = DynTensor::<f32>::zeros(&[3]);
    assert_eq!(
        v.try_tril(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        v.try_triu(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}
