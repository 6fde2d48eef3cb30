//! A test certificate authority: a CA and a server certificate it signed, made at test
//! time (rcgen with ring), for servers behind TLS and clients that trust the CA.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// A CA, and a certificate it signed for the names a server is reached by.
///
/// ```
/// use modelctx_test::TestCa;
///
/// let ca = TestCa::for_names(&["localhost", "127.0.0.1"]);
/// assert!(ca.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
/// assert!(ca.key_pem.contains("PRIVATE KEY"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct TestCa {
    /// The CA's certificate, DER (what a client adds as a root).
    pub ca_der: Vec<u8>,
    /// The CA's certificate, PEM.
    pub ca_pem: String,
    /// The server's certificate chain, PEM (the leaf the CA signed).
    pub chain_pem: String,
    /// The server certificate's private key, PKCS#8 PEM.
    pub key_pem: String,
}

impl TestCa {
    /// A fresh CA and a server certificate for `names` (DNS names or IP addresses).
    ///
    /// # Panics
    ///
    /// When rcgen cannot make them (a name it cannot take).
    pub fn for_names(names: &[&str]) -> Self {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
            .expect("a self-signed CA");
        let key = KeyPair::generate().expect("a server key");
        let names = names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let leaf = CertificateParams::new(names)
            .expect("server certificate params")
            .signed_by(&key, &ca)
            .expect("a server certificate");
        Self {
            ca_der: ca.der().to_vec(),
            ca_pem: ca.pem(),
            chain_pem: leaf.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}
