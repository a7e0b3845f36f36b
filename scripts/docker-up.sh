#!/usr/bin/env bash
# docker-up.sh makes sure a Docker engine answers. If none does, it installs
# Debian's docker.io when dockerd is missing and starts dockerd in the
# background (log: /tmp/dockerd.log), waiting up to 60 s for it to answer.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if docker info >/dev/null 2>&1; then
	exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
	echo "docker-up: installing Debian's docker.io"
	apt_install docker.io
fi

echo "docker-up: starting dockerd (log: /tmp/dockerd.log)"
as_root sh -c 'nohup dockerd >/tmp/dockerd.log 2>&1 &'

for _ in $(seq 1 120); do
	if docker info >/dev/null 2>&1; then
		echo "docker-up: Docker engine $(docker version --format '{{.Server.Version}}' 2>/dev/null) answers"
		exit 0
	fi
	sleep 0.5
done
echo "docker-up: no Docker engine answered within 60 s; last lines of /tmp/dockerd.log:" >&2
tail -n 20 /tmp/dockerd.log >&2 || true
exit 1
