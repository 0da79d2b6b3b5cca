#!/usr/bin/env bash
# ensure-servers.sh: make sure the binaries the test suite starts are present.
# NATS needs nothing: tests run the nats-server v2 library embedded in the test
# binary. Redis tests start the redis-server binary on a free loopback port.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
echo "redis-server not found: installing it with apt-get" >&2
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
# The Debian package may start a system instance on 6379; the tests never use it.
command -v redis-server >/dev/null
