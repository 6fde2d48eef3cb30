//! Resources: listing, reading (text, blob, templates), errors, subscriptions, and the
//! high-level server's guarantees (fixed URIs, templates, duplicates, failures).

use std::sync::{Arc, Mutex};

use modelctx::client::ListKind;
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Blob, Context, NoArgs, ResourceDef, Server, TemplateDef, ToolDef};
use modelctx::types::{
    Annotations, ContentBlock, EmptyResult, ErrorCode, ErrorData, ListResourceTemplatesRequest,
    ListResourcesRequest, Resource, ResourceLink, ResourceRequestParams,
    ResourceUpdatedNotification, Role, SubscribeRequest, TextOrBlobResourceContents,
    UnsubscribeRequest,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Pair, announced, client, connect, raw_options, stateless_era, text_resource, watching,
};
use crate::tools::{call_without_arguments, connect_to, error_code, from_json, refusal_code};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            fixed_resources_are_listed_and_read,
            ["resources:capability:declared"]
        ),
        conformance_test!(
            fixed_resources_are_listed_and_read_in_every_era => fixed_resources_are_listed_and_read,
            [
                "resources:list:basic",
                "resources:read:text",
                "resources:read:blob",
                "mcpserver:resource:static"
            ]
        ),
        conformance_test!(annotations_reach_the_client, ["resources:annotations"]),
        conformance_test!(
            templates_are_listed_and_bind_typed_variables,
            [
                "resources:templates:list",
                "resources:read:template-vars",
                "mcpserver:resource:template"
            ]
        ),
        conformance_test!(
            an_unknown_uri_is_resource_not_found,
            [
                "resources:read:unknown-uri",
                "mcpserver:resource:unknown-uri"
            ]
        ),
        conformance_test!(
            a_fixed_resource_can_be_not_found,
            ["mcpserver:resource:static-not-found"]
        ),
        conformance_test!(
            a_failing_resource_function_is_a_json_rpc_error,
            ["mcpserver:resource:read-throws-surfaced"]
        ),
        conformance_test!(
            duplicate_resources_are_refused,
            ["mcpserver:resource:duplicate-name"]
        ),
        conformance_test!(
            resource_lists_page_with_cursors,
            [
                "resources:list:pagination",
                "resources:templates:pagination"
            ]
        ),
        conformance_test!(
            subscribe_handlers_get_the_uri,
            ["resources:subscribe", "resources:unsubscribe"]
        ),
        conformance_test!(
            subscriptions_need_the_capability,
            ["resources:subscribe:capability-required"]
        ),
        conformance_test!(
            subscribers_hear_of_updates_until_they_unsubscribe,
            [
                "resources:subscribe:updated",
                "resources:updated-notification",
                "resources:unsubscribe:stops-updates"
            ]
        ),
        conformance_test!(
            adding_a_resource_announces_list_changed,
            ["resources:list-changed"]
        ),
        conformance_test!(
            a_resource_link_from_a_tool_can_be_read,
            ["flow:tool-result:resource-link-follow"]
        ),
    ]
}

fn text_of(contents: &TextOrBlobResourceContents) -> (&str, Option<&str>, &str) {
    match contents {
        TextOrBlobResourceContents::Text(t) => (&t.uri, t.mime_type.as_deref(), &t.text),
        other => panic!("expected text contents, got {other:?}"),
    }
}

pub(crate) fn library() -> Server {
    Server::builder("library", "1.0.0")
        .resource(
            ResourceDef::new("file:///readme.md", "readme", |_cx: Context| async move {
                Ok::<_, String>("# Read me")
            })
            .title("The README")
            .description("How to start")
            .mime_type("text/markdown")
            .size(9),
        )
        .unwrap()
        .resource(
            ResourceDef::new("file:///logo.png", "logo", |_cx: Context| async move {
                Ok::<_, String>(Blob(vec![0x89, b'P', b'N', b'G', 0, 255]))
            })
            .mime_type("image/png"),
        )
        .unwrap()
        .build()
}

