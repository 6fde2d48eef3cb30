use modelctx::macros::tool;

/// Returns a list of strings: not a tool's outcome (`Json<Vec<String>>` would be).
#[tool]
fn names(n: u32) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

fn main() {
    let _ = names_tool();
}
