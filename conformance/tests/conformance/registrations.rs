//! Handles on what a running server registered: a tool, prompt or resource disabled and
//! enabled again, updated (renamed too) and removed, each change reaching connected
//! clients as a list change.

use modelctx::client::ListKind;
use modelctx::server::{Context, NoArgs, PromptDef, ResourceDef, Server};
use modelctx::types::{JsonObject, TextOrBlobResourceContents};
use modelctx_conformance::{Connector, Test, conformance_test};

use crate::support::{Pair, announced, text_tool, tool_names, watching};
use crate::tools::call_without_arguments;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_disabled_tool_is_gone_until_enabled_again,
            ["mcpserver:handle:enable-disable"]
        ),
        conformance_test!(
            a_prompt_handle_updates_and_removes_its_prompt,
            ["mcpserver:prompt:handle-update-remove"]
        ),
        conformance_test!(
            a_resource_handle_updates_and_removes_its_resource,
            ["mcpserver:resource:handle-update-remove"]
        ),
    ]
}

fn prompt(name: &str, text: &'static str) -> PromptDef {
    PromptDef::new(name, move |_: NoArgs, _cx: Context| async move {
        Ok::<_, String>(text.to_owned())
    })
}

async fn prompt_text(pair: &Pair, name: &str) -> String {
    let got = pair.client.get_prompt(name, ()).await.unwrap();
    got.messages[0].content.as_text().unwrap().to_owned()
}

async fn prompt_names(pair: &Pair) -> Vec<String> {
    let prompts = pair.client.list_all_prompts().await.unwrap();
    prompts.into_iter().map(|p| p.name).collect()
}

fn note(uri: &str, text: &'static str) -> ResourceDef {
    ResourceDef::new(uri, "note", move |_cx: Context| async move {
        Ok::<_, String>(text)
    })
}

async fn read_text(pair: &Pair, uri: &str) -> String {
    let read = pair.client.read_resource(uri).await.unwrap();
    match &read.contents[0] {
        TextOrBlobResourceContents::Text(text) => text.text.clone(),
        other => panic!("a text content, got {other:?}"),
    }
}

async fn resource_uris(pair: &Pair) -> Vec<String> {
    let resources = pair.client.list_all_resources().await.unwrap();
    resources.into_iter().map(|r| r.uri).collect()
}

async fn a_disabled_tool_is_gone_until_enabled_again(connector: Connector) {
    let server = Server::builder("switches", "1.0.0").enable_tools().build();
    let (pair, mut changes) = watching(&connector, &server, ListKind::Tools).await;
    assert!(tool_names(&pair.client).await.is_empty());

    let handle = server.add_tool(text_tool("lamp", "on")).unwrap();
    announced(&mut changes, ListKind::Tools, "the registration").await;
    assert!(handle.is_enabled());
    assert_eq!(tool_names(&pair.client).await, ["lamp"]);

    // Disabled: out of the list, and a call is refused like one to an unknown tool.
    assert!(handle.disable());
    announced(&mut changes, ListKind::Tools, "the disabling").await;
    assert!(!handle.is_enabled() && handle.is_registered());
    assert!(tool_names(&pair.client).await.is_empty());
    let refused = pair
        .client
        .call_tool("lamp", JsonObject::new())
        .await
        .unwrap_err();
    assert!(refused.protocol_error().is_some(), "{refused:?}");
    assert!(!handle.disable(), "already disabled");
    // The name stays taken while disabled.
    assert!(
        server
            .add_tool(text_tool("lamp", "other"))
            .unwrap_err()
            .is_duplicate()
    );

    // Enabled again: listed and served as before.
    assert!(handle.enable());
    announced(&mut changes, ListKind::Tools, "the enabling").await;
    assert_eq!(tool_names(&pair.client).await, ["lamp"]);
    let lit = call_without_arguments(&pair, "lamp").await;
    assert_eq!(lit.content[0].as_text(), Some("on"));
    assert!(!handle.enable(), "already enabled");
}

async fn a_prompt_handle_updates_and_removes_its_prompt(connector: Connector) {
    let server = Server::builder("prompts", "1.0.0").enable_prompts().build();
    let (pair, mut changes) = watching(&connector, &server, ListKind::Prompts).await;

    let mut handle = server.add_prompt(prompt("greet", "Hello.")).unwrap();
    announced(&mut changes, ListKind::Prompts, "the registration").await;
    assert_eq!(prompt_text(&pair, "greet").await, "Hello.");

    // An update replaces what the prompt says.
    handle.update(prompt("greet", "Hello again.")).unwrap();
    announced(&mut changes, ListKind::Prompts, "the update").await;
    assert_eq!(prompt_text(&pair, "greet").await, "Hello again.");
    // One that renames it moves the handle along.
    handle
        .update(prompt("salute", "Greetings.").description("Formal."))
        .unwrap();
    announced(&mut changes, ListKind::Prompts, "the renaming").await;
    assert_eq!(handle.id(), "salute");
    assert_eq!(prompt_names(&pair).await, ["salute"]);
    let listed = pair.client.list_all_prompts().await.unwrap();
    assert_eq!(listed[0].description.as_deref(), Some("Formal."));
    assert!(pair.client.get_prompt("greet", ()).await.is_err());

    // Removal takes it away for good.
    assert!(handle.clone().remove());
    announced(&mut changes, ListKind::Prompts, "the removal").await;
    assert!(prompt_names(&pair).await.is_empty());
    assert!(pair.client.get_prompt("salute", ()).await.is_err());
    assert!(!handle.is_registered());
    assert!(
        handle.update(prompt("salute", "Back?")).is_err(),
        "a removed prompt is not updated back into being"
    );
    assert!(!handle.remove(), "already removed");
}

async fn a_resource_handle_updates_and_removes_its_resource(connector: Connector) {
    let server = Server::builder("notes", "1.0.0").enable_resources().build();
    let (pair, mut changes) = watching(&connector, &server, ListKind::Resources).await;

    let mut handle = server
        .add_resource(note("file:///notes/today.txt", "draft"))
        .unwrap();
    announced(&mut changes, ListKind::Resources, "the registration").await;
    assert_eq!(read_text(&pair, "file:///notes/today.txt").await, "draft");

    handle
        .update(note("file:///notes/today.txt", "final").mime_type("text/plain"))
        .unwrap();
    announced(&mut changes, ListKind::Resources, "the update").await;
    assert_eq!(read_text(&pair, "file:///notes/today.txt").await, "final");
    let listed = pair.client.list_all_resources().await.unwrap();
    assert_eq!(listed[0].mime_type.as_deref(), Some("text/plain"));

    handle
        .update(note("file:///notes/archive.txt", "archived"))
        .unwrap();
    announced(&mut changes, ListKind::Resources, "the move").await;
    assert_eq!(handle.id(), "file:///notes/archive.txt");
    assert_eq!(resource_uris(&pair).await, ["file:///notes/archive.txt"]);
    assert!(
        pair.client
            .read_resource("file:///notes/today.txt")
            .await
            .is_err()
    );

    assert!(handle.remove());
    announced(&mut changes, ListKind::Resources, "the removal").await;
    assert!(resource_uris(&pair).await.is_empty());
    assert!(
        pair.client
            .read_resource("file:///notes/archive.txt")
            .await
            .is_err()
    );
}
