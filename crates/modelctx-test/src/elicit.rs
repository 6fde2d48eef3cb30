//! Elicitation from within a tool, as the tests' servers ask for input.

use modelctx_server::{Context, Elicited};
use modelctx_types::{ElicitValue, RequestedSchema};
use serde_json::json;

/// Asks the client for a name with a form elicitation ("What is your name?", one
/// required string `name`): the name given, `stranger` when the form is declined or
/// cancelled. The elicitation's failure is the error, as text.
pub async fn ask_for_name(cx: &Context) -> Result<String, String> {
    let schema: RequestedSchema = serde_json::from_value(json!({
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
    }))
    .map_err(|e| e.to_string())?;
    let answer = cx
        .elicit_form_schema("What is your name?", schema)
        .await
        .map_err(|e| e.to_string())?;
    Ok(match answer {
        Elicited::Accepted(form) => match form.get("name") {
            Some(ElicitValue::String(name)) => name.clone(),
            other => format!("{other:?}"),
        },
        _ => "stranger".to_owned(),
    })
}
