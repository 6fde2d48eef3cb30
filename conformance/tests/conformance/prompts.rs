//! Prompts (listing, getting, argument checks, content kinds, paging, list changes) and
//! completion (prompt arguments, template variables, context, errors, capability).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::client::ListKind;
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{CompletionInput, Context, NoArgs, PromptDef, Server, TemplateDef};
use modelctx::types::{
    CompleteArgument, CompleteRequest, CompleteRequestParams, CompleteResult, Completion,
    CompletionReference, ErrorCode, GetPromptRequest, GetPromptRequestParams, PromptMessage,
    PromptReference, ResourceTemplateReference, Role,
};
use modelctx_conformance::{Connector, Test, conformance_test};
use serde::Deserialize;
use serde_json::json;

use crate::support::{Pair, announced, raw_options, watching};
use crate::tools::{connect_to, error_code, from_json, refusal_code};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_typed_prompt_is_listed_with_its_arguments,
            ["prompts:capability:declared"]
        ),
        conformance_test!(
            a_typed_prompt_is_listed_with_its_arguments_in_every_era => a_typed_prompt_is_listed_with_its_arguments,
            ["prompts:list:basic", "mcpserver:prompt:decorated"]
        ),
        conformance_test!(
            arguments_reach_the_prompt_and_optional_ones_may_be_left_out,
            ["prompts:get:with-args", "mcpserver:prompt:optional-args"]
        ),
        conformance_test!(
            a_prompt_without_arguments_needs_none,
            ["prompts:get:no-args"]
        ),
        conformance_test!(
            bad_arguments_never_reach_the_prompt,
            [
                "prompts:get:missing-required-args",
                "mcpserver:prompt:args-validation"
            ]
        ),
        conformance_test!(
            an_unknown_prompt_is_invalid_params,
            ["mcpserver:prompt:unknown-name"]
        ),
        conformance_test!(
            an_unknown_prompt_is_invalid_params_in_every_era => an_unknown_prompt_is_invalid_params,
            ["prompts:get:unknown-name"]
        ),
        conformance_test!(
            messages_mix_roles_and_content_in_order,
            [
                "prompts:get:multi-message",
                "prompts:get:content:image",
                "prompts:get:content:audio",
                "prompts:get:content:embedded-resource"
            ]
        ),
        conformance_test!(
            duplicate_prompts_are_refused,
            ["mcpserver:prompt:duplicate-name"]
        ),
        conformance_test!(prompt_lists_page_with_cursors, ["prompts:list:pagination"]),
        conformance_test!(
            adding_a_prompt_announces_list_changed,
            ["prompts:list-changed"]
        ),
        conformance_test!(
            prompt_arguments_complete_with_context,
            [
                "completion:capability:declared",
                "mcpserver:completion:capability-auto"
            ]
        ),
        conformance_test!(
            prompt_arguments_complete_with_context_in_every_era => prompt_arguments_complete_with_context,
            ["completion:prompt-arg", "completion:context-arguments"]
        ),
        conformance_test!(
            template_variables_complete,
            [
                "completion:resource-template-arg",
                "completion:result-shape"
            ]
        ),
        conformance_test!(
            completion_of_unknown_references_is_invalid_params,
            ["completion:error:invalid-ref"]
        ),
        conformance_test!(
            without_completion_sources_complete_is_not_found,
            ["completion:complete:not-supported"]
        ),
    ]
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Review {
    /// The code to review.
    code: String,
    /// The language it is written in.
    language: Option<String>,
    /// How many findings at most.
    limit: Option<u32>,
}

fn review_prompt() -> PromptDef {
    PromptDef::new("review", |args: Review, _cx: Context| async move {
        let language = args
            .language
            .unwrap_or_else(|| "an unknown language".to_owned());
        let limit = args
            .limit
            .map_or("no limit".to_owned(), |n| format!("at most {n}"));
        Ok::<_, String>(vec![PromptMessage::user_text(format!(
            "Review this {language} code ({limit}): {}",
            args.code
        ))])
    })
    .description("Reviews code")
}

/// A server named `name` serving the one `prompt`, connected over `connector`.
async fn connect_to_prompt(connector: &Connector, name: &str, prompt: PromptDef) -> Pair {
    let server = Server::builder(name, "1.0.0")
        .prompt(prompt)
        .unwrap()
        .build();
    connect_to(connector, &server).await
}

/// Asks for completions of `argument` (typed so far: `value`) of `reference`, with the
/// `resolved` arguments' values; the request must succeed.
async fn completed(
    pair: &Pair,
    reference: impl Into<CompletionReference>,
    argument: &str,
    value: &str,
    resolved: &[(&str, &str)],
) -> CompleteResult {
    pair.client
        .complete(reference, argument, value, args(resolved))
        .await
        .unwrap()
}

