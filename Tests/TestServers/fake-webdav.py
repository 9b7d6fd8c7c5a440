#!/usr/bin/env python3
"""A small WebDAV server for fpfs's tests: one that misbehaves on request, or one that behaves
like Nextcloud.

Serves the folder ROOT under /dav/ on 127.0.0.1 with HTTP/1.1 keep-alive: PROPFIND (Depth 0 and
1) and GET (with at most one `Range: bytes=A-B`); with --nextcloud also the writes and the
features of an ownCloud/Nextcloud-style server: nextcloud-webdav.py, beside this script, builds on
its Handler. With --rules it reads the JSON rules file again
before every request, so a test can change its behaviour in the middle of a read. The file holds
a list of rules such as

    {"fault": "slow", "path": "big.bin", "method": "GET", "rate": 64}

A rule applies to a request whose URL path ends with "path" and, if "method" is given, whose
method is that one; the first rule that applies decides. With "times": N a rule applies to the
first N requests it matches only (counted per rule, for as long as the server runs). The faults:

    status500    answer 500 Internal Server Error (GET and PROPFIND)
    shortBody    GET: promise Content-Length N, send N/2 bytes, then close the connection
    stall        GET: promise Content-Length N, send N/2 bytes, then fall silent, connection open
    wrongRange   GET: answer a Range request with 206 and a Content-Range one byte later than asked
    slow         GET: send the body at "rate" KiB/s (default 64), so a test can stop the server
    badXML       PROPFIND: answer 207 with the XML cut off halfway, followed by garbage
    hrefOutside  PROPFIND Depth 1 of a folder: list an extra member /elsewhere/x
    hrefDotDot   ... an extra member /dav/../etc/passwd
    hrefSlash    ... an extra member /dav/FOLDER/a%2Fb (a '/' inside a name)
    longName     ... an extra file whose name is 300 bytes ("l" * 300), otherwise well formed
    hugeSize     ... an extra file huge.bin of getcontentlength 2^63, one beyond what off_t holds
    deepNesting  PROPFIND: answer 207 with a multistatus nested "depth" elements deep (default
                 10 000 000), streamed, never closed
    trickle      GET: send the body one byte every "interval" seconds (default 2)

Usage: fake-webdav.py ROOT [--rules FILE] [--port N] [--port-file FILE] [--access-log FILE]

Listens on port N (default 0: any free port), prints the port on the first line of stdout and,
with --port-file, also writes it to that file (atomically, so a reader never sees half of it).
With --access-log it appends a line for each request, in the tab-separated format of the Apache
that WebDAVTestServer configures (start in microseconds, duration, method, status, body bytes,
Range, decoded path). Exits when the process that started it has gone, so a crashed test leaves
no server behind.
"""

import argparse
import email.utils
import json
import os
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/dav"
# How long a stalled answer stays silent: longer than any test waits, shorter than forever.
STALL_SECONDS = 3600

