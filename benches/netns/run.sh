#!/usr/bin/env bash
# TPC-H with a coordinator and three workers in network namespaces of their own, every hop
# (coordinator -> worker, worker -> worker) through a TCP proxy adding a delay each way.
#
#   sudo benches/netns/run.sh DATA OUT [RUNS]
#
#   DATA     the TPC-H tables, <table>.parquet (tpchgen-cli parquet --output-dir DATA)
#   OUT      where the reports (delay-<D>ms.txt) and the bench's JSON (delay-<D>ms.json) go
#   RUNS     runs per query and engine (default 3; run 1 is reported apart)
#   DELAYS   (env) the delays to measure, in ms, each way of every hop (default "1 10")
#   QUERIES  (env) e.g. q1,q3,q6 (default: the 22)
#   RAYQUET  (env) the rayquet CLI (default target/release/rayquet, built with
#            `cargo build --release -p rayquet-cli --features datafusion`)
#   TPCH     (env) the bench executable (default: the newest target/release/deps/tpch-*, made by
#            `cargo bench --no-run -p rayquet-datafusion --features bench --bench tpch`)
#
# Layout: a bridge rqbr0 (10.77.0.1/24) in the root namespace, a veth pair to each of rq-c
# (10.77.0.10, the coordinator: the bench) and rq-w1..3 (10.77.0.11-13). Each worker namespace
# runs three workers:
#
#   :7001  `rayquet worker`, mutual TLS + bearer token        (engine tls)
#   :7002  `rayquet worker`, bearer token, plaintext http     (engine plain)
#   :7003  `tpch --serve`, unguarded, DataFusion's own scans  (engine dfremote)
#
# and the root namespace a delaying proxy (`tpch --proxy`) per worker process:
# 10.77.0.1:70<k><j> -> 10.77.0.1<k>:700<j> for worker k, kind j. The coordinator is given the
# proxies' URLs, and workers dial the same URLs for shuffles (their --peer is 10.77.0.1, any
# port), so every hop crosses one proxy. The engines: datafusion (DataFusion's own scan in the
# coordinator's process, the rows every other engine is checked against), tls, plain, dfremote.
# The workers and proxies are restarted for each delay (no connection outlives its proxy).
# Everything (processes, namespaces, bridge, the temporary CA) goes on exit.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
DATA=$(realpath "$1")
OUT=$(mkdir -p "$2" && realpath "$2")
RUNS=${3:-3}
DELAYS=${DELAYS:-1 10}
QUERIES=${QUERIES:-}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
RAYQUET=${RAYQUET:-$REPO/target/release/rayquet}
if [[ -z ${TPCH:-} ]]; then
    TPCH=$(find "$REPO/target/release/deps" -maxdepth 1 -type f -executable -name 'tpch-*' \
        -printf '%T@ %p\n' | sort -rn | head -1 | cut -d' ' -f2-)
fi
for bin in "$RAYQUET" "$TPCH"; do
    [[ -x $bin ]] || { echo "run.sh: no executable ${bin:-bench} (see the header)" >&2; exit 2; }
done
[[ $(id -u) == 0 ]] || { echo "run.sh: network namespaces need root" >&2; exit 2; }

BR=rqbr0
HOST=10.77.0.1
NAMESPACES=(rq-c rq-w1 rq-w2 rq-w3)
ADDRS=(10.77.0.10 10.77.0.11 10.77.0.12 10.77.0.13)
TMP=
PIDS=()

# Stop every process this script started, then remove the namespaces, the bridge and $TMP.
cleanup() {
    local - # the `set +e` below stays in this function
    set +e
    stop
    for ns in "${NAMESPACES[@]}"; do
        # Anything still in a namespace was started here.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    ip link del "$BR" 2>/dev/null
    [[ -z $TMP ]] || rm -rf "$TMP"
}

# Stop the workers and proxies (by the ids recorded when they were started).
stop() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}

# Wait until log file $1 has $2 lines matching $3 (the processes print when they listen).
await() {
    for _ in $(seq 100); do
        if [[ $(grep -c "$3" "$1" 2>/dev/null) -ge $2 ]]; then return 0; fi
        sleep 0.1
    done
    echo "run.sh: timed out waiting for '$3' in $1:" >&2
    cat "$1" >&2
    exit 1
}

