//! A lean HTTP/1.1 client: one keep-alive connection per worker (hyper's connection-level
//! client, no pool), every request signed with Shared Key Lite and bounded by a timeout.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::sign::{DateCache, Signer};

/// Where requests go: parsed from `--endpoint http://host:port/account`.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Socket address connected to.
    pub addr: SocketAddr,
    /// `Host` header value (`host:port` as written in the endpoint).
    pub host_header: String,
    /// Path prefix of every request (`/devstoreaccount1` in path style, empty in host style).
    pub base_path: String,
    /// The endpoint without a trailing slash; used for absolute URLs inside `$batch` bodies.
    pub base_url: String,
}

impl Endpoint {
    pub fn parse(endpoint: &str, allow_remote: bool) -> Result<Endpoint, String> {
        let uri: http::Uri = endpoint
            .parse()
            .map_err(|e| format!("--endpoint {endpoint:?} is not a URL: {e}"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => {
                return Err(format!(
                    "--endpoint scheme {other:?} is not supported: only plain http"
                ))
            }
            None => return Err(format!("--endpoint {endpoint:?} needs http://")),
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("--endpoint {endpoint:?} has no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(80);
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} resolves to no address"))?;
        if !allow_remote && !is_loopback(addr.ip()) {
            return Err(format!(
                "{host} ({}) is not a loopback address; pass --allow-remote to benchmark a remote server",
                addr.ip()
            ));
        }
        let base_path = uri.path().trim_end_matches('/').to_string();
        let base_url = endpoint.trim_end_matches('/').to_string();
        Ok(Endpoint {
            addr,
            host_header: authority.as_str().to_string(),
            base_path,
            base_url,
        })
    }
}

/// Every endpoint of `--endpoint` (comma separated): the nodes of one deployment. Each new
/// connection goes to the next one, round-robin, so workers are spread evenly over the nodes.
#[derive(Debug)]
pub struct Endpoints {
    list: Vec<Endpoint>,
    next: AtomicUsize,
}

impl Endpoints {
    pub fn parse(endpoints: &str, allow_remote: bool) -> Result<Endpoints, String> {
        let list = endpoints
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| Endpoint::parse(e, allow_remote))
            .collect::<Result<Vec<_>, _>>()?;
        if list.is_empty() {
            return Err("--endpoint names no endpoint".to_string());
        }
        Ok(Endpoints {
            list,
            next: AtomicUsize::new(0),
        })
    }

    /// The endpoint for a new connection.
    fn next(&self) -> Endpoint {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.list.len();
        self.list[i].clone()
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    }
}

/// Settings shared by every connection.
pub struct ClientConfig {
    pub targets: Endpoints,
    pub signer: Signer,
    pub timeout: Duration,
    pub accept: HeaderValue,
    pub version: HeaderValue,
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// Connecting, writing or reading failed; the connection is dropped and reopened.
    Io(String),
    /// No complete response within `--timeout`.
    Timeout,
}

impl RequestError {
    pub fn label(&self) -> &'static str {
        match self {
            RequestError::Io(_) => "io",
            RequestError::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Io(e) => write!(f, "I/O error: {e}"),
            RequestError::Timeout => write!(f, "timed out"),
        }
    }
}

/// Optional parts of a request.
#[derive(Default)]
pub struct Extra<'a> {
    pub content_type: Option<&'a str>,
    pub if_match: Option<&'a str>,
    pub prefer_no_content: bool,
    /// The path is from the server's root (`/metrics`), not under the endpoint's path.
    pub from_root: bool,
}

/// One keep-alive connection, reopened after an error.
pub struct Conn {
    cfg: Arc<ClientConfig>,
    /// The endpoint this connection talks to (one of `cfg.targets`).
    target: Endpoint,
    sender: Option<SendRequest<Full<Bytes>>>,
    dates: DateCache,
    /// How many times this connection was (re)opened.
    pub connects: u64,
}

static X_MS_DATE: HeaderName = HeaderName::from_static("x-ms-date");
static X_MS_VERSION: HeaderName = HeaderName::from_static("x-ms-version");
static DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("dataserviceversion");
static MAX_DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("maxdataserviceversion");
static PREFER: HeaderName = HeaderName::from_static("prefer");

impl Conn {
    pub fn new(cfg: Arc<ClientConfig>) -> Conn {
        Conn {
            target: cfg.targets.next(),
            cfg,
            sender: None,
            dates: DateCache::default(),
            connects: 0,
        }
    }

    pub fn target(&self) -> &Endpoint {
        &self.target
    }

