//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! tests: every tool, resource and prompt its server scenarios ask for, written with the
//! high-level API.
//!
//! Run it with `cargo run -p modelctx-examples --bin conformance-server -- [--port N]`
//! (default port 3001); it serves `http://127.0.0.1:N/mcp` over streamable HTTP
//! (stateful, SSE answers, resumable). `cargo xtask interop` starts it and runs the
//! suite against it, and drives it from the TypeScript SDK's client. With `--stdio` it
//! serves one session on stdin/stdout instead. Both eras are served from the same
//! handlers: 2026-07-28 (stateless) and the handshake era. With `--sse` it also serves
//! the legacy HTTP+SSE transport (2024-11-05) beside `/mcp`, at `/sse` (the event
//! stream) and `/messages` (where the client POSTs), one server per stream, for the
//! SSE legs of `cargo xtask interop`.
//!
//! It runs tasks (protocol 2025-11-25): `wait_for_gate` may be called as a task and
//! finishes once `open_gate` opens its gate (or its task is cancelled), so the
//! TypeScript SDK's client can follow a task from `working` to `completed` without
//! depending on timing; `side_channel_task` must be called as a task and elicits through the
//! task's side channel.

use std::time::Duration;

use modelctx::http::{StreamControl, StreamableHttpServerConfig, StreamableHttpService, hosting};
use modelctx::server::{
    Blob, CompletionInput, Context, NoArgs, PromptDef, ResourceDef, Server, TaskConfig, TemplateDef,
};
use modelctx::session::SessionConfig;
use modelctx::sse::{SseServerConfig, SseService};
use modelctx::types::{ContentBlock, PromptMessage, Role, TextResourceContents};
use serde_json::json;

use crate::era_2026::ask_field;
use crate::tools::{EmbedArgs, Gates, Streams, TemplateVars, TwoArgs, gate_tools};

/// A 1×1 PNG image.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// Eight samples of silence as an 8 kHz mono WAV file.
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

type Error = Box<dyn std::error::Error + Send + Sync>;

mod era_2026;
mod tasks;
mod tools;

/// A fixed `text/plain` resource at `uri`, named `name`, that always reads `text`.
fn text_resource((uri, name): (&str, &str), description: &str, text: &'static str) -> ResourceDef {
    ResourceDef::new(uri, name, move |_cx| async move { Ok::<_, Error>(text) })
        .description(description)
        .mime_type("text/plain")
}

fn server(streams: Option<StreamControl>, gates: &Gates) -> Result<Server, Error> {
    let mut builder = Server::builder("modelctx-conformance-server", "1.0.0")
        .tasks(TaskConfig::new().poll_interval(Duration::from_millis(100)));
    if let Some(streams) = streams {
        builder = builder.state(Streams(streams));
    }
    for tool in tools::all().into_iter().chain(gate_tools(gates)) {
        builder = builder.tool(tool)?;
    }
    let builder = builder
        .resource(text_resource(
            ("test://static-text", "static-text"),
            "A static text resource",
            "This is the content of the static text resource.",
        ))?
        .resource(
            ResourceDef::new("test://static-binary", "static-binary", |_cx| async {
                Ok::<_, Error>(Blob(png_bytes()))
            })
            .description("A static binary resource")
            .mime_type("image/png"),
        )?
        .resource(text_resource(
            ("test://watched-resource", "watched-resource"),
            "A resource to subscribe to",
            "Watched resource content.",
        ))?
        .resource_template(
            TemplateDef::new(
                "test://template/{id}/data",
                "template-data",
                |vars: TemplateVars, _cx| async move {
                    let data = json!({
                        "id": vars.id,
                        "templateTest": true,
                        "data": format!("Data for ID: {}", vars.id)
                    });
                    Ok::<_, Error>(data.to_string())
                },
            )
            .description("Data by id")
            .mime_type("application/json"),
        )?
        .prompt(
            PromptDef::new("test_simple_prompt", |_: NoArgs, _cx| async {
                Ok::<_, Error>(PromptMessage::user_text(
                    "This is a simple prompt for testing.",
                ))
            })
            .description("A prompt without arguments"),
        )?
        .prompt(
            PromptDef::new(
                "test_prompt_with_arguments",
                |args: TwoArgs, _cx| async move {
                    Ok::<_, Error>(PromptMessage::user_text(format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        args.arg1, args.arg2
                    )))
                },
            )
            .description("A prompt with two arguments")
            .complete("arg1", complete_arg1),
        )?
        .prompt(
            PromptDef::new(
                "test_prompt_with_embedded_resource",
                |args: EmbedArgs, _cx| async move {
                    Ok::<_, Error>(vec![
                        PromptMessage::new(
                            Role::User,
                            ContentBlock::resource(
                                TextResourceContents::new(
                                    args.resource_uri,
                                    "Embedded resource content for testing.",
                                )
                                .with_mime_type("text/plain"),
                            ),
                        ),
                        PromptMessage::user_text("Please process the embedded resource above."),
                    ])
                },
            )
            .description("A prompt embedding a resource"),
        )?
        .prompt(
            PromptDef::new("test_prompt_with_image", |_: NoArgs, _cx| async {
                Ok::<_, Error>(vec![
                    PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
                    PromptMessage::user_text("Please analyze the image above."),
                ])
            })
            .description("A prompt with an image"),
        )?
        .prompt(
            PromptDef::new(
                "test_input_required_result_prompt",
                |_: NoArgs, cx: Context| async move {
                    let context = ask_field(
                        &cx,
                        "user_context",
                        "What context should the prompt use?",
                        "context",
                        "string",
                    )
                    .await?;
                    Ok::<_, Error>(PromptMessage::user_text(format!(
                        "Answer with this context in mind: {context}"
                    )))
                },
            )
            .description("A prompt that asks the user for its context first"),
        )?;
    Ok(builder.build())
}

