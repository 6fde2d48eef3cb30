//! The integration tests of the client role, one module per subject, in one test binary.

mod callbacks;
mod first_connection;
mod subscription_order;
mod supported_versions;
