#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that adds round-trip time, for benchmarks on kernels without netem.

    delay-proxy.py LISTEN_PORT TARGET_PORT RTT_MS [WINDOW_KIB]

Every chunk read from one side is written to the other half a round trip later, so a request and
its answer together take RTT_MS more, as on a link with that delay. Each direction of a
connection holds at most WINDOW_KIB (default 4096) in flight and stops reading from its sender
until the oldest bytes are delivered: a TCP connection over a real link is limited the same way,
to its window per round trip, which is what makes parallel streams faster than one there.
Slow start and loss are not modelled. Prints "ready" once it listens.
"""
import asyncio
import collections
import sys


async def pump(reader, writer, delay, window):
    """Copies reader to writer, each chunk delayed by `delay` seconds, at most `window` in flight."""
    loop = asyncio.get_running_loop()
    queue = collections.deque()
    in_flight = 0
    arrived = asyncio.Event()
    space = asyncio.Event()
    space.set()
    done = False

    async def deliver():
        nonlocal in_flight
        while True:
            while not queue:
                if done:
                    return
                arrived.clear()
                await arrived.wait()
            due, chunk = queue.popleft()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if chunk is None:
                if writer.can_write_eof():
                    writer.write_eof()
                else:
                    writer.close()
                return
            writer.write(chunk)
            try:
                await writer.drain()
            except (ConnectionError, OSError):
                # The receiver is gone: stop reading from the sender too.
                reader.feed_eof()
                space.set()
                return
            in_flight -= len(chunk)
            if in_flight < window:
                space.set()

    delivering = asyncio.ensure_future(deliver())
    try:
        while True:
            await space.wait()
            chunk = await reader.read(256 << 10)
            queue.append((loop.time() + delay, chunk or None))
            arrived.set()
            if not chunk:
                break
            in_flight += len(chunk)
            if in_flight >= window:
                space.clear()
    except (ConnectionError, OSError):
        pass
    finally:
        done = True
        arrived.set()
    await delivering


async def main():
    listen_port, target_port, rtt_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    window = int(sys.argv[4]) << 10 if len(sys.argv) > 4 else 4 << 20
    half = rtt_ms / 2000

    async def connection(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, half, window),
            pump(server_reader, client_writer, half, window),
        )
        server_writer.close()
        client_writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", listen_port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
