"""Iceberg tables through REST, SQL and Glue catalogs, configured as pyiceberg users configure
theirs.

The catalog is ``tests/catalogs/rest_server.py`` (the REST spec's read endpoints with OAuth2
client credentials, over pyiceberg's SqlCatalog: no maintained REST server installs from
PyPI), its tables written by pyiceberg (``tests/catalogs/tables.py``). Every read is compared
with pyiceberg's read of the same table through the same catalog. The SQL catalog is that
SqlCatalog itself (sqlite), read directly; the Glue catalog is moto's server (Glue and S3),
written by pyiceberg's GlueCatalog.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import rayquet

pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog")

SCRIPTS = Path(__file__).resolve().parents[2] / "tests" / "catalogs"


def seed(root: Path, name: str) -> tuple[str, str]:
    """pyiceberg's SqlCatalog `name` in sqlite under `root`, with its tables written by
    pyiceberg; returns (database URL, warehouse URL)."""
    db = f"sqlite:///{root}/catalog.db"
    warehouse = (root / "warehouse").as_uri()
    subprocess.run(
        [sys.executable, SCRIPTS / "tables.py", "seed", "--db", db, "--warehouse", warehouse,
         "--name", name],
        check=True,
    )
    return db, warehouse


@pytest.fixture(scope="module")
def glue_catalog():
    """moto's server (Glue and S3) with `db.events` written by pyiceberg's GlueCatalog `glue`;
    yields the catalog's properties."""
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        props = {
            "glue.endpoint": endpoint, "glue.region": "us-east-1",
            "glue.access-key-id": "test", "glue.secret-access-key": "test",
            "s3.endpoint": endpoint, "s3.region": "us-east-1",
            "s3.access-key-id": "test", "s3.secret-access-key": "test",
        }
        import boto3

        boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="test", aws_secret_access_key="test",
        ).create_bucket(Bucket="glue-wh")
        args = [sys.executable, SCRIPTS / "tables.py", "seed", "--glue", "--name", "glue",
                "--warehouse", "s3://glue-wh/wh"]
        for k, v in props.items():
            args += ["--property", f"{k}={v}"]
        subprocess.run(args, check=True)
        yield props
    finally:
        server.kill()
        server.wait()


@pytest.fixture(scope="module")
def rest_catalog(tmp_path_factory):
    """A REST catalog with pyiceberg-written tables; yields (uri, home with .pyiceberg.yaml)."""
    root = tmp_path_factory.mktemp("rest-catalog")
    db, warehouse = seed(root, "backing")
    server = subprocess.Popen(
        [sys.executable, SCRIPTS / "rest_server.py", "--db", db, "--warehouse", warehouse,
         "--client-id", "rayquet", "--client-secret", "pw", "--prefix", "ice"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = server.stdout.readline().split()[1]
        uri = f"http://127.0.0.1:{port}"
        home = root / "home"
        home.mkdir()
        (home / ".pyiceberg.yaml").write_text(
            f"catalog:\n  lake:\n    uri: {uri}\n    credential: rayquet:pw\n"
        )
        yield uri, home
    finally:
        server.kill()
        server.wait()


def sorted_rows(table: pa.Table) -> list:
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: [(v is None, str(v)) for v in r.values()])


def pyiceberg_table(uri: str, name: str):
    # pyiceberg reads its configuration once, when imported: the catalog's properties are
    # given here, as the .pyiceberg.yaml that rayquet reads holds them.
    catalog = pyiceberg_catalog.load_catalog("lake", uri=uri, credential="rayquet:pw")
    return catalog.load_table(name)


@pytest.mark.parametrize("name", ["db.events", "db.inner.small"])
def test_catalog_tables_read_as_pyiceberg_reads_them(rest_catalog, monkeypatch, name):
    uri, home = rest_catalog
    monkeypatch.setenv("PYICEBERG_HOME", str(home))
    want = pyiceberg_table(uri, name).scan().to_arrow()
    got = rayquet.iceberg(name, catalog="lake").read_all()
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows > 0
    assert sorted_rows(got) == sorted_rows(want)
    # A filter and a projection, as pyiceberg applies them.
    want = pyiceberg_table(uri, name).scan(row_filter="id >= 2500", selected_fields=("id", "name"))
    got = rayquet.iceberg(name, catalog="lake", columns=["id", "name"], filter="id >= 2500")
    assert sorted_rows(got.read_all()) == sorted_rows(want.to_arrow())


def test_catalog_from_properties_and_pyiceberg_tables(rest_catalog, monkeypatch, tmp_path):
    uri, _ = rest_catalog
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))  # no configuration there
    props = {"uri": uri, "credential": "rayquet:pw"}
    table = pyiceberg_table(uri, "db.events")
    want = sorted_rows(table.scan().to_arrow())
    got = rayquet.iceberg("db.events", catalog="lake", **props).read_all()
    assert sorted_rows(got) == want
    # A pyiceberg Table as it is: its metadata and its FileIO's properties (catalog settings
    # among them, which are not storage options and are left out).
    assert sorted_rows(rayquet.iceberg(table).read_all()) == want
    # Environment variables configure a catalog as pyiceberg's do.
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", uri)
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__CREDENTIAL", "rayquet:pw")
    assert sorted_rows(rayquet.iceberg("db.events", catalog="lake").read_all()) == want


