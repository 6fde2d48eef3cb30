//! Logging: `logging/setLevel` (handler, invalid levels, filtering per session), the
//! per-request level of 2026-07-28, and `notifications/message` (every level, every
//! field, the context's helpers).

use std::sync::{Arc, Mutex};

use modelctx::client::Client;
use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::session::RequestOptions;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, EmptyResult, ErrorCode, JsonObject, LoggingLevel,
    LoggingMessageNotification, LoggingMessageNotificationParams, Meta, SetLevelRequest,
    SetLevelRequestParams,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{client, connect, raw_options, server_with_tool};
use crate::tools::{connect_to, error_code};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(set_level_reaches_the_handler, ["logging:set-level"]),
        conformance_test!(
            an_unknown_level_is_invalid_params,
            ["logging:set-level:invalid-level"]
        ),
        conformance_test!(
            every_level_arrives_with_its_fields,
            ["logging:capability:declared"]
        ),
        conformance_test!(
            every_level_arrives_with_its_fields_in_every_era => every_level_arrives_with_its_fields,
            [
                "logging:message:all-levels",
                "logging:message:fields",
                "mcpserver:context:logging"
            ]
        ),
        conformance_test!(
            messages_below_the_level_are_withheld,
            ["logging:message:filtered"]
        ),
        conformance_test!(
            each_request_opts_in_to_its_own_level,
            [
                "logging:per-request:opt-in",
                "logging:per-request:threshold"
            ]
        ),
        conformance_test!(
            an_unknown_request_level_is_invalid_params,
            ["logging:per-request:invalid-level"]
        ),
    ]
}

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A server whose `chatter` tool logs once at each of `LEVELS`, from logger `db`.
fn chatty() -> Server {
    let tool = ToolDef::new("chatter", |_: NoArgs, cx: Context| async move {
        for (i, level) in LEVELS.iter().enumerate() {
            cx.log(
                LoggingLevel::from(*level),
                Some("db"),
                json!({"seq": i, "level": level}),
            )
            .await
            .map_err(|e| e.to_string())?;
        }
        Ok::<_, String>("logged")
    });
    server_with_tool("chatty", tool)
}

/// A client that forwards every log message to a channel.
fn listening() -> (
    modelctx::client::ClientBuilder,
    mpsc::UnboundedReceiver<LoggingMessageNotificationParams>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let builder =
        client().notification_handler::<LoggingMessageNotification, _, _>(move |params, _peer| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(params);
            }
        });
    (builder, rx)
}

async fn set_level_reaches_the_handler(connector: Connector) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = Server::builder("levels", "1.0.0")
        .request_handler::<SetLevelRequest, _, _>(move |params: SetLevelRequestParams, _cx| {
            log.lock().unwrap().push(params.level.as_str().to_owned());
            async move { Ok(EmptyResult::new()) }
        })
        .build();
    let pair = connect_to(&connector, &server).await;
    assert!(pair.client.server_capabilities().logging.is_some());
    set_level(&pair.client, LoggingLevel::Warning).await;
    set_level(&pair.client, LoggingLevel::Debug).await;
    assert_eq!(*seen.lock().unwrap(), ["warning", "debug"]);
    let last = serde_json::to_value(pair.wire.received().pop().unwrap()).unwrap();
    assert_eq!(last["result"], json!({}));
}

async fn an_unknown_level_is_invalid_params(connector: Connector) {
    let pair = connect_to(&connector, &chatty()).await;
    let error = pair
        .client
        .request::<SetLevelRequest>(SetLevelRequestParams::new(LoggingLevel::from("verbose")))
        .await
        .unwrap_err();
    assert_eq!(error_code(&error), ErrorCode::INVALID_PARAMS);
    assert!(error.to_string().contains("verbose"), "{error}");
    // Every one of the eight levels is accepted.
    for level in LEVELS {
        pair.client
            .set_logging_level(LoggingLevel::from(level))
            .await
            .unwrap();
    }
}

