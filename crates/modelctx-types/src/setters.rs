//! The macros that write the wire types' repeated parts once: the `with_*` setters of
//! optional members ([`setters!`]), structs of optional members only
//! ([`optional_members!`]), a wire struct with its attributes, `new` and setters
//! ([`wire_struct!`]), and unions told apart by their members ([`untagged_union!`]);
//! with the writer of numbers they use ([`ser_f64`]).

use serde::ser::Serializer;

/// Writes an `f64` that holds an integer as an integer (`3`, not `3.0`), so JSON
/// numbers survive a round trip as they were written.
pub(crate) fn ser_f64<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// [`ser_f64`] for an optional number.
pub(crate) fn ser_opt_f64<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => ser_f64(v, serializer),
        None => serializer.serialize_none(),
    }
}

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
                $($(#[$field_attr])* $field?: $ty => $setter $($note)?,)*
                $(.. $(#[$extra_attr])* $extra,)?
            }
            $(#[$new_doc])*
            new();
            $($items)*
        }
    };
}

/// Declares a wire struct once: the struct with what every wire struct has
/// (`Debug, Clone, PartialEq, Serialize, Deserialize`, camelCase member names,
/// `#[non_exhaustive]`), its `new` and its setters. Members, in wire order:
/// - `meta,`: the usual `_meta` (documented "Metadata." unless a doc is given before
///   it); `meta => with_meta,` adds its setter;
/// - `name?: T`: an optional member, `pub name: Option<T>`, written only when set and
///   `None` in `new`; `=> with_name` adds a setter taking `impl Into<T>`,
///   `=> exact with_name` one taking `T`, and a string after it a note for its doc
///   (see [`setters!`]); attributes given are kept (serde's among them); an `f64` is
///   written as an integer when it is whole, so numbers survive a round trip;
/// - `.. extra,` (last): the flattened [`JsonObject`](crate::JsonObject) of the keys
///   this SDK does not know, empty in `new`;
/// - anything else is written as given, `= value` being its value in `new`.
///
/// After the struct, `new(arg: T, ...);` (with its doc) declares `new`, each argument
/// setting the member of its name, or the members given in `new(...) { member: value };`;
/// the items that follow join the `impl` block.
macro_rules! wire_struct {
    (
        $(#[$attr:meta])*
        pub struct $name:ident { $($body:tt)* }
        $(#[$new_doc:meta])*
        new($($arg:ident: $arg_ty:ty),* $(,)?) $({ $($set:tt)* })?;
        $($items:tt)*
    ) => {
        $crate::setters::wire_struct!(@member
            [
                ($(#[$attr])* $name)
                [$(#[$new_doc])* ($($arg: $arg_ty),*) $({ $($set)* })?]
                { $($items)* }
            ]
            [] [] [] [] [] $($body)*
        );
    };
    ($(#[$attr:meta])* pub struct $name:ident { $($body:tt)* } $($items:tt)*) => {
        $crate::setters::wire_struct!(@member
            [($(#[$attr])* $name) [] { $($items)* }]
            [] [] [] [] [] $($body)*
        );
    };
    // One member at a time: [the struct's members] [the members `None` in `new`]
    // [the members' other values in `new`] [the setters] [every member's name].
    (@member $head:tt $m:tt $none:tt $init:tt $set:tt $f:tt
        meta $(=> $meta_setter:ident)?, $($rest:tt)*
    ) => {
        $crate::setters::wire_struct!(@member $head $m $none $init $set $f
            /// Metadata.
            meta $(=> $meta_setter)?, $($rest)*
        );
    };
    (@member $head:tt $m:tt $none:tt $init:tt $set:tt $f:tt
        $(#[$a:meta])+ meta $(=> $meta_setter:ident)?, $($rest:tt)*
    ) => {
        $crate::setters::wire_struct!(@member $head $m $none $init $set $f
            $(#[$a])+
            #[serde(rename = "_meta")]
            meta?: $crate::common::Meta $(=> $meta_setter)?, $($rest)*
        );
    };
    (@member $head:tt $m:tt $none:tt $init:tt $set:tt $f:tt
        $(#[$a:meta])* $field:ident ?: f64 $(=> $($setter:ident)+ $($note:literal)?)?,
        $($rest:tt)*
    ) => {
        $crate::setters::wire_struct!(@member $head $m $none $init $set $f
            $(#[$a])*
            #[serde(serialize_with = "crate::setters::ser_opt_f64")]
            $field?: ::core::primitive::f64 $(=> $($setter)+ $($note)?)?,
            $($rest)*
        );
    };
    (@member $head:tt [$($m:tt)*] [$($none:tt)*] [$($init:tt)*] [$($set:tt)*] [$($f:tt)*]
        $(#[$a:meta])* $field:ident ?: $ty:ty $(=> $($setter:ident)+ $($note:literal)?)?,
        $($rest:tt)*
    ) => {
        $crate::setters::wire_struct!(@member $head
            [$($m)*
                $(#[$a])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            ]
            [$($none)* $field] [$($init)*]
            [$($set)* $((($($setter)+) $field: $ty $(, $note)?))?]
            [$($f)* $field]
            $($rest)*
        );
    };
    (@member $head:tt $m:tt $none:tt [$($init:tt)*] $set:tt $f:tt
        .. $(#[$a:meta])* $extra:ident,
    ) => {
        $crate::setters::wire_struct!(@struct $head $m $none
            [$($init)* $extra: $crate::base::JsonObject::new(),] $set
            [$f $(#[$a])* $extra]
        );
    };
    (@member $head:tt [$($m:tt)*] [$($none:tt)*] [$($init:tt)*] [$($set:tt)*] [$($f:tt)*]
        $(#[$a:meta])* $vis:vis $field:ident: $ty:ty $(= $value:expr)?, $($rest:tt)*
    ) => {
        $crate::setters::wire_struct!(@member $head
            [$($m)* $(#[$a])* $vis $field: $ty,]
            [$($none)*] [$($init)* $($field: $value,)?] [$($set)*] [$($f)* $field]
            $($rest)*
        );
    };
    (@member $head:tt $m:tt $none:tt $init:tt $set:tt $f:tt) => {
        $crate::setters::wire_struct!(@struct $head $m $none $init $set []);
    };
    // The struct and its `impl`; with its extra member, a `Deserialize` of its own.
    (@struct [($(#[$attr:meta])* $name:ident) $new:tt { $($items:tt)* }]
        [$($m:tt)*] [$($none:ident)*] [$($init:tt)*] [$($set:tt)*] []
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct $name { $($m)* }

        $crate::setters::wire_struct!(@impl $name $new [$($none)*] [$($init)*] [$($set)*] { $($items)* });
    };
    (@struct [($(#[$attr:meta])* $name:ident) $new:tt { $($items:tt)* }]
        [$($m:tt)*] [$($none:ident)*] [$($init:tt)*] [$($set:tt)*]
        [[$($field:ident)*] $(#[$a:meta])* $extra:ident]
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct $name {
            $($m)*
            $(#[$a])*
            #[serde(flatten)]
            pub $extra: $crate::base::JsonObject,
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                // The known members, read by serde's derive under the struct's name
                // (which its errors give); the other keys go to `extra`.
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct $name { $($m)* }

                let mut $extra = $crate::base::JsonObject::new();
                let known = <$name as ::serde::Deserialize>::deserialize(
                    $crate::unknown_keys::KeepUnknown::new(deserializer, &mut $extra),
                )?;
                Ok(Self { $($field: known.$field,)* $extra })
            }
        }

        $crate::setters::wire_struct!(@impl $name $new [$($none)*] [$($init)*] [$($set)*] { $($items)* });
    };
    (@impl $name:ident $new:tt $none:tt $init:tt [$($set:tt)*] { $($items:tt)* }) => {
        impl $name {
            $crate::setters::wire_struct!(@new $new $none $init);

            $($crate::setters::wire_struct!(@setter $set);)*

            $($items)*
        }
    };
    (@setter ((exact $setter:ident) $field:ident: $ty:ty $(, $note:literal)?)) => {
        $crate::setters::setters!($setter($field: $ty) $($note)?);
    };
    (@setter (($setter:ident) $field:ident: $ty:ty $(, $note:literal)?)) => {
        $crate::setters::setters!($setter($field: impl Into<$ty>) $($note)?);
    };
    (@new [] $none:tt $init:tt) => {};
    (@new [$(#[$new_doc:meta])* ($($arg:ident: $arg_ty:ty),*)] $none:tt $init:tt) => {
        $crate::setters::wire_struct!(@new
            // For an argument of the member's own type, `into` is the identity.
            [$(#[$new_doc])* ($($arg: $arg_ty),*) {
                $($arg: ::core::convert::Into::into($arg)),*
            }]
            $none $init
        );
    };
    (@new
        [
            $(#[$new_doc:meta])*
            ($($arg:ident: $arg_ty:ty),*) { $($member:ident: $value:expr),* $(,)? }
        ]
        [$($none:ident)*] [$($init:tt)*]
    ) => {
        $(#[$new_doc])*
        pub fn new($($arg: $arg_ty),*) -> Self {
            Self {
                $($member: $value,)*
                $($init)*
                $($none: None,)*
            }
        }
    };
}

/// Declares a union told apart by its members rather than by a tag: the enum as
/// written, its `Serialize` (a variant is written as its value) and `From` each
/// variant's type, unless the declaration ends with `no From;`. The `Deserialize`, which
/// picks the variant, is either `read |map| { ... }` at the end, a block that picks it
/// from the JSON object `map`, or written beside it.
macro_rules! untagged_union {
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            $($(#[$variant_attr:meta])* $variant:ident($ty:ty),)+
        }
        $(no $from:ident;)?
        $(read |$map:ident| $read:block)?
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

        $(
            impl<'de> ::serde::Deserialize<'de> for $name {
                fn deserialize<D: ::serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> Result<Self, D::Error> {
                    let $map = <$crate::base::JsonObject as ::serde::Deserialize>::deserialize(
                        deserializer,
                    )?;
                    $read
                }
            }
        )?
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

/// Declares the `Deserialize` of types that are each one variant of a union: the union
/// is read, and any other variant is an error saying what was expected.
macro_rules! variant_of {
    ($union:ident { $($variant:ident($ty:ty) $expected:literal,)+ }) => {$(
        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                match <$union as ::serde::Deserialize>::deserialize(deserializer)? {
                    $union::$variant(value) => Ok(value),
                    _ => Err(::serde::de::Error::custom($expected)),
                }
            }
        }
    )+};
}

pub(crate) use {optional_members, setters, untagged_union, variant_of, wire_struct};

/// Writes the plain setters of a builder or a config, inside its `impl`: each row
/// `name(param: Type) { field = value }`, under its doc comment and attributes, becomes
/// `#[must_use] pub fn name(mut self, param: Type) -> Self` that sets `self.field` to
/// `value` and returns `self`. Shared by the builders and configs of the SDK's crates;
/// not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __setters {
    ($($(#[$attr:meta])* $name:ident($param:ident: $ty:ty) { $field:ident = $value:expr })*) => {
        $(
            $(#[$attr])*
            #[must_use]
            pub fn $name(mut self, $param: $ty) -> Self {
                self.$field = $value;
                self
            }
        )*
    };
}

/// Implements `Debug` showing only what is listed (the members left out hold secrets,
/// or nothing worth printing): `__debug_shows!(Type, |value| { name: &value.member, ... })`
/// prints `Type { name: ... }`, or `Type { name: ..., .. }` when the list ends with `..`.
/// Shared by the SDK's crates; not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __debug_shows {
    ($ty:ident, |$value:ident| { $($name:ident: $shown:expr,)* .. }) => {
        $crate::__debug_shows!(@impl $ty, $value, finish_non_exhaustive, $($name: $shown),*);
    };
    ($ty:ident, |$value:ident| { $($name:ident: $shown:expr),* $(,)? }) => {
        $crate::__debug_shows!(@impl $ty, $value, finish, $($name: $shown),*);
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
