//! See `modelctx_fuzz::uri`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::uri::check(data));
