# Sourced by test.sh and scripts/ci/*.sh: a free loopback port and the wait for a server to
# answer. Needs $PYTHON (python3 by default); uses only the standard library.

# free_port: prints a loopback TCP port nobody listens on right now.
free_port() {
  "${PYTHON:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_ready URL PID TIMEOUT: polls GET URL until it answers 200. Returns 0 when it does,
# 2 as soon as process PID has exited, 1 after TIMEOUT seconds.
wait_ready() {
  local url=$1 pid=$2 deadline=$((SECONDS + $3))
  while [ "$SECONDS" -lt "$deadline" ]; do
    kill -0 "$pid" 2>/dev/null || return 2
    if "${PYTHON:-python3}" -c 'import sys, urllib.request
sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=2).status == 200 else 1)' "$url" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  return 1
}
