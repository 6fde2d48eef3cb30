//! `cargo xtask`: project automation.
//!
//! - `cargo xtask tidy`: checks that the crate layering holds (see ARCHITECTURE.md).

mod tidy;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("tidy") => match tidy::check(&tidy::workspace_root()) {
            Ok(()) => {
                println!("tidy: ok");
                ExitCode::SUCCESS
            }
            Err(problems) => {
                for p in problems {
                    eprintln!("tidy: {p}");
                }
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: cargo xtask <tidy>");
            ExitCode::from(2)
        }
    }
}
