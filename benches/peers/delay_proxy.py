#!/usr/bin/env python3
"""A TCP proxy for HTTP/1.1 on loopback that holds the first byte of every response.

    python3 delay_proxy.py --upstream 127.0.0.1:PORT [--delay-ms 50] [--port 0]
    python3 delay_proxy.py --self-test        # delay + keep-alive check against its own server

Prints `PORT <n>` on stdout once it listens (port 0: the kernel picks a free one), then
proxies each client connection to its own upstream connection. Whenever the client sends
bytes after a response has started (or first on a connection), that is a new request; the
first bytes of the server's answer to it are held `--delay-ms` milliseconds, then everything
streams through unchanged. Keep-alive connections keep working: each request on them gets the
delay once. The delay is added to the server's own time to first byte (a fixed extra round
trip, as a distant object store would add), not folded into it.

Standard library only (asyncio). SIGTERM or SIGINT stops it; on exit it prints the number of
connections, requests and response bytes to stderr.
"""

import argparse
import asyncio
import signal
import sys

READ_SIZE = 256 * 1024


class Stats:
    connections = 0
    requests = 0
    response_bytes = 0


async def handle(client_reader, client_writer, upstream, delay, stats):
    stats.connections += 1
    try:
        up_reader, up_writer = await asyncio.open_connection(*upstream)
    except OSError as e:
        print(f"delay_proxy: cannot reach upstream {upstream}: {e}", file=sys.stderr)
        client_writer.close()
        return
    # "idle": nothing sent yet; "requesting": the client sent a request not yet answered;
    # "responding": the answer's first bytes went out.
    state = {"phase": "idle"}

    async def client_to_server():
        try:
            while True:
                data = await client_reader.read(READ_SIZE)
                if not data:
                    break
                if state["phase"] != "requesting":
                    state["phase"] = "requesting"
                    stats.requests += 1
                up_writer.write(data)
                await up_writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if up_writer.can_write_eof() and not up_writer.is_closing():
                try:
                    up_writer.write_eof()
                except OSError:
                    pass

    async def server_to_client():
        try:
            while True:
                data = await up_reader.read(READ_SIZE)
                if not data:
                    break
                if state["phase"] == "requesting":
                    state["phase"] = "responding"
                    if delay > 0:
                        await asyncio.sleep(delay)
                stats.response_bytes += len(data)
                client_writer.write(data)
                await client_writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            # The server closed (or failed): close the client side so it does not wait.
            client_writer.close()

    up = asyncio.ensure_future(client_to_server())
    down = asyncio.ensure_future(server_to_client())
    try:
        await asyncio.wait([down])
    except asyncio.CancelledError:  # shutting down
        down.cancel()
    up.cancel()
    for w in (up_writer, client_writer):
        try:
            w.close()
        except OSError:
            pass


def self_test(delay_ms):
    """Start a keep-alive HTTP/1.1 server and this proxy in front of it; check that 3 requests
    on one client connection each wait >= the delay and reuse that connection. Exit 0 if so."""
    import http.client
    import http.server
    import subprocess
    import threading
    import time

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            body = b"x" * 300_000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    proxy = subprocess.Popen([sys.executable, __file__, "--upstream", f"127.0.0.1:{srv.server_address[1]}",
                              "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        port = int(proxy.stdout.readline().split()[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        times, socks = [], set()
        for _ in range(3):
            t0 = time.perf_counter()
            conn.request("GET", "/")
            resp = conn.getresponse()
            ok = resp.status == 200 and len(resp.read()) == 300_000
            times.append(time.perf_counter() - t0)
            socks.add(id(conn.sock))
            if not ok:
                break
    finally:
        proxy.terminate()
        _, err = proxy.communicate(timeout=10)
        srv.shutdown()
    passed = ok and len(socks) == 1 and min(times) >= delay_ms / 1000 and "1 connections, 3 requests" in err
    print(f"self-test {'passed' if passed else 'FAILED'}: 3 requests on one keep-alive connection took "
          f"{', '.join(f'{t * 1e3:.1f}' for t in times)} ms (delay {delay_ms:g} ms); proxy: {err.strip()}")
    return 0 if passed else 1


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", help="HOST:PORT of the server")
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--self-test", action="store_true",
                    help="check the delay and keep-alive against a local HTTP/1.1 server, then exit")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test(args.delay_ms))
    if not args.upstream:
        ap.error("--upstream is required")
    host, _, port = args.upstream.rpartition(":")
    upstream = (host or "127.0.0.1", int(port))
    stats = Stats()
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, upstream, args.delay_ms / 1000.0, stats),
        args.host,
        args.port,
        backlog=1024,
    )
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    async with server:
        await stop
    print(
        f"delay_proxy: {stats.connections} connections, {stats.requests} requests, "
        f"{stats.response_bytes} response bytes",
        file=sys.stderr,
    )


if __name__ == "__main__":
    asyncio.run(main())
