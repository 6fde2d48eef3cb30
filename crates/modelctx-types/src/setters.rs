//! The macros that write the wire types' repeated parts once: the `with_*` setters of
//! optional members ([`setters!`]), structs of optional members only
//! ([`optional_members!`]), the derives and attributes every wire struct has
//! ([`wire_struct!`]), and unions told apart by their members ([`untagged_union!`]).

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

/// Declares a struct whose members are all optional (written only when set): the
/// struct, `Default`, `new()` (no member set) and each member's setter, given as a
/// [`setters!`] entry of the `impl Into` form (`meta,` first for the usual `_meta`); a
/// last member after `..` is the
/// flattened [`JsonObject`](crate::JsonObject) of the keys this SDK does not know. The
/// items after `new;` join the `impl` block.
macro_rules! optional_members {
    (
        $(#[$attr:meta])*
        pub struct $name:ident { meta, $($body:tt)* }
        $($rest:tt)*
    ) => {
        $crate::setters::optional_members! {
            $(#[$attr])*
            pub struct $name {
                /// Metadata.
                #[serde(rename = "_meta")]
                with_meta(meta: impl Into<$crate::common::Meta>),
                $($body)*
            }
            $($rest)*
        }
    };
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_attr:meta])*
                $setter:ident($field:ident: impl Into<$ty:ty>) $($note:literal)?,
            )*
            $(.. $(#[$extra_attr:meta])* $extra:ident,)?
        }
        $(#[$new_doc:meta])*
        new;
        $($items:tt)*
    ) => {
        $crate::setters::wire_struct! {
            $(#[$attr])*
            #[derive(Default)]
            pub struct $name {
                $(
                    $(#[$field_attr])*
                    #[serde(default, skip_serializing_if = "Option::is_none")]
                    pub $field: Option<$ty>,
                )*
                $(
                    $(#[$extra_attr])*
                    #[serde(flatten)]
                    pub $extra: $crate::base::JsonObject,
                )?
            }
        }

        impl $name {
            $(#[$new_doc])*
            pub fn new() -> Self {
                Self::default()
            }

            $crate::setters::setters! {
                $($setter($field: impl Into<$ty>) $($note)?,)*
            }

            $($items)*
        }
    };
}

/// Declares a wire struct: the attributes given, then what every wire struct has —
/// `Debug, Clone, PartialEq, Serialize, Deserialize`, camelCase member names and
/// `#[non_exhaustive]`. A body that starts with `meta,` starts with the usual `_meta`.
macro_rules! wire_struct {
    ($(#[$attr:meta])* pub struct $name:ident { meta, $($body:tt)* }) => {
        $crate::setters::wire_struct! {
            $(#[$attr])*
            pub struct $name {
                /// Metadata.
                #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
                pub meta: Option<$crate::common::Meta>,
                $($body)*
            }
        }
    };
    ($(#[$attr:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct $name { $($body)* }
    };
}

/// Declares a union told apart by its members rather than by a tag: the enum as
/// written, its `Serialize` (a variant is written as its value) and `From` each
/// variant's type, unless the declaration ends with `no From;`. The `Deserialize`, which
/// picks the variant, is written beside it.
macro_rules! untagged_union {
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            $($(#[$variant_attr:meta])* $variant:ident($ty:ty),)+
        }
        $(no $from:ident;)?
    ) => {
        $(#[$attr])*
        pub enum $name {
            $($(#[$variant_attr])* $variant($ty),)+
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$variant(value) => ::serde::Serialize::serialize(value, serializer),)+
                }
            }
        }

        $crate::setters::untagged_union!(@from [$($from)?] $name $($variant($ty))+);
    };
    (@from [] $name:ident $($variant:ident($ty:ty))+) => {$(
        impl From<$ty> for $name {
            fn from(value: $ty) -> Self {
                Self::$variant(value)
            }
        }
    )+};
    (@from [From] $name:ident $($variant:ident($ty:ty))+) => {};
}

pub(crate) use {optional_members, setters, untagged_union, wire_struct};
