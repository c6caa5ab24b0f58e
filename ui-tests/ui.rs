//! Compile-time checks of the name algebra: every rule has a `ui-tests/fail` case whose
//! `.stderr` is the message a user sees; `ui-tests/pass` shows the idioms that compile.
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui-tests/fail/*.rs");
    cases.pass("ui-tests/pass/*.rs");
}