    async fn connect(&mut self) -> Result<(), RequestError> {
        let stream = TcpStream::connect(self.target.addr)
            .await
            .map_err(|e| RequestError::Io(format!("connect {}: {e}", self.target.addr)))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| RequestError::Io(format!("handshake: {e}")))?;
        tokio::spawn(async move {
            // Ends when the server closes the connection or the sender is dropped.
            let _ = connection.await;
        });
        self.sender = Some(sender);
        self.connects += 1;
        Ok(())
    }

    /// Sends `method` to `{base_path}{path}` (`path` percent-encoded as it goes on the wire,
    /// `query` without the `?`), waits for the whole body, all within `--timeout`.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        query: Option<&str>,
        extra: &Extra<'_>,
        body: Bytes,
    ) -> Result<Response, RequestError> {
        let timeout = self.cfg.timeout;
        match tokio::time::timeout(timeout, self.send_inner(method, path, query, extra, body)).await
        {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                self.sender = None;
                Err(e)
            }
            Err(_) => {
                self.sender = None;
                Err(RequestError::Timeout)
            }
        }
    }

    async fn send_inner(
        &mut self,
        method: Method,
        path: &str,
        query: Option<&str>,
        extra: &Extra<'_>,
        body: Bytes,
    ) -> Result<Response, RequestError> {
        let full_path = if extra.from_root {
            path.to_string()
        } else {
            format!("{}{}", self.target.base_path, path)
        };
        let date = self.dates.now().to_string();
        let auth = self.cfg.signer.authorization(&date, &full_path, None);
        let uri = match query {
            Some(q) if !q.is_empty() => format!("{full_path}?{q}"),
            _ => full_path,
        };
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::HOST, self.target.host_header.as_str())
            .header(&X_MS_DATE, date)
            .header(&X_MS_VERSION, self.cfg.version.clone())
            .header(http::header::AUTHORIZATION, auth)
            .header(http::header::ACCEPT, self.cfg.accept.clone())
            .header(&DATA_SERVICE_VERSION, "3.0")
            .header(&MAX_DATA_SERVICE_VERSION, "3.0;NetFx")
            .header(http::header::CONTENT_LENGTH, body.len());
        if let Some(ct) = extra.content_type {
            req = req.header(http::header::CONTENT_TYPE, ct);
        }
        if let Some(m) = extra.if_match {
            req = req.header(http::header::IF_MATCH, m);
        }
        if extra.prefer_no_content {
            req = req.header(&PREFER, "return-no-content");
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| RequestError::Io(format!("cannot build the request: {e}")))?;

        // A kept-alive connection the server closed meanwhile is replaced once.
        let open = self.sender.as_ref().is_some_and(|s| !s.is_closed());
        let reused = if open {
            true
        } else {
            self.connect().await?;
            false
        };
        let ready = match self.sender.as_mut() {
            Some(s) => s.ready().await.is_ok(),
            None => false,
        };
        if !ready {
            if !reused {
                return Err(RequestError::Io("new connection not ready".into()));
            }
            self.connect().await?;
            if let Some(s) = self.sender.as_mut() {
                s.ready()
                    .await
                    .map_err(|e| RequestError::Io(format!("connection not ready: {e}")))?;
            }
        }
        let sender = self
            .sender
            .as_mut()
            .ok_or_else(|| RequestError::Io("no connection".into()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| RequestError::Io(format!("send: {e}")))?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| RequestError::Io(format!("read body: {e}")))?
            .to_bytes();
        let close = parts
            .headers
            .get(http::header::CONNECTION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if close {
            self.sender = None;
        }
        Ok(Response {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        })
    }
}

/// Waits until the endpoint answers any HTTP request (any status), at most `within`.
pub async fn wait_ready(cfg: Arc<ClientConfig>, within: Duration) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + within;
    let mut conn = Conn::new(cfg);
    let mut last = String::new();
    // At most one attempt per 100 ms until the deadline.
    while tokio::time::Instant::now() < deadline {
        match conn
            .send(
                Method::GET,
                "/Tables",
                None,
                &Extra::default(),
                Bytes::new(),
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!(
        "the endpoint did not answer within {within:?} (last error: {last})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_path_style_endpoint() {
        let t = Endpoint::parse("http://127.0.0.1:10002/devstoreaccount1", false).unwrap();
        assert_eq!(t.addr, "127.0.0.1:10002".parse().unwrap());
        assert_eq!(t.host_header, "127.0.0.1:10002");
        assert_eq!(t.base_path, "/devstoreaccount1");
        assert_eq!(t.base_url, "http://127.0.0.1:10002/devstoreaccount1");
        let t = Endpoint::parse("http://localhost:9/devstoreaccount1/", false).unwrap();
        assert_eq!(t.base_path, "/devstoreaccount1");
        assert!(t.addr.ip().is_loopback());
    }

    #[test]
    fn refuses_non_loopback_and_https() {
        assert!(Endpoint::parse("http://192.0.2.1:10002/a", false).is_err());
        assert!(Endpoint::parse("https://127.0.0.1:10002/a", false).is_err());
        assert!(Endpoint::parse("127.0.0.1:10002", false).is_err());
    }
}
