//! The integration tests of the server role, one module per subject, in one test binary.

mod announcements;
mod flow_control;
mod single_use_rounds;
mod stateless_era;
mod support;
mod supported_versions;
mod tasks_extension;
