use modelctx::macros::{primitives, prompt, tools};

struct Notes;

#[primitives]
impl Notes {
    /// Takes the value.
    #[prompt]
    fn consume(self, topic: String) -> String {
        topic
    }
}

struct Tools;

#[tools]
impl Tools {
    /// A prompt among tools.
    #[prompt]
    fn ask(&self, topic: String) -> String {
        topic
    }

    /// A tool.
    #[modelctx::macros::tool]
    fn run(&self) -> String {
        String::new()
    }
}

struct Plain;

impl Plain {
    /// A method without `#[primitives]` on its block.
    #[prompt]
    fn lonely(&self) -> String {
        String::new()
    }
}

struct Twice;

#[primitives]
impl Twice {
    /// Two kinds at once.
    #[prompt]
    #[modelctx::macros::resource(uri = "twice://")]
    fn both(&self) -> String {
        String::new()
    }
}

fn main() {}