/// The `candidates` that start with what was `typed`, in order.
fn starting_with(candidates: &[&str], typed: &str) -> Vec<String> {
    candidates
        .iter()
        .filter(|c| c.starts_with(typed))
        .map(|c| (*c).to_owned())
        .collect()
}

fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn text(message: &PromptMessage) -> &str {
    message.content.as_text().unwrap()
}

async fn a_typed_prompt_is_listed_with_its_arguments(connector: Connector) {
    let pair = connect_to_prompt(&connector, "prompts", review_prompt()).await;
    assert!(pair.client.server_capabilities().prompts.is_some());
    let prompts = pair.client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 1);
    let wire = serde_json::to_value(&prompts[0]).unwrap();
    assert_eq!(wire["name"], "review");
    assert_eq!(wire["description"], "Reviews code");
    assert_eq!(
        wire["arguments"],
        json!([
            {"name": "code", "description": "The code to review.", "required": true},
            {"name": "language", "description": "The language it is written in.", "required": false},
            {"name": "limit", "description": "How many findings at most.", "required": false}
        ])
    );
    let got = pair
        .client
        .get_prompt("review", args(&[("code", "x = 1")]))
        .await
        .unwrap();
    assert_eq!(got.messages.len(), 1);
    assert_eq!(got.messages[0].role, Role::User);
}

async fn arguments_reach_the_prompt_and_optional_ones_may_be_left_out(connector: Connector) {
    let pair = connect_to_prompt(&connector, "prompts", review_prompt()).await;
    let full = pair
        .client
        .get_prompt(
            "review",
            args(&[
                ("code", "fn main() {}"),
                ("language", "Rust"),
                ("limit", "3"),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&full.messages[0]),
        "Review this Rust code (at most 3): fn main() {}"
    );
    let minimal = pair
        .client
        .get_prompt("review", args(&[("code", "print(1)")]))
        .await
        .unwrap();
    assert_eq!(
        text(&minimal.messages[0]),
        "Review this an unknown language code (no limit): print(1)"
    );
}

async fn a_prompt_without_arguments_needs_none(connector: Connector) {
    let pair = connect_to_prompt(
        &connector,
        "prompts",
        PromptDef::new("hello", |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("Say hello.".to_owned())
        }),
    )
    .await;
    let listed = pair.client.list_all_prompts().await.unwrap();
    assert!(listed[0].arguments.as_ref().is_none_or(Vec::is_empty));
    let got = pair
        .client
        .request::<GetPromptRequest>(GetPromptRequestParams::new("hello"))
        .await
        .unwrap();
    assert_eq!(text(&got.messages[0]), "Say hello.");
    let sent = pair.wire.first_sent("prompts/get").unwrap();
    assert!(
        serde_json::to_value(&sent).unwrap()["params"]
            .get("arguments")
            .is_none()
    );
}

