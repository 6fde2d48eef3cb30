//! The request context of the high-level server: reading the server's own resources.

use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Server, TemplateDef, ToolDef};
use modelctx::types::{ErrorCode, TextOrBlobResourceContents};
use modelctx_conformance::{Connector, Test, conformance_test};
use serde::Deserialize;
use serde_json::json;

use crate::support::text_resource;
use crate::tools::{connect_to, obj};

pub(crate) fn tests() -> Vec<Test> {
    vec![conformance_test!(
        a_tool_reads_a_resource_of_its_server,
        ["mcpserver:context:read-resource"]
    )]
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Target {
    uri: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct User {
    id: u32,
}

async fn a_tool_reads_a_resource_of_its_server(connector: Connector) {
    let reader = ToolDef::new("read", |target: Target, cx: Context| async move {
        let read = cx
            .read_resource(&target.uri)
            .await
            .map_err(|e| format!("{} ({})", e.message, e.code.0))?;
        match &read.contents[0] {
            TextOrBlobResourceContents::Text(t) => Ok::<_, String>(t.text.clone()),
            other => Err(format!("unexpected contents {other:?}")),
        }
    });
    let server = Server::builder("self-reading", "1.0.0")
        .resource(text_resource("config://app", "config", "debug=true"))
        .unwrap()
        .resource_template(TemplateDef::new(
            "users://{id}",
            "user",
            |user: User, _cx: Context| async move { Ok::<_, String>(format!("user #{}", user.id)) },
        ))
        .unwrap()
        .tool(reader)
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let read = |uri: &str| {
        let call = pair.client.call_tool("read", obj(json!({"uri": uri})));
        async move { call.await.unwrap() }
    };
    let config = read("config://app").await;
    assert_eq!(config.content[0].as_text(), Some("debug=true"));
    let user = read("users://7").await;
    assert_eq!(user.content[0].as_text(), Some("user #7"));
    let missing = read("nowhere://x").await;
    assert!(missing.is_error());
    let text = missing.content[0].as_text().unwrap();
    assert!(
        text.contains(&ErrorCode::RESOURCE_NOT_FOUND.0.to_string()),
        "{text}"
    );
    // Nothing was read over the wire: the tool read in-process.
    assert_eq!(pair.wire.sent_count("resources/read"), 0);
}
