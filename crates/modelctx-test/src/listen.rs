//! Waiting for a server started as a child process to accept connections.

use std::time::Duration;

/// How many addresses [`start_listening`] tries before it gives up.
const ATTEMPTS: usize = 5;

/// Starts the server that `command` builds for an address (`host:port`) on a
/// [free loopback address](crate::free_loopback_addr), and waits, for at most `limit`
/// in all, until it accepts connections there: its process (killed on drop when
/// `command` asks for it) and the address. A server that exits first (its port taken
/// meanwhile, say) is started again on another address, a few times.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
///
/// let (child, addr) = modelctx_test::start_listening(Duration::from_secs(30), |addr| {
///     let mut command = tokio::process::Command::new("my-server");
///     command.args(["--listen", addr]).kill_on_drop(true);
///     command
/// })
/// .await;
/// # drop((child, addr));
/// # }
/// ```
///
/// # Panics
///
/// When no free address is found, the program cannot be run, it exits before it
/// listens on every address tried, or nothing listens within `limit`.
pub async fn start_listening(
    limit: Duration,
    mut command: impl FnMut(&str) -> tokio::process::Command,
) -> (tokio::process::Child, String) {
    crate::within(limit, "a server listening on a free port", async {
        let mut exits = Vec::new();
        for _ in 0..ATTEMPTS {
            let addr = crate::free_loopback_addr()
                .unwrap_or_else(|e| panic!("{e}"))
                .to_string();
            let mut child = command(&addr)
                .spawn()
                .unwrap_or_else(|e| panic!("the server cannot start: {e}"));
            match accepting(&mut child, &addr).await {
                Ok(()) => return (child, addr),
                Err(status) => exits.push(format!("{addr} ({status})")),
            }
        }
        panic!(
            "the server exited before it listened, on every address tried: {}",
            exits.join(", ")
        )
    })
    .await
}

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
    if let Err(status) = crate::within(limit, &what, accepting(child, addr)).await {
        panic!("the server exited before it listened on {addr} ({status})");
    }
}

/// Resolves once something accepts connections on `addr`, or with `child`'s status
/// when it exits first.
async fn accepting(
    child: &mut tokio::process::Child,
    addr: &str,
) -> Result<(), std::process::ExitStatus> {
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        tick.tick().await;
        if let Ok(stream) = tokio::net::TcpStream::connect(addr).await
            && stream.local_addr().ok() != stream.peer_addr().ok()
        {
            return Ok(());
        }
        if let Some(status) = child.try_wait().expect("the child's status") {
            return Err(status);
        }
    }
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

    #[tokio::test]
    #[should_panic(expected = "on every address tried")]
    async fn a_server_that_always_exits_first_fails_the_start_after_a_few_addresses() {
        let mut tried = Vec::new();
        let _ = start_listening(Duration::from_secs(30), |addr| {
            tried.push(addr.to_owned());
            assert!(tried.len() <= ATTEMPTS, "{tried:?}");
            tokio::process::Command::new("true")
        })
        .await;
    }

    #[tokio::test]
    async fn a_server_that_listens_is_returned_with_its_address() {
        // A shell stand-in would need a listener of its own; bind the address here
        // instead and let a long-lived child stand for the server.
        let mut held = None;
        let (mut child, addr) = start_listening(Duration::from_secs(30), |addr| {
            held = Some(std::net::TcpListener::bind(addr).unwrap());
            let mut command = tokio::process::Command::new("sleep");
            command.arg("30").kill_on_drop(true);
            command
        })
        .await;
        let held = held.expect("the command was built");
        assert_eq!(held.local_addr().unwrap().to_string(), addr);
        assert!(child.try_wait().unwrap().is_none());
    }
}
