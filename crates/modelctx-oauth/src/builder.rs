//! The macros that write the builders' one-member setters and the `Debug` of types
//! that show only some members once.

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

/// Implements `Debug` showing what is listed (the members left out hold secrets, or
/// nothing worth printing):
/// `debug_shows!(Type, |value| { name: &value.member, ... })` prints
/// `Type { name: ... }`, or `Type { name: ..., .. }` when the list ends with `..`.
macro_rules! debug_shows {
    ($ty:ident, |$value:ident| { $($name:ident: $shown:expr,)* .. }) => {
        $crate::builder::debug_shows!(@impl $ty, $value, finish_non_exhaustive, $($name: $shown),*);
    };
    ($ty:ident, |$value:ident| { $($name:ident: $shown:expr),* $(,)? }) => {
        $crate::builder::debug_shows!(@impl $ty, $value, finish, $($name: $shown),*);
    };
    (@impl $ty:ident, $value:ident, $finish:ident, $($name:ident: $shown:expr),*) => {
        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let $value = self;
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($name), $shown))*
                    .$finish()
            }
        }
    };
}

pub(crate) use {debug_shows, setters};
