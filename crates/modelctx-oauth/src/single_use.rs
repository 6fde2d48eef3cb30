//! Single-use ids shared by every process of a server: the `jti`s of assertions and
//! DPoP proofs, each accepted once. Their home is modelctx-store, with the other seams
//! a multi-process deployment implements.

pub use modelctx_store::{SingleUseStore, StoreError};
