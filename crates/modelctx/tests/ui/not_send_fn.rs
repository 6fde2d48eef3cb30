use std::rc::Rc;

use modelctx::macros::tool;

/// Holds an `Rc` across an `.await`.
#[tool]
async fn count(n: u32) -> String {
    let shared = Rc::new(n);
    tokio::task::yield_now().await;
    shared.to_string()
}

fn main() {
    let _ = count_tool();
}
