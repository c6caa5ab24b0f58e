// A model written as a struct of named layers: the types say what each step does to dims.
use namedtensor::Tensor;
use namedtensor::nn::{Dropout, Embedding, LayerNorm, Linear, Module, Visitor, loss};
use namedtensor::optim::{Adam, AdamConfig, Optimizer};

namedtensor::dims! { Batch, Seq, Vocab, Model, Classes }

struct Classifier {
    embed: Embedding<Vocab, Model>,
    norm: LayerNorm<Model>,
    drop: Dropout,
    head: Linear<Model, Classes>,
}

impl Module<f32> for Classifier {
    fn visit(&self, v: &mut Visitor<'_, f32>) {
        v.module("embed", &self.embed);
        v.module("norm", &self.norm);
        v.module("drop", &self.drop);
        v.module("head", &self.head);
    }
}

impl Classifier {
    fn forward(&self, ids: &Tensor<i64, (Batch, Seq)>) -> Tensor<f32, (Batch, Classes)> {
        let x: Tensor<f32, (Batch, Seq, Model)> = self
            .drop
            .forward(&self.norm.forward(&self.embed.forward(ids)));
        self.head.forward(&x.mean::<Seq>())
    }
}

fn main() {
    let model = Classifier {
        embed: Embedding::seeded(20, 8, 0),
        norm: LayerNorm::new(8),
        drop: Dropout::seeded(0.1, 1),
        head: Linear::seeded(8, 3, 2),
    };
    let mut opt = Adam::new(model.parameters(), AdamConfig::adamw());
    let ids = Tensor::<i64, (Batch, Seq)>::zeros([2, 5]);
    let labels = Tensor::<i64, (Batch,)>::zeros([2]);
    let l = loss::cross_entropy(&model.forward(&ids), Classes, &labels);
    l.backward();
    opt.step().unwrap();
}
