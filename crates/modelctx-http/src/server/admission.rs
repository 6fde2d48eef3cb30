//! Who may start a session: the place a new session holds until its handshake is done
//! (see `session/handshake.rs`), and the optional per-address rate of new sessions.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::time::Instant;

/// The client's address, when new sessions are `limited` per address and the
/// connection's address is in the request (`axum::extract::ConnectInfo`: the service's
/// own `serve` puts it there; so does axum's `into_make_service_with_connect_info`).
pub(super) fn peer(limited: bool, extensions: &http::Extensions) -> Option<IpAddr> {
    if !limited {
        return None;
    }
    extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}

/// A place under [`max_sessions`](crate::StreamableHttpServerConfig::max_sessions) held
/// by a session whose `initialize` is not answered yet: given back when dropped, unless
/// the session took it.
pub(crate) struct Reservation {
    /// The service's count of reserved places.
    reserved: Weak<AtomicUsize>,
}

impl Reservation {
    /// Takes one place of `reserved` (the caller checked the cap).
    pub(super) fn take(reserved: &Arc<AtomicUsize>) -> Self {
        reserved.fetch_add(1, Ordering::AcqRel);
        Self {
            reserved: Arc::downgrade(reserved),
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(reserved) = self.reserved.upgrade() {
            reserved.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How many new sessions one client address may start (see
/// [`StreamableHttpServerConfig::session_rate_limit`](crate::StreamableHttpServerConfig::session_rate_limit)):
/// `burst` at once, then one more every `every` (a token bucket per address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRateLimit {
    /// New sessions an address may start at once.
    pub burst: u32,
    /// How often an address earns one more, up to `burst`.
    pub every: Duration,
}

impl SessionRateLimit {
    /// `burst` new sessions at once per address, then one every `every`. A `burst` of
    /// 0 counts as 1; `every` is at least 1 ms.
    pub fn new(burst: u32, every: Duration) -> Self {
        Self {
            burst: burst.max(1),
            every: every.max(Duration::from_millis(1)),
        }
    }
}

/// How many addresses the rate limiter remembers at most: beyond it, those whose
/// bucket is full again are forgotten first, then the longest unseen.
const MAX_ADDRESSES: usize = 65_536;

/// A token bucket per client address (an IPv6 address counts by its /64: one host
/// holds a whole /64, and would otherwise hop from bucket to bucket).
#[derive(Default)]
pub(super) struct RateLimiter {
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl RateLimiter {
    /// Takes one new session from `addr`'s bucket: `Err` with the wait until the next
    /// when it is empty.
    pub(super) fn admit(&self, limit: &SessionRateLimit, addr: IpAddr) -> Result<(), Duration> {
        let key = match addr {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
            },
            v4 => v4,
        };
        let now = Instant::now();
        let burst = f64::from(limit.burst);
        let every = limit.every.as_secs_f64();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_ADDRESSES && !buckets.contains_key(&key) {
            forget_some(&mut buckets, now, burst, every);
        }
        let (tokens, at) = buckets.entry(key).or_insert((burst, now));
        let earned = now.saturating_duration_since(*at).as_secs_f64() / every;
        *tokens = (*tokens + earned).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::try_from_secs_f64((1.0 - *tokens) * every).unwrap_or(limit.every))
        }
    }
}

/// Makes room in a full table: the buckets full again (they know nothing a new one
/// would not), then, if that freed less than a quarter, the longest unseen half.
fn forget_some(
    buckets: &mut HashMap<IpAddr, (f64, Instant)>,
    now: Instant,
    burst: f64,
    every: f64,
) {
    buckets.retain(|_, (tokens, at)| {
        *tokens + now.saturating_duration_since(*at).as_secs_f64() / every < burst
    });
    if buckets.len() > MAX_ADDRESSES * 3 / 4 {
        let mut seen: Vec<Instant> = buckets.values().map(|(_, at)| *at).collect();
        let middle = seen.len() / 2;
        let (_, cut, _) = seen.select_nth_unstable(middle);
        let cut = *cut;
        buckets.retain(|_, (_, at)| *at > cut);
    }
    buckets.shrink_to_fit();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn each_address_gets_its_burst_then_one_per_interval() {
        let limiter = RateLimiter::default();
        let limit = SessionRateLimit::new(2, Duration::from_secs(10));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(limiter.admit(&limit, a).is_ok());
        assert!(limiter.admit(&limit, a).is_ok());
        let wait = limiter.admit(&limit, a).unwrap_err();
        assert_eq!(wait, Duration::from_secs(10));
        // Another address has its own bucket.
        assert!(limiter.admit(&limit, b).is_ok());
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(limiter.admit(&limit, a).is_ok());
        assert!(limiter.admit(&limit, a).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn an_ipv6_host_counts_by_its_slash_64_and_mapped_ipv4_as_ipv4() {
        let limiter = RateLimiter::default();
        let limit = SessionRateLimit::new(1, Duration::from_secs(60));
        // Whether a new session from `addr` is admitted.
        let admits = |addr: &str| limiter.admit(&limit, addr.parse().unwrap()).is_ok();
        assert!(admits("2001:db8:1:2::1"));
        assert!(!admits("2001:db8:1:2:ffff::9"), "the same /64");
        assert!(admits("2001:db8:1:3::1"), "another /64");
        assert!(admits("198.51.100.7"));
        assert!(!admits("::ffff:198.51.100.7"), "mapped IPv4 as IPv4");
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_stays_bounded() {
        let limiter = RateLimiter::default();
        let limit = SessionRateLimit::new(1, Duration::from_secs(60));
        for n in 0..(MAX_ADDRESSES as u32 + 10) {
            let addr = IpAddr::V4(std::net::Ipv4Addr::from(n));
            assert!(limiter.admit(&limit, addr).is_ok());
        }
        let len = limiter.buckets.lock().unwrap().len();
        assert!(len <= MAX_ADDRESSES, "{len}");
    }
}
