//! The macro that writes the builder methods of the extension's data types once.

/// Declares `#[must_use]` builder methods inside an `impl` block, each with the doc
/// given before it, separated by `;`:
/// - `field(arg: T)` sets `self.field = Some(arg.into())` (for an argument of the
///   member's own type, `into` is the identity);
/// - `field(arg: impl IntoIterator<Item = T>) collect` sets `self.field` to `Some` of
///   the items collected;
/// - `name(arg: T) push list` pushes `arg.into()` onto `self.list`;
/// - `flag field` sets `self.field = true`.
macro_rules! builder_methods {
    () => {};
    ($(#[$doc:meta])* $field:ident($arg:ident: $ty:ty); $($rest:tt)*) => {
        $(#[$doc])*
        #[must_use]
        pub fn $field(mut self, $arg: $ty) -> Self {
            self.$field = Some(::core::convert::Into::into($arg));
            self
        }
        $crate::builder::builder_methods!($($rest)*);
    };
    ($(#[$doc:meta])* $field:ident($arg:ident: $ty:ty) collect; $($rest:tt)*) => {
        $(#[$doc])*
        #[must_use]
        pub fn $field(mut self, $arg: $ty) -> Self {
            self.$field = Some($arg.into_iter().collect());
            self
        }
        $crate::builder::builder_methods!($($rest)*);
    };
    ($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) push $list:ident; $($rest:tt)*) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$list.push(::core::convert::Into::into($arg));
            self
        }
        $crate::builder::builder_methods!($($rest)*);
    };
    ($(#[$doc:meta])* flag $field:ident; $($rest:tt)*) => {
        $(#[$doc])*
        #[must_use]
        pub fn $field(mut self) -> Self {
            self.$field = true;
            self
        }
        $crate::builder::builder_methods!($($rest)*);
    };
}

pub(crate) use builder_methods;
