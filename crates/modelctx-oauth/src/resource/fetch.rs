//! Bounded JSON answers from the authorization server (JWKS, introspection).

use std::time::Duration;

use serde_json::Value;

use super::TokenError;
use crate::body::read_bounded;

/// The largest answer read.
const MAX_ANSWER: usize = 256 * 1024;
/// How long one exchange may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends `request` and reads a JSON object answer of at most 256 KiB within 10 s; any
/// failure is [`TokenError::unavailable`] naming `what`.
pub(crate) async fn json(
    request: reqwest::RequestBuilder,
    what: &'static str,
) -> Result<Value, TokenError> {
    let unavailable = |detail: &str| TokenError::unavailable(format!("{what}: {detail}"));
    let exchange = async {
        let response = request
            .send()
            .await
            .map_err(|_| unavailable("the request failed"))?;
        if !response.status().is_success() {
            return Err(unavailable(&format!("HTTP {}", response.status().as_u16())));
        }
        let body = read_bounded(response, MAX_ANSWER)
            .await
            .map_err(|e| unavailable(&e.describe("the answer")))?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err(unavailable("the answer is not a JSON object")),
        }
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .map_err(|_| unavailable("no answer in time"))?
}
