//! The typed request and notification: [`Request<M>`] and [`Notification<M>`], one
//! generic type each over a marker per method, and the macros that declare a method's
//! marker, its schema-named alias and its constructors.
//!
//! The marker carries what differs between methods (name, parameter type, result
//! type) through [`RequestMethod`] or [`NotificationMethod`]; the envelope around it
//! (`jsonrpc`, `id`, the checked `method`, `params`) is written once here.

use std::fmt;

use serde::ser::{self, Impossible, Serialize, Serializer};
use serde::{Deserialize, Serialize as DeriveSerialize};

use crate::jsonrpc::RequestId;
use crate::method::{NotificationMethod, RequestMethod};
use crate::tag::{JsonRpcTag, NotificationTag, RequestTag};

/// A request of method `M`: the whole JSON-RPC request (`jsonrpc`, `id`, `method`,
/// `params`), whose `method` is checked when it is read.
///
/// Each method of the protocol names its request with an alias
/// ([`ListPromptsRequest`](crate::ListPromptsRequest) is
/// `Request<methods::ListPrompts>`) that has the method's constructors: `new(id)`
/// and `without_id()` when the parameters may be omitted (then set with
/// [`with_params`](Request::with_params)), `new(id, params)` and `without_id(params)`
/// when they are required. [`from_parts`](Request::from_parts) builds one for any
/// marker, a vendor method's included.
///
/// `id` and `"jsonrpc": "2.0"` are always present on the 2025-11-25 wire; both are
/// absent only in the bare `{method, params}` form of earlier revisions' schemas,
/// which is read and written back as it came.
///
/// ```
/// use modelctx_types::{ListPromptsRequest, PaginatedRequestParams, Request, RequestMethod};
/// use modelctx_types::methods::ListPrompts;
///
/// let req: Request<ListPrompts> =
///     ListPromptsRequest::new(1).with_params(PaginatedRequestParams::new().with_cursor("c"));
/// assert_eq!(
///     serde_json::to_string(&req).unwrap(),
///     r#"{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{"cursor":"c"}}"#
/// );
/// assert_eq!(<ListPromptsRequest as RequestMethod>::METHOD, ListPromptsRequest::METHOD);
///
/// // The method is checked when read; omitted parameters are `None`.
/// let bare: ListPromptsRequest = serde_json::from_str(r#"{"method":"prompts/list"}"#).unwrap();
/// assert_eq!((bare.id, bare.params), (None, None));
/// assert!(serde_json::from_str::<ListPromptsRequest>(r#"{"method":"tools/list"}"#).is_err());
/// ```
#[derive(DeriveSerialize, Deserialize)]
#[serde(bound = "M: RequestMethod")]
#[non_exhaustive]
pub struct Request<M: RequestMethod> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    /// The request id.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::de_some_id"
    )]
    pub id: Option<RequestId>,
    method: RequestTag<M>,
    /// The parameters: an `Option` for methods whose parameters may be omitted (a
    /// missing member reads as `None`, `None` is not written), otherwise required.
    #[serde(skip_serializing_if = "is_none")]
    pub params: M::Params,
}

impl<M: RequestMethod> Request<M> {
    /// The method name, `M::METHOD`.
    pub const METHOD: &'static str = M::METHOD;

    /// A request with an id and these parameters.
    pub fn from_parts(id: impl Into<RequestId>, params: M::Params) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            id: Some(id.into()),
            method: RequestTag::new(),
            params,
        }
    }

    /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
    /// schemas).
    pub fn bare(params: M::Params) -> Self {
        Self {
            jsonrpc: None,
            id: None,
            method: RequestTag::new(),
            params,
        }
    }
}

impl<M, P> Request<M>
where
    M: RequestMethod<Params = Option<P>>,
{
    /// Sets the parameters.
    #[must_use]
    pub fn with_params(mut self, params: P) -> Self {
        self.params = Some(params);
        self
    }
}

impl<M: RequestMethod> RequestMethod for Request<M> {
    const METHOD: &'static str = M::METHOD;
    type Params = M::Params;
    type Result = M::Result;
    const NAME_PARAM: Option<&'static str> = M::NAME_PARAM;
    const UNSTABLE_META_SLOT: Option<crate::method::MetaSlot<Self::Params>> = M::UNSTABLE_META_SLOT;
}

// Written by hand so that they ask the parameters, not the marker, for the trait.

impl<M: RequestMethod> fmt::Debug for Request<M>
where
    M::Params: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("jsonrpc", &self.jsonrpc)
            .field("id", &self.id)
            .field("method", &M::METHOD)
            .field("params", &self.params)
            .finish()
    }
}

impl<M: RequestMethod> Clone for Request<M>
where
    M::Params: Clone,
{
    fn clone(&self) -> Self {
        Self {
            jsonrpc: self.jsonrpc,
            id: self.id.clone(),
            method: self.method,
            params: self.params.clone(),
        }
    }
}

