#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that adds round-trip time, for benchmarks on kernels without netem.

    delay-proxy.py LISTEN_PORT TARGET_PORT RTT_MS [WINDOW_KIB]

Every chunk read from one side is written to the other half a round trip later, so a request and
its answer together take RTT_MS more, as on a link with that delay. Each direction of a
connection holds at most WINDOW_KIB (default 4096) in flight and stops reading from its sender
until the oldest bytes are delivered: a TCP connection over a real link is limited the same way,
to its window per round trip, which is what makes parallel streams faster than one there.
Slow start and loss are not modelled. Prints "ready" once it listens.

The proxy shares the machine with the client and the server it sits between, and what it spends
is taken from them, where a link costs them nothing: so it is one thread on epoll, and the bytes
wait in a ring buffer of the window's size per direction, read into it and sent from it in place
(DECISIONS 153).
"""
import collections
import heapq
import selectors
import socket
import sys
import time

# The most one read takes from a socket, so that one busy direction does not hold up the others.
CHUNK = 256 << 10


class Direction:
    """One direction of a connection: bytes read from `source` wait in a ring buffer of the
    window's size, with the time each piece is due, until they are sent to `destination`."""

    def __init__(self, source, destination, delay, window):
        self.source, self.destination = source, destination
        self.delay, self.window = delay, window
        self.ring = memoryview(bytearray(window))
        self.head = 0  # where the oldest held byte is
        self.held = 0  # bytes in the ring
        self.pending = collections.deque()  # [due, bytes] in arrival order; bytes None at the end
        self.ended = False  # the source's end was read
        self.closed = False  # the end was delivered, or the destination failed
        self.blocked = False  # due bytes wait for the destination to take them
        self.scheduled = None  # the due time of this direction's timer, if one is set

    def readable(self):
        """Whether to read from the source now."""
        return not self.ended and not self.closed and self.held < self.window

    def read(self, now):
        """Moves what the source has (within the window) into the ring."""
        if not self.readable():
            return
        tail = (self.head + self.held) % self.window
        room = min(self.window - self.held, self.window - tail, CHUNK)
        try:
            count = self.source.recv_into(self.ring[tail:tail + room])
        except BlockingIOError:
            return
        except OSError:
            count = 0
        if count == 0:
            self.ended = True
            self.pending.append([now + self.delay, None])
            return
        self.held += count
        self.pending.append([now + self.delay, count])

    def due(self):
        """When the oldest piece is due, or None."""
        return self.pending[0][0] if self.pending else None

    def deliver(self, now):
        """Sends every piece that is due to the destination; returns False when the destination
        is full (wait until it is writable) or gone."""
        while self.pending and self.pending[0][0] <= now:
            piece = self.pending[0]
            if piece[1] is None:
                try:
                    self.destination.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.pending.popleft()
                self.closed = True
                return True
            length = min(piece[1], self.window - self.head)
            try:
                sent = self.destination.send(self.ring[self.head:self.head + length])
            except BlockingIOError:
                return False
            except OSError:
                # The receiver is gone: stop reading from the sender too.
                self.closed = True
                self.pending.clear()
                return False
            self.head = (self.head + sent) % self.window
            self.held -= sent
            piece[1] -= sent
            if piece[1] == 0:
                self.pending.popleft()
            elif sent < length:
                return False
        return True

    def close(self):
        self.ring.release()


class Proxy:
    def __init__(self, listen_port, target_port, delay, window):
        self.target_port, self.delay, self.window = target_port, delay, window
        self.selector = selectors.EpollSelector()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", listen_port))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, None)
        self.connections = {}  # socket -> (its direction as a source, its direction as a destination)
        self.timers = []  # (due, sequence, direction)
        self.sequence = 0

    def accept(self):
        try:
            client, _ = self.listener.accept()
        except BlockingIOError:
            return
        try:
            server = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        for side in (client, server):
            side.setblocking(False)
            side.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        upstream = Direction(client, server, self.delay, self.window)
        downstream = Direction(server, client, self.delay, self.window)
        self.connections[client] = (upstream, downstream)
        self.connections[server] = (downstream, upstream)
        self.update(client)
        self.update(server)

    def update(self, side):
        """Registers what `side` waits for: to be read (its outgoing direction has room) and to be
        written (its incoming direction has due bytes it could not take)."""
        if side not in self.connections:
            return
        outgoing, incoming = self.connections[side]
        events = 0
        if outgoing.readable():
            events |= selectors.EVENT_READ
        if incoming.blocked:
            events |= selectors.EVENT_WRITE
        registered = self.selector.get_map().get(side)
        if registered is None:
            if events:
                self.selector.register(side, events, None)
        elif events == 0:
            self.selector.unregister(side)
        elif registered.events != events:
            self.selector.modify(side, events, None)

    def schedule(self, direction):
        """Sets a timer for the oldest piece of `direction`, unless one is set for it."""
        due = direction.due()
        if due is None or due == direction.scheduled or direction.blocked or direction.closed:
            return
        direction.scheduled = due
        self.sequence += 1
        heapq.heappush(self.timers, (due, self.sequence, direction))

    def flush(self, direction, now):
        """Delivers what is due in `direction`, and re-registers both of its sides."""
        delivered = direction.deliver(now)
        direction.blocked = not delivered and not direction.closed
        self.schedule(direction)
        self.update(direction.source)
        self.update(direction.destination)
        self.finish_if_done(direction.source)

    def finish_if_done(self, side):
        """Closes a connection once both directions have delivered their end, or one failed."""
        if side not in self.connections:
            return
        outgoing, incoming = self.connections[side]
        failed = any(direction.closed and not direction.ended for direction in (outgoing, incoming))
        if not failed and not (outgoing.closed and incoming.closed):
            return
        for direction in (outgoing, incoming):
            for end in (direction.source, direction.destination):
                if end in self.connections:
                    del self.connections[end]
                    if end in self.selector.get_map():
                        self.selector.unregister(end)
                    end.close()
            direction.closed = True
            direction.close()

    def run(self):
        print("ready", flush=True)
        while True:
            now = time.monotonic()
            timeout = None
            if self.timers:
                timeout = max(self.timers[0][0] - now, 0)
            for key, events in self.selector.select(timeout):
                if key.fileobj is self.listener:
                    self.accept()
                    continue
                side = key.fileobj
                if side not in self.connections:
                    continue
                outgoing, incoming = self.connections[side]
                now = time.monotonic()
                if events & selectors.EVENT_WRITE:
                    self.flush(incoming, now)
                if events & selectors.EVENT_READ and side in self.connections:
                    outgoing.read(now)
                    self.schedule(outgoing)
                    self.update(side)
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                due, _, direction = heapq.heappop(self.timers)
                if due != direction.scheduled:
                    continue
                direction.scheduled = None
                if not direction.closed and not direction.blocked:
                    self.flush(direction, now)


def main():
    listen_port, target_port, rtt_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    window = int(sys.argv[4]) << 10 if len(sys.argv) > 4 else 4 << 20
    Proxy(listen_port, target_port, rtt_ms / 2000, window).run()


main()
