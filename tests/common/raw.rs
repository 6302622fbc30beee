//! Raw HTTP/1.1 over a TCP socket, for requests no well-behaved client would send (broken
//! framing, oversize heads, slow or idle clients).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as read off the socket.
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    /// Status line and headers, as text.
    pub head: String,
    pub body: Vec<u8>,
}

impl RawReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The whole response as text: head, blank line, body.
    pub fn whole(&self) -> String {
        format!("{}\r\n\r\n{}", self.head, self.text())
    }

    /// The `odata.error.code` of a JSON error body, or `m:code`/`code` of an XML one.
    pub fn error_code(&self) -> Option<String> {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&self.body) {
            return v["odata.error"]["code"].as_str().map(str::to_string);
        }
        let text = self.text();
        for tag in ["<m:code>", "<code>"] {
            if let Some(start) = text.find(tag) {
                let rest = &text[start + tag.len()..];
                return rest.find('<').map(|end| rest[..end].to_string());
            }
        }
        None
    }
}

/// Parses the first response in `buf`, if it is complete: the reply and its length.
fn parse_response(buf: &[u8], eof: bool) -> Option<(RawReply, usize)> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let rest = &buf[head_end + 4..];
    let start = head_end + 4;
    let reply = |body: &[u8], used: usize| {
        let r = RawReply {
            status,
            head: head.clone(),
            body: body.to_vec(),
        };
        (r, start + used)
    };
    let length = head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    });
    match length {
        Some(n) if rest.len() >= n => Some(reply(&rest[..n], n)),
        Some(_) => None,
        None if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked") =>
        {
            decode_chunked(rest).map(|(b, used)| reply(&b, used))
        }
        None if status == 204 || status == 304 => Some(reply(&[], 0)),
        None if eof => Some(reply(rest, rest.len())),
        None => None,
    }
}

fn decode_chunked(all: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut rest = all;
    let mut out = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            let used = all.len() - rest.len() + 2;
            return (rest.len() >= 2).then_some((out, used));
        }
        if rest.len() < size + 2 {
            return None;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// What happened on a connection.
#[derive(Debug)]
pub enum Outcome {
    /// A complete response.
    Reply(RawReply),
    /// The server closed the connection without (a complete) response.
    Closed(Vec<u8>),
    /// Nothing within the time limit.
    TimedOut(Vec<u8>),
}

impl Outcome {
    pub fn reply(self) -> RawReply {
        match self {
            Outcome::Reply(r) => r,
            other => panic!("expected a response, got {other:?}"),
        }
    }
}

/// Reads one response (or close, or time-out) from `stream`; bytes past the response are
/// lost (use [`Pipeline`] for several responses on one connection).
pub async fn read_response(stream: &mut TcpStream, limit: Duration) -> Outcome {
    Pipeline::default().read(stream, limit).await
}

/// Reads successive responses from one connection, keeping bytes that belong to the next.
#[derive(Default)]
pub struct Pipeline {
    buf: Vec<u8>,
}

impl Pipeline {
    pub async fn read(&mut self, stream: &mut TcpStream, limit: Duration) -> Outcome {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some((r, used)) = parse_response(&self.buf, false) {
                self.buf.drain(..used);
                return Outcome::Reply(r);
            }
            let mut chunk = [0u8; 16 * 1024];
            match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    let buf = std::mem::take(&mut self.buf);
                    return match parse_response(&buf, true) {
                        Some((r, _)) => Outcome::Reply(r),
                        None => Outcome::Closed(buf),
                    };
                }
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
                Err(_) => return Outcome::TimedOut(std::mem::take(&mut self.buf)),
            }
        }
    }
}

/// Connects, writes `request` (write errors ignored: the server may answer and close early),
/// and reads one response.
pub async fn exchange(addr: SocketAddr, request: &[u8], limit: Duration) -> Outcome {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let _ = stream.write_all(request).await;
    read_response(&mut stream, limit).await
}

/// [`exchange`] that expects a response within 20 s: its status and [`RawReply::whole`] text.
pub async fn exchange_text(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let r = exchange(addr, request, Duration::from_secs(20))
        .await
        .reply();
    (r.status, r.whole())
}

/// A GET of the readiness probe on a fresh connection answers 200 within `limit`.
pub async fn healthy(addr: SocketAddr, limit: Duration) -> bool {
    let Ok(Ok(mut stream)) = tokio::time::timeout(limit, TcpStream::connect(addr)).await else {
        return false;
    };
    let req = b"GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(req).await.is_err() {
        return false;
    }
    matches!(read_response(&mut stream, limit).await, Outcome::Reply(r) if r.status == 200)
}
