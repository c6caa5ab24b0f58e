//! Compile-time checks of the name algebra: every rule has a `fail/` case whose `.stderr` is
//! the message a user sees. The idioms that compile, `pass/`, are this crate's other tests
//! (see Cargo.toml). Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p namedtensor-ui-tests --test ui`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("fail/*.rs");
}
