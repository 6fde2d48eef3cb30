//! Open string enums: a member whose standard values are known but whose type accepts
//! any string, declared by [`open_enum!`] instead of written out one impl at a time.

/// Declares a `#[non_exhaustive]` enum of wire strings with a last variant
/// `Unknown(String)` that keeps a value this SDK does not know verbatim, so reading
/// one never fails on a newer peer's value and writing it back loses nothing.
///
/// Each variant names its wire string: `Accept = "accept"`. The enum gets `as_str`
/// (the wire string), `Display`, `From<&str>`, `From<String>`, and serde impls that
/// read and write the bare string. One invocation may declare several enums.
macro_rules! open_enum {
    ($(
        $(#[$attr:meta])*
        pub enum $name:ident {
            $($(#[$vattr:meta])* $variant:ident = $wire:literal,)+
        }
    )+) => {$(
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vattr])* $variant,)+
            /// A value this SDK does not know, kept verbatim.
            Unknown(String),
        }

        impl $name {
            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)+
                    Self::Unknown(s) => s,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $($wire => Self::$variant,)+
                    other => Self::Unknown(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $($wire => Self::$variant,)+
                    _ => Self::Unknown(s),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                <String as ::serde::Deserialize>::deserialize(deserializer).map(Self::from)
            }
        }
    )+};
}

pub(crate) use open_enum;
