//! The macro that writes the stores' configurations once.

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

pub(crate) use config;
