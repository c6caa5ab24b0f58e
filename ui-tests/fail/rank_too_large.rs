// Broadcasting two rank-7 tensors with no common dim would give rank 14.
use namedtensor::named::Broadcast;

namedtensor::dims! { A, B, C, D, E, F, G, H, I, J, K, L, M, N }

fn main() {
    let _ = <(A, B, C, D, E, F, G) as Broadcast<(H, I, J, K, L, M, N)>>::LHS;
}
