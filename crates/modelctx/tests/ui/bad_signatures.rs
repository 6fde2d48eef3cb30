use modelctx::macros::tool;

/// Not async.
#[tool]
fn sync_tool(n: u32) -> String {
    n.to_string()
}

/// Borrows an argument.
#[tool]
async fn borrowed(name: &str) -> String {
    name.to_owned()
}

/// Returns nothing.
#[tool]
async fn nothing(n: u32) {
    let _ = n;
}

fn main() {}
