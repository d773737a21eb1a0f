# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# The system files an agent reads.
# shellcheck source=/dev/null
. /etc/os-release
[ -n "$ID" ]
for f in status stat statm cmdline environ limits maps mountinfo cgroup fd/0 exe cwd; do
	[ -e "/proc/self/$f" ]
done
cat /proc/self/status /proc/self/stat /proc/self/limits /proc/self/mountinfo /proc/self/cgroup >/dev/null
cat /proc/self/maps >/dev/null
grep -q processor /proc/cpuinfo
cat /proc/meminfo /proc/loadavg /proc/uptime /proc/version >/dev/null
cat /sys/devices/system/cpu/online /sys/devices/system/cpu/possible >/dev/null
ls /sys/devices/system/cpu/ >/dev/null
nproc >/dev/null
uname -a >/dev/null
