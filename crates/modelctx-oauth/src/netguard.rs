//! The private-network guard shared by the OAuth client and the authorization
//! server's client-metadata-document fetches: names resolve to public addresses only,
//! checked by the resolver reqwest connects through (no second lookup to race).

use std::net::IpAddr;

/// Whether `ip` is not a public address: loopback, private (RFC 1918), shared
/// (RFC 6598), link-local, unique-local, unspecified, broadcast, documentation or
/// multicast — also inside IPv4-mapped IPv6 addresses.
pub(crate) fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Resolves names, refusing those that lead only to non-public addresses (the
/// private-network guard).
#[derive(Debug)]
pub(crate) struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let public: Vec<std::net::SocketAddr> = found.filter(|a| !is_private(a.ip())).collect();
            if public.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> =
                    format!("{host} resolves to no public address (private-network guard)").into();
                return Err(e);
            }
            let addrs: reqwest::dns::Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}
