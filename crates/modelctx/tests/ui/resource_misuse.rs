use modelctx::macros::{resource, resource_template};

/// No URI.
#[resource(mime_type = "text/plain")]
fn no_uri() -> String {
    String::new()
}

/// A fixed resource takes no arguments.
#[resource(uri = "file:///a.txt")]
fn with_argument(name: String) -> String {
    name
}

/// A variable without its parameter.
#[resource_template(uri_template = "users://{id}/posts/{post}")]
fn missing_parameter(id: u32) -> String {
    id.to_string()
}

/// A parameter without its variable.
#[resource_template(uri_template = "users://{id}")]
fn extra_parameter(id: u32, verbose: bool) -> String {
    format!("{id} {verbose}")
}

/// No variables at all.
#[resource_template(uri_template = "users://all")]
fn no_variables() -> String {
    String::new()
}

/// A resource's option on a template.
#[resource_template(uri = "users://{id}")]
fn uri_not_template(id: u32) -> String {
    id.to_string()
}

/// A completion for a variable the template does not have.
#[resource_template(uri_template = "users://{id}", complete(name = names))]
fn completes_nothing(id: u32) -> String {
    id.to_string()
}

/// A listing given as a string, not a function.
#[resource_template(uri_template = "users://{id}", list = "users")]
fn list_not_a_function(id: u32) -> String {
    id.to_string()
}

fn main() {}
