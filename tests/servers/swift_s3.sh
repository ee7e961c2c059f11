#!/usr/bin/env bash
# An S3-compatible object store for the tests, on loopback: OpenStack Swift (Debian's swift-proxy,
# swift-object, swift-container, swift-account and memcached) with its s3api middleware and tempauth,
# one replica on one device directory, every file under DIR.
#   tests/servers/swift_s3.sh start DIR   -> once the proxy answers, prints its URL "http://127.0.0.1:PORT"
#                                            and writes it to DIR/url
#   tests/servers/swift_s3.sh stop DIR    -> stops every process started for DIR (safe to repeat)
#   tests/servers/swift_s3.sh proxy DIR NAME [PORT]
#                                         -> one more swift-proxy for the server running in DIR (same rings,
#                                            same back-ends), its files DIR/proxy-NAME.conf and run/proxy-NAME.*;
#                                            prints its URL once it answers. A fault test kills it (kill-proxy)
#                                            without taking the server from the other tests running beside it.
#   tests/servers/swift_s3.sh kill-proxy DIR NAME -> SIGKILL to that proxy, as a crash (safe to repeat)
# S3 credentials: access key "test:tester", secret "testing" (tempauth's user_test_tester), region
# us-east-1. Where the Swift packages are not installed, DIR/url says "unavailable: ..." (the tests
# skip, saying why) and start exits 0; a server that does not come up is exit 1.
set -euo pipefail
cmd=${1:?start|stop} dir=${2:?DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stop() {
  for f in "$dir"/run/*.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
  rm -f "$dir/url"
}

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

if [ "$cmd" = stop ]; then stop; exit 0; fi

# Waits up to 120 s for the proxy at $1 to answer /healthcheck, then prints $1; fails at once, with its
# log, when a process of the pid files $2... exits.
wait_for_proxy() {
  local url=$1
  shift
  for _ in $(seq 1 1200); do
    if /usr/bin/python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + '/healthcheck', timeout=1)" "$url" 2>/dev/null; then
      echo "$url"
      return 0
    fi
    for f in "$@"; do
      kill -0 "$(cat "$f")" 2>/dev/null || { echo "swift_s3.sh: $(basename "$f" .pid) exited:" >&2; tail -n 20 "${f%.pid}.log" >&2; return 1; }
    done
    sleep 0.1
  done
  echo "swift_s3.sh: the proxy did not answer on $url within 120 s" >&2
  return 1
}

if [ "$cmd" = proxy ] || [ "$cmd" = kill-proxy ]; then
  name=${3:?NAME}
  pidfile="$dir/run/proxy-$name.pid"
  if [ -f "$pidfile" ]; then kill -9 "$(cat "$pidfile")" 2>/dev/null || true; rm -f "$pidfile"; fi
  [ "$cmd" = kill-proxy ] && exit 0
  [ -f "$dir/proxy-server.conf" ] || { echo "swift_s3.sh: no server in $dir (start it first)" >&2; exit 1; }
  port=${4:-$(free_port)}
  sed "s/^bind_port = .*/bind_port = $port/" "$dir/proxy-server.conf" >"$dir/proxy-$name.conf"
  swift-proxy-server "$dir/proxy-$name.conf" >"$dir/run/proxy-$name.log" 2>&1 &
  echo $! >"$pidfile"
  wait_for_proxy "http://127.0.0.1:$port" "$pidfile" || { kill -9 "$(cat "$pidfile")" 2>/dev/null; rm -f "$pidfile"; exit 1; }
  exit 0
fi
mkdir -p "$dir"/srv/d1 "$dir"/run
rm -f "$dir/url"
for b in swift-proxy-server swift-object-server swift-container-server swift-account-server swift-ring-builder memcached; do
  if ! command -v "$b" >/dev/null; then
    echo "unavailable: $b is not installed (Debian: swift-proxy swift-object swift-container swift-account memcached)" | tee "$dir/url"
    exit 0
  fi
done
stop
cat > "$dir/swift.conf" <<CONF
[swift-hash]
swift_hash_path_suffix = yolocache-test
swift_hash_path_prefix = yolocache-test
[storage-policy:0]
name = Policy-0
default = yes
CONF
memcache_port=$(free_port)
for kind in object container account; do
  port=$(free_port)
  cat > "$dir/$kind-server.conf" <<CONF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $port
devices = $dir/srv
mount_check = false
swift_dir = $dir
workers = 0
disable_fallocate = true
log_name = $kind
[pipeline:main]
pipeline = $kind-server
[app:$kind-server]
use = egg:swift#$kind
CONF
  rm -f "$dir/$kind.builder" "$dir/$kind.ring.gz"
  swift-ring-builder "$dir/$kind.builder" create 0 1 1 >/dev/null
  swift-ring-builder "$dir/$kind.builder" add "r1z1-127.0.0.1:$port/d1" 1 >/dev/null
  swift-ring-builder "$dir/$kind.builder" rebalance >/dev/null || true  # exit 1 = "balanced" warnings
done
proxy_port=$(free_port)
cat > "$dir/proxy-server.conf" <<CONF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $proxy_port
swift_dir = $dir
workers = 0
log_name = proxy
[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin
[filter:s3api]
use = egg:swift#s3api
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$memcache_port
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
CONF
memcached -u "$(id -un)" -l 127.0.0.1 -p "$memcache_port" -m 16 >"$dir/run/memcached.log" 2>&1 &
echo $! >"$dir/run/memcached.pid"
for kind in object container account proxy; do
  "swift-$kind-server" "$dir/$kind-server.conf" >"$dir/run/$kind.log" 2>&1 &
  echo $! >"$dir/run/$kind.pid"
done
url="http://127.0.0.1:$proxy_port"
# Up to 120 s: Swift's Python start-up is slow on a loaded 2-core machine.
if wait_for_proxy "$url" "$dir"/run/*.pid >/dev/null; then
  echo "$url" | tee "$dir/url"
  exit 0
fi
stop
exit 1