async fn bad_arguments_never_reach_the_prompt(connector: Connector) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let prompt = PromptDef::new("review", move |args: Review, _cx: Context| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, String>(args.code) }
    });
    let pair = connect_to_prompt(&connector, "prompts", prompt).await;
    let missing = pair
        .client
        .get_prompt("review", args(&[("language", "Rust")]))
        .await
        .unwrap_err();
    assert_eq!(error_code(&missing), ErrorCode::INVALID_PARAMS);
    assert!(missing.to_string().contains("code"), "{missing}");
    let wrong_type = pair
        .client
        .get_prompt("review", args(&[("code", "x"), ("limit", "many")]))
        .await
        .unwrap_err();
    assert_eq!(error_code(&wrong_type), ErrorCode::INVALID_PARAMS);
    assert!(wrong_type.to_string().contains("limit"), "{wrong_type}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    pair.client
        .get_prompt("review", args(&[("code", "x"), ("limit", "2")]))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

async fn an_unknown_prompt_is_invalid_params(connector: Connector) {
    let pair = connect_to_prompt(&connector, "prompts", review_prompt()).await;
    let error = pair
        .client
        .get_prompt("never-registered", ())
        .await
        .unwrap_err();
    assert_eq!(error_code(&error), ErrorCode::INVALID_PARAMS);
    assert!(error.to_string().contains("never-registered"));
}

async fn messages_mix_roles_and_content_in_order(connector: Connector) {
    let messages: Vec<PromptMessage> = from_json(json!([
        {"role": "user", "content": {"type": "text", "text": "What is in this picture?"}},
        {"role": "user", "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}},
        {"role": "assistant", "content": {"type": "text", "text": "A cat. Listen:"}},
        {"role": "assistant", "content": {"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"}},
        {"role": "user", "content": {"type": "resource", "resource":
            {"uri": "file:///cat.txt", "mimeType": "text/plain", "text": "Cats purr."}}},
        {"role": "assistant", "content": {"type": "resource", "resource":
            {"uri": "file:///cat.bin", "mimeType": "application/octet-stream", "blob": "AAEC"}}}
    ]));
    let expected = messages.clone();
    let server = Server::builder("prompts", "1.0.0")
        .prompt(PromptDef::new("cat", move |_: NoArgs, _cx: Context| {
            let messages = messages.clone();
            async move { Ok::<_, String>(messages) }
        }))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let got = pair.client.get_prompt("cat", ()).await.unwrap();
    assert_eq!(got.messages, expected);
    let shape: Vec<(Role, &str)> = got
        .messages
        .iter()
        .map(|m| (m.role.clone(), m.content.kind()))
        .collect();
    assert_eq!(
        shape,
        [
            (Role::User, "text"),
            (Role::User, "image"),
            (Role::Assistant, "text"),
            (Role::Assistant, "audio"),
            (Role::User, "resource"),
            (Role::Assistant, "resource")
        ]
    );
}

async fn duplicate_prompts_are_refused(connector: Connector) {
    let hello = || {
        PromptDef::new("hello", |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("hi".to_owned())
        })
    };
    let builder = Server::builder("prompts", "1.0.0").prompt(hello()).unwrap();
    let error = builder.prompt(hello()).unwrap_err();
    assert!(error.is_duplicate());
    assert!(error.to_string().contains("hello"));
    let server = Server::builder("prompts", "1.0.0")
        .prompt(hello())
        .unwrap()
        .build();
    assert!(server.add_prompt(hello()).unwrap_err().is_duplicate());
    let pair = connect_to(&connector, &server).await;
    assert_eq!(pair.client.list_all_prompts().await.unwrap().len(), 1);
}

async fn prompt_lists_page_with_cursors(connector: Connector) {
    let prompt = |i: usize| {
        PromptDef::new(format!("p{i}"), |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("x".to_owned())
        })
    };
    let mut builder = Server::builder("prompts", "1.0.0").page_size(3);
    for i in 0..7 {
        builder = builder.prompt(prompt(i)).unwrap();
    }
    let pair = connect_to(&connector, &builder.build()).await;
    let page = |cursor| pair.client.list_prompts(cursor);
    let first = page(None).await.unwrap();
    assert_eq!(first.prompts.len(), 3);
    let second = page(first.next_cursor.clone()).await.unwrap();
    assert_eq!(second.prompts.len(), 3);
    let third = page(second.next_cursor.clone()).await.unwrap();
    assert_eq!(third.prompts.len(), 1);
    assert!(third.next_cursor.is_none());
    let all = pair.client.list_all_prompts().await.unwrap();
    let names: Vec<_> = all.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
}

async fn adding_a_prompt_announces_list_changed(connector: Connector) {
    let server = Server::builder("prompts", "1.0.0").enable_prompts().build();
    let (pair, mut rx) = watching(&connector, &server, ListKind::Prompts).await;
    assert_eq!(
        pair.client
            .server_capabilities()
            .prompts
            .as_ref()
            .unwrap()
            .list_changed,
        Some(true)
    );
    server
        .add_prompt(PromptDef::new(
            "late",
            |_: NoArgs, _cx: Context| async move { Ok::<_, String>("x".to_owned()) },
        ))
        .unwrap();
    announced(&mut rx, ListKind::Prompts, "list_changed").await;
    assert_eq!(
        pair.client.list_all_prompts().await.unwrap()[0].name,
        "late"
    );
}

const LANGUAGES: [&str; 4] = ["python", "perl", "php", "rust"];

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Snippet {
    language: String,
    framework: Option<String>,
}

