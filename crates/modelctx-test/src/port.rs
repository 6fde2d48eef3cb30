//! Choosing a loopback port for a server that binds its own (a child process).

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// A loopback address that was free a moment ago, for a server started as a child
/// process to bind, below the kernel's ephemeral port range where it can.
///
/// A port found by binding `:0` and closing is one the kernel may hand to the next
/// socket bound to `:0` (another test's listener, say) before the child binds it; a
/// readiness probe would then reach that other socket. Below the ephemeral range only
/// another explicit choice can take the port, and a child that cannot bind it exits,
/// which a start can see and retry (`start_listening`, feature `process`, does).
///
/// ```
/// let addr = modelctx_test::free_loopback_addr().unwrap();
/// assert!(addr.ip().is_loopback());
/// ```
///
/// # Errors
///
/// When no loopback port can be bound at all.
pub fn free_loopback_addr() -> Result<SocketAddr, String> {
    static CHOSEN: AtomicU32 = AtomicU32::new(0);
    let chosen = CHOSEN.fetch_add(1, Ordering::Relaxed);
    let lowest_ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok());
    if let Some(top) = lowest_ephemeral.filter(|&low| low > 11_000) {
        // Spread by process, time and count, so parallel tests seldom try the same one.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let seed = nanos ^ std::process::id().rotate_left(16) ^ chosen.wrapping_mul(7919);
        let span = top - 10_000;
        for i in 0..64 {
            let port = 10_000 + (seed.wrapping_add(i * 104_729) % span);
            let addr = SocketAddr::from(([127, 0, 0, 1], port as u16));
            if TcpListener::bind(addr).is_ok() {
                return Ok(addr);
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free loopback port: {e}"))
}
