//! Discovery: protected-resource metadata (RFC 9728) and authorization-server metadata
//! (RFC 8414 / OpenID Connect) in the order of the MCP authorization specification.

use reqwest::Url;

use super::error::{ErrorKind, OAuthError};
use super::fetch::{Fetcher, parse_url};
use super::metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};

/// What discovery found for one MCP server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The RFC 8707 `resource` value: the PRM's `resource` verbatim, or (for a server
    /// without PRM) the server URL.
    pub(crate) resource: String,
    /// The PRM's `scopes_supported`.
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// The authorization server's metadata (checked issuer) or the 2025-03-26 fallback.
    pub(crate) server: AuthorizationServerMetadata,
}

/// The protected-resource metadata of `server`, with the URL it was read from: from
/// `hint` (a 401's `resource_metadata`) when given, else the path-aware then the root
/// well-known URI. `None` when the server publishes none (a 2025-03-26 server).
pub(crate) async fn protected_resource(
    fetcher: &Fetcher,
    server: &Url,
    hint: Option<&str>,
) -> Result<Option<(ProtectedResourceMetadata, Url)>, OAuthError> {
    if let Some(hint) = hint {
        let url = parse_url(hint, "resource_metadata URL")?;
        if url.origin() != server.origin() {
            return Err(OAuthError::new(
                ErrorKind::Discovery,
                format!("the resource_metadata URL {url} is not on the server's origin"),
            ));
        }
        let answer = fetcher.get(&url).await?;
        if !answer.status.is_success() {
            return Err(OAuthError::new(
                ErrorKind::Discovery,
                format!("the protected resource metadata at {url} could not be read"),
            )
            .with_status(answer.status.as_u16()));
        }
        let prm = answer.json("protected resource metadata")?;
        return Ok(Some((prm, url)));
    }
    for url in prm_candidates(server) {
        let answer = fetcher.get(&url).await?;
        if answer.status.is_success() {
            return answer
                .json("protected resource metadata")
                .map(|prm| Some((prm, url)));
        }
    }
    Ok(None)
}

/// The well-known PRM URIs of `server`: path-aware first (when it has a path), then
/// the root.
pub(crate) fn prm_candidates(server: &Url) -> Vec<Url> {
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.extend(
            Url::parse(&format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ))
            .ok(),
        );
    }
    out.extend(Url::parse(&format!("{origin}/.well-known/oauth-protected-resource")).ok());
    out
}

/// Refuses a PRM whose `resource` is not this server. RFC 9728 (section 3.3) asks for
/// the identical URL: the `resource` must be the server's URL, compared as parsed URLs
/// (scheme and host case-insensitively, a default port as none), a trailing `/` on the
/// path aside; no fragment.
///
/// One allowance: a document read from the origin's root well-known URI
/// (`/.well-known/oauth-protected-resource`, `from`) may name the origin itself, the
/// resource identifier that URI is formed from (RFC 9728 section 3.1), for a server at
/// any path of it. Servers publish a single document for their origin that way (the
/// MCP conformance suite's do, the `resource_metadata` of their challenge pointing at
/// it). Any other path, a prefix of the server's (`https://host/tenant` for
/// `https://host/tenant/mcp`) or below it, is refused.
pub(crate) fn check_resource(
    prm: &ProtectedResourceMetadata,
    server: &Url,
    from: &Url,
) -> Result<(), OAuthError> {
    let mismatch = || {
        OAuthError::new(
            ErrorKind::ResourceMismatch,
            format!(
                "the protected resource metadata is for {:?}, not for the server {server}",
                prm.resource
            ),
        )
    };
    let resource = Url::parse(&prm.resource).map_err(|_| mismatch())?;
    if resource.origin() != server.origin() || resource.fragment().is_some() {
        return Err(mismatch());
    }
    let want = resource.path().trim_end_matches('/');
    let have = server.path().trim_end_matches('/');
    let same = want == have && resource.query() == server.query();
    let origin_document = want.is_empty()
        && resource.query().is_none()
        && from.origin() == server.origin()
        && from.path() == "/.well-known/oauth-protected-resource"
        && from.query().is_none();
    if same || origin_document {
        Ok(())
    } else {
        Err(mismatch())
    }
}

