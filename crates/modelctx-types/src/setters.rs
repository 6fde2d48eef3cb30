//! The `with_*` setters of optional members, declared by the [`setters!`] macro
//! instead of written out one method at a time.

/// Declares `#[must_use]` setters of `Option` fields inside an `impl` block, one
/// entry each, separated by commas:
/// - `with_x(x: impl Into<T>)` sets `self.x = Some(x.into())`;
/// - `with_x(x: T)` sets `self.x = Some(x)`.
///
/// Each is documented "Sets `x`."; a string after an entry adds a note in
/// parentheses ("Sets `x` (2026-07-28).").
macro_rules! setters {
    () => {};
    ($name:ident($field:ident: impl Into<$t:ty>) $($note:literal)? $(, $($rest:tt)*)?) => {
        #[doc = concat!("Sets `", stringify!($field), "`", $(" (", $note, ")",)? ".")]
        #[must_use]
        pub fn $name(mut self, $field: impl Into<$t>) -> Self {
            self.$field = Some($field.into());
            self
        }
        $crate::setters::setters!($($($rest)*)?);
    };
    ($name:ident($field:ident: $t:ty) $($note:literal)? $(, $($rest:tt)*)?) => {
        #[doc = concat!("Sets `", stringify!($field), "`", $(" (", $note, ")",)? ".")]
        #[must_use]
        pub fn $name(mut self, $field: $t) -> Self {
            self.$field = Some($field);
            self
        }
        $crate::setters::setters!($($($rest)*)?);
    };
}

pub(crate) use setters;
