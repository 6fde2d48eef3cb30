//! The stdio example pair, run as a user would: `stdio-client` starts `stdio-server` and
//! calls `introduce`, whose handler asks for the user's name mid-call — once per
//! protocol era, the server's code unchanged.

use std::process::Command;
use std::time::Duration;

use tokio::process::Command as Child;

/// Runs `stdio-client ARGS` (it starts the `stdio-server` built beside it) and returns
/// its standard output; the run is bounded.
async fn client(args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stdio-client"));
    command.args(args).env("STDIO_CLIENT_NAME", "Grace");
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        Child::from(command).kill_on_drop(true).output(),
    )
    .await
    .expect("stdio-client finishes")
    .expect("stdio-client runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "stdio-client failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn a_tool_that_asks_for_input_mid_call_works_in_both_eras_unchanged() {
    for (era, version) in [("2025", "2025-11-25"), ("2026", "2026-07-28")] {
        let out = client(&["--era", era, "--call", "introduce"]).await;
        assert!(out.contains(&format!("(protocol {version})")), "{out}");
        assert!(out.contains("the server asks: Who are you?"), "{out}");
        assert!(out.contains("Hello, Grace!"), "{out}");
        assert!(out.contains("server exited (Exited)"), "{out}");
    }
}
