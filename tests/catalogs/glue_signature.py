"""Checks rayquet's SigV4 signature of a Glue request against botocore's own signer.

  python glue_signature.py RAYQUET_BINARY

Serves one endpoint that records the request (answering Glue's "not found"), points
`rayquet scan --iceberg db.events --catalog g` (type glue) at it with fixed credentials, then
recomputes the signature of the recorded request (its method, path, signed headers and body)
with botocore's SigV4Auth for service `glue`: exits non-zero unless they are equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

KEY, SECRET, REGION = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "eu-west-1"
seen: dict = {}


class Record(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["content-length"]))
        seen.update(headers={k.lower(): v for k, v in self.headers.items()}, body=body,
                    path=self.path)
        self.send_response(400)
        self.send_header("content-type", "application/x-amz-json-1.1")
        self.end_headers()
        self.wfile.write(json.dumps({"__type": "EntityNotFoundException",
                                     "Message": "Table events not found."}).encode())

    def log_message(self, *args):
        pass


class AsRecorded(SigV4Auth):
    """botocore's signer over the headers as recorded (it would add its own date)."""

    def _modify_request_before_signing(self, request):
        pass


def main() -> None:
    server = HTTPServer(("127.0.0.1", 0), Record)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    props = {"type": "glue", "glue.endpoint": f"http://127.0.0.1:{server.server_port}",
             "glue.region": REGION, "glue.access-key-id": KEY, "glue.secret-access-key": SECRET}
    args = [sys.argv[1], "scan", "--iceberg", "db.events", "--catalog", "g"]
    for k, v in props.items():
        args += ["--catalog-property", f"{k}={v}"]
    env = dict(os.environ, PYICEBERG_HOME="/nonexistent")
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    assert "table not found" in out.stderr, out.stderr
    h = seen["headers"]
    auth = h["authorization"]
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert f"Credential={KEY}/" in auth and f"/{REGION}/glue/aws4_request" in auth, auth
    assert {"host", "x-amz-date", "x-amz-target"} <= set(signed), signed
    request = AWSRequest(method="POST", url=f"http://127.0.0.1:{server.server_port}{seen['path']}",
                         data=seen["body"], headers={k: h[k] for k in signed})
    request.context["timestamp"] = h["x-amz-date"]
    signer = AsRecorded(Credentials(KEY, SECRET), "glue", REGION)
    canonical = signer.canonical_request(request)
    want = signer.signature(signer.string_to_sign(request, canonical), request)
    got = auth.rsplit("Signature=", 1)[1]
    assert got == want, f"rayquet's signature {got} != botocore's {want}\n{canonical}"
    print("signature verified by botocore")


if __name__ == "__main__":
    main()
