//! See `modelctx_fuzz::framing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::framing::check(data));