async fn fixed_resources_are_listed_and_read(connector: Connector) {
    let pair = connect_to(&connector, &library()).await;
    let caps = pair.client.server_capabilities().resources.clone().unwrap();
    assert_eq!(caps.subscribe, Some(true));

    let listed = pair.client.list_all_resources().await.unwrap();
    let readme = listed.iter().find(|r| r.name == "readme").unwrap();
    assert_eq!(readme.uri, "file:///readme.md");
    assert_eq!(readme.title.as_deref(), Some("The README"));
    assert_eq!(readme.description.as_deref(), Some("How to start"));
    assert_eq!(readme.mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(readme.size, Some(9));
    assert!(
        listed
            .iter()
            .any(|r| r.uri == "file:///logo.png" && r.name == "logo")
    );

    let read = pair
        .client
        .read_resource("file:///readme.md")
        .await
        .unwrap();
    assert_eq!(read.contents.len(), 1);
    assert_eq!(
        text_of(&read.contents[0]),
        ("file:///readme.md", Some("text/markdown"), "# Read me")
    );

    let logo = pair.client.read_resource("file:///logo.png").await.unwrap();
    match &logo.contents[0] {
        TextOrBlobResourceContents::Blob(b) => {
            assert_eq!(b.uri, "file:///logo.png");
            assert_eq!(b.mime_type.as_deref(), Some("image/png"));
            assert_eq!(b.blob, "iVBORwD/");
        }
        other => panic!("expected a blob, got {other:?}"),
    }
    let wire = serde_json::to_value(pair.wire.received().pop().unwrap()).unwrap();
    assert_eq!(wire["result"]["contents"][0]["blob"], "iVBORwD/");
}

async fn annotations_reach_the_client(connector: Connector) {
    let annotations: Annotations = from_json(json!({
        "audience": ["user", "assistant"], "priority": 0.8, "lastModified": "2025-01-12T15:00:58Z"
    }));
    let server =
        Server::builder("annotated", "1.0.0")
            .resource(
                ResourceDef::new("file:///a.txt", "a", |_cx: Context| async move {
                    Ok::<_, String>("alpha")
                })
                .annotations(annotations.clone()),
            )
            .unwrap()
            .resource_template(
                TemplateDef::new(
                    "notes://{id}",
                    "notes",
                    |note: NoteId, _cx: Context| async move {
                        Ok::<_, String>(format!("note {}", note.id))
                    },
                )
                .annotations(annotations.clone()),
            )
            .unwrap()
            .build();
    let pair = connect_to(&connector, &server).await;
    let resources = pair.client.list_all_resources().await.unwrap();
    assert_eq!(resources[0].annotations.as_ref(), Some(&annotations));
    let templates = pair.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].annotations.as_ref(), Some(&annotations));
    let wire = serde_json::to_value(&resources[0]).unwrap();
    assert_eq!(
        wire["annotations"]["audience"],
        json!(["user", "assistant"])
    );
    assert_eq!(wire["annotations"]["priority"], 0.8);
    assert_eq!(wire["annotations"]["lastModified"], "2025-01-12T15:00:58Z");
    assert_eq!(
        annotations.audience,
        Some(vec![Role::User, Role::Assistant])
    );
    // Reading returns the resource's contents (the contents schema has no annotations).
    let read = pair.client.read_resource("file:///a.txt").await.unwrap();
    assert_eq!(text_of(&read.contents[0]).2, "alpha");
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct NoteId {
    id: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Page {
    book: String,
    page: u32,
    #[serde(default)]
    large: Option<bool>,
}

async fn templates_are_listed_and_bind_typed_variables(connector: Connector) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let pages = TemplateDef::new(
        "books://{book}/pages/{page}{?large}",
        "book-page",
        move |args: Page, _cx: Context| {
            log.lock()
                .unwrap()
                .push((args.book.clone(), args.page, args.large));
            async move { Ok::<_, String>(format!("{} p.{}", args.book, args.page + 1 - 1)) }
        },
    )
    .title("A page of a book")
    .description("One page")
    .mime_type("text/plain");
    let server = Server::builder("books", "1.0.0")
        .resource_template(pages)
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let templates = pair.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(
        templates[0].uri_template,
        "books://{book}/pages/{page}{?large}"
    );
    assert_eq!(templates[0].name, "book-page");
    assert_eq!(templates[0].title.as_deref(), Some("A page of a book"));
    assert_eq!(templates[0].description.as_deref(), Some("One page"));
    assert_eq!(templates[0].mime_type.as_deref(), Some("text/plain"));

    let read = pair
        .client
        .read_resource("books://dune/pages/42?large=true")
        .await
        .unwrap();
    assert_eq!(
        text_of(&read.contents[0]),
        (
            "books://dune/pages/42?large=true",
            Some("text/plain"),
            "dune p.42"
        )
    );
    let plain = pair
        .client
        .read_resource("books://emma/pages/7")
        .await
        .unwrap();
    assert_eq!(text_of(&plain.contents[0]).2, "emma p.7");
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("dune".to_owned(), 42, Some(true)),
            ("emma".to_owned(), 7, None)
        ]
    );
    // A value that does not fit the typed variable never reaches the function.
    let bad = pair.client.read_resource("books://dune/pages/forty");
    assert_eq!(refusal_code(bad).await, ErrorCode::INVALID_PARAMS);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

