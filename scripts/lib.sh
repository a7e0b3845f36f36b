# lib.sh: helpers shared by the scripts in this folder; source it, don't run it.

# as_root runs a command as root: directly when we are root, through sudo
# otherwise, and fails with a message when neither is possible.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "$(basename "$0"): need root (or sudo) to run: $*" >&2
		return 1
	fi
}

# apt_install installs Debian packages quietly, printing apt's output only
# when it fails. It waits up to 5 minutes for another apt or dpkg run (an
# unattended upgrade, a second install) to let go of dpkg's lock.
apt_install() {
	local out wait=(-o DPkg::Lock::Timeout=300)
	export DEBIAN_FRONTEND=noninteractive
	if ! out="$(as_root apt-get "${wait[@]}" update -qq 2>&1 && as_root apt-get "${wait[@]}" install -y -qq --no-install-recommends "$@" 2>&1)"; then
		echo "$out" >&2
		echo "$(basename "$0"): could not install Debian's $*" >&2
		return 1
	fi
}
