//! The safetensors loader on arbitrary bytes: it returns an error or tensors, never panics,
//! overflows or reads out of bounds, and what it returns can be used (read back, reduced,
//! copied, printed).
#![no_main]

use libfuzzer_sys::fuzz_target;
use namedtensor::{DynTensor, Element, load_tensors_from_bytes};

fn exercise<E: Element>(data: &[u8]) {
    let Ok(tensors) = load_tensors_from_bytes::<E>(data) else {
        return;
    };
    for (_, t) in tensors {
        let t: DynTensor<E> = t;
        assert_eq!(t.to_vec().len(), t.numel());
        let _ = t.try_contiguous().expect("a loaded tensor copies");
        let _ = t.try_sum_dims(&[], false);
        let _ = format!("{t}");
    }
}

fuzz_target!(|data: &[u8]| {
    exercise::<f32>(data);
    exercise::<f64>(data);
    exercise::<half::bf16>(data);
    exercise::<i64>(data);
    exercise::<u8>(data);
    exercise::<bool>(data);
});
