use modelctx::macros::resource_template;
use modelctx::types::Resource;

/// A listing function that forgets the `Context` and the `Result`.
fn users() -> Vec<Resource> {
    Vec::new()
}

/// A user.
#[resource_template(uri_template = "users://{id}", list = users)]
fn user(id: u32) -> String {
    id.to_string()
}

fn main() {}
