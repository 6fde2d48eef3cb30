//! [`method_union!`]: one union of the messages a side sends, tagged by `method`, written
//! from its list of members: the enum, `METHODS`, `method()`, a `From` per member, serde
//! both ways, and the JSON-RPC conversions of its kind (requests carry an id).

/// The id of a request member of a union (most requests may lack one until they are
/// sent; `server/discover` and `subscriptions/listen` always have one).
pub(super) trait MemberId {
    fn member_id(&self) -> Option<&crate::jsonrpc::RequestId>;
}

impl<M: crate::method::RequestMethod> MemberId for crate::envelope::Request<M> {
    fn member_id(&self) -> Option<&crate::jsonrpc::RequestId> {
        self.id.as_ref()
    }
}

impl MemberId for crate::discover::DiscoverRequest {
    fn member_id(&self) -> Option<&crate::jsonrpc::RequestId> {
        Some(&self.id)
    }
}

impl MemberId for crate::subscriptions::SubscriptionsListenRequest {
    fn member_id(&self) -> Option<&crate::jsonrpc::RequestId> {
        Some(&self.id)
    }
}

/// Writes a union of messages tagged by `method` (see the module docs).
macro_rules! method_union {
    (
        request
        $(#[$attr:meta])*
        pub enum $name:ident { $( $(#[$vattr:meta])* $variant:ident($ty:ty), )* }
    ) => {
        method_union!(@common $(#[$attr])* $name { $( $(#[$vattr])* $variant($ty), )* });

        impl $name {
            /// The request id.
            pub fn id(&self) -> Option<&RequestId> {
                match self {
                    $(Self::$variant(r) => super::union::MemberId::member_id(r),)*
                }
            }

            /// Decodes a request from its envelope parts: an unknown method gives
            /// `-32601` (method not found), bad parameters `-32602` (invalid params).
            #[inline]
            pub fn from_parts(
                id: Option<&RequestId>,
                method: &str,
                params: Option<&RawValue>,
            ) -> Result<Self, ErrorData> {
                let map = envelope(id, method, params)?;
                match Self::decode(method, map) {
                    Some(decoded) => decoded
                        .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}"))),
                    None => Err(ErrorData::method_not_found(method)),
                }
            }

            /// Decodes a request off the generic envelope.
            #[inline]
            pub fn from_json_rpc(request: &JsonRpcRequest) -> Result<Self, ErrorData> {
                Self::from_parts(
                    Some(&request.id),
                    &request.method,
                    request.params.as_deref(),
                )
            }

            /// The generic envelope; `None` when the request has no id.
            #[inline]
            pub fn to_json_rpc(&self) -> Option<JsonRpcRequest> {
                let id = self.id()?.clone();
                let mut map = match serde_json::to_value(self).ok()? {
                    Value::Object(map) => map,
                    _ => return None,
                };
                let params = params_of(&mut map).ok()?;
                Some(JsonRpcRequest::new(id, self.method(), params))
            }
        }
    };
    (
        notification
        $(#[$attr:meta])*
        pub enum $name:ident { $( $(#[$vattr:meta])* $variant:ident($ty:ty), )* }
    ) => {
        method_union!(@common $(#[$attr])* $name { $( $(#[$vattr])* $variant($ty), )* });

        impl $name {
            /// Decodes a notification from its envelope parts: an unknown method gives
            /// `-32601` (method not found), bad parameters `-32602` (invalid params).
            #[inline]
            pub fn from_parts(method: &str, params: Option<&RawValue>) -> Result<Self, ErrorData> {
                let map = envelope(None, method, params)?;
                match Self::decode(method, map) {
                    Some(decoded) => decoded
                        .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}"))),
                    None => Err(ErrorData::method_not_found(method)),
                }
            }

            /// Decodes a notification off the generic envelope.
            #[inline]
            pub fn from_json_rpc(notification: &JsonRpcNotification) -> Result<Self, ErrorData> {
                Self::from_parts(&notification.method, notification.params.as_deref())
            }

            /// The generic envelope.
            #[inline]
            pub fn to_json_rpc(&self) -> Result<JsonRpcNotification, serde_json::Error> {
                let mut map = match serde_json::to_value(self)? {
                    Value::Object(map) => map,
                    _ => JsonObject::new(),
                };
                let params = params_of(&mut map)?;
                Ok(JsonRpcNotification::new(self.method(), params))
            }
        }
    };
    (@common
        $(#[$attr:meta])*
        $name:ident { $( $(#[$vattr:meta])* $variant:ident($ty:ty), )* }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vattr])* $variant($ty), )*
        }

        impl $name {
            /// Every method of this union.
            pub const METHODS: &'static [&'static str] = &[$(<$ty>::METHOD,)*];

            /// The method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => <$ty>::METHOD,)*
                }
            }

            /// Decodes `map`, a whole message, as the member `method` names; `None` when
            /// no member does.
            #[inline]
            fn decode(method: &str, map: JsonObject) -> Option<Result<Self, serde_json::Error>> {
                let value = Value::Object(map);
                Some(match method {
                    $(m if m == <$ty>::METHOD => serde_json::from_value(value).map(Self::$variant),)*
                    _ => return None,
                })
            }
        }

        $(
            impl From<$ty> for $name {
                fn from(member: $ty) -> Self {
                    Self::$variant(member)
                }
            }
        )*

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$variant(member) => member.serialize(serializer),)*
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let map = JsonObject::deserialize(deserializer)?;
                let method = match map.get("method") {
                    Some(Value::String(m)) => m.clone(),
                    _ => return Err(de::Error::missing_field("method")),
                };
                match Self::decode(&method, map) {
                    Some(decoded) => decoded.map_err(de::Error::custom),
                    None => Err(de::Error::unknown_variant(&method, Self::METHODS)),
                }
            }
        }
    };
}

pub(super) use method_union;
