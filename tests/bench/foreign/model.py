# A model server on Python's standard library (http.server), for tests/bench/foreign.sh:
# HTTP/1.0 by default (the server closes the connection after each response), a thread per
# connection, K slots (a semaphore), exponential service times of mean S ms.
#   python3 model.py K S [HTTP/1.1]
# Prints "listening PORT" once bound.
import http.server
import json
import random
import sys
import threading
import time

slots_n, service_s = int(sys.argv[1]), float(sys.argv[2]) / 1000
slots = threading.Semaphore(slots_n)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = sys.argv[3] if len(sys.argv) > 3 else "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with slots:
            time.sleep(random.expovariate(1 / service_s))
        body = json.dumps({"model_name": "py", "outputs": [
            {"name": "out", "shape": [1], "datatype": "FP32", "data": [1.0]}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
