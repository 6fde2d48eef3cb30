//! Wire documents: protected-resource metadata (RFC 9728), authorization-server
//! metadata (RFC 8414 / OpenID Connect Discovery), and the `WWW-Authenticate` challenge.

use serde::Deserialize;

/// OAuth 2.0 Protected Resource Metadata (RFC 9728) of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct ProtectedResourceMetadata {
    /// The resource identifier, sent as is as the RFC 8707 `resource` parameter.
    pub(crate) resource: String,
    /// The issuers of the authorization servers that accept this resource.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// The scopes the resource understands.
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// OAuth 2.0 Authorization Server Metadata (RFC 8414), also read from an OpenID
/// Connect discovery document. Only the members this client uses are kept.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct AuthorizationServerMetadata {
    /// The issuer identifier; it must be the one the metadata was looked up for.
    pub(crate) issuer: String,
    /// Where the user is sent to authorize.
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    /// Where codes, refresh tokens and assertions are exchanged for tokens.
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    /// Scopes the server knows (`offline_access` among them when refresh tokens can be
    /// asked for).
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// Client authentication methods of the token endpoint (RFC 8414 default:
    /// `client_secret_basic`).
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods; this client requires `S256`.
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// Whether authorization responses carry `iss` (RFC 9207).
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: Option<bool>,
    /// Whether a client-ID metadata document URL may serve as the `client_id`.
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
    /// DPoP proof algorithms the server accepts (RFC 9449).
    #[serde(default)]
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthorizationServerMetadata {
    /// Fallback metadata of a 2025-03-26 server that publishes none: the default
    /// endpoints `/authorize`, `/token` and `/register` at the server's origin.
    pub(crate) fn fallback(origin: &str) -> Self {
        Self {
            issuer: origin.to_owned(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: Some(format!("{origin}/token")),
            registration_endpoint: Some(format!("{origin}/register")),
            scopes_supported: None,
            token_endpoint_auth_methods_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            authorization_response_iss_parameter_supported: None,
            client_id_metadata_document_supported: None,
            dpop_signing_alg_values_supported: None,
        }
    }

    pub(crate) fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// The token endpoint authentication methods, with RFC 8414's default.
    pub(crate) fn auth_methods(&self) -> Vec<String> {
        self.token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".to_owned()])
    }
}

/// One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Challenge {
    /// The scheme, e.g. `Bearer` or `DPoP`.
    pub(crate) scheme: String,
    /// The auth-params, names lowercased, values unquoted.
    pub(crate) params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of parameter `name` (case-insensitive).
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `resource_metadata` URL (RFC 9728 §5.1).
    pub(crate) fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata")
    }

    /// The scopes of the `scope` parameter.
    pub(crate) fn scopes(&self) -> Vec<String> {
        self.param("scope")
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// The `error` code (`invalid_token`, `insufficient_scope`, `use_dpop_nonce`…).
    pub(crate) fn error(&self) -> Option<&str> {
        self.param("error")
    }
}

/// Parses every challenge of the `WWW-Authenticate` header values. Malformed input
/// yields what could be read before the fault, never a panic.
pub(crate) fn parse_www_authenticate<'a>(
    values: impl IntoIterator<Item = &'a str>,
) -> Vec<Challenge> {
    let mut out = Vec::new();
    for value in values {
        parse_one(value, &mut out);
    }
    out
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn parse_one(value: &str, out: &mut Vec<Challenge>) {
    let chars: Vec<char> = value.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && (chars[*i] == ' ' || chars[*i] == '\t') {
            *i += 1;
        }
    };
    let token = |i: &mut usize| {
        let start = *i;
        while *i < chars.len() && is_tchar(chars[*i]) {
            *i += 1;
        }
        chars[start..*i].iter().collect::<String>()
    };
    loop {
        // Skip empty list elements.
        loop {
            skip_ws(&mut i);
            if i < chars.len() && chars[i] == ',' {
                i += 1;
            } else {
                break;
            }
        }
        if i >= chars.len() {
            return;
        }
        let scheme = token(&mut i);
        if scheme.is_empty() {
            return;
        }
        let mut challenge = Challenge {
            scheme,
            params: Vec::new(),
        };
        // auth-params: name = value, separated by commas. A token not followed by `=`
        // starts the next challenge.
        loop {
            skip_ws(&mut i);
            let mark = i;
            let name = token(&mut i);
            if name.is_empty() {
                // A token68 or garbage: skip to the next comma.
                while i < chars.len() && chars[i] != ',' {
                    i += 1;
                }
                if i < chars.len() {
                    i += 1;
                    continue;
                }
                break;
            }
            skip_ws(&mut i);
            if i >= chars.len() || chars[i] != '=' {
                // The next challenge's scheme (or a token68 without padding).
                if i < chars.len() && chars[i] == ',' {
                    // token68 followed by a comma: ignore it.
                    i += 1;
                    continue;
                }
                i = mark;
                break;
            }
            i += 1;
            // token68 padding (`abc==`): the value is empty and `=` repeats.
            skip_ws(&mut i);
            let value = if i < chars.len() && chars[i] == '"' {
                i += 1;
                let mut v = String::new();
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    v.push(chars[i]);
                    i += 1;
                }
                i += 1; // closing quote (or end)
                v
            } else {
                token(&mut i)
            };
            challenge.params.push((name.to_ascii_lowercase(), value));
            skip_ws(&mut i);
            if i < chars.len() && chars[i] == ',' {
                i += 1;
                continue;
            }
            if i >= chars.len() {
                break;
            }
            // Junk after a value: skip to the next comma.
            while i < chars.len() && chars[i] != ',' {
                i += 1;
            }
            if i < chars.len() {
                i += 1;
            }
        }
        out.push(challenge);
        if i >= chars.len() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_with_quoted_params() {
        let c = parse_www_authenticate([
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y""#,
        ]);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "Bearer");
        assert_eq!(c[0].error(), Some("insufficient_scope"));
        assert_eq!(c[0].scopes(), ["a", "b"]);
        assert_eq!(c[0].resource_metadata(), Some("https://x/y"));
    }

    #[test]
    fn two_challenges_in_one_value() {
        let c = parse_www_authenticate([r#"DPoP algs="ES256", Bearer realm="x", scope=s1"#]);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].scheme, "DPoP");
        assert_eq!(c[0].param("algs"), Some("ES256"));
        assert_eq!(c[1].scheme, "Bearer");
        assert_eq!(c[1].param("scope"), Some("s1"));
    }

    #[test]
    fn malformed_input_does_not_panic() {
        for v in [
            "",
            ",,,",
            "Bearer",
            "Bearer ,",
            r#"Bearer a="unterminated"#,
            "Bearer abc==",
            "Bearer =x",
            r#"Bearer a="\"#,
            "é",
            "Basic dXNlcjpwYXNz, Bearer scope=x",
        ] {
            let _ = parse_www_authenticate([v]);
        }
        let c = parse_www_authenticate(["Basic dXNlcjpwYXNz, Bearer scope=x"]);
        assert_eq!(c.last().map(|c| c.scheme.as_str()), Some("Bearer"));
        assert_eq!(c.last().and_then(|c| c.param("scope")), Some("x"));
    }
}
