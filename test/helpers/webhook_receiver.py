"""A webhook receiver for test/webhooks-receivers.test.ts: a WSGI app for gunicorn, or run alone
on Python's http.server. Each request is printed as one JSON line on stdout: its path, the
three webhook headers, the body and when it came (unix ms). Answers 200 "ok"."""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_lock = threading.Lock()


def record(path, get, body):
    line = json.dumps({
        "path": path, "id": get("webhook-id"), "timestamp": get("webhook-timestamp"),
        "signature": get("webhook-signature"), "body": body.decode("utf-8"), "at": time.time() * 1000,
    })
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def app(environ, start_response):
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    record(environ["PATH_INFO"], lambda h: environ.get("HTTP_" + h.upper().replace("-", "_")), body)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        record(self.path, self.headers.get, body)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of new connections (HTTP/1.0 has one
    # per request) past it has its SYNs dropped and retried a second later.
    request_queue_size = 128
    daemon_threads = True


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()
