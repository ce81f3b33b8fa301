//! The `evident` binary. Thin: argument parsing and output; the work is in the libraries.

mod access;
mod claims_cmd;
mod cli;
mod client;
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

fn main() -> std::process::ExitCode {
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
