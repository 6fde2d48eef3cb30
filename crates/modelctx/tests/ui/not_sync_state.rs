use std::cell::Cell;

use modelctx::macros::tools;

/// `Cell` is not `Sync`: a `&Counter` cannot be shared across threads.
struct Counter {
    total: Cell<u64>,
}

#[tools]
impl Counter {
    /// Bumps the total.
    #[tool]
    async fn bump(&self) -> String {
        self.total.set(self.total.get() + 1);
        self.total.get().to_string()
    }
}

fn main() {}