async fn complete_arg1(input: CompletionInput, _cx: Context) -> Result<Vec<String>, Error> {
    Ok(["paris", "park", "party"]
        .into_iter()
        .filter(|v| v.starts_with(&input.value))
        .map(str::to_owned)
        .collect())
}

fn png_bytes() -> Vec<u8> {
    // The same 1×1 PNG as `PNG`, as bytes.
    const BYTES: [u8; 69] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90,
        0x77, 0x53, 0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8,
        0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0xc9, 0xfe, 0x92, 0xef, 0x00, 0x00, 0x00,
        0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    BYTES.to_vec()
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut port = 3001u16;
    let mut stdio = false;
    let mut sse = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => stdio = true,
            "--sse" => sse = true,
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a number")?;
            }
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    // Fail at start-up, not per session, if a definition is refused.
    let gates = Gates::default();
    let single = server(None, &gates)?;
    // Requests of the stateless era share one server, so a change one request makes is
    // seen by the `subscriptions/listen` stream of another.
    let shared = single.clone();
    if stdio {
        // One session on stdin/stdout; `test_reconnection` has no SSE stream to close.
        let session = single.serve(modelctx::stdio::stdio());
        session.closed().await;
        session.close().await;
        return Ok(());
    }
    let config = StreamableHttpServerConfig::default()
        .on_error(|rejection| eprintln!("rejected ({}): {}", rejection.status, rejection.reason));
    let sse_config = SseServerConfig::matching(&config).on_error(|rejection| {
        eprintln!("rejected (sse, {}): {}", rejection.status, rejection.reason);
    });
    let header_timeout = config.header_read_timeout;
    let for_sse = gates.clone();
    let service = StreamableHttpService::with_config(config, move |transport| {
        if transport.is_stateless() {
            shared.serve_with(transport, SessionConfig::server());
            return;
        }
        // One server per session, so `test_reconnection` reaches its own streams.
        match server(Some(transport.stream_control()), &gates) {
            Ok(server) => {
                server.serve_with(transport, SessionConfig::server());
            }
            Err(e) => eprintln!("cannot build the server: {e}"),
        }
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    eprintln!("MCP endpoint: http://{addr}/mcp");
    if !sse {
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        service.serve(listener, shutdown).await?;
        return Ok(());
    }
    // The legacy HTTP+SSE transport beside streamable HTTP, on the same listener and
    // with the same protections: one server per event stream (the handshake era).
    let legacy =
        SseService::with_config(sse_config, move |transport| match server(None, &for_sse) {
            Ok(server) => {
                server.serve_with(transport, SessionConfig::server());
            }
            Err(e) => eprintln!("cannot build the server: {e}"),
        });
    let router = legacy.router().nest_service("/mcp", service.router());
    eprintln!("legacy SSE endpoint: http://{addr}/sse");
    let shutdown = async move {
        let _ = tokio::signal::ctrl_c().await;
        // Streams last as long as their sessions: end them so the server can stop.
        service.close_all_sessions();
        legacy.close_all_sessions();
    };
    hosting::serve_router(listener, router, header_timeout, shutdown).await?;
    Ok(())
}
