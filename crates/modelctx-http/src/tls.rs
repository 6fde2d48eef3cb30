//! TLS with rustls (feature `rustls`): the ring provider, never aws-lc.
//!
//! - **Client**: with the feature on, the default `reqwest::Client` of the HTTP client
//!   transports speaks HTTPS, trusting the web-PKI roots (Mozilla's list, compiled in)
//!   and, with `rustls-native-roots`, the operating system's store as well. A private
//!   CA or a self-signed certificate is trusted with the builders'
//!   `add_root_certificate`; or build your own `reqwest::Client` (with
//!   [`client_config`] for its TLS, say) and pass it to their `client`.
//! - **Server**: [`server_config`] / [`server_config_from_pem`] make a
//!   [`rustls::ServerConfig`] for `StreamableHttpService::serve_tls` and
//!   `hosting::serve_router_tls` (feature `server`).
//!
//! The provider is passed explicitly (`builder_with_provider`), so a build in which
//! another crate also enables rustls' aws-lc provider does not make rustls panic over
//! an ambiguous process default.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The server's certificate chain (leaf first) and private key, PEM-encoded.
//! let cert_pem = std::fs::read("cert.pem")?;
//! let key_pem = std::fs::read("key.pem")?;
//! let config = modelctx_http::tls::server_config_from_pem(&cert_pem, &key_pem)?;
//! // ... `service.serve_tls(listener, config, shutdown)` ...
//! # drop(config); Ok(()) }
//! ```
//!
//! The client hands its `ClientConfig` to reqwest (`use_preconfigured_tls`).

use std::fmt;
use std::sync::Arc;

/// The rustls crate these functions build configurations of (the version reqwest and
/// tokio-rustls use here).
pub use rustls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A TLS configuration could not be built: a certificate or key that does not parse or
/// does not fit, or (native roots) an unreadable certificate store.
///
/// ```
/// use modelctx_http::tls::{TlsErrorKind, certificates_from_pem};
///
/// let error = certificates_from_pem(b"not a certificate").unwrap_err();
/// assert_eq!(error.kind(), TlsErrorKind::Certificate);
/// assert!(error.is_certificate());
/// ```
#[derive(Debug, Clone)]
pub struct TlsError {
    kind: TlsErrorKind,
    message: String,
}

/// What a [`TlsError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsErrorKind {
    /// A certificate does not parse, is missing, or was refused as a root.
    Certificate,
    /// The private key does not parse.
    PrivateKey,
    /// The certificate chain and key were refused together (a key that does not fit
    /// the leaf, an unsupported algorithm).
    Refused,
    /// The system certificate store could not be read (`rustls-native-roots`).
    RootStore,
    /// The TLS versions of the provider could not be set up.
    Versions,
}

impl TlsError {
    pub(crate) fn new(kind: TlsErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What the error is about.
    pub fn kind(&self) -> TlsErrorKind {
        self.kind
    }

    /// A certificate does not parse, is missing, or was refused as a root.
    pub fn is_certificate(&self) -> bool {
        self.kind == TlsErrorKind::Certificate
    }

    /// The private key does not parse.
    pub fn is_private_key(&self) -> bool {
        self.kind == TlsErrorKind::PrivateKey
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TlsError {}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration for `cert_chain` (leaf first) and its private `key`: the
/// ring provider, TLS 1.2 and 1.3, ALPN `http/1.1` (the servers speak HTTP/1.1), no
/// client certificates.
pub fn server_config(
    cert_chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::new(TlsErrorKind::Versions, format!("TLS versions: {e}")))?
        .with_no_client_auth()
        .with_single_cert(cert_chain, key)
        .map_err(|e| {
            TlsError::new(
                TlsErrorKind::Refused,
                format!("the certificate or key was refused: {e}"),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// [`server_config`] from PEM text: every `CERTIFICATE` block of `cert_chain_pem`
/// (leaf first) and the first private key (PKCS#8, PKCS#1 or SEC1) of `key_pem`.
pub fn server_config_from_pem(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = parse_certificates(
        cert_chain_pem,
        "the certificate chain",
        "the certificate chain holds no certificate",
    )?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
        TlsError::new(
            TlsErrorKind::PrivateKey,
            format!("the private key does not parse: {e}"),
        )
    })?;
    server_config(chain, key)
}

/// A client configuration that trusts the web-PKI roots (with `rustls-native-roots`,
/// the operating system's store too) and `extra_roots`: what the client transports'
/// default `reqwest::Client` uses, for a client of your own
/// (`reqwest::ClientBuilder::use_preconfigured_tls`).
pub fn client_config(
    extra_roots: &[CertificateDer<'static>],
) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    #[cfg(feature = "rustls-native-roots")]
    {
        let native = rustls_native_certs::load_native_certs();
        if native.certs.is_empty()
            && let Some(e) = native.errors.first()
        {
            return Err(TlsError::new(
                TlsErrorKind::RootStore,
                format!("the system certificate store could not be read: {e}"),
            ));
        }
        // Certificates the store holds but rustls cannot use are skipped, as browsers do.
        let _ = roots.add_parsable_certificates(native.certs);
    }
    for root in extra_roots {
        roots.add(root.clone()).map_err(|e| {
            TlsError::new(
                TlsErrorKind::Certificate,
                format!("a root certificate was refused: {e}"),
            )
        })?;
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::new(TlsErrorKind::Versions, format!("TLS versions: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// Parses every `CERTIFICATE` block of `pem` (for `add_root_certificate`).
pub fn certificates_from_pem(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    parse_certificates(pem, "the certificate", "no certificate in the PEM text")
}

/// Every `CERTIFICATE` block of `pem`, at least one: `what` names them in the error
/// of a block that does not parse, `none` is the error when there is no block.
fn parse_certificates(
    pem: &[u8],
    what: &str,
    none: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            TlsError::new(
                TlsErrorKind::Certificate,
                format!("{what} does not parse: {e}"),
            )
        })?;
    if certs.is_empty() {
        return Err(TlsError::new(TlsErrorKind::Certificate, none));
    }
    Ok(certs)
}
