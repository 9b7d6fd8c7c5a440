#!/usr/bin/env python3
"""An HTTP proxy on 127.0.0.1 in front of a real S3 server that spoils its answers, for the S3
provider's hostile-response tests (issue 52: "a small fault-injecting proxy in front of RGW").

    s3-fault-proxy.py LISTEN_PORT TARGET_PORT MODE [LOG]

Requests go to the target unchanged, Host header included, so SigV4 signatures still verify.
MODE spoils answers:
  short   a GET of an object sends half its body, then closes, under the full Content-Length
  range   a ranged GET's Content-Range starts 4096 bytes later than the range sent
  xml     a listing's body is cut in the middle (malformed XML)
  escape  a listing names a key outside the prefix asked for
  slowdown    the first two requests get 503 SlowDown, the rest pass
  overloaded  every request gets 503 SlowDown
  unconditional  a PUT goes on without If-Match and If-None-Match, re-signed with the secret key
          in $S3_PROXY_SECRET: a server that ignores conditional writes (older RGW, some gateways)
  region  every request gets 400 AuthorizationHeaderMalformed naming the region eu-west-1
  skew    every request gets 403 RequestTimeTooSkewed
  quota   every PUT gets 403 QuotaExceeded (as RGW answers a full user or bucket quota)
  full    every PUT gets 507 InsufficientQuota
  toolarge  every PUT gets 400 EntityTooLarge
  pass    nothing
The refusing modes (region to toolarge) refuse only while the file LOG.refusing exists, so that a
test can free the quota or lift the limit by removing it.
With LOG, each answer is a line there: method, path, status and body bytes sent. LISTEN_PORT 0
listens on a port the kernel picks; either way it prints "ready PORT" once it listens. A port
picked by the caller beforehand may be taken by another process before the proxy binds it, and
the caller then talks to that process (a spoiling test once got a passing proxy's answer).
"""
import hashlib
import hmac
import http.client
import http.server
import itertools
import os
import sys

LISTEN_PORT, TARGET_PORT, MODE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
REQUESTS = itertools.count()
SLOWDOWN = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message></Message></Error>'
# The refusals a mode answers itself: (methods, status, code, more XML).
REFUSALS = {
    "region": (None, 400, "AuthorizationHeaderMalformed", "<Region>eu-west-1</Region>"),
    "skew": (None, 403, "RequestTimeTooSkewed", ""),
    "quota": ("PUT", 403, "QuotaExceeded", ""),
    "full": ("PUT", 507, "InsufficientQuota", ""),
    "toolarge": ("PUT", 400, "EntityTooLarge", ""),
}
LOG = open(sys.argv[4], "a", buffering=1) if len(sys.argv) > 4 else None
REFUSING = sys.argv[4] + ".refusing" if len(sys.argv) > 4 else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        number = next(REQUESTS)
        if MODE == "overloaded" or (MODE == "slowdown" and number < 2):
            self.refuse(503, SLOWDOWN)
            return
        refusing = REFUSING is None or os.path.exists(REFUSING)
        if MODE in REFUSALS and REFUSALS[MODE][0] in (None, self.command) and refusing:
            _, status, code, more = REFUSALS[MODE]
            self.refuse(status, f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>{more}</Error>'.encode())
            return
        target = http.client.HTTPConnection("127.0.0.1", TARGET_PORT, timeout=30)
        headers = {name: value for name, value in self.headers.items()}
        if MODE == "unconditional" and self.command == "PUT":
            headers = resigned(self.command, self.path, headers, ("if-match", "if-none-match"))
        target.request(self.command, self.path, body=body, headers=headers)
        answer = target.getresponse()
        data = answer.read()
        # The length and framing are the proxy's own (RGW sends listings chunked).
        framing = ("content-length", "connection", "transfer-encoding")
        out_headers = [(n, v) for n, v in answer.getheaders() if n.lower() not in framing]
        listing = self.command == "GET" and "list-type=2" in self.path
        is_object = self.command == "GET" and "?" not in self.path and answer.status in (200, 206)
        declared = len(data)
        close = False
        if MODE == "short" and is_object and len(data) > 1:
            data, close = data[: len(data) // 2], True
        elif MODE == "range" and is_object and answer.status == 206:
            out_headers = [
                (n, self.shifted(v) if n.lower() == "content-range" else v) for n, v in out_headers
            ]
        elif MODE == "xml" and listing:
            data = data[: len(data) // 2]
            declared = len(data)
        elif MODE == "escape" and listing:
            data = data.replace(
                b"</ListBucketResult>",
                b"<Contents><Key>outside-the-prefix</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                b"<ETag>&quot;x&quot;</ETag><Size>1</Size></Contents></ListBucketResult>",
            )
            declared = len(data)
        if self.command == "HEAD":
            declared = int(answer.getheader("Content-Length") or 0)
        # Logged before the answer goes out: a client that got it finds it in the log.
        if LOG:
            LOG.write(f"{self.command} {self.path} {answer.status} {0 if self.command == 'HEAD' else len(data)}\n")
        self.send_response(answer.status)
        for name, value in out_headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(declared))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def refuse(self, status, body):
        if LOG:
            LOG.write(f"{self.command} {self.path} {status} {0 if self.command == 'HEAD' else len(body)}\n")
        self.send_response(status)
        if MODE == "region":
            self.send_header("x-amz-bucket-region", "eu-west-1")
        self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    @staticmethod
    def shifted(value):
        unit, _, rest = value.partition(" ")
        span, _, total = rest.partition("/")
        first, _, last = span.partition("-")
        return f"{unit} {int(first) + 4096}-{int(last) + 4096}/{total}"

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay


def resigned(method, path, headers, dropped):
    """The headers without `dropped`, with a SigV4 Authorization made anew for what is left (the
    client's scope and date; the query as sent, which fpfs sends canonical)."""
    kept = {n: v for n, v in headers.items() if n.lower() not in dropped}
    auth = next(v for n, v in kept.items() if n.lower() == "authorization")
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    access, day, region, service, _ = fields["Credential"].split("/")
    names = [n for n in fields["SignedHeaders"].split(";") if n not in dropped]
    lower = {n.lower(): " ".join(v.split()) for n, v in kept.items()}
    uri, _, query = path.partition("?")
    canonical = "\n".join([
        method, uri, query, "".join(f"{n}:{lower[n]}\n" for n in names), ";".join(names),
        lower["x-amz-content-sha256"],
    ])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join([
        "AWS4-HMAC-SHA256", lower["x-amz-date"], scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + os.environ["S3_PROXY_SECRET"]).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    kept = {n: v for n, v in kept.items() if n.lower() != "authorization"}
    kept["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access}/{scope},SignedHeaders={';'.join(names)},Signature={signature}")
    return kept


server = http.server.ThreadingHTTPServer(("127.0.0.1", LISTEN_PORT), Handler)
print(f"ready {server.server_address[1]}", flush=True)
server.serve_forever()
