//! Choosing a loopback port for a server that binds its own (a child process).

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// A loopback address that was free a moment ago, for a server started as a child
/// process to bind, below the kernel's ephemeral port range where it can; never the same
/// address twice in one process.
///
/// A port found by binding `:0` and closing is one the kernel may hand to the next
/// socket bound to `:0` (another test's listener, say) before the child binds it; a
/// readiness probe would then reach that other socket. Below the ephemeral range only
/// another explicit choice can take the port, and a child that cannot bind it exits,
/// which a start can see and retry (`start_listening`, feature `process`, does). Two
/// children of one process never get the same port: two HAProxy processes would both
/// bind it (HAProxy sets `SO_REUSEPORT`) and share its connections, so that each test
/// would talk to the other's instances.
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
    // Every port handed out so far; held while one is chosen, so that two threads never
    // choose the same.
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
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
            let port = (10_000 + (seed.wrapping_add(i * 104_729) % span)) as u16;
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            if !handed_out.contains(&port) && TcpListener::bind(addr).is_ok() {
                handed_out.insert(port);
                return Ok(addr);
            }
        }
    }
    let mut last = String::from("every port the kernel offered was handed out already");
    for _ in 0..64 {
        match TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(addr) if handed_out.insert(addr.port()) => return Ok(addr),
            Ok(_) => {}
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("no free loopback port: {last}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_address_is_handed_out_twice_in_a_process() {
        // 600 choices from four threads at once: drawn at random from some 22k ports,
        // two of them would most likely coincide.
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..150)
                        .map(|_| free_loopback_addr().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<SocketAddr> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let chosen = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), chosen);
    }
}
