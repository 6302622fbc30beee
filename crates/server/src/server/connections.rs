//! The HTTP/1.1 front end: accepts connections and serves each with hyper under limits that
//! keep one client from tying the server up — a deadline for the request head (which also
//! closes idle keep-alive connections), a deadline for the request body, a cap on header
//! bytes, and a cap on open connections. At the cap the connection that has been idle the
//! longest is closed to make room (as nginx reuses idle keep-alive connections); when every
//! connection is busy a newcomer waits briefly and is then answered 503 `ServerBusy`.
//! Graceful shutdown stops accepting, lets requests in flight finish within a grace period,
//! then drops what is left.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::{App, Scheme};

/// Limits of the HTTP front end. The defaults suit a development server on one machine.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// Time a client has to send a complete request head, counted from the connection's
    /// start or the end of its previous response; so it is also how long an idle keep-alive
    /// connection stays open. Hyper closes the connection when it runs out.
    pub header_read_timeout: Duration,
    /// Time a client has to send the whole request body once the head has arrived; beyond it
    /// the request is answered 408 (`OperationTimedOut`) and the connection closed.
    pub body_read_timeout: Duration,
    /// Most bytes of a request head (request line and headers): 431 beyond (hyper), and 414
    /// for a request line beyond 64 KiB.
    pub max_header_bytes: usize,
    /// Most headers in one request: 431 beyond.
    pub max_headers: usize,
    /// Most connections open at once.
    pub max_connections: usize,
    /// At the connection cap with no idle connection to close, how long a new connection
    /// waits for a slot before it is answered 503 `ServerBusy`.
    pub connection_wait: Duration,
    /// How long graceful shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            max_header_bytes: 96 * 1024,
            max_headers: 100,
            max_connections: 4096,
            connection_wait: Duration::from_secs(2),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Lets a request end its own connection without an answer (fault injection's dropped
/// connection): the connection task closes the socket, dropping the request in flight.
#[derive(Clone)]
pub(crate) struct ConnectionAbort(Arc<Notify>);

impl ConnectionAbort {
    pub(crate) fn abort(&self) {
        self.0.notify_one();
    }
}

/// The error a request body yields when its [`ServeLimits::body_read_timeout`] runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyReadTimeout;

impl std::fmt::Display for BodyReadTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the client did not send the request body in time")
    }
}

impl std::error::Error for BodyReadTimeout {}

/// Whether `error` (or anything in its source chain) is a [`BodyReadTimeout`].
pub(crate) fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyReadTimeout>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// A request body that fails with [`BodyReadTimeout`] once its deadline has passed. The timer
/// is set only when the body is not all there yet: most bodies arrive with their head, and a
/// timer per request was an allocation and a timer-wheel entry for nothing.
struct TimedBody {
    inner: Incoming,
    deadline: tokio::time::Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|r| r.map_err(Into::into))),
            Poll::Pending => match this
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(this.deadline)))
                .as_mut()
                .poll(cx)
            {
                Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyReadTimeout)))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// Runs a future, turning a panic while polling it into `None` (the request is answered
    /// 500 instead of the connection being dropped without an answer). It holds the future in
    /// place: boxing a request's whole future, or pinning a copy of it, cost an allocation or
    /// several KiB of copying per request.
    struct CatchPanic<F> {
        #[pin]
        inner: F,
    }
}

impl<F: Future> Future for CatchPanic<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.project().inner;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Some(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(None),
        }
    }
}

/// The answer to a request whose handler panicked.
fn internal_error() -> axum::response::Response {
    let body = r#"{"odata.error":{"code":"InternalError","message":{"lang":"en-US","value":"The server encountered an internal error. Please retry the request."}}}"#;
    let mut r = axum::response::Response::new(axum::body::Body::from(body));
    *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
    let headers = r.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(
            "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
        ),
    );
    headers.insert(
        "x-ms-error-code",
        http::HeaderValue::from_static("InternalError"),
    );
    headers.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    r
}

/// What the accept loop knows about one open connection.
struct ConnState {
    /// Requests being handled right now.
    busy: AtomicUsize,
    /// When the connection last became idle, in ms since the tracker's start.
    idle_since_ms: AtomicU64,
    /// Set once the connection was picked to make room.
    closing: AtomicBool,
    /// Asks the connection to close: at once if it is idle, else after its request.
    close: Notify,
}

/// Open connections, so that an idle one can be closed when the cap is reached.
struct Tracker {
    started: Instant,
    next_id: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
}

