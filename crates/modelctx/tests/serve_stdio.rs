//! `server.serve_stdio()`: the test binary runs itself as a stdio server child
//! (`harness = false`, so that libtest writes no banner on the child's stdout), a
//! client calls its tool and closes its stdin, and the child's `serve_stdio` returns
//! `Ok` and the process exits with success.

use std::process::ExitCode;
use std::time::Duration;

use modelctx::prelude::*;

/// Set in the child's environment: be the server.
const CHILD: &str = "MODELCTX_TEST_SERVE_STDIO_CHILD";

/// Bounds every wait of the parent.
const WAIT: Duration = Duration::from_secs(20);

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if std::env::var_os(CHILD).is_some() {
        let server = Server::builder("serve-stdio", "1.0.0")
            .tool(add_tool())
            .expect("a valid tool")
            .build();
        return match runtime.block_on(server.serve_stdio()) {
            // 7: told apart from a panic (101) and from being killed.
            Ok(()) => ExitCode::from(7),
            Err(e) => {
                eprintln!("serve_stdio failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    runtime.block_on(the_server_serves_until_the_client_leaves());
    println!("serve_stdio: the server serves until the client leaves ... ok");
    ExitCode::SUCCESS
}

async fn the_server_serves_until_the_client_leaves() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let child = ChildProcess::new(exe)
        .env(CHILD, "1")
        .spawn()
        .expect("spawn the child");
    let handle = child.handle();
    let client = tokio::time::timeout(WAIT, Client::builder("parent", "1.0.0").connect(child))
        .await
        .expect("connect in time")
        .expect("connect");
    let arguments = serde_json::json!({"a": 2, "b": 40});
    let result = tokio::time::timeout(
        WAIT,
        client.call_tool("add", arguments.as_object().cloned().unwrap()),
    )
    .await
    .expect("call in time")
    .expect("call");
    assert_eq!(result.content[0].as_text(), Some("42"));

    // Closing the client closes the child's stdin: the session ends, `serve_stdio`
    // returns `Ok` and `main` exits with 7.
    client.close().await;
    let status = tokio::time::timeout(WAIT, handle.wait())
        .await
        .expect("the child exits by itself")
        .expect("its status");
    assert_eq!(
        status.code(),
        Some(7),
        "serve_stdio returned Ok: {status:?}"
    );
}