/// The metadata URIs of `issuer`, in the specification's order: for an issuer with a
/// path, OAuth path-inserted, OpenID path-inserted, OpenID path-appended; for one
/// without, OAuth then OpenID at the root.
pub(crate) fn as_candidates(issuer: &Url) -> Vec<Url> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let texts = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    texts.iter().filter_map(|t| Url::parse(t).ok()).collect()
}

/// The authorization-server metadata of `issuer` (the string as the PRM names it),
/// whose `issuer` must be that string exactly. `None` when no well-known URI answers.
/// With `rfc8414_only`, only RFC 8414's URI is asked, not OpenID Connect's.
/// The metadata found for `issuer` (as the error names it), or the error that none was.
fn found(
    meta: Option<AuthorizationServerMetadata>,
    issuer: &str,
) -> Result<AuthorizationServerMetadata, OAuthError> {
    meta.ok_or_else(|| {
        OAuthError::new(
            ErrorKind::Discovery,
            format!("no authorization server metadata found for {issuer}"),
        )
    })
}

pub(crate) async fn authorization_server(
    fetcher: &Fetcher,
    issuer: &str,
    rfc8414_only: bool,
) -> Result<Option<AuthorizationServerMetadata>, OAuthError> {
    let issuer_url = parse_url(issuer, "authorization server issuer")?;
    if issuer_url.query().is_some() {
        return Err(OAuthError::new(
            ErrorKind::InvalidResponse,
            format!("the issuer {issuer} has a query"),
        ));
    }
    let mut candidates = as_candidates(&issuer_url);
    if rfc8414_only {
        candidates.truncate(1);
    }
    for url in candidates {
        let answer = fetcher.get(&url).await?;
        if !answer.status.is_success() {
            continue;
        }
        let meta: AuthorizationServerMetadata = answer.json("authorization server metadata")?;
        if meta.issuer != issuer {
            return Err(OAuthError::new(
                ErrorKind::IssuerMismatch,
                format!(
                    "the metadata at {url} names the issuer {:?}, not {issuer:?}",
                    meta.issuer
                ),
            ));
        }
        check_endpoints(&meta)?;
        return Ok(Some(meta));
    }
    Ok(None)
}

/// Every endpoint of the metadata must be a URL this client may use.
fn check_endpoints(meta: &AuthorizationServerMetadata) -> Result<(), OAuthError> {
    for (what, url) in [
        ("authorization endpoint", &meta.authorization_endpoint),
        ("token endpoint", &meta.token_endpoint),
        ("registration endpoint", &meta.registration_endpoint),
    ] {
        if let Some(url) = url {
            parse_url(url, what)?;
        }
    }
    Ok(())
}

/// The whole discovery for `server`, after a 401 whose challenge named `hint`.
pub(crate) async fn discover(
    fetcher: &Fetcher,
    server: &Url,
    hint: Option<&str>,
) -> Result<Discovered, OAuthError> {
    match protected_resource(fetcher, server, hint).await? {
        Some((prm, from)) => {
            check_resource(&prm, server, &from)?;
            let issuer = prm.authorization_servers.first().ok_or_else(|| {
                OAuthError::new(
                    ErrorKind::Discovery,
                    "the protected resource metadata names no authorization server",
                )
            })?;
            let meta = authorization_server(fetcher, issuer, false).await?;
            let meta = found(meta, issuer)?;
            Ok(Discovered {
                resource: prm.resource,
                scopes_supported: prm.scopes_supported,
                server: meta,
            })
        }
        None => {
            // A 2025-03-26 server: the authorization server is the server's origin,
            // its metadata at the root, else the default endpoints.
            let origin = server.origin().ascii_serialization();
            let meta = match authorization_server(fetcher, &origin, false).await? {
                Some(meta) => meta,
                None => AuthorizationServerMetadata::fallback(&origin),
            };
            Ok(without_resource_metadata(server, meta))
        }
    }
}

