#!/usr/bin/env bash
# redis-image.sh makes sure the Redis image named by $RELOCK_REDIS_IMAGE
# (default relock/redis:7) exists in the local Docker engine.
#
# If the image is already there it prints nothing and exits 0. Otherwise it
# tries a short, quiet `docker pull` (a stock redis:7 works the same on a
# machine with a registry); when that fails it builds a tiny FROM-scratch image
# holding Debian's /usr/bin/redis-server, every shared library ldd lists for
# it and the dynamic loader. It prints one line saying what it did.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

image="${RELOCK_REDIS_IMAGE:-relock/redis:7}"
server=/usr/bin/redis-server

if docker image inspect "$image" >/dev/null 2>&1; then
	exit 0
fi

# A registry may exist elsewhere (a stock redis:7 works the same); without one
# the pull fails at once, so keep it short and quiet and build instead.
if timeout 20 docker pull --quiet "$image" >/dev/null 2>&1; then
	echo "redis-image: pulled $image"
	exit 0
fi

if [ ! -x "$server" ]; then
	apt_install redis-server
fi
if [ ! -x "$server" ]; then
	echo "redis-image: $server is still missing after installing redis-server" >&2
	exit 1
fi

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT

# Copy a file into the build context at the same absolute path, following
# symlinks so the image holds the real bytes under the linked name.
put() {
	local src="$1"
	mkdir -p "$ctx$(dirname "$src")"
	cp -L "$src" "$ctx$src"
}

put "$server"
# ldd prints "name => /path (addr)" for libraries and "/path (addr)" for the loader.
while read -r lib; do
	put "$lib"
done < <(ldd "$server" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | sort -u)

cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY / /
LABEL org.relock.image=redis
EXPOSE 6379
ENTRYPOINT ["/usr/bin/redis-server"]
CMD ["--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
DOCKERFILE
# The build files themselves must not end up in the image.
printf 'Dockerfile\n.dockerignore\n' >"$ctx/.dockerignore"

if ! out="$(docker build --quiet --tag "$image" "$ctx" 2>&1)"; then
	echo "redis-image: docker build of $image failed:" >&2
	echo "$out" >&2
	exit 1
fi
version="$("$server" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
echo "redis-image: built $image from $server ${version:+(redis $version)}"
