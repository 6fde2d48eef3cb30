//! Single-use rounds (see the parent module's docs): the store a round's state is
//! claimed in, the check before the handler runs, and the builder option.

use std::sync::Arc;

use modelctx_store::SingleUseIds;
use modelctx_types::ErrorData;

use super::{OnceId, Round};

/// The store of a single-use round.
pub(super) struct OnceStore(pub(super) Arc<dyn SingleUseIds>);

impl std::fmt::Debug for OnceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnceStore(..)")
    }
}

impl Round {
    /// For a single-use round, records the state the retry brought back as used, and
    /// refuses the retry when it was used before (here or in any process sharing the
    /// store), when it was sealed without an id, or when the store cannot tell. To be
    /// awaited before the handler runs. Nothing to do without a state or outside
    /// single-use rounds.
    pub(crate) async fn claim(&self) -> Result<(), ErrorData> {
        let (Some(OnceStore(store)), Some((id, expires))) = (&self.once, self.presented) else {
            return Ok(());
        };
        let Some(id) = id else {
            return Err(ErrorData::invalid_params(
                "Invalid params: requestState was sealed before rounds were single-use; send the request again without it",
            ));
        };
        // Tagged, so no other single-use id of a shared store can name it.
        let key = format!("mrtr-once:{}", base16ct::lower::encode_string(&id));
        match store.first_use(&key, expires).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(ErrorData::invalid_params(
                "Invalid params: requestState was used before (each round's state is good for one retry); send the request again without it",
            )),
            Err(e) => Err(ErrorData::internal_error(format!(
                "cannot check that requestState is used once: {e}"
            ))),
        }
    }
}

/// A new random id for a single-use round's state.
pub(super) fn once_id() -> Result<OnceId, ErrorData> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|_| {
        ErrorData::internal_error("no randomness available for a single-use requestState")
    })?;
    Ok(id)
}
