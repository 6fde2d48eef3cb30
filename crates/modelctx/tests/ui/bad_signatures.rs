use modelctx::macros::tool;

/// Borrows an argument.
#[tool]
async fn borrowed(name: &str) -> String {
    name.to_owned()
}

/// Returns a borrowed value.
#[tool]
fn shout(name: String) -> &str {
    Box::leak(name.into_boxed_str())
}

fn main() {}
