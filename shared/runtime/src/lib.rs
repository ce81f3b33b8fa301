//! Process plumbing for Evident binaries: configuration, telemetry, shutdown, wiring.
//!
//! Must not: contain product logic (that is `evident-kb`) or HTTP routing (`evident-api`).

pub mod config;
mod gap_fetch;
mod telemetry;
mod wiring;

pub use config::{Config, ConfigError};
pub use telemetry::{init_tracing, metrics_handle};
pub use wiring::{OpenError, Opened, open};

use tokio_util::sync::CancellationToken;

/// A token cancelled on SIGTERM or Ctrl-C: the root of every subsystem's shutdown.
pub fn shutdown_on_signals() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown requested; draining");
        t.cancel();
    });
    token
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; Ctrl-C only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
