//! Compile-time checks of the name algebra: every rule has a `fail/` case whose `.stderr` is
//! the message a user sees; `pass/` shows the idioms that compile. Regenerate the `.stderr`
//! files with `TRYBUILD=overwrite cargo test -p namedtensor-ui-tests`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("fail/*.rs");
    cases.pass("pass/*.rs");
}
