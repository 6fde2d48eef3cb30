//! Waiting for a server started as a child process to accept connections.

use std::time::Duration;

/// Waits, for at most `limit`, until a server that `child` runs accepts TCP connections
/// on `addr` (`host:port`), trying to connect every 20 ms: for programs that print no
/// readiness line.
///
/// A connection from `addr`'s port to itself does not count: when nothing listens yet
/// and the kernel picks that very port as the probe's own, Linux connects the socket to
/// itself (a simultaneous open), and the server then finds its port taken.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
///
/// let mut child = tokio::process::Command::new("my-server")
///     .args(["--listen", "127.0.0.1:8080"])
///     .kill_on_drop(true)
///     .spawn()
///     .unwrap();
/// modelctx_test::listening(&mut child, "127.0.0.1:8080", Duration::from_secs(30)).await;
/// # }
/// ```
///
/// # Panics
///
/// When `child` exits first, or nothing listens within `limit`.
pub async fn listening(child: &mut tokio::process::Child, addr: &str, limit: Duration) {
    let what = format!("a server listening on {addr}");
    crate::within(limit, &what, async {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        loop {
            tick.tick().await;
            if let Ok(stream) = tokio::net::TcpStream::connect(addr).await
                && stream.local_addr().ok() != stream.peer_addr().ok()
            {
                return;
            }
            if let Some(status) = child.try_wait().expect("the child's status") {
                panic!("the server exited before it listened on {addr} ({status})");
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    #[should_panic(expected = "exited before it listened")]
    async fn a_server_that_exits_first_fails_the_wait() {
        let mut child = tokio::process::Command::new("true").spawn().unwrap();
        listening(&mut child, "127.0.0.1:1", Duration::from_secs(30)).await;
    }
}
