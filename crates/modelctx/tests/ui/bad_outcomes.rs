use modelctx::macros::{prompt, resource, resource_template, tool};

/// A number is not a prompt.
#[prompt]
fn count() -> u32 {
    3
}

/// Raw bytes are not contents (`Blob` is).
#[resource(uri = "file:///a.bin")]
fn bytes() -> Vec<u8> {
    vec![1, 2]
}

/// A list is not parsed from a URI.
#[resource_template(uri_template = "tags://{tags}")]
fn tagged(tags: Vec<String>) -> String {
    tags.join(",")
}

fn not_meta() -> String {
    String::new()
}

/// `meta` names a function that does not return a `Meta`.
#[tool(meta = not_meta)]
fn with_meta() -> String {
    String::new()
}

fn main() {
    let _ = (count_prompt(), bytes_resource(), tagged_template(), with_meta_tool());
}