/// Discovery with the authorization server `issuer` given as configuration: its RFC
/// 8414 metadata only; the resource server is not consulted (no protected-resource
/// metadata), and the resource is the server URL.
pub(crate) async fn discover_at(
    fetcher: &Fetcher,
    server: &Url,
    issuer: &str,
) -> Result<Discovered, OAuthError> {
    let meta = authorization_server(fetcher, issuer, true).await?;
    let meta = found(meta, &format!("the configured {issuer}"))?;
    Ok(without_resource_metadata(server, meta))
}

/// What is discovered without protected-resource metadata: the resource is the server
/// URL (without fragment), its scopes unknown.
fn without_resource_metadata(server: &Url, meta: AuthorizationServerMetadata) -> Discovered {
    let mut resource = server.clone();
    resource.set_fragment(None);
    Discovered {
        resource: resource.to_string(),
        scopes_supported: None,
        server: meta,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: &[Url]) -> Vec<String> {
        urls.iter().map(Url::to_string).collect()
    }

    #[test]
    fn metadata_order_for_issuers_with_and_without_path() {
        let with = strings(&as_candidates(&url("https://as.example/tenant1")));
        assert_eq!(
            with,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        let root = strings(&as_candidates(&url("https://as.example")));
        assert_eq!(
            root,
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn prm_order_is_path_aware_then_root() {
        let c = strings(&prm_candidates(&url("https://mcp.example/api/mcp")));
        assert_eq!(
            c,
            [
                "https://mcp.example/.well-known/oauth-protected-resource/api/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource",
            ]
        );
    }

    #[test]
    fn resource_must_be_this_server() {
        let server = url("https://mcp.example/mcp");
        let prm = |r: &str| ProtectedResourceMetadata {
            resource: r.to_owned(),
            authorization_servers: vec![],
            scopes_supported: None,
        };
        let path_document = url("https://mcp.example/.well-known/oauth-protected-resource/mcp");
        let root_document = url("https://mcp.example/.well-known/oauth-protected-resource");
        for from in [&path_document, &root_document] {
            assert!(check_resource(&prm("https://mcp.example/mcp"), &server, from).is_ok());
            assert!(check_resource(&prm("https://MCP.example:443/mcp/"), &server, from).is_ok());
        }
        // The origin, only from the origin's own document.
        assert!(check_resource(&prm("https://mcp.example"), &server, &root_document).is_ok());
        assert!(check_resource(&prm("https://mcp.example/"), &server, &root_document).is_ok());
        let e = check_resource(&prm("https://mcp.example"), &server, &path_document).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ResourceMismatch);
        let hint = url("https://mcp.example/meta/prm.json");
        assert!(check_resource(&prm("https://mcp.example"), &server, &hint).is_err());
        assert!(check_resource(&prm("https://mcp.example/mcp"), &server, &hint).is_ok());
        for bad in [
            "https://evil.example/mcp",
            "http://mcp.example/mcp",
            "https://mcp.example/mc",
            "https://mcp.example/mcp/other",
            "https://mcp.example/mcp?tenant=b",
            "https://mcp.example/?x=1",
            "not a url",
        ] {
            for from in [&path_document, &root_document] {
                let e = check_resource(&prm(bad), &server, from).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ResourceMismatch, "{bad}");
            }
        }
        // A path prefix is not the server, from either document.
        let tenant = url("https://mcp.example/tenant/mcp");
        let tenant_document =
            url("https://mcp.example/.well-known/oauth-protected-resource/tenant/mcp");
        for from in [&tenant_document, &root_document] {
            let e = check_resource(&prm("https://mcp.example/tenant"), &tenant, from).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ResourceMismatch);
        }
        let e = check_resource(&prm("https://mcp.example"), &tenant, &tenant_document).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ResourceMismatch);
    }
}
