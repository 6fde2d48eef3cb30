//! A resource's contents: text or binary.

use serde::de::{self};

use crate::base::from_object;
use crate::common::Meta;

/// Declares the forms of a resource's contents: `uri`, `mime_type`, the form's own
/// string member if it has one, and `_meta`, with `new(uri, own)` and the setters.
macro_rules! resource_contents {
    ($(
        $(#[$doc:meta])*
        $name:ident { $($(#[$own_doc:meta])* $own:ident,)? }
        $(#[$new_doc:meta])*
        new;
    )+) => {$(
        crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                /// The URI of the resource.
                pub uri: String,
                /// The MIME type, if known.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub mime_type: Option<String>,
                $(
                    $(#[$own_doc])*
                    pub $own: String,
                )?
                /// Metadata.
                #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
                pub meta: Option<Meta>,
            }
        }

        impl $name {
            $(#[$new_doc])*
            pub fn new(uri: impl Into<String>$(, $own: impl Into<String>)?) -> Self {
                Self {
                    uri: uri.into(),
                    mime_type: None,
                    $($own: $own.into(),)?
                    meta: None,
                }
            }

            crate::setters::setters! {
                with_mime_type(mime_type: impl Into<String>),
                with_meta(meta: impl Into<Meta>),
            }
        }
    )+};
}

resource_contents! {
    /// The common part of a resource's contents (the schema's `ResourceContents`).
    ResourceContents {}
    /// Contents of `uri`.
    new;

    /// A resource's contents as text.
    TextResourceContents {
        /// The text.
        text,
    }
    /// Text contents of `uri`.
    new;

    /// A resource's contents as base64-encoded binary data.
    BlobResourceContents {
        /// The base64-encoded data.
        blob,
    }
    /// Binary contents of `uri`, already base64-encoded.
    new;
}

crate::setters::untagged_union! {
    /// `TextResourceContents | BlobResourceContents`: told apart by a `text` or a `blob`
    /// member (an object with `text` is text contents).
    #[derive(Debug, Clone, PartialEq)]
    pub enum TextOrBlobResourceContents {
        /// Text contents.
        Text(TextResourceContents),
        /// Binary contents.
        Blob(BlobResourceContents),
    }
    read |map| {
        if map.contains_key("text") {
            Ok(Self::Text(from_object(map)?))
        } else if map.contains_key("blob") {
            Ok(Self::Blob(from_object(map)?))
        } else {
            Err(de::Error::custom(
                "resource contents need a `text` or a `blob` member",
            ))
        }
    }
}

impl TextOrBlobResourceContents {
    /// The URI of the resource.
    pub fn uri(&self) -> &str {
        match self {
            Self::Text(t) => &t.uri,
            Self::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Text(t) => t.mime_type.as_deref(),
            Self::Blob(b) => b.mime_type.as_deref(),
        }
    }
}
