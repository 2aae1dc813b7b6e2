"""What verifying page CRC-32s costs: the CLI's full scan of FILE with and without
verification, alternated ROUNDS times; each run a process of 6 scans whose 5 warm ones give
its median, each round a ratio verified / unverified (wall and CPU). A second binary
(--baseline) is measured in the same rounds, e.g. the previous commit's.

    python3 benches/checksums.py target/release/rayquet lineitem-crc.parquet 11 [--baseline OLD]
"""
import argparse
import json
import statistics
import subprocess


def run(binary, path, extra):
    out = subprocess.run(
        [binary, "scan", path, "--repeat", "6", "--json"] + extra,
        capture_output=True, text=True, check=True,
    ).stdout
    d = json.loads(out)
    return statistics.median(d["runs"][1:]), statistics.median(d["runs_cpu_seconds"][1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("file")
    ap.add_argument("rounds", type=int)
    ap.add_argument("--baseline", help="another binary, verified, in the same rounds")
    a = ap.parse_args()
    ratios = {"verified": [], "baseline": []}
    for r in range(a.rounds):
        u = run(a.binary, a.file, ["--no-verify-checksums"])
        line = f"round {r}: unverified {u[0]:.3f} s, {u[1]:.3f} s CPU"
        runs = [("verified", a.binary)] + ([("baseline", a.baseline)] if a.baseline else [])
        for name, b in runs:
            v = run(b, a.file, [])
            ratios[name].append((v[0] / u[0], v[1] / u[1]))
            line += f"; {name} {v[0]:.3f} s, {v[1]:.3f} s CPU"
        print(line, flush=True)
    for name, rs in ratios.items():
        if rs:
            w, c = [x[0] for x in rs], [x[1] for x in rs]
            print(f"{name} / unverified: wall {statistics.median(w):.3f} ({min(w):.3f}-{max(w):.3f}), "
                  f"CPU {statistics.median(c):.3f} ({min(c):.3f}-{max(c):.3f})")


if __name__ == "__main__":
    main()
