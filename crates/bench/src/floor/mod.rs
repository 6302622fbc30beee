//! `tablestore-bench floor`: a trivial Table endpoint that answers every request of every
//! workload without storing anything, served by the same stack as tablestore — a tokio
//! multi-threaded runtime with a worker per core, hyper's HTTP/1.1 server with keep-alive and
//! tablestore's builder settings, the same allocator — so a benchmark run against it measures
//! the HTTP stack alone: the floor under any server's rates on the machine.
//!
//! - `route`: which request it is (parsing).
//! - `answer`: the responses.

mod answer;
mod route;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

pub use answer::Floor;

use crate::cli::FloorArgs;

/// tablestore's HTTP/1.1 settings (its `ServeLimits` defaults, applied by its connection
/// loop): the time to send a request head, also how long an idle keep-alive connection stays
/// open.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// tablestore's cap on request head bytes (hyper's read buffer).
const MAX_HEADER_BYTES: usize = 96 * 1024;
/// tablestore's cap on the number of request headers.
const MAX_HEADERS: usize = 100;
/// Azure's (and tablestore's) largest request body: 413 beyond.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Positions in mimalloc's `mi_option_e` that `libmimalloc-sys` does not name (stable:
/// retired options keep their slots).
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// tablestore's allocator options (set at its start): no eager arena commit, freed pages
/// returned at once. The floor runs with them so that its CPU and memory figures are those of
/// tablestore's stack.
#[allow(unsafe_code)]
pub fn tune_allocator() {
    // SAFETY: plain setters of mimalloc's global options, valid at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

/// Runs the floor until Ctrl-C or SIGTERM.
pub fn run(args: &FloorArgs) -> Result<(), String> {
    // As `#[tokio::main]` builds tablestore's: one worker per core available to the process.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let listener = TcpListener::bind((args.host.as_str(), args.port))
            .await
            .map_err(|e| {
                format!(
                    "cannot listen on {}:{}: {e} (is something else using the port? choose another with --port, or --port 0 for any free one)",
                    args.host, args.port
                )
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot read the listening address: {e}"))?;
        let shown = if addr.ip().is_unspecified() {
            std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port())
        } else {
            addr
        };
        println!("tablestore-bench floor listening on http://{addr}");
        println!("Table endpoint: http://{shown}/{}", crate::cli::DEV_ACCOUNT);
        tokio::select! {
            () = serve(listener, Arc::new(Floor::new())) => Ok(()),
            () = shutdown_signal() => Ok(()),
        }
    })
}

/// Accepts connections on `listener` and serves each on its own task, for ever.
pub async fn serve(listener: TcpListener, floor: Arc<Floor>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                continue
            }
            Err(_) => {
                // Typically out of file descriptors: back off briefly.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let floor = Arc::clone(&floor);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let floor = Arc::clone(&floor);
                async move { Ok::<_, Infallible>(handle(&floor, request).await) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(MAX_HEADER_BYTES)
                .max_headers(MAX_HEADERS)
                .keep_alive(true);
            // A connection's error (the client went away) ends that connection only.
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Reads the whole body, then answers.
async fn handle(floor: &Floor, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => floor.answer(&parts, collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestBodyTooLarge",
            "The request body is too large and exceeds the maximum permissible limit.",
        ),
        Err(_) => plain(
            StatusCode::BAD_REQUEST,
            "InvalidInput",
            "The request body could not be read.",
        ),
    }
}

fn plain(status: StatusCode, code: &'static str, message: &str) -> Response<Full<Bytes>> {
    let body = format!(
        "{{\"odata.error\":{{\"code\":\"{code}\",\"message\":{{\"lang\":\"en-US\",\"value\":\"{message}\"}}}}}}"
    );
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("x-ms-error-code", http::HeaderValue::from_static(code));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(
            "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
        ),
    );
    r
}

/// Completes on Ctrl-C or SIGTERM (what scripts/bench-compare.sh sends).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use crate::client::{ClientConfig, Conn, Endpoints, Extra};
    use crate::sign::Signer;
    use clap::Parser;
    use http::{HeaderValue, Method};

    async fn start() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Arc::new(Floor::new())));
        format!("http://{addr}/devstoreaccount1")
    }

    fn client(endpoint: &str) -> Arc<ClientConfig> {
        Arc::new(ClientConfig {
            targets: Endpoints::parse(endpoint, false).unwrap(),
            signer: Signer::new(crate::cli::DEV_ACCOUNT, crate::cli::DEV_ACCOUNT_KEY).unwrap(),
            timeout: Duration::from_secs(10),
            accept: HeaderValue::from_static("application/json;odata=minimalmetadata"),
            version: HeaderValue::from_static("2019-02-02"),
        })
    }

    /// Every workload of the load generator runs against the floor with no error and no
    /// query returning a wrong row count.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_workload_runs_against_the_floor_without_errors() {
        let endpoint = start().await;
        let args = Cli::try_parse_from([
            "tablestore-bench",
            "--endpoint",
            &endpoint,
            "--quiet",
            "--duration",
            "0.2",
            "--warmup",
            "0",
            "--concurrency",
            "4",
            "--entities",
            "3000",
            "--partitions",
            "10",
            "--bulk-entities",
            "2000",
            "--delete-pool",
            "500",
        ])
        .unwrap()
        .run;
        let ctx = Arc::new(crate::run::Ctx::new(client(&endpoint), args, 2));
        let report = crate::run::run(ctx).await.expect("the run completes");
        let preload = report.preload.as_ref().unwrap();
        assert_eq!((preload.mode.as_str(), preload.entities), ("batch", 3000));
        assert!(preload.errors.is_empty(), "{:?}", preload.errors);
        let names: Vec<&str> = report.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            crate::cli::Workload::ALL.map(crate::cli::Workload::name)
        );
        for w in &report.workloads {
            assert!(w.ops > 0, "{}: no operation completed", w.name);
            assert!(
                w.errors.is_empty() && w.failed == 0,
                "{}: {:?} {:?}",
                w.name,
                w.errors,
                w.error_sample
            );
            assert_eq!(w.bad_results, 0, "{}: wrong row counts", w.name);
        }
        let w = |name: &str| report.workloads.iter().find(|w| w.name == name).unwrap();
        // 100 rows a range query; 3 of 3000 entities a bucket.
        assert_eq!(w("range-query").rows, 100 * w("range-query").ops);
        assert_eq!(w("scan-filter").rows, 3 * w("scan-filter").ops);
        assert_eq!(w("bulk-load").entities, 2000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_whole_body_is_read_and_health_answers() {
        let endpoint = start().await;
        let mut conn = Conn::new(client(&endpoint));
        let r = conn
            .send(
                Method::GET,
                "/_health",
                None,
                &Extra {
                    from_root: true,
                    ..Extra::default()
                },
                Bytes::new(),
            )
            .await
            .unwrap();
        assert_eq!((r.status, &r.body[..]), (200, &b"OK"[..]));
        // Without `Prefer: return-no-content` an insert is answered with the body it sent:
        // all of it, over many reads.
        let body = Bytes::from(vec![b'x'; 3 * 1024 * 1024]);
        let extra = Extra {
            content_type: Some("application/json"),
            ..Extra::default()
        };
        let r = conn
            .send(Method::POST, "/bench1", None, &extra, body.clone())
            .await
            .unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.body, body);
        assert_eq!(conn.connects, 1, "kept alive");
    }
}