def test_catalog_errors_name_the_catalog_and_table(rest_catalog, monkeypatch, tmp_path):
    uri, home = rest_catalog
    monkeypatch.setenv("PYICEBERG_HOME", str(home))
    with pytest.raises(FileNotFoundError) as e:
        rayquet.iceberg("db.missing", catalog="lake")
    assert '"lake"' in str(e.value) and "db.missing" in str(e.value)
    with pytest.raises(PermissionError) as e:
        rayquet.iceberg("db.events", catalog="lake", credential="rayquet:wrong")
    assert '"lake"' in str(e.value) and "db.events" in str(e.value)
    with pytest.raises(rayquet.RayquetError) as e:
        rayquet.iceberg("db.events", catalog="lake", uri="http://127.0.0.1:9")
    assert '"lake"' in str(e.value) and "127.0.0.1:9" in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        rayquet.iceberg("db.events", catalog="nowhere")
    assert "PYICEBERG_CATALOG__NOWHERE__URI" in str(e.value)
    with pytest.raises(TypeError):
        rayquet.iceberg(tmp_path, uri=uri)


@pytest.fixture(scope="module")
def sql_catalog(tmp_path_factory):
    """pyiceberg's SqlCatalog `sql` in sqlite with its tables; yields (uri, warehouse)."""
    return seed(tmp_path_factory.mktemp("sql-catalog"), "sql")


def test_sql_catalog_tables_read_as_pyiceberg_reads_them(sql_catalog, monkeypatch, tmp_path):
    db, warehouse = sql_catalog
    (tmp_path / ".pyiceberg.yaml").write_text(f"catalog:\n  sql:\n    uri: {db}\n")
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    catalog = pyiceberg_catalog.load_catalog("sql", uri=db, warehouse=warehouse)
    for name in ["db.events", "db.inner.small"]:
        want = catalog.load_table(name).scan().to_arrow()
        got = rayquet.iceberg(name, catalog="sql").read_all()
        assert got.column_names == want.column_names
        assert got.num_rows == want.num_rows > 0
        assert sorted_rows(got) == sorted_rows(want)
    with pytest.raises(FileNotFoundError) as e:
        rayquet.iceberg("db.missing", catalog="sql")
    assert '"sql"' in str(e.value) and "table not found" in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        rayquet.iceberg("db.events", catalog="sql", uri=f"sqlite:///{tmp_path}/none.db")
    assert "none.db" in str(e.value)


def test_glue_catalog_tables_read_as_pyiceberg_reads_them(glue_catalog, monkeypatch, tmp_path):
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))  # configured by properties alone
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT", "AWS_REGION"):
        monkeypatch.delenv(k, raising=False)
    props = dict(glue_catalog, type="glue")
    want = pyiceberg_catalog.load_catalog("glue", **props).load_table("db.events").scan().to_arrow()
    got = rayquet.iceberg("db.events", catalog="glue", **props).read_all()
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows > 0
    assert sorted_rows(got) == sorted_rows(want)
    with pytest.raises(FileNotFoundError) as e:
        rayquet.iceberg("db.missing", catalog="glue", **props)
    assert '"glue"' in str(e.value) and "table not found" in str(e.value)
