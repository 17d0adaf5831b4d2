//! What the typed API refuses at compile time, with the compiler's message: a component
//! field of a type ecsql has no column for, and a query naming one component twice once
//! as `&mut` (an alias, found when the query's constant access is evaluated, which takes
//! a build rather than a check: hence the one case that must compile).

#[test]
fn misuse_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    // Builds (not only checks) every case: a query's access is a constant evaluated as
    // the code is generated.
    t.pass("tests/ui/pass/*.rs");
}
