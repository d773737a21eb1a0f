#!/bin/sh
# Install enforcerd from an unpacked release tarball (run from its top
# directory as root). DESTDIR installs into another root (packaging).
# Enables and starts enforcerd.socket and enforcerd.service when systemd runs
# and DESTDIR is empty.
set -eu
usage() {
	cat <<'USAGE'
Usage: [DESTDIR=DIR] ./install.sh

Install enforcerd from this unpacked release: the binary into
/usr/local/bin, the systemd units into /usr/local/lib/systemd/system
(enforcerd.socket, enforcerd.service and the egress proxy's units, which
are not enabled; /etc/systemd/system stays the administrator's, for
drop-ins and overrides), the OCI hooks.d files,
man pages and shell completions, and /etc/enforcerd/config.yaml unless one
exists. The configuration in force afterwards is checked first (enforcerd
daemon --check-config): an invalid one stops the install before anything
is installed. When systemd runs and DESTDIR is empty it then enables and
starts enforcerd.socket and enforcerd.service.

Environment:
  DESTDIR   install beneath this directory instead of / (packaging); no
            service is enabled or started

Takes no arguments. Exit status: 0 installed, 1 a step failed, 2 usage error.
USAGE
}
case $# in
0) ;;
*)
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "install.sh: unexpected argument: $1 (it takes none; set DESTDIR=DIR to install elsewhere; see --help)" >&2
		exit 2
		;;
	esac
	;;
esac
here=$(cd "$(dirname "$0")" && pwd)
d=${DESTDIR:-}
# The configuration in force after the install (one kept from an earlier
# install may not suit this version) is checked before anything is
# installed: enforcerd daemon --check-config touches nothing.
cfg="$d/etc/enforcerd/config.yaml"
if [ ! -e "$cfg" ]; then
	cfg="$here/config.yaml"
fi
if ! "$here/bin/enforcerd" daemon --check-config --quiet --config "$cfg"; then
	echo "install.sh: $cfg is not a valid configuration for this enforcerd (the error above); nothing was installed: fix it, then run install.sh again" >&2
	exit 1
fi
install -D -m 0755 "$here/bin/enforcerd" "$d/usr/local/bin/enforcerd"
install -D -m 0644 "$here/systemd/enforcerd.service" "$d/usr/local/lib/systemd/system/enforcerd.service"
install -D -m 0644 "$here/systemd/enforcerd.socket" "$d/usr/local/lib/systemd/system/enforcerd.socket"
# The egress proxy's units are installed, not enabled (docs/proxy.md).
install -D -m 0644 "$here/systemd/enforcerd-proxy.service" "$d/usr/local/lib/systemd/system/enforcerd-proxy.service"
install -D -m 0644 "$here/systemd/enforcerd-proxy.socket" "$d/usr/local/lib/systemd/system/enforcerd-proxy.socket"
for f in "$here"/hooks.d/*.json; do
	install -D -m 0644 "$f" "$d/usr/share/containers/oci/hooks.d/$(basename "$f")"
done
if [ ! -e "$d/etc/enforcerd/config.yaml" ]; then
	install -D -m 0644 "$here/config.yaml" "$d/etc/enforcerd/config.yaml"
fi
if [ -d "$here/man" ]; then
	for f in "$here"/man/*.1; do
		install -D -m 0644 "$f" "$d/usr/local/share/man/man1/$(basename "$f")"
	done
fi
if [ -d "$here/completions" ]; then
	install -D -m 0644 "$here/completions/enforcerd.bash" "$d/usr/local/share/bash-completion/completions/enforcerd"
	install -D -m 0644 "$here/completions/enforcerd.zsh" "$d/usr/local/share/zsh/site-functions/_enforcerd"
	install -D -m 0644 "$here/completions/enforcerd.fish" "$d/usr/local/share/fish/vendor_completions.d/enforcerd.fish"
fi
if [ -z "$d" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	systemctl enable --now enforcerd.socket enforcerd.service
fi
echo "installed enforcerd into ${d:-/}; check what this kernel enforces: enforcerd check"
