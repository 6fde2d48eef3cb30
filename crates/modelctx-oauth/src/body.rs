//! Reading an HTTP answer's body within a limit: every fetch of this crate (metadata,
//! tokens, key sets, client documents) stops as soon as an answer grows too large.

/// Why a body was not read.
pub(crate) enum BodyError {
    /// The connection failed while the body was read (only the client reports why).
    Read(#[cfg_attr(not(feature = "client"), allow(dead_code))] reqwest::Error),
    /// The body would pass the limit.
    TooLarge,
}

#[cfg(any(feature = "resource-server", feature = "authorization-server"))]
impl BodyError {
    /// Why, in words, a body that is `what` (say "the client's key set") was not read.
    pub(crate) fn describe(&self, what: &str) -> String {
        match self {
            BodyError::Read(_) => format!("{what} could not be read"),
            BodyError::TooLarge => format!("{what} is too large"),
        }
    }
}

/// The body of `response`, read chunk by chunk and given up as soon as it would pass
/// `max` bytes (whatever length the answer declared).
pub(crate) async fn read_bounded(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
