//! Typed client calls through the prelude: arguments from any `Serialize`, results read
//! as text or as a type, a tool handle naming its types, prompt arguments from a struct,
//! completion helpers and the log callback — in both eras.

use std::sync::mpsc;

use modelctx::client::ConnectMode;
use modelctx::prelude::*;
use modelctx::types::LoggingLevel;
use modelctx_test::soon;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Square {
    n: i64,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
struct Squared {
    square: i64,
}

/// What `square`'s output is not.
#[derive(Deserialize, Debug)]
struct Other {
    #[allow(dead_code)]
    name: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Review {
    language: String,
    lines: Option<u32>,
}

fn server() -> Server {
    let square = ToolDef::from_fn("square", |a: Square| async move {
        Json(Squared { square: a.n * a.n })
    });
    let shout = ToolDef::from_fn(
        "shout",
        |a: Review| async move { a.language.to_uppercase() },
    );
    let fail = ToolDef::from_fn("fail", |_: NoArgs| async {
        Err::<String, _>("the disk is full")
    });
    let chatty = ToolDef::new("chatty", |_: NoArgs, cx: Context| async move {
        cx.log(LoggingLevel::Info, Some("chatty"), "working")
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>("done")
    });
    let review = PromptDef::new("review", |a: Review, _cx: Context| async move {
        Ok::<_, String>(format!(
            "Review this {} code ({} lines).",
            a.language,
            a.lines.map_or("all".to_owned(), |n| n.to_string())
        ))
    })
    .complete(
        "language",
        |input: CompletionInput, _cx: Context| async move {
            let all = ["rust", "ruby", "python"];
            Ok::<_, String>(
                all.iter()
                    .filter(|l| l.starts_with(input.value.as_str()))
                    .map(|l| l.to_string())
                    .collect::<Vec<_>>(),
            )
        },
    );
    let profile = TemplateDef::new(
        "users://{id}/profile",
        "profile",
        |_vars: std::collections::BTreeMap<String, String>, _cx: Context| async move {
            Ok::<_, String>("a profile")
        },
    )
    .complete("id", |input: CompletionInput, _cx: Context| async move {
        Ok::<_, String>(vec![format!("{}42", input.value)])
    });
    Server::builder("typed", "1.0.0")
        .logging()
        .tools([square, shout, fail, chatty])
        .unwrap()
        .prompt(review)
        .unwrap()
        .resource_template(profile)
        .unwrap()
        .build()
}

/// The text of the `review` prompt's first message, its arguments from a [`Review`].
async fn review(client: &Client, language: &str, lines: Option<u32>) -> String {
    let args = Review {
        language: language.into(),
        lines,
    };
    let got = soon_ok("review", client.get_prompt("review", &args)).await;
    got.messages[0].content.as_text().unwrap().to_owned()
}

/// [`connect`] with no one hearing the log.
async fn connect_quiet(server: &Server, mode: ConnectMode) -> Client {
    let (log, _) = mpsc::channel();
    connect(server, mode, log).await
}

/// `future`'s value within [`soon`]'s limit; it must succeed.
async fn soon_ok<T, E: std::fmt::Debug>(
    what: &str,
    future: impl std::future::Future<Output = Result<T, E>>,
) -> T {
    soon(what, future).await.unwrap()
}

async fn connect(server: &Server, mode: ConnectMode, log: mpsc::Sender<String>) -> Client {
    let (client_side, server_side) = modelctx::memory::pair();
    let _session = server.serve(server_side);
    soon_ok(
        "connect",
        Client::builder("typed-tests", "1.0.0")
            .mode(mode)
            .on_log(move |message| {
                let _ = log.send(message.data.to_string());
            })
            .connect(client_side),
    )
    .await
}

const MODES: [ConnectMode; 2] = [ConnectMode::Auto, ConnectMode::Handshake];

#[tokio::test]
async fn arguments_come_from_any_serialize_and_results_read_as_text_or_a_type() {
    let server = server();
    for mode in MODES {
        let client = connect_quiet(&server, mode).await;

        let result = soon_ok("square", client.call_tool("square", Square { n: 7 })).await;
        assert_eq!(
            result.structured::<Squared>().unwrap(),
            Squared { square: 49 }
        );
        assert!(matches!(
            result.structured::<Other>(),
            Err(StructuredError::Mismatch(_))
        ));

        let result = soon_ok(
            "shout",
            client.call_tool("shout", json!({"language": "rust"})),
        )
        .await;
        assert_eq!(result.text(), "RUST");

        // No arguments at all.
        let result = soon_ok("fail", client.call_tool("fail", ())).await;
        assert!(result.is_error());
        assert_eq!(result.text(), "the disk is full");
        assert_eq!(
            result.structured::<Squared>(),
            Err(StructuredError::Missing)
        );
        client.close().await;
    }
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_refused_before_anything_is_sent() {
    let server = server();
    let client = connect_quiet(&server, ConnectMode::Auto).await;
    let err = soon("a list", client.call_tool("square", [1, 2]))
        .await
        .unwrap_err();
    assert!(err.is_refused(), "{err}");
    assert!(err.to_string().contains("JSON object"), "{err}");
    // The session goes on.
    let result = soon_ok("square", client.call_tool("square", Square { n: 2 })).await;
    assert_eq!(result.structured::<Squared>().unwrap().square, 4);
    client.close().await;
}

#[tokio::test]
async fn a_typed_tool_gives_its_output_or_says_which_step_failed() {
    let server = server();
    for mode in MODES {
        let client = connect_quiet(&server, mode).await;

        let square = client.tool::<Square, Squared>("square");
        assert_eq!(square.name(), "square");
        let out = soon_ok("square", square.call(&Square { n: 9 })).await;
        assert_eq!(out, Squared { square: 81 });

        let fail = client.tool::<(), Squared>("fail");
        match soon("fail", fail.call(&())).await {
            Err(ToolCallError::Tool(result)) => assert_eq!(result.text(), "the disk is full"),
            other => panic!("expected the tool's error, got {other:?}"),
        }

        let wrong = client.tool::<Square, Other>("square");
        let err = soon("wrong output", wrong.call(&Square { n: 1 }))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolCallError::Output(_)), "{err}");

        let missing = client.tool::<(), Squared>("no-such-tool");
        let err = soon("missing", missing.call(&())).await.unwrap_err();
        assert!(
            matches!(&err, ToolCallError::Session(_) | ToolCallError::Tool(_)),
            "{err}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn prompt_arguments_come_from_a_struct_and_completions_from_one_call() {
    let server = server();
    for mode in MODES {
        let client = connect_quiet(&server, mode).await;

        assert_eq!(
            review(&client, "rust", Some(12)).await,
            "Review this rust code (12 lines)."
        );
        // `None` members are left out: the handler sees the argument absent.
        assert_eq!(
            review(&client, "go", None).await,
            "Review this go code (all lines)."
        );

        let values = soon_ok(
            "complete",
            client.complete_prompt_argument("review", "language", "r"),
        )
        .await;
        assert_eq!(values, ["rust", "ruby"]);
        let values = soon_ok(
            "complete",
            client.complete_template_variable("users://{id}/profile", "id", "7"),
        )
        .await;
        assert_eq!(values, ["742"]);
        client.close().await;
    }
}

#[tokio::test]
async fn the_log_callback_has_heard_a_calls_messages_when_its_answer_arrives() {
    let server = server();
    for mode in MODES {
        let (log, heard) = mpsc::channel();
        let client = connect(&server, mode, log).await;
        soon_ok("level", client.set_logging_level(LoggingLevel::Debug)).await;
        let result = soon_ok("chatty", client.call_tool("chatty", ())).await;
        assert_eq!(result.text(), "done");
        assert_eq!(heard.try_recv().as_deref(), Ok("\"working\""));
        client.close().await;
    }
}