impl<M: RequestMethod> PartialEq for Request<M>
where
    M::Params: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.jsonrpc == other.jsonrpc && self.id == other.id && self.params == other.params
    }
}

/// A notification of method `M`: the whole JSON-RPC notification (`jsonrpc`,
/// `method`, `params`), whose `method` is checked when it is read.
///
/// Each notification of the protocol names its type with an alias
/// ([`ProgressNotification`](crate::ProgressNotification) is
/// `Notification<methods::Progress>`) that has its constructor: `new()` (and
/// `Default`) when the parameters may be omitted, `new(params)` when they are
/// required. [`from_params`](Notification::from_params) builds one for any marker.
///
/// `"jsonrpc": "2.0"` is written by the constructors; it is absent only in the bare
/// `{method, params}` form of earlier revisions' schemas, which is read and written
/// back as it came.
///
/// ```
/// use modelctx_types::{Notification, ProgressNotification, ProgressNotificationParams};
/// use modelctx_types::methods::Progress;
///
/// let n: Notification<Progress> = ProgressNotification::new(ProgressNotificationParams::new("t", 1.0));
/// assert_eq!(
///     serde_json::to_string(&n).unwrap(),
///     r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#
/// );
/// // Required parameters must be present.
/// assert!(serde_json::from_str::<ProgressNotification>(r#"{"method":"notifications/progress"}"#).is_err());
/// ```
#[derive(DeriveSerialize, Deserialize)]
#[serde(bound = "M: NotificationMethod")]
#[non_exhaustive]
pub struct Notification<M: NotificationMethod> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jsonrpc: Option<JsonRpcTag>,
    method: NotificationTag<M>,
    /// The parameters: an `Option` for notifications whose parameters may be omitted
    /// (a missing member reads as `None`, `None` is not written), otherwise required.
    #[serde(skip_serializing_if = "is_none")]
    pub params: M::Params,
}

impl<M: NotificationMethod> Notification<M> {
    /// The method name, `M::METHOD`.
    pub const METHOD: &'static str = M::METHOD;

    /// A notification with these parameters.
    pub fn from_params(params: M::Params) -> Self {
        Self {
            jsonrpc: Some(JsonRpcTag::new()),
            method: NotificationTag::new(),
            params,
        }
    }
}

impl<M, P> Notification<M>
where
    M: NotificationMethod<Params = Option<P>>,
{
    /// Sets the parameters.
    #[must_use]
    pub fn with_params(mut self, params: P) -> Self {
        self.params = Some(params);
        self
    }
}

impl<M, P> Default for Notification<M>
where
    M: NotificationMethod<Params = Option<P>>,
{
    /// A notification without parameters.
    fn default() -> Self {
        Self::from_params(None)
    }
}

impl<M: NotificationMethod> NotificationMethod for Notification<M> {
    const METHOD: &'static str = M::METHOD;
    type Params = M::Params;
}

impl<M: NotificationMethod> fmt::Debug for Notification<M>
where
    M::Params: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notification")
            .field("jsonrpc", &self.jsonrpc)
            .field("method", &M::METHOD)
            .field("params", &self.params)
            .finish()
    }
}

impl<M: NotificationMethod> Clone for Notification<M>
where
    M::Params: Clone,
{
    fn clone(&self) -> Self {
        Self {
            jsonrpc: self.jsonrpc,
            method: self.method,
            params: self.params.clone(),
        }
    }
}

impl<M: NotificationMethod> PartialEq for Notification<M>
where
    M::Params: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.jsonrpc == other.jsonrpc && self.params == other.params
    }
}

/// Whether `params` is an absent optional value: the parameters are `M::Params`, an
/// `Option` only for some methods, so the check asks the value how it serialises.
fn is_none<P: Serialize>(params: &P) -> bool {
    params.serialize(IsNone).unwrap_or(false)
}

/// A serializer that answers "is this `none`?" and stops at the first call: `true`
/// for `None`, `false` for anything else (compound values stop with an error, which
/// counts as `false`), without writing or allocating anything.
struct IsNone;

/// Ends [`IsNone`] early on compound values.
#[derive(Debug)]
struct NotNone;

impl fmt::Display for NotNone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not none")
    }
}

impl std::error::Error for NotNone {}

impl ser::Error for NotNone {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Self
    }
}

/// The methods of [`IsNone`] that answer `false` at once, by their argument types.
macro_rules! not_none {
    ($($name:ident($($arg:ty),*);)*) => {$(
        fn $name(self, $(_: $arg),*) -> Result<bool, NotNone> {
            Ok(false)
        }
    )*};
}

/// The methods of [`IsNone`] that return a compound serializer: they stop.
macro_rules! stop {
    ($($name:ident($($arg:ty),*) -> $ret:ident;)*) => {$(
        fn $name(self, $(_: $arg),*) -> Result<Self::$ret, NotNone> {
            Err(NotNone)
        }
    )*};
}

