//! What a client sees of a server through the role APIs, in every cell: what
//! `server/discover` carries, the lists (their order, the same on every connection,
//! their caching hints), a read that returns several contents, a prompt that links a
//! resource.

use std::time::Duration;

use modelctx::server::{Context, NoArgs, PromptDef, ResourceDef, Server, TemplateDef, ToolDef};
use modelctx::types::{
    BlobResourceContents, CacheScope, ContentBlock, JsonObject, PromptMessage, ResourceLink, Role,
    TextOrBlobResourceContents, TextResourceContents,
};
use modelctx_conformance::{Connector, Test, conformance_test};
use serde_json::Value;

use crate::support::{
    Pair, client, connect, server_with_tool, text_resource, text_tool, tool_names,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            discover_carries_the_servers_instructions,
            ["lifecycle:discover:instructions"]
        ),
        conformance_test!(
            the_tool_listing_keeps_its_order,
            ["tools:list:deterministic-order"]
        ),
        conformance_test!(
            every_content_of_a_read_arrives_in_order,
            ["resources:read:multiple-contents"]
        ),
        conformance_test!(
            every_connection_sees_the_same_lists,
            [
                "tools:list:connection-independent",
                "resources:list:connection-invariant",
                "prompts:list:connection-invariant"
            ]
        ),
        conformance_test!(
            discover_advertises_exactly_the_areas_served,
            ["lifecycle:discover:capabilities:from-handlers"]
        ),
        conformance_test!(
            list_results_carry_the_authored_caching_hints,
            [
                "caching:hints:prompts-list",
                "caching:hints:resources-templates-list"
            ]
        ),
        conformance_test!(
            every_page_of_a_list_has_one_scope,
            ["caching:pagination:same-scope-all-pages"]
        ),
        conformance_test!(
            a_prompt_can_link_a_resource,
            ["prompts:get:content:resource-link"]
        ),
    ]
}

fn hello_prompt(name: &str) -> PromptDef {
    PromptDef::new(name, |_: NoArgs, _cx: Context| async move {
        Ok::<_, String>("Say hello.".to_owned())
    })
}

/// The names of the tools, the URIs of the resources, the names of the prompts.
async fn lists(pair: &Pair) -> (Vec<String>, Vec<String>, Vec<String>) {
    let tools = pair.client.list_all_tools().await.unwrap();
    let resources = pair.client.list_all_resources().await.unwrap();
    let prompts = pair.client.list_all_prompts().await.unwrap();
    (
        tools.into_iter().map(|t| t.name).collect(),
        resources.into_iter().map(|r| r.uri).collect(),
        prompts.into_iter().map(|p| p.name).collect(),
    )
}

async fn every_connection_sees_the_same_lists(connector: Connector) {
    let server = Server::builder("shared", "1.0.0")
        .tool(text_tool("search", "ok"))
        .unwrap()
        .tool(text_tool("fetch", "ok"))
        .unwrap()
        .resource(text_resource("file:///notes.txt", "notes", "notes"))
        .unwrap()
        .prompt(hello_prompt("greet"))
        .unwrap()
        .build();
    let one = connect(&connector, &server, client()).await;
    let two = connect(&connector, &server, client()).await;
    let seen = lists(&one).await;
    assert_eq!(seen.0.len(), 2);
    assert_eq!(lists(&two).await, seen);
    // One connection uses each list's items; neither connection's lists change.
    one.client
        .call_tool("search", JsonObject::new())
        .await
        .unwrap();
    one.client.read_resource("file:///notes.txt").await.unwrap();
    one.client.get_prompt("greet", ()).await.unwrap();
    assert_eq!(lists(&one).await, seen);
    assert_eq!(lists(&two).await, seen);
}

