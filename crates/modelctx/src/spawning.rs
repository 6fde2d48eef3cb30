//! Connecting a [`Client`] to a server it starts as a child process, in one call
//! ([`ConnectStdio`], brought into scope by the [`prelude`](crate::prelude)).

use crate::client::{Client, ClientBuilder};
use crate::session::SessionError;
use crate::stdio::ChildProcess;
use crate::transport::TransportError;

mod sealed {
    /// Only [`ClientBuilder`](crate::client::ClientBuilder) connects this way.
    pub trait Sealed {}
    impl Sealed for crate::client::ClientBuilder {}
}

/// Starts a stdio server as a child process and connects a client to it (features
/// `client` and `stdio`): the counterpart of `ServeStdio`.
///
/// ```no_run
/// use modelctx::prelude::*;
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     // A program alone, or a `ChildProcess` with arguments and environment.
///     let client = Client::builder("me", "1.0.0").connect_stdio("./adder-server").await?;
///     println!("tools: {:?}", client.tool_names().await?);
///     let git = ChildProcess::new("uvx").arg("mcp-server-git");
///     let other = Client::builder("me", "1.0.0").connect_stdio(git).await?;
///     // Closing a client shuts its server down: stdin closed, then the signals
///     // `ChildProcess` describes.
///     client.close().await;
///     other.close().await;
///     Ok(())
/// }
/// ```
pub trait ConnectStdio: sealed::Sealed {
    /// Spawns `server` (a program path or name, or a [`ChildProcess`] with its
    /// arguments, environment and shutdown settings) and connects over its stdin and
    /// stdout, as [`ClientBuilder::connect`] does over any transport. A program that
    /// cannot start is an error of kind `Transport`; for the child's handle (its pid,
    /// its exit status), spawn it yourself and `connect` the `StdioClient`.
    fn connect_stdio(
        self,
        server: impl Into<ChildProcess> + Send,
    ) -> impl Future<Output = Result<Client, SessionError>> + Send;
}

impl ConnectStdio for ClientBuilder {
    async fn connect_stdio(
        self,
        server: impl Into<ChildProcess> + Send,
    ) -> Result<Client, SessionError> {
        let child = server.into().spawn().map_err(|e| {
            let explanation = format!("the server process could not start: {e}");
            SessionError::from(TransportError::io(e)).explained(explanation)
        })?;
        self.connect(child).await
    }
}
