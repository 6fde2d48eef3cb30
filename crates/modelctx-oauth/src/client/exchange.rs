//! The two answers the flows read: the authorization response and the token
//! endpoint's answer.

use super::credentials::TokenSet;
use super::crypto::now_secs;
use super::error::{ErrorKind, OAuthError, excerpt};
use super::fetch::{Answer, oauth_failure};
use super::redirect::AuthorizationResponse;

/// Checks an authorization response: `iss` (RFC 9207: compared as a plain string,
/// required when the server advertises it), `state`, then `error`; returns the code.
pub(super) fn check_response(
    response: &AuthorizationResponse,
    state: &str,
    issuer: &str,
    iss_required: bool,
) -> Result<String, OAuthError> {
    if response.is_ambiguous() {
        return Err(OAuthError::new(
            ErrorKind::Authorization,
            "the authorization response repeats a parameter",
        ));
    }
    match response.get("iss") {
        Some(iss) if iss != issuer => {
            return Err(OAuthError::new(
                ErrorKind::IssuerMismatch,
                format!("the authorization response comes from {iss:?}, not {issuer:?}"),
            ));
        }
        None if iss_required => {
            return Err(OAuthError::new(
                ErrorKind::IssuerMismatch,
                "the authorization response lacks the iss the server advertises",
            ));
        }
        _ => {}
    }
    if response.get("state") != Some(state) {
        return Err(OAuthError::new(
            ErrorKind::StateMismatch,
            "the authorization response's state is not the one sent",
        ));
    }
    if let Some(error) = response.get("error") {
        let mut message = format!("authorization refused: {error}");
        if let Some(d) = response.get("error_description") {
            message.push_str(": ");
            message.push_str(&excerpt(d.as_bytes()));
        }
        return Err(OAuthError::new(ErrorKind::Authorization, message).with_oauth_error(error));
    }
    match response.get("code") {
        Some(code) if !code.is_empty() => Ok(code.to_owned()),
        _ => Err(OAuthError::new(
            ErrorKind::Authorization,
            "the authorization response has no code",
        )),
    }
}

/// Reads a token endpoint's answer (RFC 6749 §5.1/§5.2).
pub(super) fn parse_token_answer(answer: &Answer, dpop: bool) -> Result<TokenSet, OAuthError> {
    if !answer.status.is_success() {
        return Err(oauth_failure(
            ErrorKind::TokenEndpoint,
            "the token request",
            answer,
        ));
    }
    #[derive(serde::Deserialize)]
    struct Answered {
        access_token: String,
        token_type: String,
        #[serde(default)]
        expires_in: Option<serde_json::Value>,
        #[serde(default)]
        refresh_token: Option<String>,
        #[serde(default)]
        scope: Option<String>,
    }
    // Never quote the body: it may hold tokens.
    let a: Answered = serde_json::from_slice(&answer.body).map_err(|e| {
        OAuthError::new(
            ErrorKind::InvalidResponse,
            format!(
                "the token answer is not valid (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
        .with_status(answer.status.as_u16())
    })?;
    if a.access_token.is_empty() {
        return Err(OAuthError::new(
            ErrorKind::InvalidResponse,
            "the token answer has an empty access_token",
        ));
    }
    let token_type = if a.token_type.eq_ignore_ascii_case("bearer") {
        "Bearer"
    } else if dpop && a.token_type.eq_ignore_ascii_case("dpop") {
        "DPoP"
    } else {
        return Err(OAuthError::new(
            ErrorKind::InvalidResponse,
            format!("unsupported token_type {:?}", a.token_type),
        ));
    };
    let expires_in = match &a.expires_in {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    Ok(TokenSet {
        access_token: a.access_token,
        token_type: token_type.to_owned(),
        refresh_token: a.refresh_token.filter(|r| !r.is_empty()),
        expires_at: expires_in.map(|s| now_secs().saturating_add(s)),
        scope: a.scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(q: &str) -> AuthorizationResponse {
        AuthorizationResponse::from_query(q)
    }

    #[test]
    fn iss_is_compared_as_a_plain_string() {
        let iss = "https://as.example";
        assert_eq!(
            check_response(
                &response("code=c&state=s&iss=https%3A%2F%2Fas.example"),
                "s",
                iss,
                true
            )
            .unwrap(),
            "c"
        );
        let e = check_response(
            &response("code=c&state=s&iss=https%3A%2F%2Fas.example%2F"),
            "s",
            iss,
            false,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IssuerMismatch);
        let e = check_response(&response("code=c&state=s"), "s", iss, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IssuerMismatch);
        assert!(check_response(&response("code=c&state=s"), "s", iss, false).is_ok());
    }

    #[test]
    fn state_error_and_duplicates() {
        let e = check_response(&response("code=c&state=x"), "s", "i", false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::StateMismatch);
        let e = check_response(
            &response("error=access_denied&error_description=no&state=s"),
            "s",
            "i",
            false,
        )
        .unwrap_err();
        assert_eq!(e.oauth_error(), Some("access_denied"));
        let e = check_response(&response("code=a&code=b&state=s"), "s", "i", false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Authorization);
    }
}