async fn discover_advertises_exactly_the_areas_served(connector: Connector) {
    let tools_only = server_with_tool("tools", text_tool("search", "ok"));
    let pair = connect(&connector, &tools_only, client()).await;
    let caps = &pair
        .client
        .discover_result()
        .expect("a 2026-07-28 connection discovers the server")
        .capabilities;
    assert!(caps.tools.is_some(), "{caps:?}");
    assert!(caps.prompts.is_none(), "{caps:?}");
    assert!(caps.resources.is_none(), "{caps:?}");
    assert!(caps.completions.is_none(), "{caps:?}");

    let no_tools = Server::builder("content", "1.0.0")
        .prompt(hello_prompt("greet"))
        .unwrap()
        .resource(text_resource("file:///notes.txt", "notes", "notes"))
        .unwrap()
        .build();
    let pair = connect(&connector, &no_tools, client()).await;
    let caps = &pair.client.discover_result().unwrap().capabilities;
    assert!(caps.tools.is_none(), "{caps:?}");
    assert!(caps.prompts.is_some(), "{caps:?}");
    assert!(caps.resources.is_some(), "{caps:?}");
}

/// The results on the wire whose `result` has member `key`.
fn results_with(pair: &Pair, key: &str) -> Vec<Value> {
    pair.wire
        .received()
        .into_iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .filter(|m| m["result"].get(key).is_some())
        .map(|m| m["result"].clone())
        .collect()
}

async fn list_results_carry_the_authored_caching_hints(connector: Connector) {
    let server = Server::builder("cached", "1.0.0")
        .prompt(hello_prompt("greet").cache_hints(Duration::from_millis(1500), CacheScope::Public))
        .unwrap()
        .resource_template(
            TemplateDef::new(
                "notes://{id}",
                "note",
                |_: JsonObject, _cx: Context| async move { Ok::<_, String>("a note") },
            )
            .cache_hints(Duration::from_millis(2500), CacheScope::Public),
        )
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;
    let prompts = pair.client.list_prompts(None).await.unwrap();
    assert_eq!(prompts.ttl_ms, Some(1500));
    assert_eq!(prompts.cache_scope, Some(CacheScope::Public));
    let templates = pair.client.list_resource_templates(None).await.unwrap();
    assert_eq!(templates.ttl_ms, Some(2500));
    assert_eq!(templates.cache_scope, Some(CacheScope::Public));
    for key in ["prompts", "resourceTemplates"] {
        let results = results_with(&pair, key);
        assert_eq!(results.len(), 1, "{key}: {results:?}");
        let result = &results[0];
        assert_eq!(result["resultType"], "complete", "{result}");
        assert!(result["ttlMs"].as_u64().is_some(), "{result}");
        assert_eq!(result["cacheScope"], "public", "{result}");
    }
}

