#!/usr/bin/env bash
# A plain HTTP server for the tests, on loopback: Debian's nginx serving ROOT read-only (byte ranges, as
# its static module always does), every file of its own under DIR.
#   tests/servers/nginx_http.sh start DIR ROOT [PORT]   -> prints "http://127.0.0.1:PORT" once it answers
#                                                        (PORT: a free one when not given)
#   tests/servers/nginx_http.sh stop DIR
# Where nginx is not installed, prints "unavailable: ..." and exits 0 (the tests skip, saying why).
set -euo pipefail
cmd=${1:?start|stop} dir=${2:?DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
nginx=$(command -v nginx || echo /usr/sbin/nginx)
if [ "$cmd" = stop ]; then
  [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
  rm -f "$dir/nginx.pid"
  exit 0
fi
root=$(cd "${3:?ROOT}" && pwd)
if [ ! -x "$nginx" ]; then echo "unavailable: nginx is not installed (Debian: nginx-light)"; exit 0; fi
port=${4:-}
[ -n "$port" ] || port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$dir/tmp"
cat > "$dir/nginx.conf" <<CONF
daemon on;
pid $dir/nginx.pid;
error_log $dir/error.log;
worker_processes 1;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $dir/tmp;
  proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp;
  scgi_temp_path $dir/tmp;
  server {
    listen 127.0.0.1:$port;
    root $root;
    location / { limit_except GET HEAD { deny all; } }
  }
}
CONF
"$nginx" -c "$dir/nginx.conf" -p "$dir" -e "$dir/error.log" 2>>"$dir/error.log"
# Up once it answers anything (its root listing is refused: 403).
answers='import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except urllib.error.HTTPError:
    pass'
for _ in $(seq 1 100); do
  if /usr/bin/python3 -c "$answers" "http://127.0.0.1:$port/" 2>/dev/null; then
    echo "http://127.0.0.1:$port"
    exit 0
  fi
  sleep 0.05
done
echo "nginx_http.sh: nginx did not answer on port $port:" >&2
tail -n 20 "$dir/error.log" >&2
exit 1
