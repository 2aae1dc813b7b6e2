"""A small Iceberg REST catalog for the tests, as moto stands in for S3.

No maintained REST catalog server installs from PyPI or crates.io (Polaris, Lakekeeper,
Nessie and Gravitino are JVM or container services), so this serves the REST spec's read
endpoints from pyiceberg's own SqlCatalog (sqlite):

  GET  /v1/config                          defaults and overrides (a `prefix`)
  POST /v1/oauth/tokens                    OAuth2 client credentials -> bearer token
  GET  /v1/{prefix}/namespaces[?parent=]   list namespaces (nested ones too)
  GET  /v1/{prefix}/namespaces/{ns}        load a namespace
  GET  /v1/{prefix}/namespaces/{ns}/tables list tables
  GET  /v1/{prefix}/namespaces/{ns}/tables/{table}
                                           LoadTableResult: metadata location, metadata and
                                           the vended `config` (--vend KEY=VALUE)
  HEAD the same two                        exists or not

Every request but /v1/config's and the token's needs `Authorization: Bearer <token>`: the
--token given, or one issued for --client-id/--client-secret. Errors are the spec's
ErrorModel (401 NotAuthorizedException, 404 NoSuchTableException/NoSuchNamespaceException).

Usage: python rest_server.py --db sqlite:///path/catalog.db [--warehouse URL] [--token T]
       [--client-id ID --client-secret S] [--vend KEY=VALUE ...] [--prefix P] [--port N]
       [--property KEY=VALUE ...]   (SqlCatalog's own FileIO properties)
It prints `port <N>` on stdout once it listens, and serves until killed.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

SEP = "\x1f"


def pairs(items):
    return dict(item.split("=", 1) for item in items or [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--warehouse", default=None)
    ap.add_argument("--token", default=None)
    ap.add_argument("--client-id", default=None)
    ap.add_argument("--client-secret", default=None)
    ap.add_argument("--vend", action="append")
    ap.add_argument("--property", action="append")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    props = {"uri": args.db, **pairs(args.property)}
    if args.warehouse:
        props["warehouse"] = args.warehouse
    catalog = SqlCatalog("backing", **props)
    vended = pairs(args.vend)
    tokens = {args.token} if args.token else set()
    prefix = args.prefix.strip("/")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def reply(self, code, body=None):
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def error(self, code, kind, message):
            self.reply(code, {"error": {"message": message, "type": kind, "code": code}})

        def authorized(self):
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Bearer ") and auth[len("Bearer "):] in tokens:
                return True
            self.error(401, "NotAuthorizedException", "missing or invalid bearer token")
            return False

        def do_POST(self):
            url = urlparse(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            if url.path != "/v1/oauth/tokens":
                return self.error(405, "MethodNotAllowed", "this catalog is read-only")
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            ok = (
                args.client_id is not None
                and form.get("grant_type") == "client_credentials"
                and form.get("client_id") == args.client_id
                and form.get("client_secret") == args.client_secret
            )
            if not ok:
                return self.reply(
                    401, {"error": "invalid_client", "error_description": "bad client credentials"}
                )
            token = secrets.token_hex(16)
            tokens.add(token)
            self.reply(
                200,
                {
                    "access_token": token,
                    "token_type": "bearer",
                    "expires_in": 3600,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                },
            )

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            url = urlparse(self.path)
            if url.path == "/v1/config":
                overrides = {"prefix": prefix} if prefix else {}
                return self.reply(200, {"defaults": {}, "overrides": overrides})
            if not self.authorized():
                return
            parts = [unquote(p) for p in url.path.strip("/").split("/")]
            if parts[:1] != ["v1"]:
                return self.error(404, "NotFound", url.path)
            parts = parts[1:]
            if prefix:
                if parts[:1] != [prefix]:
                    return self.error(404, "NotFound", f"no prefix {prefix} in {url.path}")
                parts = parts[1:]
            try:
                if parts == ["namespaces"]:
                    parent = parse_qs(url.query).get("parent", [None])[0]
                    parent = tuple(parent.split(SEP)) if parent else ()
                    found = catalog.list_namespaces(parent)
                    return self.reply(200, {"namespaces": [list(n) for n in found]})
                if len(parts) >= 2 and parts[0] == "namespaces":
                    ns = tuple(parts[1].split(SEP))
                    if len(parts) == 2:
                        p = catalog.load_namespace_properties(ns)
                        return self.reply(200, {"namespace": list(ns), "properties": p})
                    if parts[2:] == ["tables"]:
                        catalog.load_namespace_properties(ns)
                        ids = catalog.list_tables(ns)
                        return self.reply(
                            200,
                            {"identifiers": [{"namespace": list(i[:-1]), "name": i[-1]} for i in ids]},
                        )
                    if len(parts) == 4 and parts[2] == "tables":
                        table = catalog.load_table(ns + (parts[3],))
                        location = table.metadata_location
                        with table.io.new_input(location).open() as f:
                            metadata = json.loads(f.read())
                        return self.reply(
                            200,
                            {"metadata-location": location, "metadata": metadata, "config": vended},
                        )
                return self.error(404, "NotFound", url.path)
            except NoSuchTableError as e:
                return self.error(404, "NoSuchTableException", f"Table does not exist: {e}")
            except NoSuchNamespaceError as e:
                return self.error(404, "NoSuchNamespaceException", f"Namespace does not exist: {e}")

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
