#!/bin/sh
# Remove what install.sh installed, after `enforcerd uninstall` has removed
# the pinned programs (it refuses while containers are registered; pass
# --force or --force --kill through: ./uninstall.sh --force). The
# configuration and the audit log stay unless --purge is given.
set -eu
purge=0
args=""
for a in "$@"; do
	case $a in
	--purge) purge=1 ;;
	*) args="$args $a" ;;
	esac
done
if [ -d /run/systemd/system ]; then
	systemctl disable --now enforcerd.socket enforcerd.service enforcerd-proxy.socket enforcerd-proxy.service 2>/dev/null || true
fi
# shellcheck disable=SC2086 # $args are the flags given, split on purpose
/usr/local/bin/enforcerd uninstall $args
rm -f /usr/local/bin/enforcerd /etc/systemd/system/enforcerd.service /etc/systemd/system/enforcerd.socket \
	/etc/systemd/system/enforcerd-proxy.service /etc/systemd/system/enforcerd-proxy.socket \
	/usr/share/containers/oci/hooks.d/50-enforcerd-createruntime.json \
	/usr/share/containers/oci/hooks.d/50-enforcerd-poststop.json \
	/usr/local/share/man/man1/enforcerd*.1 \
	/usr/local/share/bash-completion/completions/enforcerd \
	/usr/local/share/zsh/site-functions/_enforcerd \
	/usr/local/share/fish/vendor_completions.d/enforcerd.fish
if [ "$purge" = 1 ]; then
	rm -rf /etc/enforcerd /var/log/enforcerd /var/lib/enforcerd
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi
echo "enforcerd removed"
