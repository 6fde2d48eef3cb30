//! The macros that write the stores' configurations and their `Debug` once.

/// Declares a store's configuration: the struct (`Debug, Clone`, members `pub(crate)`)
/// with each member's default value as its `Default`, then the setters, each with the
/// doc given before it: `name(arg: T, ...) => member = value, ...;` takes the arguments
/// and sets each `self.member` to its `value` (the bound the store needs applied there).
macro_rules! config {
    (
        $(#[$attr:meta])*
        pub struct $name:ident { $($field:ident: $ty:ty = $default:expr,)* }
        $(
            $(#[$doc:meta])*
            $setter:ident($($arg:ident: $arg_ty:ty),+) => $($member:ident = $value:expr),+;
        )*
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone)]
        pub struct $name {
            $(pub(crate) $field: $ty,)*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $($field: $default,)* }
            }
        }

        impl $name {
            $(
                $(#[$doc])*
                pub fn $setter(mut self, $($arg: $arg_ty),+) -> Self {
                    $(self.$member = $value;)+
                    self
                }
            )*
        }
    };
}

/// Implements `Debug` showing what is listed:
/// `debug_shows!(Type, |value| { name: &value.member, ... })` prints
/// `Type { name: ... }`, or `Type { name: ..., .. }` when the list ends with `..`.
macro_rules! debug_shows {
    ($ty:ident, |$value:ident| { $($name:ident: $shown:expr,)* .. }) => {
        $crate::config::debug_shows!(@impl $ty, $value, finish_non_exhaustive, $($name: $shown),*);
    };
    ($ty:ident, |$value:ident| { $($name:ident: $shown:expr),* $(,)? }) => {
        $crate::config::debug_shows!(@impl $ty, $value, finish, $($name: $shown),*);
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

pub(crate) use {config, debug_shows};