async fn an_unknown_uri_is_resource_not_found(connector: Connector) {
    let notes = TemplateDef::new(
        "notes://{id}",
        "notes",
        |_: NoteId, _cx: Context| async move { Ok::<_, String>("note") },
    );
    let server = Server::builder("library", "1.0.0")
        .resource(text_resource("file:///known.txt", "known", "known"))
        .unwrap()
        .resource_template(notes)
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    // -32002 until 2026-07-28, which made it -32602 (SEP-2164).
    let not_found = if stateless_era(&pair.client) {
        ErrorCode::INVALID_PARAMS
    } else {
        ErrorCode::RESOURCE_NOT_FOUND
    };
    for uri in ["file:///unknown.txt", "notes://a/b", "other://x"] {
        let error = pair.client.read_resource(uri).await.unwrap_err();
        assert_eq!(error_code(&error), not_found, "{uri}");
        assert_eq!(
            error.protocol_error().unwrap().data,
            Some(json!({"uri": uri}))
        );
    }
}

/// Reads `uri`, which must fail with a JSON-RPC error: the error.
async fn read_refused(pair: &Pair, uri: &str) -> ErrorData {
    let error = pair.client.read_resource(uri).await.unwrap_err();
    error.protocol_error().expect("a JSON-RPC error").clone()
}

async fn a_failing_resource_function_is_a_json_rpc_error(connector: Connector) {
    let server = Server::builder("flaky", "1.0.0")
        .resource(ResourceDef::new(
            "db://down",
            "down",
            |_cx: Context| async move { Err::<String, _>("the database is unreachable") },
        ))
        .unwrap()
        .resource(ResourceDef::new(
            "db://gone",
            "gone",
            |_cx: Context| async move {
                Err::<String, _>(ErrorData::invalid_params("the table was dropped"))
            },
        ))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let data = read_refused(&pair, "db://down").await;
    assert_eq!(data.code, ErrorCode::INTERNAL_ERROR);
    assert!(
        data.message.contains("the database is unreachable"),
        "{}",
        data.message
    );
    let gone = pair.client.read_resource("db://gone").await.unwrap_err();
    assert_eq!(error_code(&gone), ErrorCode::INVALID_PARAMS);
    assert_eq!(
        gone.protocol_error().unwrap().message,
        "the table was dropped"
    );
    // The session lives on.
    assert!(pair.client.list_all_resources().await.unwrap().len() == 2);

    // A function that panics (Rust's unexpected exception): -32603, its text withheld.
    let server = Server::builder("fragile", "1.0.0")
        .resource(ResourceDef::new(
            "db://fragile",
            "fragile",
            |_cx: Context| async move {
                if true {
                    panic!("secret internal detail");
                }
                Ok::<_, String>("unreachable")
            },
        ))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let data = read_refused(&pair, "db://fragile").await;
    assert_eq!(data.code, ErrorCode::INTERNAL_ERROR);
    assert!(!data.message.contains("secret"), "{}", data.message);
    assert_eq!(pair.client.list_all_resources().await.unwrap().len(), 1);
}

/// A fixed resource whose function finds nothing answers like a template's would: the
/// era's resource-not-found code (-32002 until 2026-07-28, then -32602, SEP-2164) with
/// the function's message and the URI in `data`.
async fn a_fixed_resource_can_be_not_found(connector: Connector) {
    let server = Server::builder("rows", "1.0.0")
        .resource(ResourceDef::new(
            "db://rows/7",
            "row 7",
            |_cx: Context| async move {
                Err::<String, _>(
                    ErrorData::new(ErrorCode::RESOURCE_NOT_FOUND, "row 7 was deleted")
                        .with_data(json!({"uri": "db://rows/7"})),
                )
            },
        ))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let data = read_refused(&pair, "db://rows/7").await;
    let not_found = if stateless_era(&pair.client) {
        ErrorCode::INVALID_PARAMS
    } else {
        ErrorCode::RESOURCE_NOT_FOUND
    };
    assert_eq!(data.code, not_found);
    assert_eq!(data.message, "row 7 was deleted");
    assert_eq!(data.data.as_ref().unwrap()["uri"], "db://rows/7");
}

