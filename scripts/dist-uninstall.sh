#!/bin/sh
# Remove what install.sh installed, after `enforcerd uninstall` has removed
# the pinned programs. See usage below.
set -eu
usage() {
	cat <<'USAGE'
Usage: ./uninstall.sh [--purge] [--force [--kill]] [--config FILE]
                      [--pin-dir DIR] [--socket PATH] [--state FILE]

Stop and disable enforcerd's systemd units, run "enforcerd uninstall" (it
detaches and unpins every program and map: every ceiling is lifted), then
remove the files install.sh installed and the runtime directory
/run/enforcerd (the socket file the stopped enforcerd.socket leaves, kept
by the unit through restarts). "enforcerd uninstall" refuses while
containers are registered (their processes would run on with no ceiling):
then nothing is removed, the units are enabled and started again as they
were, and the exit status is 1. --force freezes the registered cgroups
first, --force --kill kills their processes (see "enforcerd uninstall
--help"). The daemon's configuration, /etc/enforcerd/config.yaml when it
exists, names the pin directory, socket and state file "enforcerd
uninstall" removes (its --config).

Flags:
  --purge          also remove /etc/enforcerd, /var/log/enforcerd (the
                   audit log) and /var/lib/enforcerd
  --force, --kill, --config FILE, --pin-dir DIR, --socket PATH,
  --state FILE     passed to "enforcerd uninstall"
  -h, --help       this help

Exit status: 0 removed, 1 refused or a step failed, 2 usage error.
USAGE
}
purge=0
config=""
set --  "$@" --end--
while [ "$1" != --end-- ]; do
	a=$1
	shift
	case $a in
	-h | --help)
		usage
		exit 0
		;;
	--purge) purge=1 ;;
	--force | --kill) set -- "$@" "$a" ;;
	--config | --pin-dir | --socket | --state)
		if [ "$1" = --end-- ]; then
			echo "uninstall.sh: $a needs a value (see --help)" >&2
			exit 2
		fi
		if [ "$a" = --config ]; then config=$1; fi
		set -- "$@" "$a" "$1"
		shift
		;;
	--config=*)
		config=${a#--config=}
		set -- "$@" "$a"
		;;
	--pin-dir=* | --socket=* | --state=*) set -- "$@" "$a" ;;
	*)
		echo "uninstall.sh: unknown argument: $a (see --help)" >&2
		exit 2
		;;
	esac
done
shift # --end--; "$@" now holds the flags for enforcerd uninstall
if [ -z "$config" ] && [ -e /etc/enforcerd/config.yaml ]; then
	set -- "$@" --config /etc/enforcerd/config.yaml
fi
bin=/usr/local/bin/enforcerd
if [ ! -x "$bin" ]; then
	echo "uninstall.sh: $bin is not installed; nothing to do" >&2
	exit 1
fi
was_active=""
if [ -d /run/systemd/system ]; then
	for u in enforcerd.socket enforcerd.service; do
		if systemctl is-enabled --quiet "$u" 2>/dev/null; then
			was_active="$was_active $u"
		fi
	done
	systemctl disable --now enforcerd.socket enforcerd.service enforcerd-proxy.socket enforcerd-proxy.service 2>/dev/null || true
fi
if ! "$bin" uninstall "$@"; then
	if [ -n "$was_active" ]; then
		# shellcheck disable=SC2086 # unit names, split on purpose
		systemctl enable --now $was_active || true
	fi
	echo "uninstall.sh: enforcerd uninstall refused or failed (above); nothing was removed" >&2
	exit 1
fi
rm -f "$bin" /usr/local/lib/systemd/system/enforcerd.service /usr/local/lib/systemd/system/enforcerd.socket \
	/usr/local/lib/systemd/system/enforcerd-proxy.service /usr/local/lib/systemd/system/enforcerd-proxy.socket \
	/usr/share/containers/oci/hooks.d/50-enforcerd-createruntime.json \
	/usr/share/containers/oci/hooks.d/50-enforcerd-poststop.json \
	/usr/local/share/man/man1/enforcerd*.1 \
	/usr/local/share/bash-completion/completions/enforcerd \
	/usr/local/share/zsh/site-functions/_enforcerd \
	/usr/local/share/fish/vendor_completions.d/enforcerd.fish
# The units keep /run/enforcerd through restarts (RuntimeDirectoryPreserve=)
# and a stopped socket unit leaves its socket file: both stopped by now.
rm -rf /run/enforcerd
if [ "$purge" = 1 ]; then
	rm -rf /etc/enforcerd /var/log/enforcerd /var/lib/enforcerd
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi
echo "enforcerd removed"
