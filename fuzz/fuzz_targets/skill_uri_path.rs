//! See `modelctx_fuzz::skills`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::skills::check(data));
