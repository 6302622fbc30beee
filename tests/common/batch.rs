//! `$batch` request bodies in Azure's multipart framing (Performing entity group transactions,
//! REST reference): a batch holding one change set of sub-requests, or one query. CRLF line
//! ends and absolute sub-request URLs, as the SDKs write them.

/// Accept header of every sub-request.
const SUB_ACCEPT: &str = "application/json;odata=minimalmetadata";

/// Builds one `$batch` body; sub-requests are addressed below `base` (the account URL,
/// `http://127.0.0.1:port/devstoreaccount1`).
pub struct BatchBody {
    base: String,
    batch: String,
    changeset: String,
    parts: String,
}

impl BatchBody {
    /// Boundaries `batch_b1` and `changeset_c1`.
    pub fn new(base: &str) -> BatchBody {
        BatchBody::with_boundaries(base, "batch_b1", "changeset_c1")
    }

    pub fn with_boundaries(base: &str, batch: &str, changeset: &str) -> BatchBody {
        BatchBody {
            base: base.to_string(),
            batch: batch.to_string(),
            changeset: changeset.to_string(),
            parts: String::new(),
        }
    }

    /// `multipart/mixed; boundary=<batch>`, the request's Content-Type.
    pub fn content_type(&self) -> String {
        format!("multipart/mixed; boundary={}", self.batch)
    }

    /// Appends a sub-request to the change set: `path` is below `base`; a body is sent as
    /// `application/json`.
    pub fn op(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> &mut BatchBody {
        let part = self.part(method, path, headers, body);
        self.parts.push_str(&part);
        self
    }

    /// The text of one change-set part (from its boundary line on), for tests that assemble
    /// or damage a body themselves.
    pub fn part(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> String {
        format!(
            "--{}\r\n{}",
            self.changeset,
            self.http(method, path, headers, body)
        )
    }

    /// An `application/http` part: part headers, the request line, headers and body.
    fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> String {
        let mut out = format!(
            "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
             {method} {}{path} HTTP/1.1\r\nAccept: {SUB_ACCEPT}\r\nDataServiceVersion: 3.0;\r\n",
            self.base
        );
        for (k, v) in headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        match body {
            Some(b) => out.push_str(&format!("Content-Type: application/json\r\n\r\n{b}\r\n")),
            None => out.push_str("\r\n"),
        }
        out
    }

    /// The batch framing around change-set `parts` (as [`BatchBody::part`] writes them).
    pub fn wrap(&self, parts: &str) -> String {
        let (b, cs) = (&self.batch, &self.changeset);
        format!(
            "--{b}\r\nContent-Type: multipart/mixed; boundary={cs}\r\n\r\n{parts}--{cs}--\r\n--{b}--\r\n"
        )
    }

    /// The whole body: one change set with every [`BatchBody::op`] so far.
    pub fn body(&self) -> String {
        self.wrap(&self.parts)
    }

    /// A batch holding one query (a GET outside any change set) instead of a change set.
    pub fn query(&self, path: &str, headers: &[(&str, &str)]) -> String {
        let b = &self.batch;
        format!(
            "--{b}\r\n{}--{b}--\r\n",
            self.http("GET", path, headers, None)
        )
    }
}