async fn duplicate_resources_are_refused(connector: Connector) {
    let fixed =
        |uri: &str| ResourceDef::new(uri, "r", |_cx: Context| async move { Ok::<_, String>("x") });
    let builder = Server::builder("dups", "1.0.0")
        .resource(fixed("file:///a"))
        .unwrap();
    let refused = builder.resource(fixed("file:///a")).unwrap_err();
    assert!(refused.is_duplicate(), "{refused}");
    let template = |t: &str| {
        TemplateDef::new(t, "t", |_: NoteId, _cx: Context| async move {
            Ok::<_, String>("x")
        })
    };
    let server = Server::builder("dups", "1.0.0")
        .resource(fixed("file:///a"))
        .unwrap()
        .resource_template(template("notes://{id}"))
        .unwrap()
        .build();
    let refused = server.add_resource(fixed("file:///a")).unwrap_err();
    assert!(refused.is_duplicate(), "{refused}");
    let again = server
        .add_resource_template(template("notes://{id}"))
        .unwrap_err();
    assert!(again.is_duplicate(), "{again}");
    assert!(again.to_string().contains("notes://{id}"));
    assert!(
        server
            .add_resource_template(template("notes://{id"))
            .unwrap_err()
            .is_invalid()
    );
    let pair = connect_to(&connector, &server).await;
    assert_eq!(pair.client.list_all_resources().await.unwrap().len(), 1);
    assert_eq!(
        pair.client
            .list_all_resource_templates()
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn resource_lists_page_with_cursors(connector: Connector) {
    let mut builder = Server::builder("paged", "1.0.0").page_size(2);
    for i in 0..5 {
        builder = builder
            .resource(ResourceDef::new(
                format!("file:///{i}.txt"),
                format!("r{i}"),
                |_cx: Context| async move { Ok::<_, String>("x") },
            ))
            .unwrap()
            .resource_template(TemplateDef::new(
                format!("t{i}://{{id}}"),
                format!("t{i}"),
                |_: NoteId, _cx: Context| async move { Ok::<_, String>("x") },
            ))
            .unwrap();
    }
    let pair = connect_to(&connector, &builder.build()).await;
    let mut pages = pair.client.pages::<ListResourcesRequest>();
    let mut sizes = Vec::new();
    let mut uris = Vec::new();
    while let Some(page) = pages.next_page().await {
        let page = page.unwrap();
        sizes.push(page.resources.len());
        uris.extend(page.resources.into_iter().map(|r| r.uri));
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(uris.len(), 5);
    let templates = pair.client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 5);
    let first = pair.client.list_resource_templates(None).await.unwrap();
    assert_eq!(first.resource_templates.len(), 2);
    let second = pair
        .client
        .list_resource_templates(first.next_cursor.clone())
        .await
        .unwrap();
    assert_eq!(second.resource_templates[0], templates[2]);
    let requests = pair
        .wire
        .sent()
        .into_iter()
        .filter(|m| {
            m.method()
                == Some(<ListResourceTemplatesRequest as modelctx::types::RequestMethod>::METHOD)
        })
        .count();
    assert_eq!(requests, 5);
}

async fn subscribe_handlers_get_the_uri(connector: Connector) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (on_sub, on_unsub) = (seen.clone(), seen.clone());
    let server = Server::builder("low-level", "1.0.0")
        .request_handler::<ListResourcesRequest, _, _>(|_, _cx| async move {
            Ok(modelctx::types::ListResourcesResult::new(vec![
                Resource::new("file:///w", "w"),
            ]))
        })
        .request_handler::<SubscribeRequest, _, _>(move |params: ResourceRequestParams, _cx| {
            on_sub.lock().unwrap().push(format!("sub {}", params.uri));
            async move { Ok(EmptyResult::new()) }
        })
        .request_handler::<UnsubscribeRequest, _, _>(move |params: ResourceRequestParams, _cx| {
            on_unsub
                .lock()
                .unwrap()
                .push(format!("unsub {}", params.uri));
            async move { Ok(EmptyResult::new()) }
        })
        .build();
    let pair = connect_to(&connector, &server).await;
    let caps = pair.client.server_capabilities().resources.clone().unwrap();
    assert_eq!(caps.subscribe, Some(true));
    pair.client.subscribe_resource("file:///w").await.unwrap();
    pair.client.unsubscribe_resource("file:///w").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["sub file:///w", "unsub file:///w"]);
    let results: Vec<Value> = pair
        .wire
        .received()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .filter(|m| m.get("result").is_some())
        .map(|m| m["result"].clone())
        .collect();
    assert_eq!(results[results.len() - 2..], [json!({}), json!({})]);
}