async fn every_level_arrives_with_its_fields(connector: Connector) {
    let (builder, mut rx) = listening();
    let helpers = ToolDef::new("helpers", |_: NoArgs, cx: Context| async move {
        let r: Result<(), _> = async {
            cx.debug("d").await?;
            cx.info("i").await?;
            cx.notice("n").await?;
            cx.warning("w").await?;
            cx.error("e").await?;
            cx.critical("c").await?;
            cx.alert("a").await?;
            cx.emergency("em").await
        }
        .await;
        r.map_err(|e: modelctx::session::SessionError| e.to_string())?;
        Ok::<_, String>("ok")
    });
    let server = chatty();
    server.add_tool(helpers).unwrap();
    let pair = connect(&connector, &server, builder).await;
    assert!(pair.client.server_capabilities().logging.is_some());
    // Every level asked for (2026-07-28 sends none to a request that does not opt in).
    set_level(&pair.client, LoggingLevel::Debug).await;

    chatter(&pair.client).await;
    for (i, level) in LEVELS.iter().enumerate() {
        let message = within("a log message", rx.recv()).await.unwrap();
        assert_eq!(message.level.as_str(), *level);
        assert_eq!(message.logger.as_deref(), Some("db"));
        assert_eq!(message.data, json!({"seq": i, "level": level}));
    }

    pair.client
        .call_tool("helpers", JsonObject::new())
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..8 {
        let message = within("a helper's message", rx.recv()).await.unwrap();
        seen.push((message.level.as_str().to_owned(), message.data));
    }
    let expected: Vec<(String, Value)> = LEVELS
        .iter()
        .zip(["d", "i", "n", "w", "e", "c", "a", "em"])
        .map(|(l, d)| ((*l).to_owned(), json!(d)))
        .collect();
    assert_eq!(seen, expected);
}

async fn messages_below_the_level_are_withheld(connector: Connector) {
    let server = chatty();
    let pair = connect_to(&connector, &server).await;
    let other = connect_to(&connector, &server).await;
    set_level(&pair.client, LoggingLevel::Error).await;
    chatter(&pair.client).await;
    // The notifications precede the reply on the wire, so they are all recorded now.
    assert_eq!(
        received_levels(&pair.wire),
        ["error", "critical", "alert", "emergency"]
    );
    // The level is per session: another client still hears everything.
    chatter(&other.client).await;
    assert_eq!(received_levels(&other.wire), LEVELS);
    // Lowering the level lets everything through again.
    set_level(&pair.client, LoggingLevel::Debug).await;
    chatter(&pair.client).await;
    assert_eq!(received_levels(&pair.wire).len(), 4 + 8);
}

/// Calls `chatter`, which logs one message at each level.
async fn chatter(client: &Client) {
    client
        .call_tool("chatter", JsonObject::new())
        .await
        .unwrap();
}

/// Asks for log messages at `level` and above.
async fn set_level(client: &Client, level: LoggingLevel) {
    client.set_logging_level(level).await.unwrap();
}

/// The levels of the log messages `wire` received, in order.
fn received_levels(wire: &modelctx_conformance::Recording) -> Vec<String> {
    wire.received_params("notifications/message")
        .iter()
        .map(|p| p["level"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// 2026-07-28: no `logging/setLevel`; a request that names no level
/// (`io.modelcontextprotocol/logLevel`) gets no log messages, one that names a level
/// gets that level and above.
async fn each_request_opts_in_to_its_own_level(connector: Connector) {
    let (builder, mut rx) = listening();
    let pair = connect(&connector, &chatty(), builder).await;
    chatter(&pair.client).await;
    // Messages precede the reply on the wire: none came.
    assert_eq!(received_levels(&pair.wire), Vec::<String>::new());
    assert!(rx.try_recv().is_err());

    set_level(&pair.client, LoggingLevel::Error).await;
    assert_eq!(
        pair.wire.sent_count("logging/setLevel"),
        0,
        "the level travels on each request instead"
    );
    chatter(&pair.client).await;
    assert_eq!(
        received_levels(&pair.wire),
        ["error", "critical", "alert", "emergency"]
    );
    let call = pair.wire.last_sent("tools/call").unwrap();
    let call = serde_json::to_value(&call).unwrap();
    assert_eq!(call["params"]["_meta"][Meta::LOG_LEVEL], "error");
}

async fn an_unknown_request_level_is_invalid_params(connector: Connector) {
    let pair = connect(&connector, &chatty(), client()).await;
    let mut options = raw_options(&pair.client);
    let mut meta = options.meta.take().unwrap_or_default();
    meta.insert(Meta::LOG_LEVEL, json!("deafening"));
    let err = pair
        .client
        .peer()
        .request_with::<CallToolRequest>(
            CallToolRequestParams::new("chatter"),
            RequestOptions::new().meta(meta),
        )
        .await
        .unwrap_err();
    let err = err.protocol_error().expect("the server's error");
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("deafening"), "{err:?}");
    assert_eq!(received_levels(&pair.wire), Vec::<String>::new());
}
