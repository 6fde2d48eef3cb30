use modelctx::macros::prompt;

/// A completion for an argument the prompt does not have.
#[prompt(complete(langauge = languages))]
fn review(language: String) -> String {
    language
}

/// A borrowed argument.
#[prompt]
fn borrowed(topic: &str) -> String {
    topic.to_owned()
}

/// Completions written as a value.
#[prompt(complete = languages)]
fn value_complete(language: String) -> String {
    language
}

fn main() {}
