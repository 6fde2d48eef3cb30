//! A server built with the high-level API — a typed tool with structured output, a
//! URI template, a prompt with argument completion, per-session logging — and a
//! client exercising each over an in-memory connection.
//!
//! Run with `cargo run -p modelctx-examples --bin features`.

use std::collections::BTreeMap;

use modelctx::client::{Client, ListKind};
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{CompletionInput, Context, Json, PromptDef, Server, TemplateDef, ToolDef};
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
        Ok::<_, String>(Json(Temperature {
            celsius: args.celsius,
            fahrenheit: args.celsius * 9.0 / 5.0 + 32.0,
        }))
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
    Ok(Server::builder("features-demo", "1.0.0")
        .tool(convert)?
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
    let (client_side, server_side) = modelctx::memory::pair();
    let _session = server.serve(server_side);
    let client = Client::builder("features-client", "1.0.0")
        .notification_handler::<LoggingMessageNotification, _, _>(|message, _peer| async move {
            println!("  [server log, {}] {}", message.level, message.data);
        })
        .on_list_changed(ListKind::Tools, |_| println!("  (the tool list changed)"))
        .connect(client_side)
        .await?;
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
    client.close().await;
    Ok(())
}
