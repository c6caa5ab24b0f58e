//! `Display` in PyTorch's format and `Debug` showing the layout.
//!
//! The rules follow PyTorch's printing defaults: precision 4, line width 80, tensors of more
//! than 1000 elements summarised with the first and last 3 entries of each long dim. Float
//! tensors whose non-zero finite values are all integers print as `4.`; a ratio above 1000
//! between the largest and smallest magnitude, a magnitude above 1e8 or (for non-integers) one
//! below 1e-4 switches to scientific notation. The dtype is shown unless it is float32, int64
//! or bool, as PyTorch does.

use super::DynTensor;
use crate::backend::device::Device;
use crate::dtype::{DType, Element};
use std::fmt;

const PRECISION: usize = 4;
const LINE_WIDTH: usize = 80;
const THRESHOLD: usize = 1000;
const EDGE_ITEMS: usize = 3;

/// How every element of one printed tensor is formatted, decided from all of them.
struct Formatter {
    float: bool,
    int_mode: bool,
    sci_mode: bool,
    width: usize,
}

impl Formatter {
    fn new<E: Element>(values: &[E]) -> Formatter {
        let mut f = Formatter {
            float: E::DTYPE.is_float(),
            int_mode: true,
            sci_mode: false,
            width: 1,
        };
        if !f.float {
            f.width = values
                .iter()
                .map(|v| f.format_raw(*v).len())
                .max()
                .unwrap_or(1);
            return f;
        }
        let finite: Vec<f64> = values
            .iter()
            .map(|v| v.to_f64())
            .filter(|v| v.is_finite() && *v != 0.0)
            .collect();
        if finite.is_empty() {
            return f;
        }
        let max = finite.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let min = finite.iter().fold(f64::INFINITY, |m, v| m.min(v.abs()));
        f.int_mode = finite.iter().all(|v| v.ceil() == *v);
        f.sci_mode = max / min > 1000.0 || max > 1e8 || (!f.int_mode && min < 1e-4);
        f.width = finite
            .iter()
            .map(|&v| f.format_f64(v).len())
            .max()
            .unwrap_or(1);
        f
    }

    fn format_f64(&self, v: f64) -> String {
        if v.is_nan() {
            return "nan".into();
        }
        if v.is_infinite() {
            return if v > 0.0 { "inf".into() } else { "-inf".into() };
        }
        if self.sci_mode {
            python_exp(v)
        } else if self.int_mode {
            format!("{v:.0}.")
        } else {
            format!("{v:.PRECISION$}")
        }
    }

    fn format_raw<E: Element>(&self, v: E) -> String {
        if self.float {
            self.format_f64(v.to_f64())
        } else if E::DTYPE == DType::Bool {
            if v.to_i64() != 0 { "True" } else { "False" }.to_string()
        } else {
            v.to_string()
        }
    }

    fn format<E: Element>(&self, v: E) -> String {
        let s = self.format_raw(v);
        format!("{s:>width$}", width = self.width)
    }
}