impl Serializer for IsNone {
    type Ok = bool;
    type Error = NotNone;
    type SerializeSeq = Impossible<bool, NotNone>;
    type SerializeTuple = Impossible<bool, NotNone>;
    type SerializeTupleStruct = Impossible<bool, NotNone>;
    type SerializeTupleVariant = Impossible<bool, NotNone>;
    type SerializeMap = Impossible<bool, NotNone>;
    type SerializeStruct = Impossible<bool, NotNone>;
    type SerializeStructVariant = Impossible<bool, NotNone>;

    fn serialize_none(self) -> Result<bool, NotNone> {
        Ok(true)
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<bool, NotNone> {
        Ok(false)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<bool, NotNone> {
        Ok(false)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<bool, NotNone> {
        Ok(false)
    }

    not_none! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    stop! {
        serialize_seq(Option<usize>) -> SerializeSeq;
        serialize_tuple(usize) -> SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> SerializeTupleVariant;
        serialize_map(Option<usize>) -> SerializeMap;
        serialize_struct(&'static str, usize) -> SerializeStruct;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> SerializeStructVariant;
    }
}

/// Declares request methods. For each: a marker implementing [`RequestMethod`], the
/// schema's alias of [`Request`], and its constructors — `new(id)` and `without_id()`
/// for `optional` parameters, `new(id, params)` and `without_id(params)` for
/// `required` ones. `meta` names where the parameters keep `_meta`
/// (`UNSTABLE_META_SLOT`).
macro_rules! requests {
    ($(
        $(#[$doc:meta])*
        $alias:ident = $marker:ident($method:literal, $kind:ident $params:ty) -> $result:ty
        $(, meta $slot:expr)?;
    )+) => {$(
        #[doc = concat!("The `", $method, "` request method (see [`", stringify!($alias), "`]).")]
        #[derive(Debug)]
        pub enum $marker {}

        impl $crate::method::RequestMethod for $marker {
            const METHOD: &'static str = $method;
            type Params = $crate::envelope::params!($kind $params);
            type Result = $result;
            $(const UNSTABLE_META_SLOT: Option<$crate::method::MetaSlot<Self::Params>> =
                Some($slot);)?
        }

        $(#[$doc])*
        pub type $alias = $crate::envelope::Request<$marker>;

        $crate::envelope::requests!(@constructors $kind $marker $params);
    )+};
    (@constructors optional $marker:ident $params:ty) => {
        impl $crate::envelope::Request<$marker> {
            /// A request with an id and no parameters.
            pub fn new(id: impl Into<$crate::jsonrpc::RequestId>) -> Self {
                Self::from_parts(id, None)
            }

            /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
            /// schemas).
            pub fn without_id() -> Self {
                Self::bare(None)
            }
        }
    };
    (@constructors required $marker:ident $params:ty) => {
        impl $crate::envelope::Request<$marker> {
            /// A request with an id and parameters.
            pub fn new(id: impl Into<$crate::jsonrpc::RequestId>, params: $params) -> Self {
                Self::from_parts(id, params)
            }

            /// A request without `id` and `jsonrpc` (the bare form of pre-2025-11-25
            /// schemas).
            pub fn without_id(params: $params) -> Self {
                Self::bare(params)
            }
        }
    };
}

/// Declares notification methods. For each: a marker implementing
/// [`NotificationMethod`], the schema's alias of [`Notification`], and its
/// constructor — `new()` for `optional` parameters, `new(params)` for `required`
/// ones.
macro_rules! notifications {
    ($(
        $(#[$doc:meta])*
        $alias:ident = $marker:ident($method:literal, $kind:ident $params:ty);
    )+) => {$(
        #[doc = concat!("The `", $method, "` notification method (see [`", stringify!($alias), "`]).")]
        #[derive(Debug)]
        pub enum $marker {}

        impl $crate::method::NotificationMethod for $marker {
            const METHOD: &'static str = $method;
            type Params = $crate::envelope::params!($kind $params);
        }

        $(#[$doc])*
        pub type $alias = $crate::envelope::Notification<$marker>;

        $crate::envelope::notifications!(@constructor $kind $marker $params);
    )+};
    (@constructor optional $marker:ident $params:ty) => {
        impl $crate::envelope::Notification<$marker> {
            /// A notification without parameters.
            pub fn new() -> Self {
                Self::from_params(None)
            }
        }
    };
    (@constructor required $marker:ident $params:ty) => {
        impl $crate::envelope::Notification<$marker> {
            /// A notification with these parameters.
            pub fn new(params: $params) -> Self {
                Self::from_params(params)
            }
        }
    };
}

/// The `Params` of a method declared `optional P` (`Option<P>`) or `required P` (`P`).
macro_rules! params {
    (optional $params:ty) => { Option<$params> };
    (required $params:ty) => { $params };
}

pub(crate) use {notifications, params, requests};
