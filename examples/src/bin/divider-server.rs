//! A stdio server with one tool whose output is structured (`Json<T>`: a
//! `structuredContent` object described by the tool's `outputSchema`); `divider-client`
//! runs it.

use modelctx::prelude::*;

/// The result of a whole-number division.
#[derive(serde::Serialize, JsonSchema)]
struct Division {
    quotient: i64,
    remainder: i64,
}

/// Divides `a` by `b`, giving the quotient and the remainder.
#[tool]
fn divide(a: i64, b: i64) -> Result<Json<Division>, String> {
    if b == 0 {
        return Err("cannot divide by zero".into());
    }
    Ok(Json(Division {
        quotient: a / b,
        remainder: a % b,
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("divider", "1.0.0").tool(divide_tool())?;
    Ok(server.build().serve_stdio().await?)
}