/// Python's `{:.4e}`: a mantissa with 4 decimals and an exponent of at least two digits.
fn python_exp(v: f64) -> String {
    let s = format!("{v:.PRECISION$e}");
    let (mantissa, exp) = s.split_once('e').expect("exponent format has an 'e'");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// The printed part of a tensor: all of it, or its summary.
struct Printed<E> {
    shape: Vec<usize>,
    /// Per dim, the indices printed and whether an ellipsis stands between them.
    kept: Vec<(Vec<usize>, bool)>,
    /// The printed values in row-major order of `kept`.
    values: Vec<E>,
}

impl<E: Element> Printed<E> {
    fn of(t: &DynTensor<E>) -> Printed<E> {
        let summarize = t.numel() > THRESHOLD;
        let kept: Vec<(Vec<usize>, bool)> = t
            .shape()
            .iter()
            .map(|&n| {
                if summarize && n > 2 * EDGE_ITEMS {
                    let idx = (0..EDGE_ITEMS).chain(n - EDGE_ITEMS..n).collect();
                    (idx, true)
                } else {
                    ((0..n).collect(), false)
                }
            })
            .collect();
        let values = {
            let guard = t.storage().read();
            match guard.cpu("display") {
                Ok(data) => gather_kept(data, t, &kept),
                Err(_) => Vec::new(),
            }
        };
        Printed {
            shape: t.shape().to_vec(),
            kept,
            values,
        }
    }

    /// Writes the nested brackets of dims `dim..` starting at value `*next`.
    fn write(&self, out: &mut String, f: &Formatter, dim: usize, indent: usize, next: &mut usize) {
        let rank = self.shape.len();
        if dim == rank {
            out.push_str(&f.format(self.values[*next]));
            *next += 1;
            return;
        }
        let (idx, ellipsis) = &self.kept[dim];
        let half = if *ellipsis { EDGE_ITEMS } else { idx.len() };
        out.push('[');
        if dim + 1 == rank {
            // A row: elements wrapped at the line width.
            let mut items: Vec<String> = Vec::with_capacity(idx.len() + 1);
            for k in 0..idx.len() {
                if *ellipsis && k == half {
                    items.push(" ...".to_string());
                }
                items.push(f.format(self.values[*next]));
                *next += 1;
            }
            let per_line = ((LINE_WIDTH.saturating_sub(indent)) / (f.width + 2)).max(1);
            let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
            out.push_str(&lines.join(&format!(",\n{}", " ".repeat(indent + 1))));
        } else {
            let sep = format!(",{}{}", "\n".repeat(rank - dim - 1), " ".repeat(indent + 1));
            for k in 0..idx.len() {
                if k > 0 {
                    out.push_str(&sep);
                }
                if *ellipsis && k == half {
                    out.push_str("...");
                    out.push_str(&sep);
                }
                self.write(out, f, dim + 1, indent + 1, next);
            }
        }
        out.push(']');
    }
}

fn gather_kept<E: Element>(data: &[E], t: &DynTensor<E>, kept: &[(Vec<usize>, bool)]) -> Vec<E> {
    let mut values = Vec::new();
    let mut idx = vec![0usize; kept.len()];
    if kept.iter().any(|(k, _)| k.is_empty()) {
        return values;
    }
    loop {
        let pos: usize = t.storage_offset()
            + idx
                .iter()
                .zip(kept)
                .zip(t.stride())
                .map(|((&i, (k, _)), &s)| k[i] * s)
                .sum::<usize>();
        values.push(data[pos]);
        let mut d = kept.len();
        loop {
            if d == 0 {
                return values;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < kept[d].0.len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

impl<E: Element> fmt::Display for DynTensor<E> {
    /// ```
    /// let t = namedtensor::tensor!([[4., 1.], [5., 3.]]);
    /// assert_eq!(t.to_string(), "tensor([[4., 1.],\n        [5., 3.]])");
    /// let i = namedtensor::DynTensor::<i32>::arange(0, 3, 1);
    /// assert_eq!(i.to_string(), "tensor([0, 1, 2], dtype=torch.int32)");
    /// let e = namedtensor::DynTensor::<i64>::zeros(&[0]);
    /// assert_eq!(e.to_string(), "tensor([], dtype=torch.int64)");
    /// let w = namedtensor::tensor!([1., 2.]).requires_grad_(true);
    /// assert_eq!(w.to_string(), "tensor([1., 2.], requires_grad=True)");
    /// assert_eq!(w.exp().to_string(), "tensor([2.7183, 7.3891], grad_fn=<ExpBackward0>)");
    /// ```
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        const PREFIX: &str = "tensor(";
        let indent = PREFIX.len();
        let mut s = String::from(PREFIX);
        let mut suffixes = Vec::new();
        if let Device::Cuda(i) = self.device() {
            suffixes.push(format!("device='cuda:{i}'"));
        }
        if self.numel() == 0 {
            s.push_str("[]");
            if self.dim() != 1 {
                let dims: Vec<String> = self.shape().iter().map(|d| d.to_string()).collect();
                let tuple = if dims.len() == 1 {
                    format!("({},)", dims[0])
                } else {
                    format!("({})", dims.join(", "))
                };
                suffixes.push(format!("size={tuple}"));
            }
        } else {
            // Elements on a device are printed from a host copy.
            let host = match self.device() {
                Device::Cpu => Ok(self.shallow_clone()),
                _ => self.to_device(Device::Cpu),
            };
            match host {
                Ok(host) => {
                    let printed = Printed::of(&host);
                    let f = Formatter::new(&printed.values);
                    let mut next = 0;
                    printed.write(&mut s, &f, 0, indent, &mut next);
                }
                Err(e) => s.push_str(&format!("<elements unreadable: {e}>")),
            }
        }
        // PyTorch names the dtype unless the values show it: int64 and bool elements do, but
        // an empty tensor has none, so only float32 (the default) goes unnamed there.
        let shown = if self.numel() == 0 {
            matches!(E::DTYPE, DType::F32)
        } else {
            matches!(E::DTYPE, DType::F32 | DType::I64 | DType::Bool)
        };
        if !shown {
            suffixes.push(format!("dtype=torch.{}", E::DTYPE.name()));
        }
        match self.grad_fn() {
            Some(op) => suffixes.push(format!("grad_fn=<{}>", backward_name(op))),
            None if self.requires_grad() => suffixes.push("requires_grad=True".to_string()),
            None => {}
        }
        // PyTorch measures the last line as its length plus 2; kept for identical wrapping.
        let mut last_line = match s.rfind('\n') {
            Some(p) => s.len() - p + 1,
            None => s.len() + 2,
        };
        for suffix in suffixes {
            if last_line + suffix.len() + 2 > LINE_WIDTH {
                s.push_str(",\n");
                s.push_str(&" ".repeat(indent));
                last_line = indent + suffix.len();
            } else {
                s.push_str(", ");
                last_line += suffix.len() + 2;
            }
            s.push_str(&suffix);
        }
        s.push(')');
        out.write_str(&s)
    }
}

impl<E: Element> fmt::Debug for DynTensor<E> {
    /// ```
    /// let t = namedtensor::DynTensor::<f32>::zeros(&[3, 2]).t();
    /// assert_eq!(
    ///     format!("{t:?}"),
    ///     "DynTensor { shape: [2, 3], strides: [1, 2], offset: 0, dtype: float32, device: cpu }"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DynTensor {{ shape: {:?}, strides: {:?}, offset: {}, dtype: {}, device: {} }}",
            self.shape(),
            self.stride(),
            self.storage_offset(),
            E::DTYPE,
            self.device()
        )
    }
}

/// PyTorch's class name for the backward node of op `op` (`exp` → `ExpBackward0`): its name in
/// CamelCase, except where PyTorch names the node after another op.
fn backward_name(op: &str) -> String {
    let base = match op {
        "to_dtype" | "to_device" => "_to_copy",
        "contiguous" => "clone",
        "narrow" | "slice" | "index" => "slice",
        "reshape" | "flatten" => "view",
        "matmul" => "mm",
        other => other,
    };
    let mut name: String = base
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    name.push_str("Backward0");
    name
}
