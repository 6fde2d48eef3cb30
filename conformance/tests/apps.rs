//! MCP Apps (SEP-1865, `io.modelcontextprotocol/ui`), the server half: UI metadata served
//! per what the client declared, UI resources as read, the extension declared. The
//! manifest has no requirement IDs for the extension, so these run outside the
//! registry: each test runs once per cell of in-memory, stdio and streamable HTTP in both
//! eras (2025-11-25 with the handshake, 2026-07-28 without), through the conformance
//! crate's [`Connector`].

mod common;

use common::{cells, connect};
use modelctx::apps::{EXTENSION_ID, MIME_TYPE, UiResourceMeta, model_tools};
use modelctx::client::{Client, ClientBuilder};
use modelctx::types::{CacheScope, TextOrBlobResourceContents, Tool};
use modelctx_conformance::{Connector, SpecVersion, within};
use modelctx_test::apps::{
    BLOB_URI, CONNECT_ORIGIN, ClockServer, FACE_HTML, FACE_URI, MODEL_NOTE, PLAIN, SHOW_TIME, TICK,
    with_ui,
};
use serde_json::json;

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// A fresh clock server, and a client of it over `connector` whose builder `declare`
/// makes.
async fn clock_and_client(
    connector: &Connector,
    declare: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> (ClockServer, Client) {
    let clock = ClockServer::new();
    let client = connect(connector, &clock.server(), "apps-conformance", declare).await;
    (clock, client)
}

/// A host that declared the extension sees every linked tool with its `_meta.ui`
/// (app-only ones too: it needs them to proxy its apps' calls, and leaves them out of
/// the model's list), reads the UI resource with its MIME type and `_meta.ui`, and sees
/// the server's declaration; a 2026-07-28 page that differs by client is `private`.
#[tokio::test]
async fn a_host_with_the_extension_gets_ui_metadata() {
    for connector in cells() {
        let at = connector.cell().to_string();
        let (clock, client) = clock_and_client(&connector, with_ui).await;
        let declared = &client.server_capabilities().extensions.as_ref().unwrap()[EXTENSION_ID];
        assert_eq!(declared["mimeTypes"], json!([MIME_TYPE]), "{at}");

        let page = within("tools/list", client.list_tools(None)).await.unwrap();
        assert_eq!(
            names(&page.tools),
            [MODEL_NOTE, PLAIN, SHOW_TIME, TICK],
            "{at}"
        );
        if connector.version() == SpecVersion::V2026_07_28 {
            assert_eq!(page.cache_scope, Some(CacheScope::Private), "{at}");
        }
        let show = page.tools.iter().find(|t| t.name == SHOW_TIME).unwrap();
        assert_eq!(
            show.meta.as_ref().unwrap().get("ui").unwrap()["resourceUri"],
            FACE_URI,
            "{at}"
        );
        assert_eq!(
            names(&model_tools(page.tools.clone())),
            [MODEL_NOTE, PLAIN, SHOW_TIME]
        );

        let read = within("resources/read", client.read_resource(FACE_URI))
            .await
            .unwrap();
        let TextOrBlobResourceContents::Text(face) = &read.contents[0] else {
            panic!("{at}: the face is text");
        };
        assert_eq!(
            (face.text.as_str(), face.mime_type.as_deref()),
            (FACE_HTML, Some(MIME_TYPE)),
            "{at}"
        );
        let meta = UiResourceMeta::of(face.meta.as_ref().unwrap()).unwrap();
        assert_eq!(meta.csp.unwrap().connect_domains, [CONNECT_ORIGIN], "{at}");
        let read = within("resources/read", client.read_resource(BLOB_URI))
            .await
            .unwrap();
        assert!(
            matches!(&read.contents[0], TextOrBlobResourceContents::Blob(_)),
            "{at}"
        );

        let result = within("tools/call", client.call_tool(TICK, json!({"n": 1})))
            .await
            .unwrap();
        assert_eq!(
            result.structured_content.unwrap()["arguments"],
            json!({"n": 1}),
            "{at}"
        );
        assert_eq!(clock.calls(), [TICK], "{at}");
    }
}

/// A client without the extension sees no app-only tool and no `_meta.ui`, gets "Unknown
/// tool" for an app-only tool (which never runs), and plain text from a linked tool.
#[tokio::test]
async fn a_client_without_the_extension_gets_plain_tools() {
    for connector in cells() {
        let at = connector.cell().to_string();
        let (clock, client) = clock_and_client(&connector, |b| b).await;
        let tools = within("tools/list", client.list_all_tools()).await.unwrap();
        assert_eq!(names(&tools), [MODEL_NOTE, PLAIN, SHOW_TIME], "{at}");
        assert!(tools.iter().all(|t| t.meta.is_none()), "{at}");

        let refused = within("tools/call", client.call_tool(TICK, json!({})))
            .await
            .unwrap_err();
        let error = refused.protocol_error().expect("a JSON-RPC error");
        assert_eq!(error.code.0, -32602, "{at}");
        let result = within("tools/call", client.call_tool(SHOW_TIME, json!({})))
            .await
            .unwrap();
        assert!(result.structured_content.is_none(), "{at}");
        assert!(!result.content.is_empty(), "{at}: the text stands alone");
        assert_eq!(clock.calls(), [SHOW_TIME], "{at}");
    }
}
