//! The macro that writes the builders' one-member setters once.

/// Declares `#[must_use]` builder methods inside an `impl` block, each with the doc
/// given before it: `name(arg: T) => member = value;` takes `arg` and sets
/// `self.member` to `value`.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) => $member:ident = $value:expr;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$member = $value;
            self
        }
    )*};
}

pub(crate) use setters;
