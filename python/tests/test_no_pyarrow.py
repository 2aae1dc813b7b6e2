"""rayquet without pyarrow (an optional dependency): a child interpreter whose path holds this
venv's packages but pyarrow (``-S``: no site-packages; ``PYTHONPATH``: a folder of links to every
installed package but pyarrow) reads through polars (the C stream, lazy frames with pushed filters, datasets), and what
returns pyarrow objects raises an ImportError saying how to get it. The rows are compared with
polars' own reads of the same files. (CI also installs the wheel with polars alone.)"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap

import polars as pl

CHILD = textwrap.dedent(
    """
    import importlib.util, json, sys
    assert importlib.util.find_spec("pyarrow") is None
    import polars as pl
    import rayquet, rayquet.polars

    path = sys.argv[1]
    out = {}
    out["stream"] = pl.DataFrame(rayquet.scan(path, filter="x >= 990")).to_dicts()
    lf = rayquet.polars.scan_parquet(path)
    out["lazy"] = lf.filter((pl.col("x") < 5) | pl.col("s").is_in(["s777"])).select("s").collect().to_dicts()
    out["head"] = lf.head(3).collect().to_dicts()
    ds = rayquet.dataset(path)
    out["count"] = ds.count()
    out["count_filtered"] = ds.count(filter="x < 10")
    out["to_polars"] = ds.to_polars(columns=["s"], limit=2).to_dicts()
    errors = []
    for what in (lambda: rayquet.scan(path).read_all(), lambda: next(iter(rayquet.scan(path))),
                 lambda: rayquet.scan(path).schema, lambda: ds.to_arrow()):
        try:
            what()
            errors.append("no error")
        except ImportError as e:
            errors.append(str(e))
    out["errors"] = errors
    print(json.dumps(out))
    """
)


def test_polars_alone_reads_and_pyarrow_methods_say_what_is_missing(tmp_path):
    import json

    path = tmp_path / "t.parquet"
    frame = pl.DataFrame({"x": list(range(1000)), "s": [f"s{i}" for i in range(1000)]})
    frame.write_parquet(path, row_group_size=100)
    packages = tmp_path / "site"
    packages.mkdir()
    site = sysconfig.get_paths()["purelib"]
    for entry in os.listdir(site):
        if not entry.lower().startswith("pyarrow"):
            os.symlink(os.path.join(site, entry), packages / entry)
    env = dict(os.environ, PYTHONPATH=str(packages))
    run = subprocess.run(
        [sys.executable, "-S", "-c", CHILD, str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    own = pl.scan_parquet(path)
    assert out["stream"] == own.filter(pl.col("x") >= 990).collect().to_dicts()
    want = own.filter((pl.col("x") < 5) | pl.col("s").is_in(["s777"])).select("s").collect()
    assert out["lazy"] == want.to_dicts()
    assert out["head"] == own.head(3).collect().to_dicts()
    assert out["count"] == 1000 and out["count_filtered"] == 10
    assert out["to_polars"] == own.select("s").head(2).collect().to_dicts()
    assert len(out["errors"]) == 4
    for message in out["errors"]:
        assert "rayquet[pyarrow]" in message and "pl.DataFrame(reader)" in message, message
