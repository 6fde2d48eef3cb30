use modelctx::macros::tool;

/// A typo in an option's name.
#[tool(nme = "x")]
fn typo() -> String {
    String::new()
}

/// A flag given a string.
#[tool(read_only = "yes")]
fn string_flag() -> String {
    String::new()
}

/// The spec's field name rather than the option's.
#[tool(destructive_hint = false)]
fn spec_name() -> String {
    String::new()
}

/// A number where a string goes.
#[tool(title = 3)]
fn number_title() -> String {
    String::new()
}

/// A task support that does not exist.
#[tool(task_support = "sometimes")]
fn bad_task_support() -> String {
    String::new()
}

/// A schema given as a string rather than a function.
#[tool(output_schema = "{}")]
fn schema_string() -> String {
    String::new()
}

/// An option given twice.
#[tool(name = "a", name = "b")]
fn twice() -> String {
    String::new()
}

fn main() {}
