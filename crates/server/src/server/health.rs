//! The client side of the readiness probe, for `tablestore --healthcheck` (container health
//! checks in images without curl): `GET /_health` on the configured host and port.
//!
//! Owns [`HEALTH_PATH`], which the server answers in `intake`. Depends only on, for HTTPS
//! servers, the TLS client set-up in [`super::tls`].

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Path of the readiness probe; `_` cannot start an account name, so it never collides.
pub(crate) const HEALTH_PATH: &str = "/_health";

/// The address to probe for a listening address: a wildcard (`0.0.0.0`, `::`) means this
/// machine, so the loopback address of the same family is probed.
pub fn probe_host(listen_host: &str) -> &str {
    match listen_host.trim_start_matches('[').trim_end_matches(']') {
        "" | "0.0.0.0" => "127.0.0.1",
        "::" => "::1",
        other => other,
    }
}

/// Asks `http://{host}:{port}/_health`; `Ok` when it answers 200 within `timeout`.
pub async fn probe(host: &str, port: u16, timeout: Duration) -> Result<(), String> {
    let host = probe_host(host);
    let exchange = async {
        let stream = connect(host, port).await?;
        ask_health(stream, host, port).await
    };
    within(timeout, host, port, exchange).await
}

/// Asks `https://{host}:{port}/_health` (for a server started with a certificate); `Ok` when
/// it answers 200 within `timeout`. Any certificate is accepted: the probe checks that this
/// machine's server is up, sends no credentials, and a self-signed certificate is the usual
/// case.
pub async fn probe_https(host: &str, port: u16, timeout: Duration) -> Result<(), String> {
    let host = probe_host(host);
    let exchange = async {
        let tcp = connect(host, port).await?;
        let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| format!("cannot use {host} as a TLS server name: {e}"))?;
        let connector = tokio_rustls::TlsConnector::from(super::tls::probe_client_config()?);
        let stream = connector
            .connect(server_name, tcp)
            .await
            .map_err(|e| format!("TLS handshake with {host}:{port} failed: {e}"))?;
        ask_health(stream, host, port).await
    };
    within(timeout, host, port, exchange).await
}

async fn connect(host: &str, port: u16) -> Result<TcpStream, String> {
    TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))
}

async fn within(
    timeout: Duration,
    host: &str,
    port: u16,
    exchange: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), String> {
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer from {host}:{port} within {timeout:?}")),
    }
}

/// Sends `GET /_health` on `stream` and checks for a 200 status line.
async fn ask_health<S>(mut stream: S, host: &str, port: u16) -> Result<(), String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let request = format!(
        "GET {HEALTH_PATH} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        host_header(host, port)
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the probe: {e}"))?;
    let mut answer = Vec::new();
    // A TLS peer may close without close_notify after `Connection: close`; what was read
    // until then is enough to judge the status line.
    if let Err(e) = stream.read_to_end(&mut answer).await {
        if answer.is_empty() {
            return Err(format!("cannot read the answer: {e}"));
        }
    }
    let status_line = answer
        .split(|b| *b == b'\n')
        .next()
        .map(|l| String::from_utf8_lossy(l).trim().to_string())
        .unwrap_or_default();
    let mut words = status_line.split_whitespace();
    match (words.next(), words.next()) {
        (Some(v), Some("200")) if v.starts_with("HTTP/") => Ok(()),
        _ if is_tls_record(&answer) => Err(format!(
            "{host}:{port} is an HTTPS port: give --healthcheck the server's --cert and --key \
             (or probe https://{}/_health)",
            host_header(host, port)
        )),
        _ => Err(format!("unexpected answer: {status_line:?}")),
    }
}

/// Whether `answer` starts like a TLS record (content type 20–23, then version 3.x): what a
/// TLS server sends back to a plain-HTTP request.
fn is_tls_record(answer: &[u8]) -> bool {
    matches!(answer, [20..=23, 3, ..])
}

fn host_header(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_probe_loopback() {
        assert_eq!(probe_host("0.0.0.0"), "127.0.0.1");
        assert_eq!(probe_host("::"), "::1");
        assert_eq!(probe_host("[::]"), "::1");
        assert_eq!(probe_host("10.1.2.3"), "10.1.2.3");
        assert_eq!(host_header("::1", 5), "[::1]:5");
    }

    /// A plain-HTTP probe of a TLS server gets a TLS alert back: the error says HTTPS instead
    /// of quoting the record's bytes.
    #[tokio::test]
    async fn an_https_port_is_named_as_such() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 512];
            let _ = socket.read(&mut buf).await;
            // A TLS 1.2 fatal `unexpected_message` alert record.
            let _ = socket.write_all(&[21, 3, 3, 0, 2, 2, 10]).await;
        });
        let e = probe("127.0.0.1", port, Duration::from_secs(2))
            .await
            .unwrap_err();
        server.await.unwrap();
        assert!(e.contains("is an HTTPS port"), "{e}");
        assert!(e.contains("--cert"), "{e}");
        assert!(!is_tls_record(b"HTTP/1.1 200 OK"));
    }

    #[tokio::test]
    async fn closed_port_fails() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        assert!(probe("127.0.0.1", port, Duration::from_secs(2))
            .await
            .is_err());
    }
}
