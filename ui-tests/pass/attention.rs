// The attention example of "Tensor Considered Harmful", at the type level: with `Batch`
// masked, every step names only the dims it works on.
use namedtensor::named::{Broadcast, Contract, HasDim, MaskTo, Rename, names};

namedtensor::dims! { Batch, SeqLen, InHid, OutHid }

type Y = (Batch, SeqLen, InHid);
type Ht = (Batch, InHid);
type W = (InHid, OutHid);
type B = (OutHid,);

// Inside the attention function `Batch` is private.
type P = <Y as MaskTo<Batch>>::Private;
type Ym = <Y as MaskTo<Batch>>::Out; // (SeqLen, InHid)
type Hm = <Ht as MaskTo<Batch>>::Out; // (InHid,)

fn main() {
    // tmp = ht.dot(InHid, Wh)
    type Tmp = <Hm as Contract<InHid, W, P, ()>>::Out; // (OutHid,)
    // Y.dot(InHid, WY) + tmp + bM
    type Yw = <Ym as Contract<InHid, W, P, ()>>::Out; // (SeqLen, OutHid)
    type Sum = <<Yw as Broadcast<Tmp, P, P>>::Out as Broadcast<B, P, ()>>::Out;
    assert_eq!(names::<Sum>(), ["SeqLen", "OutHid"]);
    // .dot(OutHid, w).softmax(SeqLen)
    type At = <Sum as Contract<OutHid, B, P, ()>>::Out; // (SeqLen,)
    assert_eq!(<At as HasDim<SeqLen, P>>::AXIS, 1);
    // rt = Y.dot(SeqLen, at), renamed back to the hidden size
    type Rt = <Ym as Contract<SeqLen, At, P, P>>::Out; // (InHid,)
    type RtOut = <Rt as Rename<InHid, OutHid, P>>::Out;
    assert_eq!(names::<RtOut>(), ["OutHid"]);
    let plan = <Ym as Contract<SeqLen, At, P, P>>::PLAN;
    assert_eq!(
        (plan.batch, plan.lhs_free, plan.contracted, plan.rhs_free),
        (1, 1, 1, 0)
    );
}
