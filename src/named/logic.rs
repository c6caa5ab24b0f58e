//! Type-level booleans: typenum's [`B0`] (false) and [`B1`] (true) with the connectives
//! and the if-then-else the name algebra needs.
//!
//! ```
//! use namedtensor::named::logic::{Bool, B0, B1};
//! assert!(<<B1 as Bool>::And<B0> as Bool>::Not::VALUE);
//! let _: <B1 as Bool>::If<u8, String> = 7u8;
//! ```

pub use typenum::{B0, B1};

/// A type-level boolean, [`B0`] or [`B1`].
///
/// [`If`](Bool::If) chooses between two types, but both branches are still types the
/// compiler must be able to write down: the algebra built on it is *total*, every
/// operation yields a type for every input, and a rule is broken only when an assertion
/// trait (see [`assert`](super::assert)) is not implemented for the result.
///
/// ```
/// use namedtensor::named::logic::{Bool, B0, B1};
/// assert!(!<B0 as Bool>::VALUE);
/// assert!(<<B0 as Bool>::Or<B1> as Bool>::VALUE);
/// ```
pub trait Bool {
    /// The value at run time.
    const VALUE: bool;
    /// Negation.
    type Not: Bool;
    /// Conjunction.
    type And<X: Bool>: Bool;
    /// Disjunction.
    type Or<X: Bool>: Bool;
    /// `Then` if true, `Else` if false.
    type If<Then, Else>;
}

impl Bool for B1 {
    const VALUE: bool = true;
    type Not = B0;
    type And<X: Bool> = X;
    type Or<X: Bool> = B1;
    type If<Then, Else> = Then;
}

impl Bool for B0 {
    const VALUE: bool = false;
    type Not = B1;
    type And<X: Bool> = B0;
    type Or<X: Bool> = X;
    type If<Then, Else> = Else;
}