async fn subscriptions_need_the_capability(connector: Connector) {
    let server = Server::builder("no-subscribe", "1.0.0")
        .resource_subscriptions(false)
        .resource(text_resource("file:///a", "a", "a"))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let caps = pair.client.server_capabilities().resources.clone().unwrap();
    assert_ne!(caps.subscribe, Some(true));
    // Refused by the client before anything is sent...
    let local = pair
        .client
        .subscribe_resource("file:///a")
        .await
        .unwrap_err();
    assert!(local.is_refused(), "{local:?}");
    assert_eq!(pair.wire.sent_count("resources/subscribe"), 0);
    // ...and by the server when sent anyway.
    let remote = pair.client.peer().request_with::<SubscribeRequest>(
        ResourceRequestParams::new("file:///a"),
        raw_options(&pair.client),
    );
    assert_eq!(refusal_code(remote).await, ErrorCode::METHOD_NOT_FOUND);
}

async fn subscribers_hear_of_updates_until_they_unsubscribe(connector: Connector) {
    let server = library();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let builder =
        client().notification_handler::<ResourceUpdatedNotification, _, _>(move |params, _peer| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(params.uri);
            }
        });
    let pair = connect(&connector, &server, builder).await;
    pair.client
        .subscribe_resource("file:///readme.md")
        .await
        .unwrap();
    pair.client
        .subscribe_resource("file:///logo.png")
        .await
        .unwrap();
    assert!(pair.server().is_subscribed("file:///readme.md"));
    // Unknown URIs cannot be subscribed to.
    let unknown = pair.client.subscribe_resource("file:///nope");
    assert_eq!(refusal_code(unknown).await, ErrorCode::RESOURCE_NOT_FOUND);

    assert_eq!(server.notify_resource_updated("file:///readme.md").await, 1);
    assert_eq!(
        within("an update", rx.recv()).await.unwrap(),
        "file:///readme.md"
    );
    assert_eq!(server.notify_resource_updated("file:///readme.md").await, 1);
    assert_eq!(
        within("another update", rx.recv()).await.unwrap(),
        "file:///readme.md"
    );

    pair.client
        .unsubscribe_resource("file:///readme.md")
        .await
        .unwrap();
    assert_eq!(server.notify_resource_updated("file:///readme.md").await, 0);
    // Updates of the other subscription still flow, and nothing for the first came
    // before it (notifications are delivered in order).
    assert_eq!(server.notify_resource_updated("file:///logo.png").await, 1);
    assert_eq!(
        within("the logo update", rx.recv()).await.unwrap(),
        "file:///logo.png"
    );
    let updated = pair.wire.received_params("notifications/resources/updated");
    let updates: Vec<Value> = updated.iter().map(|p| p["uri"].clone()).collect();
    assert_eq!(
        updates,
        [
            json!("file:///readme.md"),
            json!("file:///readme.md"),
            json!("file:///logo.png")
        ]
    );
}

async fn adding_a_resource_announces_list_changed(connector: Connector) {
    let server = Server::builder("growing", "1.0.0")
        .enable_resources()
        .build();
    let (pair, mut rx) = watching(&connector, &server, ListKind::Resources).await;
    assert_eq!(
        pair.client
            .server_capabilities()
            .resources
            .as_ref()
            .unwrap()
            .list_changed,
        Some(true)
    );
    server
        .add_resource(text_resource("file:///new", "new", "fresh"))
        .unwrap();
    announced(&mut rx, ListKind::Resources, "list_changed").await;
    assert_eq!(
        pair.client.list_all_resources().await.unwrap()[0].uri,
        "file:///new"
    );
    assert!(server.remove_resource("file:///new"));
    assert_eq!(
        within("list_changed again", rx.recv()).await,
        Some(ListKind::Resources)
    );
    assert!(pair.client.list_all_resources().await.unwrap().is_empty());
}

async fn a_resource_link_from_a_tool_can_be_read(connector: Connector) {
    let server = Server::builder("linker", "1.0.0")
        .resource(
            ResourceDef::new("file:///report.csv", "report", |_cx: Context| async move {
                Ok::<_, String>("a,b\n1,2\n")
            })
            .mime_type("text/csv"),
        )
        .unwrap()
        .tool(ToolDef::new(
            "make-report",
            |_: NoArgs, _cx: Context| async move {
                let link =
                    ResourceLink::new("file:///report.csv", "report").with_mime_type("text/csv");
                Ok::<_, String>(vec![
                    ContentBlock::text("Report ready"),
                    ContentBlock::resource_link(link),
                ])
            },
        ))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let result = call_without_arguments(&pair, "make-report").await;
    let uri = result
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::ResourceLink(link) => Some(link.uri.clone()),
            _ => None,
        })
        .unwrap();
    let read = pair.client.read_resource(uri).await.unwrap();
    assert_eq!(
        text_of(&read.contents[0]),
        ("file:///report.csv", Some("text/csv"), "a,b\n1,2\n")
    );
}