impl Tracker {
    fn new() -> Tracker {
        Tracker {
            started: Instant::now(),
            next_id: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn register(self: &Arc<Self>) -> Registration {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState {
            busy: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(self.now_ms()),
            closing: AtomicBool::new(false),
            close: Notify::new(),
        });
        self.conns.lock().insert(id, Arc::clone(&state));
        Registration {
            tracker: Arc::clone(self),
            id,
            state,
        }
    }

    /// Asks the connection idle the longest to close; false if every connection is busy.
    fn close_one_idle(&self) -> bool {
        let conns = self.conns.lock();
        let victim = conns
            .values()
            .filter(|c| c.busy.load(Ordering::Acquire) == 0 && !c.closing.load(Ordering::Relaxed))
            .min_by_key(|c| c.idle_since_ms.load(Ordering::Relaxed));
        match victim {
            Some(c) => {
                c.closing.store(true, Ordering::Relaxed);
                c.close.notify_one();
                true
            }
            None => false,
        }
    }
}

struct Registration {
    tracker: Arc<Tracker>,
    id: u64,
    state: Arc<ConnState>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.tracker.conns.lock().remove(&self.id);
    }
}

/// Marks a connection busy while one of its requests is handled.
struct BusyGuard {
    state: Arc<ConnState>,
    tracker: Arc<Tracker>,
}

impl BusyGuard {
    fn new(state: &Arc<ConnState>, tracker: &Arc<Tracker>) -> BusyGuard {
        state.busy.fetch_add(1, Ordering::AcqRel);
        BusyGuard {
            state: Arc::clone(state),
            tracker: Arc::clone(tracker),
        }
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.state
            .idle_since_ms
            .store(self.tracker.now_ms(), Ordering::Relaxed);
        self.state.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The 503 written to a connection that found no free slot (no request is read).
fn busy_response() -> Vec<u8> {
    let body = r#"{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"The server is currently unable to receive requests. Please retry your request."}}}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\nx-ms-error-code: ServerBusy\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers 503 and closes, after giving the client a moment to see the answer.
async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        let _ = stream.write_all(&busy_response()).await;
        let _ = stream.shutdown().await;
        // Drain a little of the request so closing does not reset the connection before
        // the client has read the answer.
        let mut sink = [0u8; 4096];
        loop {
            match tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
}

/// Whether an accept error concerns only the connection being accepted.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// A connection's byte stream: plain TCP or TLS over it.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for T {}

/// What every connection's task shares with the accept loop.
#[derive(Clone)]
struct Shared {
    app: Arc<App>,
    limits: Arc<ServeLimits>,
    tracker: Arc<Tracker>,
    /// The TLS acceptor, when serving HTTPS.
    acceptor: Option<tokio_rustls::TlsAcceptor>,
}

impl Shared {
    fn new(app: App, tls: Option<Arc<rustls::ServerConfig>>, limits: ServeLimits) -> Shared {
        Shared {
            app: Arc::new(app),
            limits: Arc::new(limits),
            tracker: Arc::new(Tracker::new()),
            acceptor: tls.map(tokio_rustls::TlsAcceptor::from),
        }
    }
}

/// Serves `app` on `listener` (over TLS when `tls` is given) until `shutdown` completes,
/// then drains (bounded).
pub(crate) async fn run(
    listener: TcpListener,
    app: App,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServeLimits,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let shared = Shared::new(app, tls, limits);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut refusals = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while tasks.try_join_next().is_some() {}
        while refusals.try_join_next().is_some() {}
        let (stream, peer) = tokio::select! {
            accepted = accept(&listener, &shared.tracker) => accepted,
            () = &mut shutdown => break,
        };
        let Some(permit) = take_slot(&slots, &shared).await else {
            tracing::warn!(%peer, "connection limit reached; answering 503");
            if refusals.len() < 64 {
                refusals.spawn(refuse(stream));
            }
            continue;
        };
        let connection = Connection {
            stream,
            peer,
            registration: shared.tracker.register(),
            stop: stop_rx.clone(),
        };
        tasks.spawn(serve_connection(connection, permit, shared.clone()));
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drain(tasks, refusals, shared.limits.shutdown_grace).await;
}

/// The next connection. Errors that concern only that connection are skipped; any other
/// (typically out of file descriptors) makes room and backs off briefly.
async fn accept(listener: &TcpListener, tracker: &Tracker) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e) if is_connection_error(&e) => {}
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tracker.close_one_idle();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// A connection slot: a free one at once, else one that frees up within
/// `connection_wait` (at least a second when an idle connection was asked to close to make
/// room). `None`: the connection is answered 503.
async fn take_slot(slots: &Arc<Semaphore>, shared: &Shared) -> Option<OwnedSemaphorePermit> {
    if let Ok(permit) = Arc::clone(slots).try_acquire_owned() {
        return Some(permit);
    }
    let wait = if shared.tracker.close_one_idle() {
        shared.limits.connection_wait.max(Duration::from_secs(1))
    } else {
        shared.limits.connection_wait
    };
    match tokio::time::timeout(wait, Arc::clone(slots).acquire_owned()).await {
        Ok(Ok(permit)) => Some(permit),
        _ => None,
    }
}

/// One accepted connection, as its task gets it.
struct Connection {
    stream: TcpStream,
    peer: SocketAddr,
    registration: Registration,
    /// Turns true when the server shuts down.
    stop: tokio::sync::watch::Receiver<bool>,
}

/// Serves one connection's requests until the client closes it, the server picks it to
/// make room, or the server shuts down (both: after the request in flight).
async fn serve_connection(connection: Connection, permit: OwnedSemaphorePermit, shared: Shared) {
    let _permit = permit;
    let Connection {
        stream,
        peer,
        registration,
        mut stop,
    } = connection;
    let Some(stream) = handshake(stream, peer, shared.acceptor.as_ref()).await else {
        return;
    };
    let abort = Arc::new(Notify::new());
    let abort_for_requests = ConnectionAbort(Arc::clone(&abort));
    let state = Arc::clone(&registration.state);
    let https = shared.acceptor.is_some();
    let Shared {
        app,
        limits,
        tracker,
        ..
    } = shared;
    let body_read_timeout = limits.body_read_timeout;
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let guard = BusyGuard::new(&state, &tracker);
        let deadline = tokio::time::Instant::now() + body_read_timeout;
        let request = request.map(|inner| TimedBody {
            inner,
            deadline,
            timer: None,
        });
        let client = Client {
            peer,
            https,
            abort: abort_for_requests.clone(),
        };
        handle(request, Arc::clone(&app), client, guard)
    });
    let conn = http1_builder(&limits).serve_connection(TokioIo::new(stream), service);
    drive(conn, peer, &registration.state, &abort, &mut stop).await;
    drop(registration);
}