async fn every_page_of_a_list_has_one_scope(connector: Connector) {
    // Four public tools and one private (the server's default): the list as a whole
    // is private, so every page says so, the public ones' pages too.
    let public =
        |name: &str| text_tool(name, "ok").cache_hints(Duration::from_secs(60), CacheScope::Public);
    let mut builder = Server::builder("paged", "1.0.0").page_size(2);
    for name in ["a", "b", "c", "d"] {
        builder = builder.tool(public(name)).unwrap();
    }
    let server = builder.tool(text_tool("e", "ok")).unwrap().build();
    let pair = connect(&connector, &server, client()).await;
    let mut scopes = Vec::new();
    let mut cursor = None;
    loop {
        let page = pair.client.list_tools(cursor).await.unwrap();
        scopes.push(page.cache_scope.clone());
        cursor = page.next_cursor.clone();
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(scopes, vec![Some(CacheScope::Private); 3]);
}

async fn a_prompt_can_link_a_resource(connector: Connector) {
    let prompt = PromptDef::new("cite", |_: NoArgs, _cx: Context| async move {
        let mut link = ResourceLink::new("file:///paper.pdf", "paper");
        link.description = Some("The paper to cite".to_owned());
        link.mime_type = Some("application/pdf".to_owned());
        Ok::<_, String>(vec![
            PromptMessage::user_text("Cite this:"),
            PromptMessage::new(Role::User, ContentBlock::resource_link(link)),
        ])
    });
    let server = Server::builder("citations", "1.0.0")
        .prompt(prompt)
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;
    let got = pair.client.get_prompt("cite", ()).await.unwrap();
    assert_eq!(got.messages.len(), 2);
    let ContentBlock::ResourceLink(link) = &got.messages[1].content else {
        panic!(
            "expected a resource link, got {:?}",
            got.messages[1].content
        );
    };
    assert_eq!(link.uri, "file:///paper.pdf");
    assert_eq!(link.name, "paper");
    assert_eq!(link.description.as_deref(), Some("The paper to cite"));
    assert_eq!(link.mime_type.as_deref(), Some("application/pdf"));
    let wire = results_with(&pair, "messages");
    let content = &wire[0]["messages"][1]["content"];
    assert_eq!(content["type"], "resource_link", "{content}");
    assert!(content.get("text").is_none() && content.get("blob").is_none());
}

async fn discover_carries_the_servers_instructions(connector: Connector) {
    let server = Server::builder("guided", "1.0.0")
        .instructions("Call `plan` before `act`.")
        .build();
    let pair = connect(&connector, &server, client()).await;
    // The connection learnt the server from `server/discover`: its instructions came
    // with it, and a later discover says the same.
    let learnt = pair
        .client
        .discover_result()
        .expect("a 2026-07-28 connection discovers the server");
    assert_eq!(
        learnt.instructions.as_deref(),
        Some("Call `plan` before `act`.")
    );
    assert_eq!(
        pair.client.instructions(),
        Some("Call `plan` before `act`.")
    );
    let again = pair.client.discover().await.unwrap();
    assert_eq!(
        again.instructions.as_deref(),
        Some("Call `plan` before `act`.")
    );
}

async fn the_tool_listing_keeps_its_order(connector: Connector) {
    let mut builder = Server::builder("many", "1.0.0");
    for name in ["zeta", "alpha", "mu", "beta", "omega", "kappa"] {
        builder = builder
            .tool(ToolDef::new(name, |_: NoArgs, _cx: Context| async move {
                Ok::<_, String>("ok")
            }))
            .unwrap();
    }
    let pair = connect(&connector, &builder.build(), client()).await;
    let first = tool_names(&pair.client).await;
    assert_eq!(first.len(), 6);
    for _ in 0..3 {
        assert_eq!(tool_names(&pair.client).await, first);
    }
}

async fn every_content_of_a_read_arrives_in_order(connector: Connector) {
    let directory = ResourceDef::new("file:///docs/", "docs", |_cx: Context| async move {
        Ok::<_, String>(vec![
            TextOrBlobResourceContents::from(TextResourceContents::new("file:///docs/b.md", "# B")),
            BlobResourceContents::new("file:///docs/a.bin", "AAEC").into(),
            TextResourceContents::new("file:///docs/c.txt", "c").into(),
        ])
    });
    let server = Server::builder("dir", "1.0.0")
        .resource(directory)
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;
    let read = pair.client.read_resource("file:///docs/").await.unwrap();
    let got: Vec<(&str, &str)> = read
        .contents
        .iter()
        .map(|c| match c {
            TextOrBlobResourceContents::Text(t) => (t.uri.as_str(), t.text.as_str()),
            TextOrBlobResourceContents::Blob(b) => (b.uri.as_str(), b.blob.as_str()),
        })
        .collect();
    assert_eq!(
        got,
        [
            ("file:///docs/b.md", "# B"),
            ("file:///docs/a.bin", "AAEC"),
            ("file:///docs/c.txt", "c"),
        ]
    );
    assert!(matches!(
        read.contents[1],
        TextOrBlobResourceContents::Blob(_)
    ));
}
