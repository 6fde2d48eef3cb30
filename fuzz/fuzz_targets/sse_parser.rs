//! See `modelctx_fuzz::sse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::sse::check(data));