# The namespaces and the bridge between them.
network() {
    ip link add "$BR" type bridge
    ip addr add "$HOST/24" dev "$BR"
    ip link set "$BR" up
    for i in "${!NAMESPACES[@]}"; do
        local ns=${NAMESPACES[$i]}
        ip netns add "$ns"
        ip link add "v$ns" type veth peer name eth0 netns "$ns"
        ip link set "v$ns" master "$BR" up
        ip -n "$ns" addr add "${ADDRS[$i]}/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    done
}

# A CA, the workers' certificate (server and client: they dial each other), the coordinator's
# client certificate, and the token, in $TMP.
credentials() {
    cd "$TMP"
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj /CN=rq-bench-ca \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
    printf 'subjectAltName=IP:%s,IP:%s,IP:%s,IP:%s\nextendedKeyUsage=serverAuth,clientAuth\n' \
        "$HOST" "${ADDRS[1]}" "${ADDRS[2]}" "${ADDRS[3]}" > worker.ext
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    for who in worker client; do
        openssl req "${ec[@]}" -keyout "$who.key" -out "$who.csr" -subj "/CN=rq-$who" 2>/dev/null
        openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
            -out "$who.pem" -days 2 -extfile "$who.ext" 2>/dev/null
    done
    openssl rand -hex 24 > token
    chmod 600 ./*.key token
    cd - >/dev/null
}

# The three workers in each worker namespace.
workers() {
    for k in 1 2 3; do
        local ns=rq-w$k ip=${ADDRS[$k]} log=$TMP/w$k.log
        : > "$log"
        ip netns exec "$ns" "$RAYQUET" worker --listen "$ip:7001" --token-file "$TMP/token" \
            --tls-cert "$TMP/worker.pem" --tls-key "$TMP/worker.key" \
            --tls-client-ca "$TMP/ca.pem" --allow "$DATA" --peer "https://$HOST" >> "$log" 2>&1 &
        PIDS+=($!)
        ip netns exec "$ns" "$RAYQUET" worker --listen "$ip:7002" --token-file "$TMP/token" \
            --allow "$DATA" --peer "http://$HOST" >> "$log" 2>&1 &
        PIDS+=($!)
        ip netns exec "$ns" "$TPCH" --serve "$ip:7003" >> "$log" 2>&1 &
        PIDS+=($!)
        await "$log" 3 "listening on"
    done
    alive
}

# Fail unless every process started is still running (a worker may fail after listening).
alive() {
    sleep 0.5
    for pid in "${PIDS[@]}"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "run.sh: process $pid exited; the logs:" >&2
            cat "$TMP"/*.log >&2
            exit 1
        fi
    done
}

# One proxy process in the root namespace for the nine workers, holding each chunk $1 ms.
proxies() {
    local args=() log=$TMP/proxy.log
    for k in 1 2 3; do
        for j in 1 2 3; do args+=(--proxy "$HOST:70$k$j=${ADDRS[$k]}:700$j"); done
    done
    : > "$log"
    "$TPCH" "${args[@]}" --delay-ms "$1" >> "$log" 2>&1 &
    PIDS+=($!)
    await "$log" 9 "^proxy "
    alive
}

# The URLs of worker kind $2 (1 tls, 2 plain, 3 dfremote) through the proxies, scheme $1.
urls() {
    echo "$1://$HOST:701$2,$1://$HOST:702$2,$1://$HOST:703$2"
}

trap cleanup EXIT
trap 'exit 130' INT TERM
cleanup # leftovers of an earlier run that was killed
TMP=$(mktemp -d /tmp/rq-netns.XXXXXX)
network
credentials
echo "data $DATA | runs $RUNS | delays (ms) $DELAYS | queries ${QUERIES:-q1..q22} | tmp $TMP"
for d in $DELAYS; do
    workers
    proxies "$d"
    echo "== delay $d ms each way of every hop"
    ip netns exec rq-c "$TPCH" --data "$DATA" --runs "$RUNS" ${QUERIES:+--queries "$QUERIES"} \
        --engines datafusion,tls,plain,dfremote \
        --remote "tls=$(urls https 1)" --remote "plain=$(urls http 2)" \
        --remote-df "dfremote=$(urls http 3)" \
        --token-file "$TMP/token" --tls-ca "$TMP/ca.pem" \
        --tls-cert "$TMP/client.pem" --tls-key "$TMP/client.key" \
        --json "$OUT/delay-${d}ms.json" 2>&1 | tee "$OUT/delay-${d}ms.txt"
    stop
done
