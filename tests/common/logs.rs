//! The server's log, captured in process: a `tracing` subscriber, at debug level for
//! tablestore's targets, that is the default of the current thread only. An in-process server
//! ([`super::TestServer`]) started by a `#[tokio::test]` (a current-thread runtime) runs its
//! tasks on the test's thread, so everything it logs while the guard lives lands here, and
//! tests running beside it on other threads log elsewhere.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// What the server logged since [`CapturedLog::start`], until it is dropped.
pub struct CapturedLog {
    lines: Arc<Mutex<Vec<u8>>>,
    _guard: DefaultGuard,
}

/// Appends each log line to the shared buffer.
#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLog {
    /// Starts capturing on this thread (tablestore's targets at debug level, the rest at warn).
    pub fn start() -> CapturedLog {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink(Arc::clone(&lines));
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn,tablestore=debug"))
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        CapturedLog {
            lines,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.lines.lock().expect("log buffer")).into_owned()
    }

    /// The access-log line of the request answered with `request_id`.
    pub fn request_line(&self, request_id: &str) -> String {
        let text = self.text();
        text.lines()
            .find(|l| l.contains("tablestore::request") && l.contains(request_id))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no access-log line for request {request_id}:\n{text}"))
    }
}
