//! See `modelctx_fuzz::era`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::era::check(data));
