//! In-memory: client and server SDK in one process over bounded channels.

#[cfg(feature = "rmcp")]
use std::sync::Arc;

use crate::{Figures, MEMORY_CONCURRENCY, Target, concurrent, latency_figures, sequential};

pub(crate) async fn memory(target: Target, calls: usize) -> Result<Figures, String> {
    const SEQ: [&str; 2] = ["seq_p50_us", "seq_p99_us"];
    const RATE: &str = "conc64_calls_per_s";
    let mut figures = Figures::new();
    match target {
        Target::TypeScript | Target::TypeScriptV2 | Target::Python => {
            return Err("the in-memory scenario runs a Rust SDK in this process".into());
        }
        Target::Modelctx => {
            use modelctx::types::CallToolRequest;
            use modelctx_bench::modelctx_side::{call_params, check, server};
            let (client_side, server_side) = modelctx::memory::pair();
            let _session = server().serve(server_side);
            // The handshake alone, as rmcp's client does it (no server/discover probe).
            let client = modelctx::client::Client::builder("bench-load", "0.1.0")
                .mode(modelctx::client::ConnectMode::Handshake)
                .connect(client_side)
                .await
                .map_err(|e| e.to_string())?;
            check(
                &client
                    .request::<CallToolRequest>(call_params())
                    .await
                    .map_err(|e| e.to_string())?,
            )?;
            let call = move || {
                let client = client.clone();
                async move {
                    client
                        .request::<CallToolRequest>(call_params())
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                }
            };
            figures.extend(latency_figures(SEQ, &sequential(calls, &call).await?));
            figures.push((RATE, concurrent(calls, MEMORY_CONCURRENCY, call).await?));
        }
        #[cfg(not(feature = "rmcp"))]
        Target::Rmcp => return Err("bench-load was built without the `rmcp` feature".into()),
        #[cfg(feature = "rmcp")]
        Target::Rmcp => {
            use modelctx_bench::rmcp_side::{Echo, call_params, check, pair};
            use rmcp::ServiceExt;
            let (client_side, server_side) = pair(modelctx::memory::DEFAULT_CAPACITY);
            let server = tokio::spawn(Echo.serve(server_side));
            let client = Arc::new(().serve(client_side).await.map_err(|e| e.to_string())?);
            let _server = server
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            check(
                &client
                    .call_tool(call_params())
                    .await
                    .map_err(|e| e.to_string())?,
            )?;
            let call = move || {
                let client = client.clone();
                async move {
                    client
                        .call_tool(call_params())
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                }
            };
            figures.extend(latency_figures(SEQ, &sequential(calls, &call).await?));
            figures.push((RATE, concurrent(calls, MEMORY_CONCURRENCY, call).await?));
        }
        Target::Baseline => {
            let client =
                modelctx_bench::baseline::MemoryClient::start(modelctx::memory::DEFAULT_CAPACITY);
            if client.call().await? != modelctx_bench::TEXT {
                return Err("the baseline did not echo".into());
            }
            let call = move || {
                let client = client.clone();
                async move { client.call().await.map(drop) }
            };
            figures.extend(latency_figures(SEQ, &sequential(calls, &call).await?));
            figures.push((RATE, concurrent(calls, MEMORY_CONCURRENCY, call).await?));
        }
    }
    Ok(figures)
}

// ---- scenario 2: stdio --------------------------------------------------------------
