//! Where the authorization server keeps clients and grants. Their home is
//! modelctx-store (feature `authorization`), with the other seams a multi-process
//! deployment implements.

pub(crate) use crate::single_use::StoreError;
pub use modelctx_store::{AuthorizationStore, Grant, GrantKind, InMemoryStore, RegisteredClient};
