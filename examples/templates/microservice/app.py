"""A small JSON service: GET /health, GET /square?n=12. Standard library only."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/health":
            self.reply(200, {"ok": True})
        elif url.path == "/square":
            try:
                n = int(parse_qs(url.query)["n"][0])
            except (KeyError, ValueError):
                self.reply(400, {"error": "give n, an integer: /square?n=12"})
                return
            self.reply(200, {"n": n, "square": n * n})
        else:
            self.reply(404, {"error": f"no route {url.path}"})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()
