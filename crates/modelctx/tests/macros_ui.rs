//! Compile-fail tests of `#[tool]`/`#[tools]`: what a user sees when a tool's future is
//! not `Send`, or a tool function is malformed. Each case's expected compiler output
//! is its `.stderr` file (`TRYBUILD=overwrite` rewrites them after a deliberate change).

#[test]
fn misuse_is_a_readable_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
