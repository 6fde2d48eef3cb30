//! See `modelctx_fuzz::jsonrpc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| modelctx_fuzz::jsonrpc::check(data));
