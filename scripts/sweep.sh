#!/usr/bin/env bash
# sweep.sh removes the containers labelled org.relock.fixture=true that a test
# run left behind (a crash, a go test -timeout panic).
#
# Each fixture container names its test process in the label
# org.relock.fixture.owner=HOST:PID. By default only containers whose owner is
# gone are removed (no owner label, or a process of this host that no longer
# runs), so test runs going on in parallel keep their clusters. With --all every
# labelled container goes. Quiet when there is nothing to remove.
set -euo pipefail

all=false
case "${1:-}" in
--all) all=true ;;
"") ;;
*)
	echo "usage: $0 [--all]" >&2
	exit 2
	;;
esac

host="$(uname -n)"
list="$(docker ps -a --filter label=org.relock.fixture=true \
	--format '{{.ID}} {{.Label "org.relock.fixture.owner"}}')"
doomed=()
while read -r id owner; do
	[ -n "$id" ] || continue
	if ! $all && [ -n "$owner" ]; then
		owner_host="${owner%%:*}"
		owner_pid="${owner##*:}"
		if [ "$owner_host" != "$host" ]; then
			continue # another host's process: cannot tell whether it still runs
		fi
		if [[ "$owner_pid" =~ ^[0-9]+$ ]] && kill -0 "$owner_pid" 2>/dev/null; then
			continue # its test process still runs
		fi
	fi
	doomed+=("$id")
done <<<"$list"

if [ "${#doomed[@]}" -eq 0 ]; then
	exit 0
fi
docker rm -f -v "${doomed[@]}" >/dev/null
echo "sweep: removed ${#doomed[@]} leftover fixture container(s)"
