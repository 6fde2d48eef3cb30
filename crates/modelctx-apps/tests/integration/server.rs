//! The server half through the public API, in memory, in both eras: UI resources as
//! read, tools as each kind of client sees them, and what installing apps refuses.

use modelctx_apps::{
    Apps, AppsErrorKind, Csp, EXTENSION_ID, MIME_TYPE, ServerBuilderAppsExt, ToolUi, UiResource,
    UiResourceMeta, Visibility, model_tools,
};
use modelctx_client::{Client, ConnectMode, ToolResultExt};
use modelctx_server::{Context, NoArgs, Server, ToolDef};
use modelctx_test::apps::{
    BLOB_URI, CONNECT_ORIGIN, ClockServer, FACE_HTML, FACE_URI, MODEL_NOTE, PLAIN, RESOURCE_ORIGIN,
    SHOW_TIME, TICK,
};
use modelctx_test::within;
use modelctx_types::TextOrBlobResourceContents;
use serde_json::json;

use crate::support::{self, ERAS, WAIT, list_tools};

/// A host (a client that declares the apps extension) of `server` in `mode`, which
/// lands on revision `era`.
async fn host(server: &Server, mode: ConnectMode, era: &str) -> Client {
    let client = support::host(server, "host", mode).await;
    assert_eq!(client.protocol_version().as_str(), era);
    client
}

/// A client of `server` that does not declare the extension, in `mode`, which lands on
/// revision `era`.
async fn plain_client(server: &Server, mode: ConnectMode, era: &str) -> Client {
    let client = support::connect(server, mode, Client::builder("plain", "1.0.0")).await;
    assert_eq!(client.protocol_version().as_str(), era);
    client
}

