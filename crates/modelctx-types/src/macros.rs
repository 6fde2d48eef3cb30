//! Internal macros that stamp out the repetitive parts of the wire types.

/// A zero-sized marker that serialises as one fixed string and only deserialises from it
/// (the `type` of a content block, the `method` of a request, `"jsonrpc": "2.0"`).
macro_rules! tag {
    ($name:ident = $value:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub(crate) struct $name;

        impl $name {
            /// The fixed string.
            #[allow(dead_code)]
            pub(crate) const VALUE: &'static str = $value;
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(
                    deserializer,
                )?;
                if s == $value {
                    Ok(Self)
                } else {
                    Err(::serde::de::Error::invalid_value(
                        ::serde::de::Unexpected::Str(&s),
                        &concat!("\"", $value, "\""),
                    ))
                }
            }
        }
    };
}

/// A string enum the specification may extend: known values are variants, any other
/// string is kept verbatim in `Unknown`.
macro_rules! open_enum {
    (
        $(#[$m:meta])*
        $name:ident {
            $( $(#[$vm:meta])* $variant:ident = $value:literal ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vm])* $variant, )*
            /// A value this SDK does not know, kept verbatim.
            Unknown(String),
        }

        impl $name {
            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )*
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
                    $( $value => Self::$variant, )*
                    other => Self::Unknown(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $( $value => Self::$variant, )*
                    _ => Self::Unknown(s),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                <String as ::serde::Deserialize>::deserialize(deserializer).map(Self::from)
            }
        }
    };
}

/// `with_*` builder methods that set an optional field.
macro_rules! with {
    ($( $fn:ident => $field:ident : $ty:ty ),* $(,)?) => {
        $(
            #[doc = concat!("Sets `", stringify!($field), "`.")]
            #[must_use]
            pub fn $fn(mut self, $field: impl Into<$ty>) -> Self {
                self.$field = Some($field.into());
                self
            }
        )*
    };
}

/// A request definition: `{"jsonrpc":"2.0","id":..,"method":<fixed>,"params":..}`,
/// with its [`RequestMethod`](crate::RequestMethod) impl.
macro_rules! request {
    (
        $(#[$m:meta])*
        $name:ident, $tag:ident = $method:literal,
        params: $params:ty, result: $result:ty
    ) => {
        tag!($tag = $method);

        $(#[$m])*
        ///
        /// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
        /// are absent only in the bare `{method, params}` form of earlier revisions'
        /// schemas, which is read and written back as it came.
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[non_exhaustive]
        pub struct $name {
            #[serde(default, skip_serializing_if = "Option::is_none")]
            jsonrpc: Option<crate::base::JsonRpcTag>,
            /// The request id.
            #[serde(
                default,
                skip_serializing_if = "Option::is_none",
                deserialize_with = "crate::base::de_some_id"
            )]
            pub id: Option<crate::RequestId>,
            method: $tag,
            /// The parameters.
            pub params: $params,
        }

        impl $name {
            #[doc = concat!("The method name, `\"", $method, "\"`.")]
            pub const METHOD: &'static str = $method;

            /// A request with an id and parameters.
            pub fn new(id: impl Into<crate::RequestId>, params: $params) -> Self {
                Self {
                    jsonrpc: Some(crate::base::JsonRpcTag),
                    id: Some(id.into()),
                    method: $tag,
                    params,
                }
            }

            /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
            /// schemas).
            pub fn without_id(params: $params) -> Self {
                Self {
                    jsonrpc: None,
                    id: None,
                    method: $tag,
                    params,
                }
            }
        }

        impl crate::RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    };
    (
        $(#[$m:meta])*
        $name:ident, $tag:ident = $method:literal,
        optional params: $params:ty, result: $result:ty
    ) => {
        tag!($tag = $method);

        $(#[$m])*
        ///
        /// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both
        /// are absent only in the bare `{method, params}` form of earlier revisions'
        /// schemas, which is read and written back as it came.
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[non_exhaustive]
        pub struct $name {
            #[serde(default, skip_serializing_if = "Option::is_none")]
            jsonrpc: Option<crate::base::JsonRpcTag>,
            /// The request id.
            #[serde(
                default,
                skip_serializing_if = "Option::is_none",
                deserialize_with = "crate::base::de_some_id"
            )]
            pub id: Option<crate::RequestId>,
            method: $tag,
            /// The parameters, which may be omitted.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub params: Option<$params>,
        }

        impl $name {
            #[doc = concat!("The method name, `\"", $method, "\"`.")]
            pub const METHOD: &'static str = $method;

            /// A request with an id and no parameters.
            pub fn new(id: impl Into<crate::RequestId>) -> Self {
                Self {
                    jsonrpc: Some(crate::base::JsonRpcTag),
                    id: Some(id.into()),
                    method: $tag,
                    params: None,
                }
            }

            /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
            /// schemas).
            pub fn without_id() -> Self {
                Self {
                    jsonrpc: None,
                    id: None,
                    method: $tag,
                    params: None,
                }
            }

            /// Sets the parameters.
            #[must_use]
            pub fn with_params(mut self, params: $params) -> Self {
                self.params = Some(params);
                self
            }
        }

        impl crate::RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = Option<$params>;
            type Result = $result;
        }
    };
}

/// A notification definition: `{"jsonrpc":"2.0","method":<fixed>,"params":..}`, with
/// its [`NotificationMethod`](crate::NotificationMethod) impl.
macro_rules! notification {
    (
        $(#[$m:meta])*
        $name:ident, $tag:ident = $method:literal, params: $params:ty
    ) => {
        tag!($tag = $method);

        $(#[$m])*
        ///
        /// `"jsonrpc": "2.0"` is written by the constructors; it is absent only in the
        /// bare `{method, params}` form of earlier revisions' schemas, which is read and
        /// written back as it came.
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[non_exhaustive]
        pub struct $name {
            #[serde(default, skip_serializing_if = "Option::is_none")]
            jsonrpc: Option<crate::base::JsonRpcTag>,
            method: $tag,
            /// The parameters.
            pub params: $params,
        }

        impl $name {
            #[doc = concat!("The method name, `\"", $method, "\"`.")]
            pub const METHOD: &'static str = $method;

            /// A notification with these parameters.
            pub fn new(params: $params) -> Self {
                Self {
                    jsonrpc: Some(crate::base::JsonRpcTag),
                    method: $tag,
                    params,
                }
            }
        }

        impl crate::NotificationMethod for $name {
            const METHOD: &'static str = $method;
            type Params = $params;
        }
    };
    (
        $(#[$m:meta])*
        $name:ident, $tag:ident = $method:literal, optional params: $params:ty
    ) => {
        tag!($tag = $method);

        $(#[$m])*
        ///
        /// `"jsonrpc": "2.0"` is written by the constructors; it is absent only in the
        /// bare `{method, params}` form of earlier revisions' schemas, which is read and
        /// written back as it came.
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[non_exhaustive]
        pub struct $name {
            #[serde(default, skip_serializing_if = "Option::is_none")]
            jsonrpc: Option<crate::base::JsonRpcTag>,
            method: $tag,
            /// The parameters, which may be omitted.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub params: Option<$params>,
        }

        impl $name {
            #[doc = concat!("The method name, `\"", $method, "\"`.")]
            pub const METHOD: &'static str = $method;

            /// A notification without parameters.
            pub fn new() -> Self {
                Self {
                    jsonrpc: Some(crate::base::JsonRpcTag),
                    method: $tag,
                    params: None,
                }
            }

            /// Sets the parameters.
            #[must_use]
            pub fn with_params(mut self, params: $params) -> Self {
                self.params = Some(params);
                self
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl crate::NotificationMethod for $name {
            const METHOD: &'static str = $method;
            type Params = Option<$params>;
        }
    };
}

/// Serialises a union enum by forwarding to the variant's payload.
macro_rules! ser_forward {
    ($ty:ident { $($variant:ident),* }) => {
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(x) => x.serialize(serializer), )*
                }
            }
        }
    };
}