/// Runs the connection until the client closes it or `abort` fires; when the server picks
/// it to make room (`state.close`) or shuts down (`stop`), it ends after the request in
/// flight, or at once when none is.
async fn drive<S, B>(
    conn: hyper::server::conn::http1::Connection<TokioIo<Box<dyn Stream>>, S>,
    peer: SocketAddr,
    state: &ConnState,
    abort: &Notify,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) where
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: HttpBody + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                break;
            }
            () = abort.notified() => break,
            () = state.close.notified(), if !closing => {
                // Picked to make room. With no request in flight (waiting for a
                // head, perhaps a slow one) it is dropped at once; nothing is lost.
                if state.busy.load(Ordering::Acquire) == 0 {
                    break;
                }
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = stop.changed(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Over HTTPS the handshake runs here, on the connection's own task and bounded in time, so
/// a client that connects and says nothing holds up no one else. `None`: it failed or timed
/// out (logged at debug level).
async fn handshake(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: Option<&tokio_rustls::TlsAcceptor>,
) -> Option<Box<dyn Stream>> {
    let Some(acceptor) = acceptor else {
        return Some(Box::new(stream));
    };
    match tokio::time::timeout(super::tls::HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(Box::new(tls)),
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}

/// HTTP/1.1 with keep-alive, and the limits on request heads.
fn http1_builder(limits: &ServeLimits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers)
        .keep_alive(true);
    builder
}

/// Who sent a request: the peer's address, whether over TLS, and the connection's abort
/// handle.
struct Client {
    peer: SocketAddr,
    https: bool,
    abort: ConnectionAbort,
}

/// One request through the application (over TLS marked [`Scheme::Https`] in its
/// extensions); a handler that panics is answered 500. The connection counts as busy until
/// `guard` drops.
async fn handle(
    request: hyper::Request<TimedBody>,
    app: Arc<App>,
    client: Client,
    guard: BusyGuard,
) -> Result<axum::response::Response, Infallible> {
    let mut request = request.map(axum::body::Body::new);
    if client.https {
        request.extensions_mut().insert(Scheme::Https);
    }
    let Client { peer, abort, .. } = client;
    let handled = CatchPanic {
        inner: app.answer(request, peer, Some(&abort)),
    }
    .await;
    let response = match handled {
        Some(r) => r,
        None => {
            tracing::error!(%peer, "a request handler panicked; answered 500");
            internal_error()
        }
    };
    drop(guard);
    Ok(response)
}

/// At shutdown: waits up to `grace` for the connections' requests to finish, then closes
/// what is left.
async fn drain(mut tasks: JoinSet<()>, mut refusals: JoinSet<()>, grace: Duration) {
    let drained =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(
            connections = tasks.len(),
            "requests still running after the shutdown grace period; closing them"
        );
        tasks.shutdown().await;
    }
    refusals.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_future_yields_none() {
        let ok = CatchPanic { inner: async { 5 } }.await;
        assert_eq!(ok, Some(5));
        let panicked = CatchPanic {
            inner: async {
                if ok.is_some() {
                    panic!("handler bug");
                }
                1
            },
        }
        .await;
        assert_eq!(panicked, None);
        assert_eq!(
            internal_error().status(),
            http::StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}
