//! A server built with the high-level API — a typed tool with structured output, a
//! tool that asks the user for input mid-call, a URI template, a prompt with argument
//! completion, logging — and a client exercising each over an in-memory connection.
//! The same server and client code run in both protocol eras: the client connects once
//! in the handshake era (2025-11-25) and once in the stateless one (2026-07-28), where
//! the tool's question travels as an input-required result and the call is retried
//! with the answer, without the tool or the callback knowing.
//!
//! Run with `cargo run -p modelctx-examples --bin features`.

use std::collections::BTreeMap;

use modelctx::client::{Client, ConnectMode, FormAnswer, ListKind};
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{
    CompletionInput, Context, Elicited, Json, NoArgs, PromptDef, Server, TemplateDef, ToolDef,
};
use modelctx::types::ElicitValue;
use modelctx::types::{
    LoggingLevel, LoggingMessageNotification, PromptMessage, PromptReference,
    TextOrBlobResourceContents,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Arguments of the `convert` tool.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Convert {
    /// Degrees Celsius.
    celsius: f64,
}

/// What `convert` returns: structured output with a generated `outputSchema`.
#[derive(Serialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Temperature {
    celsius: f64,
    fahrenheit: f64,
}

/// The form `book` asks the user to fill in.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Booking {
    /// The guest's name.
    name: String,
    /// How many nights.
    nights: u8,
}

/// The variables of the `cities://{name}` template.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct City {
    name: String,
}

/// Arguments of the `forecast` prompt.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Forecast {
    /// The city to forecast.
    city: String,
    /// How many days ahead.
    days: Option<u8>,
}

const CITIES: [&str; 4] = ["Lisbon", "London", "Lyon", "Oslo"];

fn server() -> Result<Server, Box<dyn std::error::Error>> {
    let convert = ToolDef::new("convert", |args: Convert, cx: Context| async move {
        cx.info(json!({"converting": args.celsius})).await.ok();
        Json(Temperature {
            celsius: args.celsius,
            fahrenheit: args.celsius * 9.0 / 5.0 + 32.0,
        })
    })
    .description("Converts Celsius to Fahrenheit");
    let cities = TemplateDef::new(
        "cities://{name}",
        "city",
        |city: City, _cx: Context| async move {
            if CITIES.contains(&city.name.as_str()) {
                Ok(format!("{} is a lovely city.", city.name))
            } else {
                Err(format!("no city called {}", city.name))
            }
        },
    )
    .mime_type("text/plain")
    .complete("name", complete_city);
    let forecast = PromptDef::new("forecast", |args: Forecast, _cx: Context| async move {
        let days = args.days.unwrap_or(1);
        Ok::<_, String>(vec![
            PromptMessage::user_text(format!(
                "What will the weather be in {} for {days} day(s)?",
                args.city
            )),
            PromptMessage::assistant_text("Let me look that up."),
        ])
    })
    .description("Asks for a forecast")
    .complete("city", complete_city);
    // Asks the user mid-call. In a session the question is a request to the client; in
    // 2026-07-28 it ends the round, and the tool runs again with the answer on the
    // client's retry — so everything before the question must be safe to repeat.
    let book = ToolDef::new("book", |_: NoArgs, cx: Context| async move {
        let booking = cx.elicit_form::<Booking>("Who is staying, and for how long?");
        // A failed request is an `isError` result with its message.
        booking.await.map(|answer| match answer {
            Elicited::Accepted(b) => format!("Booked {} night(s) for {}.", b.nights, b.name),
            Elicited::Declined | Elicited::Cancelled => "No booking made.".to_owned(),
        })
    })
    .description("Books a room, asking who and how long");
    Ok(Server::builder("features-demo", "1.0.0")
        .tool(convert)?
        .tool(book)?
        .resource_template(cities)?
        .prompt(forecast)?
        .build())
}

async fn complete_city(input: CompletionInput, _cx: Context) -> Result<Vec<String>, String> {
    Ok(CITIES
        .iter()
        .filter(|c| c.to_lowercase().starts_with(&input.value.to_lowercase()))
        .map(|c| (*c).to_owned())
        .collect())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = server()?;
    // The same client code against the same server, in each era.
    for mode in [ConnectMode::Handshake, ConnectMode::Auto] {
        let (client_side, server_side) = modelctx::memory::pair();
        let _session = server.serve(server_side);
        let client = Client::builder("features-client", "1.0.0")
            .mode(mode)
            .notification_handler::<LoggingMessageNotification, _, _>(|message, _peer| async move {
                println!("  [server log, {}] {}", message.level, message.data);
            })
            .on_list_changed(ListKind::Tools, |_| println!("  (the tool list changed)"))
            .form_elicitation(|form, _cx| async move {
                println!("  [the user is asked] {}", form.message());
                let mut answer = form.prefilled;
                answer.insert("name".to_owned(), ElicitValue::String("Ada".to_owned()));
                answer.insert("nights".to_owned(), ElicitValue::Integer(3));
                Ok(FormAnswer::Accept(answer))
            })
            .connect(client_side)
            .await?;
        println!("== protocol {}", client.protocol_version());
        tour(&client).await?;
        client.close().await;
    }
    Ok(())
}

async fn tour(client: &Client) -> Result<(), Box<dyn std::error::Error>> {
    client.set_logging_level(LoggingLevel::Info).await?;

    for tool in client.list_all_tools().await? {
        println!(
            "tool {}: {}",
            tool.name,
            tool.description.unwrap_or_default()
        );
    }
    let result = client
        .call_tool(
            "convert",
            json!({"celsius": 21.0})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
        .await?;
    println!("convert(21) -> {:?}", result.structured_content);
    let booked = client.call_tool("book", ()).await?;
    println!(
        "book -> {}",
        booked.content[0].as_text().unwrap_or_default()
    );

    let read = client.read_resource("cities://Lyon").await?;
    if let Some(TextOrBlobResourceContents::Text(text)) = read.contents.first() {
        println!("cities://Lyon -> {}", text.text);
    }
    match client.read_resource("cities://Atlantis").await {
        Ok(_) => println!("Atlantis exists?"),
        Err(e) => println!("cities://Atlantis -> error: {e}"),
    }

    let completions = client
        .complete(
            PromptReference::new("forecast"),
            "city",
            "l",
            BTreeMap::new(),
        )
        .await?;
    println!(
        "cities starting with l: {:?}",
        completions.completion.values
    );
    let mut arguments = BTreeMap::new();
    arguments.insert("city".to_owned(), "Oslo".to_owned());
    let prompt = client.get_prompt("forecast", arguments).await?;
    for message in &prompt.messages {
        println!(
            "{:?}: {}",
            message.role,
            message.content.as_text().unwrap_or_default()
        );
    }
    Ok(())
}
