//! See `modelctx_fuzz::elicitation`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::elicitation::check(data));
