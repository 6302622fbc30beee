#!/usr/bin/env python3
"""Loopback capture server for `$batch` fixtures.

Records every `POST .../$batch` it receives as raw body bytes plus sidecars, and answers
202 with a minimal, well-formed batch response (one `204 No Content` sub-response per
`application/http` part) so the SDK's `submit_transaction` / `submitTransaction` returns.

Naming: before each transaction the driver sends `GET /__name?case=<fixture-name>`; the next
`$batch` request is stored as `<out>/<fixture-name>.http`, `<name>.content-type` (the outer
Content-Type, no trailing newline) and `<name>.headers` (request line and headers, for reference;
the Authorization header is kept as-is, it is signed with the public development key).

Binds 127.0.0.1 only (threaded: the SDKs keep connections alive).  Usage: capture_server.py <out-dir> <port-file>
Writes the chosen port to <port-file> and serves until killed.
"""
import http.server
import os
import re
import sys
import uuid

OUT = sys.argv[1]
PORT_FILE = sys.argv[2]
state = {"name": None}


def batch_response(count):
    b = f"batchresponse_{uuid.uuid4()}"
    c = f"changesetresponse_{uuid.uuid4()}"
    out = [f"--{b}", f"Content-Type: multipart/mixed; boundary={c}", ""]
    for i in range(count):
        out += [
            f"--{c}",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            "",
            "HTTP/1.1 204 No Content",
            "X-Content-Type-Options: nosniff",
            "Cache-Control: no-cache",
            "DataServiceVersion: 1.0;",
            f"ETag: W/\"datetime'2024-01-01T00%3A00%3A0{i % 10}.0000000Z'\"",
            "",
        ]
    out += [f"--{c}--", f"--{b}--", ""]
    return b, "\r\n".join(out).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep the driver output readable
        sys.stderr.write("capture: " + (fmt % args) + "\n")

    def _send(self, status, body=b"", ctype=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/__name?case="):
            state["name"] = self.path.split("=", 1)[1]
            self._send(200, b"ok", "text/plain")
        else:
            self._send(404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if not self.path.split("?", 1)[0].endswith("/$batch"):
            self._send(404)
            return
        name = state["name"] or f"unnamed_{uuid.uuid4().hex[:8]}"
        state["name"] = None
        with open(os.path.join(OUT, name + ".http"), "wb") as f:
            f.write(body)
        with open(os.path.join(OUT, name + ".content-type"), "w") as f:
            f.write(self.headers.get("Content-Type", ""))
        with open(os.path.join(OUT, name + ".headers"), "w") as f:
            f.write(f"{self.command} {self.path} {self.request_version}\n")
            for k, v in self.headers.items():
                f.write(f"{k}: {v}\n")
        count = len(re.findall(rb"(?im)^content-type:\s*application/http", body))
        b, resp = batch_response(count)
        self._send(202, resp, f"multipart/mixed; boundary={b}")


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