async fn prompt_arguments_complete_with_context(connector: Connector) {
    // Without a completion source, the capability is absent.
    let plain = Server::builder("plain", "1.0.0")
        .prompt(review_prompt())
        .unwrap()
        .build();
    assert!(plain.capabilities().completions.is_none());
    let plain_pair = connect_to(&connector, &plain).await;
    assert!(
        plain_pair
            .client
            .server_capabilities()
            .completions
            .is_none()
    );

    let prompt = PromptDef::new("snippet", |args: Snippet, _cx: Context| async move {
        Ok::<_, String>(format!("{} {:?}", args.language, args.framework))
    })
    .complete(
        "language",
        |input: CompletionInput, _cx: Context| async move {
            Ok::<_, String>(starting_with(&LANGUAGES, &input.value))
        },
    )
    .complete(
        "framework",
        |input: CompletionInput, _cx: Context| async move {
            let choices: &[&str] = match input.arguments.get("language").map(String::as_str) {
                Some("python") => &["django", "flask", "fastapi"],
                Some("rust") => &["axum", "actix"],
                _ => &[],
            };
            Ok::<_, String>(starting_with(choices, &input.value))
        },
    );
    let server = Server::builder("complete", "1.0.0")
        .prompt(prompt)
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    assert!(pair.client.server_capabilities().completions.is_some());

    let snippet = PromptReference::new("snippet");
    let languages = completed(&pair, snippet.clone(), "language", "p", &[]).await;
    assert_eq!(languages.completion.values, ["python", "perl", "php"]);
    let python = [("language", "python")];
    let frameworks = completed(&pair, snippet, "framework", "f", &python).await;
    assert_eq!(frameworks.completion.values, ["flask", "fastapi"]);
    let sent = pair.wire.last_sent("completion/complete").unwrap();
    assert_eq!(
        serde_json::to_value(&sent).unwrap()["params"]["context"],
        json!({"arguments": {"language": "python"}})
    );
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Repo {
    owner: String,
    repo: String,
}

async fn template_variables_complete(connector: Connector) {
    let template = TemplateDef::new(
        "github://{owner}/{repo}",
        "repo",
        |r: Repo, _cx: Context| async move { Ok::<_, String>(format!("{}/{}", r.owner, r.repo)) },
    )
    .complete("owner", |input: CompletionInput, _cx: Context| async move {
        Ok::<_, String>(vec![
            format!("{}-org", input.value),
            format!("{}-user", input.value),
        ])
    })
    .complete("repo", |input: CompletionInput, _cx: Context| async move {
        // Far more candidates than one result may carry.
        let owner = input.arguments.get("owner").cloned().unwrap_or_default();
        Ok::<_, String>(
            (0..250)
                .map(|i| format!("{owner}-repo-{i}"))
                .collect::<Vec<_>>(),
        )
    });
    let server = Server::builder("complete", "1.0.0")
        .resource_template(template)
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let github = ResourceTemplateReference::new("github://{owner}/{repo}");
    let owners = completed(&pair, github.clone(), "owner", "ac", &[]).await;
    assert_eq!(owners.completion.values, ["ac-org", "ac-user"]);
    let owner_wire = serde_json::to_value(&owners).unwrap();
    assert!(owner_wire["completion"].get("total").is_none());
    assert!(owner_wire["completion"].get("hasMore").is_none());

    let repos = completed(&pair, github, "repo", "", &[("owner", "acme")]).await;
    let completion: &Completion = &repos.completion;
    assert_eq!(completion.values.len(), 100);
    assert_eq!(completion.values[0], "acme-repo-0");
    assert_eq!(completion.total, Some(250));
    assert_eq!(completion.has_more, Some(true));
}

async fn completion_of_unknown_references_is_invalid_params(connector: Connector) {
    let server =
        Server::builder("complete", "1.0.0")
            .prompt(
                review_prompt()
                    .complete("language", |_: CompletionInput, _cx: Context| async move {
                        Ok::<_, String>(vec!["rust"])
                    }),
            )
            .unwrap()
            .resource_template(TemplateDef::new(
                "github://{owner}/{repo}",
                "repo",
                |r: Repo, _cx: Context| async move {
                    Ok::<_, String>(format!("{}/{}", r.owner, r.repo))
                },
            ))
            .unwrap()
            .build();
    let pair = connect_to(&connector, &server).await;
    let complete = |reference: CompletionReference, argument, value| {
        pair.client.complete(reference, argument, value, args(&[]))
    };
    let unknown_prompt = complete(PromptReference::new("nope").into(), "language", "r");
    assert_eq!(
        refusal_code(unknown_prompt).await,
        ErrorCode::INVALID_PARAMS
    );
    let gitlab = ResourceTemplateReference::new("gitlab://{group}");
    let unknown_template = complete(gitlab.into(), "group", "a");
    assert_eq!(
        refusal_code(unknown_template).await,
        ErrorCode::INVALID_PARAMS
    );
    let unknown_argument = complete(PromptReference::new("review").into(), "colour", "r");
    assert_eq!(
        refusal_code(unknown_argument).await,
        ErrorCode::INVALID_PARAMS
    );
    // A known argument without a source completes to nothing.
    let none = completed(&pair, PromptReference::new("review"), "code", "x", &[]).await;
    assert!(none.completion.values.is_empty());
}

async fn without_completion_sources_complete_is_not_found(connector: Connector) {
    let pair = connect_to_prompt(&connector, "plain", review_prompt()).await;
    assert!(pair.client.server_capabilities().completions.is_none());
    let params = CompleteRequestParams::new(
        PromptReference::new("review"),
        CompleteArgument::new("language", "r"),
    );
    let local = pair
        .client
        .request::<CompleteRequest>(params.clone())
        .await
        .unwrap_err();
    assert!(local.is_refused(), "{local:?}");
    let remote = pair
        .client
        .peer()
        .request_with::<CompleteRequest>(params, raw_options(&pair.client))
        .await
        .unwrap_err();
    assert_eq!(error_code(&remote), ErrorCode::METHOD_NOT_FOUND);
}
