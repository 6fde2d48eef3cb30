//! See `modelctx_fuzz::http`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::http::check(data));
