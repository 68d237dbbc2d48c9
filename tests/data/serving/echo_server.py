"""A tiny prediction server following the Vertex custom-container contract (test fixture).

It reads AIP_HTTP_PORT, AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE and AIP_STORAGE_URI, loads
`model.json` ({"name": str, "bias": number}) from the storage directory, and answers
`{"instances": [x, ...]}` with `{"predictions": [{"model": name, "value": x + bias}, ...]}`.

FIXTURE_MODE (from the serving spec's env) makes it misbehave on purpose:
`unhealthy` (health answers 503), `bad-prediction` (wrong shape), `crash` (exits at start).
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODE = os.environ.get("FIXTURE_MODE", "")
MODEL = json.loads((Path(os.environ["AIP_STORAGE_URI"]) / "model.json").read_text())
HEALTH = os.environ["AIP_HEALTH_ROUTE"]
PREDICT = os.environ["AIP_PREDICT_ROUTE"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK add ~40 ms to every kept-alive response.
    disable_nagle_algorithm = True

    def _send(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path != HEALTH:
            self._send(404, {"error": f"no route {self.path}"})
        elif MODE == "unhealthy":
            self._send(503, {"error": "not ready (FIXTURE_MODE=unhealthy)"})
        else:
            self._send(200, {"status": "ok", "model": MODEL["name"]})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != PREDICT:
            self._send(404, {"error": f"no route {self.path}"})
            return
        instances = json.loads(body)["instances"]
        if MODE == "bad-prediction":
            self._send(200, {"outputs": instances})
            return
        predictions = [{"model": MODEL["name"], "value": x + MODEL["bias"]} for x in instances]
        self._send(200, {"predictions": predictions})

    def log_message(self, format: str, *args: object) -> None:  # quiet per-request logs
        pass


if __name__ == "__main__":
    print(f"echo server pid={os.getpid()} mode={MODE!r} model={MODEL}", flush=True)
    if MODE == "crash":
        print("FIXTURE_MODE=crash: failing on purpose", file=sys.stderr, flush=True)
        sys.exit(3)
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["AIP_HTTP_PORT"])), Handler)
    server.daemon_threads = True
    server.serve_forever()
