//! The one error of setting up a server side of OAuth.

use std::fmt;

/// Why a [`ResourceServer`](crate::ResourceServer) or an
/// [`AuthorizationServer`](crate::AuthorizationServer) could not be set up (a URL
/// that does not parse, a key that is not one, no randomness from the system): what
/// is wrong, in words.
#[derive(Debug, Clone)]
pub struct ConfigError(pub(crate) String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}
