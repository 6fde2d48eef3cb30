//! Pagination: walking every page once, invalid cursors, opaque cursors on the client.

use std::sync::{Arc, Mutex};

use modelctx::server::{Context, NoArgs, PromptDef, Server, TemplateDef, ToolDef};
use modelctx::types::{
    Cursor, ErrorCode, ListPromptsRequest, ListPromptsResult, ListResourceTemplatesRequest,
    ListResourcesRequest, ListToolsRequest, PaginatedRequestParams, Prompt,
};
use modelctx_conformance::{Connector, Test, conformance_test};
use serde_json::Value;

use crate::support::{text_resource, text_tool};
use crate::tools::{connect_to, error_code};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            walking_the_pages_visits_each_once,
            ["pagination:exhaustion"]
        ),
        conformance_test!(
            a_bad_cursor_is_invalid_params,
            ["pagination:invalid-cursor"]
        ),
        conformance_test!(
            the_client_echoes_cursors_untouched,
            ["pagination:client:cursor-handling"]
        ),
    ]
}

fn many_tools(n: usize, page_size: usize) -> Server {
    let mut builder = Server::builder("paged", "1.0.0").page_size(page_size);
    for i in 0..n {
        builder = builder
            .tool(ToolDef::new(
                format!("tool-{i:02}"),
                |_: NoArgs, _cx: Context| async move { Ok::<_, String>("x") },
            ))
            .unwrap();
    }
    builder.build()
}

async fn walking_the_pages_visits_each_once(connector: Connector) {
    let pair = connect_to(&connector, &many_tools(7, 3)).await;
    let mut pages = pair.client.pages::<ListToolsRequest>();
    let mut names = Vec::new();
    let mut cursors = Vec::new();
    while let Some(page) = pages.next_page().await {
        let page = page.unwrap();
        names.extend(page.tools.into_iter().map(|t| t.name));
        cursors.push(page.next_cursor);
    }
    // After the cursor-less page the walk is over.
    assert!(pages.next_page().await.is_none());
    assert_eq!(names.len(), 7);
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique, names);
    assert_eq!(cursors.len(), 3);
    assert!(cursors[0].is_some() && cursors[1].is_some() && cursors[2].is_none());
    let requests = pair.wire.sent_count("tools/list");
    assert_eq!(requests, 3);
}

async fn a_bad_cursor_is_invalid_params(connector: Connector) {
    let server = Server::builder("paged", "1.0.0")
        .page_size(1)
        .tool(text_tool("a", "x"))
        .unwrap()
        .tool(text_tool("b", "x"))
        .unwrap()
        .resource(text_resource("file:///a", "a", "x"))
        .unwrap()
        .resource_template(TemplateDef::new(
            "t://{x}",
            "t",
            |_: Value, _cx: Context| async move { Ok::<_, String>("x") },
        ))
        .unwrap()
        .prompt(PromptDef::new("p", |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("x".to_owned())
        }))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let bad = || Some(PaginatedRequestParams::after("not-a-cursor-we-issued"));
    // The error of each list request with the bad cursor.
    macro_rules! refused {
        ($($request:ty),*) => {
            [$(pair.client.request::<$request>(bad()).await.unwrap_err()),*]
        };
    }
    let errors = refused!(
        ListToolsRequest,
        ListResourcesRequest,
        ListResourceTemplatesRequest,
        ListPromptsRequest
    );
    for error in &errors {
        assert_eq!(error_code(error), ErrorCode::INVALID_PARAMS, "{error:?}");
    }
    // A cursor issued for one list is no cursor for another.
    let tools = pair.client.list_tools(None).await.unwrap();
    let cursor = tools.next_cursor.expect("two tools, one per page");
    let foreign = pair
        .client
        .request::<ListPromptsRequest>(Some(PaginatedRequestParams::after(cursor.clone())))
        .await
        .unwrap_err();
    assert_eq!(error_code(&foreign), ErrorCode::INVALID_PARAMS);
    // A cursor edited by the client is refused too.
    let edited = Cursor(format!("{}x", cursor.0));
    let error = pair
        .client
        .request::<ListToolsRequest>(Some(PaginatedRequestParams::after(edited)))
        .await
        .unwrap_err();
    assert_eq!(error_code(&error), ErrorCode::INVALID_PARAMS);
    // The genuine cursor still works.
    let second = pair.client.list_tools(Some(cursor)).await.unwrap();
    assert_eq!(second.tools[0].name, "b");
}

async fn the_client_echoes_cursors_untouched(connector: Connector) {
    // Uneven pages (one empty) and cursors that look like anything but offsets.
    let script: Vec<(Vec<&'static str>, Option<&'static str>)> = vec![
        (vec!["a", "b", "c"], Some("  spaced cursor  ")),
        (vec![], Some("ünïcødé/%2F?x=1&y=2")),
        (vec!["d"], Some("{\"page\":3}")),
        (vec!["e", "f"], None),
    ];
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = Server::builder("scripted", "1.0.0")
        .request_handler::<ListPromptsRequest, _, _>(move |params, _cx| {
            let log = log.clone();
            let script = script.clone();
            async move {
                let index = page_asked(&log, params, script.iter().map(|(_, next)| *next));
                let (names, next) = &script[index];
                let mut page =
                    ListPromptsResult::new(names.iter().map(|n| Prompt::new(*n)).collect());
                page.next_cursor = next.map(Cursor::from);
                Ok(page)
            }
        })
        .build();
    let pair = connect_to(&connector, &server).await;
    let prompts = pair.client.list_all_prompts().await.unwrap();
    let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e", "f"]);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            None,
            Some("  spaced cursor  ".to_owned()),
            Some("ünïcødé/%2F?x=1&y=2".to_owned()),
            Some("{\"page\":3}".to_owned())
        ]
    );
    // Nothing is kept between walks: a new walk starts without a cursor.
    pair.client.list_all_prompts().await.unwrap();
    assert_eq!(seen.lock().unwrap()[4], None);
}

/// Logs the cursor a list request carries and returns the page it asks for: the first
/// without a cursor, else the one after the page that issued it (`issued[i]` ends
/// page `i`). Shared by the handlers that check cursors come back untouched.
pub(crate) fn page_asked<'a>(
    seen: &Mutex<Vec<Option<String>>>,
    params: Option<PaginatedRequestParams>,
    issued: impl IntoIterator<Item = Option<&'a str>>,
) -> usize {
    let cursor = params.and_then(|p| p.cursor).map(|c| c.0);
    seen.lock().unwrap().push(cursor.clone());
    match cursor.as_deref() {
        None => 0,
        Some(c) => {
            let page = issued.into_iter().position(|next| next == Some(c));
            1 + page.expect("only cursors this handler issued come back")
        }
    }
}
