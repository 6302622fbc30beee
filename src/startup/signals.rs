//! When the server stops: Ctrl-C, SIGTERM, or the end of the `npx` shell that started it.

use super::LOG_TARGET;
use std::time::Duration;

/// Completes at Ctrl-C, SIGTERM, or when `npx` has gone (see [`npx_gone`]). The signal
/// handlers are installed when this is called, not when the future is first polled: start-up
/// calls it before printing the readiness line, so a SIGTERM sent as soon as a watcher sees
/// that line stops the server gracefully instead of killing it.
pub(super) fn shutdown() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        let (ctrl_c, terminate) = (received(interrupt), received(terminate));
        #[cfg(not(unix))]
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {},
            _ = terminate => {},
            _ = npx_gone() => {},
        }
        tracing::info!(target: LOG_TARGET, "shutting down: finishing requests and flushing the store");
    }
}

/// Completes when `signal` (a handler installed, or none) is received.
#[cfg(unix)]
async fn received(signal: Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(mut s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Completes when the server was started by `npx`/`npm exec` and npm's shell has gone. npm
/// runs a package's command as `sh -c '<bin> …'` and passes SIGTERM and SIGINT to that shell
/// only; the shell dies without passing them on, which would leave the server running with
/// nobody to stop it. npm marks the shell's environment with `npm_lifecycle_event=npx`, so
/// only such a server watches its parent; anything else never completes here.
async fn npx_gone() {
    #[cfg(unix)]
    if std::env::var("npm_lifecycle_event").as_deref() == Ok("npx") {
        let parent = std::os::unix::process::parent_id();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if std::os::unix::process::parent_id() != parent {
                tracing::info!(target: LOG_TARGET, "npx has exited");
                return;
            }
        }
    }
    std::future::pending::<()>().await
}
