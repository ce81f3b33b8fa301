//! The `evident` binary. Thin: argument parsing and output; the work is in the libraries.

mod access;
mod claims_cmd;
mod cli;
mod client;
mod code_cmd;
mod context_cmd;
mod gaps_cmd;
mod graph_cmd;
mod local_files;
mod mcp_cmd;
mod memory_cmd;
mod procedure_cmd;
mod serve;
mod source_cmd;
mod token_cmd;

use clap::Parser;

/// Everything the process creates — the data directory, its database and indexes, the local
/// token, git mirrors, transcription scratch files — is readable by its owner only.
#[allow(unsafe_code)] // umask(2): see SAFETY below.
fn private_umask() {
    // SAFETY: umask only swaps the process's file-mode creation mask and cannot fail; it is
    // called first thing in main, before any thread that creates files exists.
    unsafe {
        libc::umask(0o077);
    }
}

fn main() -> std::process::ExitCode {
    private_umask();
    let args = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
