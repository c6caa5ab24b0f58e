// After `x.mask_to(Batch)`, code that receives `x` cannot name `Batch`.
use namedtensor::named::{MaskTo, ReduceOver};

namedtensor::dims! { Batch, Seq, Hidden }

type X = (Batch, Seq, Hidden);
type Visible = <X as MaskTo<Batch>>::Out; // (Seq, Hidden)
type Private = <X as MaskTo<Batch>>::Private; // (Batch,)

fn main() {
    let _ = <Visible as ReduceOver<Batch, Private>>::AXES;
}
