//! The private-network guard shared by the OAuth client and the authorization
//! server's client-metadata-document fetches: names resolve to public addresses only,
//! checked by the resolver reqwest connects through (no second lookup to race).

use std::net::IpAddr;

/// Whether `ip` is not a public address: loopback, private (RFC 1918), shared
/// (RFC 6598), link-local, unique-local, unspecified, broadcast, documentation or
/// multicast — also an IPv4 address carried by an IPv6 one (see [`embedded_ipv4`]).
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
            if v6.is_loopback() || v6.is_unspecified() {
                return true;
            }
            if let Some(v4) = embedded_ipv4(v6) {
                return is_private(IpAddr::V4(v4));
            }
            let segments = v6.segments();
            let first = segments[0];
            v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                // NAT64's local-use prefix (RFC 8215), 64:ff9b:1::/48: a translator of
                // the site's own, to whatever IPv4 it is set up for.
                || segments[..3] == [0x64, 0xff9b, 1]
        }
    }
}

/// The IPv4 address an IPv6 transition form carries, which is where a packet to it
/// ends up: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d` (deprecated),
/// NAT64 with the well-known prefix `64:ff9b::a.b.c.d` (RFC 6052), and 6to4
/// `2002:aabb:ccdd::/48` (RFC 3056).
fn embedded_ipv4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let bits = u128::from(v6);
    let low = std::net::Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let segments = v6.segments();
    if let Some(v4) = v6.to_ipv4_mapped() {
        Some(v4)
    } else if segments[..6] == [0; 6] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(low)
    } else if segments[0] == 0x2002 {
        Some(std::net::Ipv4Addr::from(
            ((bits >> 80) & 0xffff_ffff) as u32,
        ))
    } else {
        None
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

#[cfg(test)]
mod tests {
    use super::is_private;

    /// An IPv4 address inside an IPv6 transition form is judged as that IPv4 address.
    #[test]
    fn ipv6_transition_forms_are_judged_by_the_ipv4_they_carry() {
        for private in [
            // IPv4-mapped and IPv4-compatible.
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "::192.168.0.1",
            "::169.254.169.254",
            // NAT64, well-known prefix, and the local-use prefix.
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::10.0.0.1",
            "64:ff9b:1::8.8.8.8",
            // 6to4: 2002:<IPv4>::/48.
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:0101:5::1",
            "2002:0a00:0001::",
            // The plain forms.
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
        ] {
            assert!(is_private(private.parse().unwrap()), "{private}");
        }
        for public in [
            "::ffff:8.8.8.8",
            "::8.8.4.4",
            "64:ff9b::8.8.8.8",
            "2002:0808:0808::1",
            "2606:4700:4700::1111",
        ] {
            assert!(!is_private(public.parse().unwrap()), "{public}");
        }
    }
}
