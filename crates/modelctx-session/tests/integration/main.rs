//! The integration tests of the session runtime, one module per subject, in one test binary.

mod interleavings;
mod leases;
mod runtime;
