//! The programs of the README's line-count table, run as a user would: the HTTP server
//! with a tool, a resource template and a completing prompt; the typed client and the
//! stdio server it starts; the OAuth-protected server, refused without a token. And the
//! table's modelctx counts (and rmcp's row (3), a program of the bench crate), checked
//! against the files.

use std::process::Stdio;
use std::time::Duration;

use modelctx::client::ConnectMode;
use modelctx::prelude::*;
use modelctx_test::within;
use tokio::process::{Child, Command};

const WITHIN: Duration = Duration::from_secs(30);

/// Starts `program ADDR` (killed on drop) on a free loopback address and waits,
/// bounded, until it accepts connections there: the process and `ADDR`.
async fn start_listening(program: &str, env: &[(&str, &str)]) -> (Child, String) {
    modelctx_test::start_listening(WITHIN, |addr| {
        let mut command = Command::new(program);
        command
            .arg(addr)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        command
    })
    .await
}

fn text_of(read: &ReadResourceResult) -> String {
    let contents = serde_json::to_value(&read.contents[0]).unwrap();
    contents["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn the_http_quickstart_serves_its_tool_template_and_completing_prompt_in_both_eras() {
    let (_server, addr) = start_listening(env!("CARGO_BIN_EXE_http-quickstart"), &[]).await;
    let url = format!("http://{addr}/mcp");
    for mode in [ConnectMode::Handshake, ConnectMode::Auto] {
        let transport = StreamableHttpClientTransport::new(&url).unwrap();
        let connect = Client::builder("test", "1.0.0")
            .mode(mode)
            .connect(transport);
        let client = within(WITHIN, "the connection", connect).await.unwrap();
        within(WITHIN, "the exchange", async {
            let result = client
                .call_tool("add", json!({"a": 2, "b": 3}))
                .await
                .unwrap();
            assert_eq!(result.text(), "5");
            let read = client.read_resource("greeting://Ada").await.unwrap();
            assert_eq!(text_of(&read), "Hello, Ada!");
            let prompt = client
                .get_prompt("review", json!({"language": "rust"}))
                .await
                .unwrap();
            assert_eq!(
                prompt.messages[0].content.as_text(),
                Some("Review this rust code.")
            );
            let values = client
                .complete_prompt_argument("review", "language", "r")
                .await
                .unwrap();
            assert_eq!(values, ["ruby", "rust"]);
        })
        .await;
        client.close().await;
    }
}

#[tokio::test]
async fn the_typed_client_lists_the_tools_and_reads_the_structured_output() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_divider-client"));
    command
        .arg(env!("CARGO_BIN_EXE_divider-server"))
        .kill_on_drop(true);
    let output = within(WITHIN, "divider-client", command.output())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "divider-client failed: {stdout}{stderr}"
    );
    assert_eq!(stdout, "tools: [\"divide\"]\n17 / 5 = 3 remainder 2\n");
}

#[tokio::test]
async fn the_protected_server_refuses_a_call_without_a_token_and_points_at_its_metadata() {
    // Never contacted: nothing here carries a token to verify.
    let issuer = "https://auth.example.com";
    let env = [
        ("ISSUER", issuer),
        ("JWKS_URI", "https://auth.example.com/jwks"),
    ];
    let program = env!("CARGO_BIN_EXE_protected-server");
    let (_server, addr) = start_listening(program, &env).await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1.0.0"}}
    });
    let refused = within(WITHIN, "the anonymous call", async {
        http.post(format!("http://{addr}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize.to_string())
            .send()
            .await
            .unwrap()
    })
    .await;
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{challenge}"
    );

    let metadata: serde_json::Value = within(WITHIN, "the metadata", async {
        let answer = http.get(&metadata_url).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        serde_json::from_str(&answer.text().await.unwrap()).unwrap()
    })
    .await;
    assert_eq!(metadata["resource"], format!("http://{addr}/mcp"));
    assert_eq!(metadata["authorization_servers"], json!([issuer]));
}

/// Non-blank lines that are not comments (doc comments included), imports included:
/// how the README counts every SDK's programs.
fn counted_lines(source: &str) -> usize {
    source
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .count()
}

#[test]
fn the_readme_table_counts_the_example_files() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    for bin in [
        "adder-server",
        "adder-client",
        "http-quickstart",
        "divider-client",
        "protected-server",
    ] {
        let path = format!("{root}/examples/src/bin/{bin}.rs");
        let lines = counted_lines(&std::fs::read_to_string(&path).unwrap());
        let row = readme
            .lines()
            .find(|line| line.starts_with("| (") && line.contains(&format!("`{bin}`")))
            .unwrap_or_else(|| panic!("no row of the README's table names `{bin}`"));
        // | program | modelctx | rmcp | FastMCP |
        let modelctx = row.split('|').nth(2).unwrap().trim();
        assert_eq!(
            modelctx,
            lines.to_string(),
            "{bin}: the README says {modelctx}"
        );
    }
    // Row (3)'s rmcp program is written here too (the bench crate, which builds rmcp;
    // `cargo xtask interop` runs it): its count is checked the same way.
    let path = format!("{root}/crates/modelctx-bench/src/bin/rmcp-divider-client.rs");
    let lines = counted_lines(&std::fs::read_to_string(&path).unwrap());
    let row = readme
        .lines()
        .find(|line| line.starts_with("| (3)"))
        .expect("the README's row (3)");
    let rmcp = row.split('|').nth(3).unwrap().trim();
    assert_eq!(
        rmcp,
        lines.to_string(),
        "rmcp's row (3): the README says {rmcp}"
    );
}
