//! Response bodies read whole (a JSON answer, the body of a refusal), under a cap
//! enforced while they stream: a server cannot make the client buffer more than the
//! cap, however long (or endless) the body it sends. Shared with the legacy SSE client.
//!
//! SSE streams are not read whole: each event is capped on its own (`max_event_bytes`).

use std::fmt;

/// The default cap on a body read whole, and on one SSE event: 16 MiB.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Why a body could not be read whole.
#[doc(hidden)]
#[derive(Debug)]
#[non_exhaustive]
pub enum BodyError {
    /// The body (its `Content-Length`, or what arrived of it) exceeds `max` bytes; the
    /// rest was not read.
    TooLarge {
        /// The cap, in bytes.
        max: usize,
    },
    /// The connection failed while the body was read.
    Read(reqwest::Error),
}

impl BodyError {
    /// Whether the body exceeded the cap (rather than the connection failing).
    pub fn is_too_large(&self) -> bool {
        matches!(self, Self::TooLarge { .. })
    }
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { max } => write!(
                f,
                "the server's response body exceeds the client's limit of {max} bytes \
                 (max_body_bytes); it was not read further"
            ),
            Self::Read(e) => write!(f, "reading the response failed: {e}"),
        }
    }
}

impl std::error::Error for BodyError {}

/// Reads `response`'s body whole, at most `max` bytes. Fails at once when its
/// `Content-Length` says more, and otherwise as soon as what arrived exceeds `max`,
/// without reading the rest (dropping the response closes the connection).
#[doc(hidden)]
pub async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> Result<bytes::Bytes, BodyError> {
    let declared = response.content_length();
    if declared.is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge { max });
    }
    // Room for what the server declared (never more than the cap), else grown as it
    // arrives.
    let hint = declared.map_or(0, |n| usize::try_from(n).unwrap_or(max));
    let mut first: Option<bytes::Bytes> = None;
    let mut body: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        let len = first.as_ref().map_or(body.len(), bytes::Bytes::len);
        if len.saturating_add(chunk.len()) > max {
            return Err(BodyError::TooLarge { max });
        }
        // A body that comes in one chunk (the usual JSON answer) is not copied.
        match first.take() {
            None if body.is_empty() => first = Some(chunk),
            Some(head) => {
                body.reserve(hint.max(head.len() + chunk.len()));
                body.extend_from_slice(&head);
                body.extend_from_slice(&chunk);
            }
            None => body.extend_from_slice(&chunk),
        }
    }
    Ok(first.unwrap_or_else(|| bytes::Bytes::from(body)))
}

/// The body of a refusal, for the error that reports it: its text when it is within
/// `max` bytes; empty when it is not (or could not be read).
#[doc(hidden)]
pub async fn refusal_text(response: reqwest::Response, max: usize) -> String {
    match read_capped(response, max).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => String::new(),
    }
}