# The extra member each href fault adds to a folder's listing, given the folder's href.
EXTRA_HREFS = {
    "hrefOutside": lambda folder: "/elsewhere/x",
    "hrefDotDot": lambda folder: PREFIX + "/../etc/passwd",
    "hrefSlash": lambda folder: folder + "a%2Fb",
    "longName": lambda folder: folder + "l" * 300,
    "hugeSize": lambda folder: folder + "huge.bin",
}
# The getcontentlength of the extra member, where a fault sets one.
EXTRA_SIZES = {"hugeSize": 1 << 63}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm the body would wait for
    # the client's delayed ACK, 40 ms per request on a kept-alive connection.
    disable_nagle_algorithm = True

    def handle_one_request(self):
        """Serves one request, then logs it when --access-log asks for it."""
        self.started, self.status_sent, self.body_sent = time.time(), None, 0
        super().handle_one_request()
        if self.server.access_log and self.status_sent is not None:
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            line = (f"{int(self.started * 1e6)}\t{int((time.time() - self.started) * 1e6)}\t{self.command}\t"
                    f"{self.status_sent}\t{self.body_sent}\t{self.headers.get('Range') or '-'}\t{path}\n")
            with self.server.lock, open(self.server.access_log, "a", encoding="utf-8") as log:
                log.write(line)

    def send_response(self, code, message=None):
        self.status_sent = code
        super().send_response(code, message)

    def write_body(self, data):
        self.wfile.write(data)
        self.body_sent += len(data)

    def extra_headers(self, path):
        """Headers a subclass adds to a GET's answer."""
        return []

    def extra_properties(self, path, status):
        """Properties a subclass adds to a PROPFIND member (XML inside <d:prop>)."""
        return ""

    def do_GET(self):
        rule = self.matching_rule()
        fault = rule.get("fault")
        if fault == "status500":
            return self.send_status(500)
        path = self.local_path()
        if path is None or not os.path.isfile(path):
            return self.send_status(404)
        status = os.stat(path)
        size = status.st_size
        start, end = 0, size - 1
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if wanted:
            start = int(wanted.group(1))
            end = min(int(wanted.group(2) or size - 1), size - 1)
            if start > end:
                return self.send_status(416, [("Content-Range", f"bytes */{size}")])
            if fault == "wrongRange":
                start += 1
        headers = self.validators(status) + self.extra_headers(path)
        headers += [("Accept-Ranges", "bytes"), ("Content-Length", str(end - start + 1))]
        if wanted:
            headers.append(("Content-Range", f"bytes {start}-{end}/{size}"))
        self.send_head(206 if wanted else 200, headers)
        self.send_file(path, start, end - start + 1, rule)

    def do_PROPFIND(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fault = self.matching_rule().get("fault")
        if fault == "status500":
            return self.send_status(500)
        if fault == "deepNesting":
            return self.send_deep_nesting(self.matching_rule().get("depth", 10_000_000))
        path = self.local_path()
        if path is None or not os.path.exists(path):
            return self.send_status(404)
        relative = os.path.relpath(path, self.server.root)
        parts = [] if relative == "." else relative.split(os.sep)
        href = PREFIX + "/" + "".join(quote(part) + "/" for part in parts)
        if not os.path.isdir(path):
            href = href[:-1]
        entries = [self.member(href, path)]
        if os.path.isdir(path) and self.headers.get("Depth") != "0":
            for name in sorted(os.listdir(path)):
                slash = "/" if os.path.isdir(os.path.join(path, name)) else ""
                entries.append(self.member(href + quote(name) + slash, os.path.join(path, name)))
            if fault in EXTRA_HREFS:
                entries.append(member(EXTRA_HREFS[fault](href), os.stat(path), size=EXTRA_SIZES.get(fault)))
        body = multistatus(entries)
        if fault == "badXML":
            body = body[: len(body) // 2] + b"<&garbage"
        self.send_xml(207, body)

    def member(self, href, path):
        status = os.stat(path)
        return member(href, status, self.extra_properties(path, status))

    def send_deep_nesting(self, depth):
        """A multistatus that opens `depth` elements inside each other, sent in chunks as the
        client reads, and never closes them; the connection closes at the end."""
        self.close_connection = True
        self.send_head(207, [("Content-Type", "application/xml; charset=utf-8"), ("Transfer-Encoding", "chunked")])
        chunk = b"<d:prop>" * 8192
        try:
            self.write_chunk(b'<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response>')
            for _ in range(depth // 8192):
                self.write_chunk(chunk)
            self.write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def write_chunk(self, data):
        self.write_body(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def send_xml(self, code, body):
        self.send_head(code, [("Content-Type", "application/xml; charset=utf-8"), ("Content-Length", str(len(body)))])
        self.write_body(body)

    def matching_rule(self):
        """The first rule of the rules file that applies to this request, or {} when none does."""
        if not self.server.rules_file:
            return {}
        try:
            with open(self.server.rules_file, encoding="utf-8") as file:
                rules = json.load(file)
        except (OSError, ValueError):
            return {}
        path = urllib.parse.urlsplit(self.path).path
        for rule in rules:
            if path.endswith(rule["path"]) and rule.get("method", self.command) == self.command:
                if "times" in rule:
                    key = json.dumps(rule, sort_keys=True)
                    with self.server.lock:
                        used = self.server.rule_uses.get(key, 0)
                        if used >= rule["times"]:
                            continue
                        self.server.rule_uses[key] = used + 1
                return rule
        return {}

    def local_path(self):
        """The path under ROOT that the URL names; None outside /dav/ or for a `.` or `..` part."""
        return local_path(self.server.root, self.path)

    @staticmethod
    def validators(status):
        """ETag and Last-Modified: what the provider takes as the file's version."""
        return [("ETag", etag(status)), ("Last-Modified", email.utils.formatdate(status.st_mtime, usegmt=True))]

    def send_head(self, code, headers):
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def send_status(self, code, headers=()):
        body = b"" if code == 204 else f"{code} {self.responses[code][0]}\n".encode()
        self.send_head(code, [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))] + list(headers))
        self.write_body(body)

    def send_file(self, path, start, length, rule):
        """Sends `length` bytes from `start`: all of them, slowly, or half and then nothing more."""
        fault = rule.get("fault")
        if fault in ("shortBody", "stall"):
            length //= 2
            self.close_connection = True
        chunk = max(1, rule.get("rate", 64) * 1024 // 10) if fault == "slow" else 1 if fault == "trickle" else 1 << 16
        try:
            with open(path, "rb") as file:
                file.seek(start)
                while length > 0:
                    data = file.read(min(chunk, length))
                    if not data:
                        break
                    self.write_body(data)
                    length -= len(data)
                    if fault == "slow":
                        time.sleep(0.1)
                    elif fault == "trickle":
                        time.sleep(rule.get("interval", 2))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        if fault == "stall":
            time.sleep(STALL_SECONDS)


def local_path(root, url):
    """The path under root that a URL names; None outside /dav/ or for a `.` or `..` part."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path, errors="surrogateescape")
    if path != PREFIX and not path.startswith(PREFIX + "/"):
        return None
    parts = [part for part in path[len(PREFIX):].split("/") if part]
    if any(part in (".", "..") for part in parts):
        return None
    return os.path.join(root, *parts)


def quote(name):
    """A name as an href spells it; names that are not UTF-8 keep their bytes."""
    return urllib.parse.quote(os.fsencode(name))


def multistatus(responses):
    return ('<?xml version="1.0" encoding="utf-8"?>\n<d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
            + "".join(responses) + "</d:multistatus>\n").encode()


def etag(status):
    return f'"{status.st_size}-{status.st_mtime_ns}"'


def member(href, status, extra="", size=None):
    """One <d:response> of a multistatus: the properties fpfs asks for and `extra`, all with 200.
    An href ending in '/' is a collection; a file's length is `size` if given, else its own."""
    if href.endswith("/"):
        kind, length = "<d:resourcetype><d:collection/></d:resourcetype>", ""
    else:
        size = status.st_size if size is None else size
        kind, length = "<d:resourcetype/>", f"<d:getcontentlength>{size}</d:getcontentlength>"
    modified = email.utils.formatdate(status.st_mtime, usegmt=True)
    return (f"<d:response><d:href>{href}</d:href><d:propstat><d:prop>{kind}{length}"
            f"<d:getetag>{etag(status)}</d:getetag><d:getlastmodified>{modified}</d:getlastmodified>"
            f"{extra}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>")


def exit_with_parent():
    """Ends the server once its parent has gone (it is then adopted by another process)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


def arguments(description):
    """The command line both servers take."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("root")
    parser.add_argument("--rules")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--access-log")
    return parser


def serve(handler, options, setup=lambda server: None):
    """Listens, tells the port, and serves until killed or orphaned."""
    server = ThreadingHTTPServer(("127.0.0.1", options.port), handler)
    server.root = os.path.abspath(options.root)
    server.rules_file = options.rules
    server.access_log = options.access_log
    server.lock = threading.Lock()
    server.rule_uses = {}
    setup(server)
    port = server.server_address[1]
    if options.port_file:
        with open(options.port_file + ".tmp", "w", encoding="utf-8") as file:
            file.write(f"{port}\n")
        os.replace(options.port_file + ".tmp", options.port_file)
    print(port, flush=True)
    threading.Thread(target=exit_with_parent, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    serve(Handler, arguments("A WebDAV server that misbehaves on request.").parse_args())
