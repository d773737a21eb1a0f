# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# Programs driven through a pty the sandbox opens (/dev/ptmx): script(1)
# and expect. Nothing is written: script's typescript goes to /dev/null.
script -qec 'tty; stty size' /dev/null </dev/null | grep -q /dev/pts/
expect -c 'spawn sh -c "read -p {name? } n; echo hi \$n"; expect "name?"; send "agent\r"; expect "hi agent"; expect eof'
expect -c 'spawn python3 -c "import getpass; print(getpass.getpass(\"pw: \") == \"s3cret\")"; expect "pw: "; send "s3cret\r"; expect "True"; expect eof'
