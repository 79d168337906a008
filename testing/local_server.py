"""An HTTP server on 127.0.0.1 at a free port, served from a thread, for the block of a `with`:
the base of the tests' local stand-ins for paid APIs (`testing.batch_server.BatchServer`,
tests/judges' ChatServer) and of their small one-handler servers.

    with LocalServer(Handler) as server:    # or a subclass that passes its handler class
        server.base_url                     # http://127.0.0.1:PORT/v1 (server.origin without /v1)
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer:
    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        """Where an OpenAI-style client points."""
        return f"{self.origin}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
