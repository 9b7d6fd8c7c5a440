#!/usr/bin/env python3
"""A WebDAV server that behaves like Nextcloud's where fpfs cares, for fpfs's tests.

Builds on fake-webdav.py (its GET with Range, PROPFIND, access log and command line) and adds:

- writes: PUT with If-Match / If-None-Match: *, MKCOL, MOVE with Overwrite: F, DELETE with
  If-Match; a PUT rewrites the file in place, so it keeps its identity;
- oc:fileid on every member and an OC-FileId header on GETs: stable per file and folder across
  renames and moves, also ones made in the folder behind the server's back;
- REPORT sync-collection (RFC 6578) with sync-level infinite, DAV:limit/nresults (a truncated
  answer ends with a 507 response for the collection), DAV:sync-token and
  DAV:supported-report-set on collections.

The server rescans the whole folder before each PROPFIND, REPORT and write, and compares the scan
with the last: what differs goes into a change log that sync tokens point into. A path keeps its
fileid while it holds the same kind of thing; a path that is new takes the fileid of a vanished
one with the same inode (and, for a file, the same size and mtime: a rename, not a reused inode),
else a new fileid. Fine for test trees, not for big ones.

Control requests, outside /dav/, for tests:
    POST /fpfs-control/forget-sync-tokens   every token handed out so far gets 403 valid-sync-token
    POST /fpfs-control/long-sync-tokens     tokens from now on are over 500 bytes long
    POST /fpfs-control/refuse-reports       REPORT gets 501, though collections still list it
"""

import importlib.util
import os
import shutil
import stat
import threading
import urllib.parse
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

_spec = importlib.util.spec_from_file_location(
    "fake_webdav", os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake-webdav.py"))
fake = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake)

DAV = "{DAV:}"
TOKEN_PREFIX = "http://fpfs.test/sync/"
VALID_SYNC_TOKEN = '<?xml version="1.0" encoding="utf-8"?>\n<d:error xmlns:d="DAV:"><d:valid-sync-token/></d:error>\n'


@dataclass(frozen=True)
class Entry:
    fileid: int
    inode: int
    is_dir: bool
    size: int
    mtime_ns: int


class Tree:
    """The served folder as the last scan found it, with fileids and the log of changes."""

    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.entries = {}
        self.next_fileid = 1000
        self.log = []  # (sequence, relative path), oldest first
        self.sequence = 0
        self.forgotten_through = -1
        self.long_tokens = False
        self.refuse_reports = False
        self.rescan()
        self.log.clear()

    def rescan(self):
        """Scans the folder and logs what changed since the last scan."""
        with self.lock:
            found = self._scan()
            previous = self.entries
            by_inode = {(entry.inode, entry.is_dir): (path, entry) for path, entry in previous.items()}
            current = {}
            for path, status in found.items():
                is_dir = stat.S_ISDIR(status.st_mode)
                size, mtime = (0 if is_dir else status.st_size), status.st_mtime_ns
                old = previous.get(path)
                moved = by_inode.get((status.st_ino, is_dir))
                if old is not None and old.is_dir == is_dir:
                    fileid = old.fileid
                elif (moved is not None and moved[0] not in found
                      and (is_dir or (moved[1].size, moved[1].mtime_ns) == (size, mtime))):
                    fileid = moved[1].fileid
                else:
                    fileid = self.next_fileid
                    self.next_fileid += 1
                current[path] = Entry(fileid, status.st_ino, is_dir, size, mtime)
                if old != current[path] and path:
                    self._note(path)
            for path in previous.keys() - current.keys():
                self._note(path)
            self.entries = current

    def _scan(self):
        found = {"": os.lstat(self.root)}
        for folder, folders, files in os.walk(self.root):
            for name in folders + files:
                full = os.path.join(folder, name)
                status = os.lstat(full)
                if not os.path.islink(full):
                    found[os.path.relpath(full, self.root)] = status
        return found

    def _note(self, path):
        self.sequence += 1
        self.log.append((self.sequence, path))

    def token(self, sequence):
        padding = "x" * 600 + "/" if self.long_tokens else ""
        return f"{TOKEN_PREFIX}{padding}{sequence}"

    def changes(self, collection, token, limit):
        """(paths changed below `collection` since `token`, the new token, truncated?); None for a
        token this server does not know (any more)."""
        with self.lock:
            inside = lambda path: path != collection and (not collection or path.startswith(collection + "/"))
            if not token:
                return sorted(path for path in self.entries if inside(path)), self.token(self.sequence), False
            try:
                since = int(token.rsplit("/", 1)[1]) if token.startswith(TOKEN_PREFIX) else -1
            except ValueError:
                since = -1
            if since <= self.forgotten_through or since > self.sequence:
                return None
            paths, reached = [], since
            for sequence, path in self.log:
                if sequence <= since:
                    continue
                if inside(path) and path not in paths:
                    if limit is not None and len(paths) == limit:
                        return paths, self.token(reached), True
                    paths.append(path)
                reached = sequence
            return paths, self.token(self.sequence), False

    def relative(self, path):
        """The key of a path under the root in `entries`."""
        relative = os.path.relpath(path, self.root)
        return "" if relative == "." else relative

    def fileid(self, path):
        with self.lock:
            entry = self.entries.get(self.relative(path))
            return entry.fileid if entry else None


