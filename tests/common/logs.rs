//! The server's log, captured in process: a `tracing` subscriber, at debug level for
//! tablestore's targets, that is the default of the current thread only. An in-process server
//! ([`super::TestServer`]) started by a `#[tokio::test]` (a current-thread runtime) runs its
//! tasks on the test's thread, so everything it logs while the guard lives lands here, and
//! tests running beside it on other threads log elsewhere.
//!
//! tracing caches each call site's interest once for the whole process, asking the default
//! subscriber of whichever thread reaches it first. A test thread with no subscriber of its
//! own would answer "never" for the access line's call site, and every later capture would
//! miss that line (4 runs in 10 of `refusal_log` did). So the first capture also installs a
//! process-wide default that asks again on every event ([`AskEachEvent`]): no call site is
//! cached as "never", and each event goes to its own thread's subscriber.

use std::io::Write;
use std::sync::{Arc, Mutex, Once};

use tracing::level_filters::LevelFilter;
use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{span, Event, Metadata, Subscriber};

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

/// The process-wide default while logs are captured: it records nothing itself, and tells
/// tracing to ask each event's own thread (its [`CapturedLog`], or nothing) every time.
struct AskEachEvent;

impl Subscriber for AskEachEvent {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::TRACE)
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

impl CapturedLog {
    /// Starts capturing on this thread (tablestore's targets at debug level, the rest at warn).
    pub fn start() -> CapturedLog {
        static ASK_EACH_EVENT: Once = Once::new();
        // Installing it also re-asks every call site already cached (as "never" too).
        ASK_EACH_EVENT.call_once(|| {
            let _ = tracing::subscriber::set_global_default(AskEachEvent);
        });
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
