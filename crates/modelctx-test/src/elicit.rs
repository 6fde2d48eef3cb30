//! Elicitation from within a tool, as the tests' servers ask for input.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx_server::{Context, Elicited, ToolDef};
use modelctx_types::{CallToolResult, ElicitValue, RequestedSchema, Tool};
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

/// `pay`, a tool of any arguments that asks for approval (a form under the input key
/// `approve`, "Pay 10 EUR?"), then pays: counted in `paid`, it answers `paid (<n>)`, the
/// count so far; `not paid` when the form is not accepted. A retry with effects: what
/// single-use rounds protect.
pub fn pay_tool(paid: Arc<AtomicUsize>) -> ToolDef {
    let tool = Tool::new(
        "pay",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    ToolDef::with_schema(tool, move |_args, cx: Context| {
        let paid = paid.clone();
        async move {
            let approval = cx
                .with_input_key("approve")
                .elicit_form_schema("Pay 10 EUR?", RequestedSchema::new())
                .await
                .map_err(|e| e.to_string())?;
            if approval.accepted().is_none() {
                return Ok::<_, String>(CallToolResult::text("not paid"));
            }
            let n = paid.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(CallToolResult::text(format!("paid ({n})")))
        }
    })
}