class Handler(fake.Handler):
    def do_PROPFIND(self):
        self.server.tree.rescan()
        super().do_PROPFIND()

    def extra_headers(self, path):
        fileid = self.server.tree.fileid(path)
        return [] if fileid is None else [("OC-FileId", str(fileid))]

    def extra_properties(self, path, status):
        fileid = self.server.tree.fileid(path)
        properties = "" if fileid is None else f"<oc:fileid>{fileid}</oc:fileid>"
        if os.path.isdir(path):
            properties += (f"<d:sync-token>{self.server.tree.token(self.server.tree.sequence)}</d:sync-token>"
                           "<d:supported-report-set><d:supported-report><d:report><d:sync-collection/></d:report>"
                           "</d:supported-report></d:supported-report-set>")
        return properties

    def do_REPORT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.server.tree.refuse_reports:
            return self.send_status(501)
        path = self.local_path()
        if path is None or not os.path.isdir(path):
            return self.send_status(404 if path is None or not os.path.exists(path) else 403)
        try:
            request = ElementTree.fromstring(body)
        except ElementTree.ParseError:
            return self.send_status(400)
        if request.tag != DAV + "sync-collection":
            return self.send_status(403)
        token = (request.findtext(DAV + "sync-token") or "").strip()
        limit = request.findtext(f"{DAV}limit/{DAV}nresults")
        self.server.tree.rescan()
        result = self.server.tree.changes(self.server.tree.relative(path), token, int(limit) if limit else None)
        if result is None:
            body = VALID_SYNC_TOKEN.encode()
            return self.send_xml(403, body)
        paths, new_token, truncated = result
        responses = []
        for relative in paths:
            full = os.path.join(self.server.root, relative)
            href = fake.PREFIX + "/" + "/".join(fake.quote(part) for part in relative.split("/"))
            if os.path.lexists(full) and self.server.tree.fileid(full) is not None:
                responses.append(self.member(href + ("/" if os.path.isdir(full) else ""), full))
            else:
                responses.append(f"<d:response><d:href>{href}</d:href><d:status>HTTP/1.1 404 Not Found</d:status>"
                                 "</d:response>")
        if truncated:
            responses.append(f"<d:response><d:href>{urllib.parse.urlsplit(self.path).path}</d:href>"
                             "<d:status>HTTP/1.1 507 Insufficient Storage</d:status>"
                             "<d:error><d:number-of-matches-within-limits/></d:error></d:response>")
        responses.append(f"<d:sync-token>{new_token}</d:sync-token>")
        self.send_xml(207, fake.multistatus(responses))

    def do_PUT(self):
        length = int(self.headers.get("Content-Length") or 0)
        path = self.local_path()
        if path is None or not os.path.isdir(os.path.dirname(path)):
            self.rfile.read(length)
            return self.send_status(409)
        exists = os.path.exists(path)
        failed = self.failed_precondition(path) or (405 if os.path.isdir(path) else None)
        if failed:
            self.rfile.read(length)
            return self.send_status(failed)
        with open(path, "r+b" if exists else "wb") as file:
            file.truncate(0)
            while length > 0:
                data = self.rfile.read(min(length, 1 << 16))
                if not data:
                    break
                file.write(data)
                length -= len(data)
        self.server.tree.rescan()
        self.send_status(204 if exists else 201, self.validators(os.stat(path)) + self.extra_headers(path))

    def do_MKCOL(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.local_path()
        if path is None or os.path.exists(path):
            return self.send_status(405)
        if not os.path.isdir(os.path.dirname(path.rstrip("/"))):
            return self.send_status(409)
        os.mkdir(path)
        self.server.tree.rescan()
        self.send_status(201)

    def do_DELETE(self):
        path = self.local_path()
        if path is None or not os.path.exists(path):
            return self.send_status(404)
        failed = self.failed_precondition(path)
        if failed:
            return self.send_status(failed)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
        self.server.tree.rescan()
        self.send_status(204)

    def do_MOVE(self):
        source = self.local_path()
        target = fake.local_path(self.server.root, self.headers.get("Destination", ""))
        if source is None or target is None or not os.path.exists(source):
            return self.send_status(404)
        if not os.path.isdir(os.path.dirname(target.rstrip("/"))):
            return self.send_status(409)
        exists = os.path.exists(target)
        if exists and self.headers.get("Overwrite", "T") == "F":
            return self.send_status(412)
        self.server.tree.rescan()
        os.replace(source, target)
        self.server.tree.rescan()
        self.send_status(204 if exists else 201)

    def do_POST(self):
        command = urllib.parse.urlsplit(self.path).path
        tree = self.server.tree
        with tree.lock:
            if command == "/fpfs-control/forget-sync-tokens":
                tree.forgotten_through = tree.sequence
                tree.sequence += 1
            elif command == "/fpfs-control/long-sync-tokens":
                tree.long_tokens = True
            elif command == "/fpfs-control/refuse-reports":
                tree.refuse_reports = True
            else:
                return self.send_status(404)
        self.send_status(204)

    def failed_precondition(self, path):
        """412 when If-Match or If-None-Match: * does not hold for the resource at `path`."""
        exists = os.path.exists(path)
        if self.headers.get("If-None-Match") == "*" and exists:
            return 412
        wanted = self.headers.get("If-Match")
        if wanted is not None and (not exists or fake.etag(os.stat(path)) != wanted):
            return 412
        return None


def setup(server):
    server.tree = Tree(server.root)


if __name__ == "__main__":
    fake.serve(Handler, fake.arguments("A Nextcloud-like WebDAV server.").parse_args(), setup)