fn names(tools: &[modelctx_types::Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn a_ui_client_sees_every_linked_tool_with_its_metadata() {
    for (mode, era) in ERAS {
        let clock = ClockServer::new();
        let server = clock.server();
        let client = host(&server, mode, era).await;
        let tools = list_tools(&client).await;
        assert_eq!(names(&tools), [MODEL_NOTE, PLAIN, SHOW_TIME, TICK], "{era}");
        let tick = tools.iter().find(|t| t.name == TICK).unwrap();
        assert_eq!(
            tick.meta.as_ref().unwrap().get("ui").unwrap(),
            &json!({"resourceUri": FACE_URI, "visibility": ["app"]})
        );
        // The host's model-facing list leaves the app-only tool out.
        assert_eq!(
            names(&model_tools(tools.clone())),
            [MODEL_NOTE, PLAIN, SHOW_TIME]
        );
        // A tool sees the client's declaration and answers for a UI.
        let result = within(WAIT, "tools/call", client.call_tool(SHOW_TIME, json!({})))
            .await
            .unwrap();
        assert_eq!(result.structured_content.unwrap()["time"], "12:00", "{era}");
        let caps = client.server_capabilities().extensions.as_ref().unwrap();
        assert_eq!(caps[EXTENSION_ID]["mimeTypes"], json!([MIME_TYPE]));
    }
}

#[tokio::test]
async fn a_plain_client_sees_no_app_only_tool_and_no_ui_metadata() {
    for (mode, era) in ERAS {
        let clock = ClockServer::new();
        let server = clock.server();
        let client = plain_client(&server, mode, era).await;
        let tools = list_tools(&client).await;
        assert_eq!(names(&tools), [MODEL_NOTE, PLAIN, SHOW_TIME], "{era}");
        assert!(tools.iter().all(|t| t.meta.is_none()), "{era}: {tools:?}");
        // The app-only tool does not exist for it, and never runs.
        let refused = within(WAIT, "tools/call", client.call_tool(TICK, json!({})))
            .await
            .unwrap_err();
        let error = refused.protocol_error().expect("a JSON-RPC error");
        assert_eq!(error.code.0, -32602, "{era}");
        assert!(error.message.contains("Unknown tool"), "{}", error.message);
        // A linked tool answers it in text that stands alone.
        let result = within(WAIT, "tools/call", client.call_tool(SHOW_TIME, json!({})))
            .await
            .unwrap();
        assert!(result.structured_content.is_none());
        assert_eq!(clock.calls(), [SHOW_TIME]);
    }
}

/// Visibility follows each tool's own `_meta.ui`, however it was registered: on the
/// builder beside the apps, or while the server runs.
#[tokio::test]
async fn app_only_tools_registered_outside_the_apps_are_hidden_from_a_plain_client_too() {
    for (mode, era) in ERAS {
        let apps = Apps::new().resource(page("ui://a/page")).unwrap();
        let app_only = |name: &str| {
            ToolUi::new("ui://a/page")
                .visibility([Visibility::App])
                .link(noop(name))
        };
        let server = Server::builder("s", "1")
            .tool(app_only("on_builder"))
            .unwrap()
            .tool(noop("for_all"))
            .unwrap()
            .apps(apps)
            .unwrap()
            .build();
        server.add_tool(app_only("added_later")).unwrap();
        let client = plain_client(&server, mode.clone(), era).await;
        let tools = list_tools(&client).await;
        assert_eq!(names(&tools), ["for_all"], "{era}");
        for hidden in ["on_builder", "added_later"] {
            let refused = within(WAIT, "tools/call", client.call_tool(hidden, json!({})))
                .await
                .unwrap_err();
            let error = refused.protocol_error().expect("a JSON-RPC error");
            assert_eq!(error.code.0, -32602, "{era} {hidden}");
            assert!(error.message.contains("Unknown tool"), "{}", error.message);
        }
        // A client with the extension sees and calls them.
        let host = host(&server, mode, era).await;
        let tools = list_tools(&host).await;
        assert_eq!(
            names(&tools),
            ["added_later", "for_all", "on_builder"],
            "{era}"
        );
        let result = within(WAIT, "tools/call", host.call_tool("on_builder", json!({})))
            .await
            .unwrap();
        assert_eq!(result.text(), "ok", "{era}");
    }
}

#[tokio::test]
async fn ui_resources_read_with_mime_type_and_metadata() {
    for (mode, era) in ERAS {
        let server = ClockServer::new().server();
        let client = host(&server, mode, era).await;
        let listed = within(WAIT, "resources/list", client.list_all_resources())
            .await
            .unwrap();
        let face = listed.iter().find(|r| r.uri == FACE_URI).unwrap();
        assert_eq!(face.mime_type.as_deref(), Some(MIME_TYPE));
        let read = within(WAIT, "resources/read", client.read_resource(FACE_URI))
            .await
            .unwrap();
        let TextOrBlobResourceContents::Text(text) = &read.contents[0] else {
            panic!("the face is text");
        };
        assert_eq!(text.text, FACE_HTML);
        assert_eq!(text.mime_type.as_deref(), Some(MIME_TYPE));
        let meta = UiResourceMeta::of(text.meta.as_ref().unwrap()).unwrap();
        let csp = meta.csp.unwrap();
        assert_eq!(csp.connect_domains, [CONNECT_ORIGIN]);
        assert_eq!(csp.resource_domains, [RESOURCE_ORIGIN]);
        assert!(meta.permissions.unwrap().clipboard_write);
        assert_eq!(meta.prefers_border, Some(true));
        assert_eq!(
            face.meta.as_ref(),
            text.meta.as_ref(),
            "{era}: listing and contents agree"
        );

        let read = within(WAIT, "resources/read", client.read_resource(BLOB_URI))
            .await
            .unwrap();
        let TextOrBlobResourceContents::Blob(blob) = &read.contents[0] else {
            panic!("the note is a blob");
        };
        assert_eq!(blob.mime_type.as_deref(), Some(MIME_TYPE));
        assert_eq!(
            blob.blob,
            "PCFkb2N0eXBlIGh0bWw+PGh0bWw+PGJvZHk+PHAgaWQ9InRpbWUiPi0tOi0tPC9wPjxidXR0b24+dGljazwvYnV0dG9uPjwvYm9keT48L2h0bWw+"
        );
        assert!(blob.meta.is_none());
    }
}

fn noop(name: &str) -> ToolDef {
    ToolDef::new(name.to_owned(), |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("ok")
    })
}

fn page(uri: &str) -> UiResource {
    UiResource::html(uri, "Page", "<!doctype html><p>hi</p>")
}

#[test]
fn installing_refuses_a_tool_whose_ui_is_missing() {
    let apps = Apps::new()
        .resource(page("ui://a/page"))
        .unwrap()
        .tool(ToolUi::new("ui://a/other").link(noop("lost")))
        .unwrap();
    let error = Server::builder("s", "1").apps(apps).unwrap_err();
    assert_eq!(error.kind(), AppsErrorKind::UnknownResource);
    assert_eq!(error.subject(), "lost");
    assert!(error.message().contains("ui://a/other"), "{error}");
}

#[test]
fn resources_are_checked_when_added() {
    let refused = |r: UiResource| Apps::new().resource(r).unwrap_err();
    for (resource, needle) in [
        (UiResource::html("https://a/page", "P", "<p>"), "ui://"),
        (UiResource::html("ui://", "P", "<p>"), "nothing after"),
        (UiResource::html("ui://a", " ", "<p>"), "name"),
        (UiResource::html("ui://a", "P", "  "), "empty"),
        (
            UiResource::html_blob("ui://a", "P", vec![0xff, 0xfe]),
            "UTF-8",
        ),
        (
            page("ui://a").csp(Csp::new().connect("api.example.com")),
            "connectDomains",
        ),
        (
            page("ui://a").csp(Csp::new().resource("https://a.example; script-src *")),
            "resourceDomains",
        ),
        (
            page("ui://a").csp(Csp::new().frame("javascript://x")),
            "frameDomains",
        ),
        (
            page("ui://a").csp(Csp::new().base_uri("https://a.example/path")),
            "baseUriDomains",
        ),
        (page("ui://a").domain("bad domain"), "domain"),
    ] {
        let error = refused(resource);
        assert_eq!(error.kind(), AppsErrorKind::Invalid);
        assert!(error.to_string().contains(needle), "{error} lacks {needle}");
    }
    let twice = Apps::new()
        .resource(page("ui://a"))
        .unwrap()
        .resource(page("ui://a"))
        .unwrap_err();
    assert_eq!(twice.kind(), AppsErrorKind::Duplicate);
    assert!(
        Apps::new()
            .resource(page("ui://a").domain("a904794854a047f6.claudemcpcontent.com"))
            .is_ok()
    );
}

#[test]
fn tools_are_checked_when_added() {
    let unlinked = Apps::new().tool(noop("bare")).unwrap_err();
    assert!(unlinked.message().contains("_meta.ui"), "{unlinked}");
    let scheme = Apps::new()
        .tool(ToolUi::new("https://x").link(noop("t")))
        .unwrap_err();
    assert!(scheme.message().contains("resourceUri"), "{scheme}");
    let nobody = Apps::new()
        .tool(ToolUi::new("ui://x").visibility([]).link(noop("t")))
        .unwrap_err();
    assert!(nobody.message().contains("visibility"), "{nobody}");
    // App-only tools need no UI of their own.
    let mut helper = ToolUi::default();
    helper.visibility = Some(vec![Visibility::App]);
    assert!(
        Server::builder("s", "1")
            .apps(Apps::new().tool(helper.link(noop("t"))).unwrap())
            .is_ok()
    );
    // A name the builder already has is a duplicate.
    let taken = Server::builder("s", "1")
        .tool(noop("t"))
        .unwrap()
        .apps(
            Apps::new()
                .resource(page("ui://p"))
                .unwrap()
                .tool(ToolUi::new("ui://p").link(noop("t")))
                .unwrap(),
        )
        .unwrap_err();
    assert_eq!(taken.kind(), AppsErrorKind::Duplicate);
}
