# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# xargs -P: a pool of four processes hashing the fixture tree, and one
# searching it (five files a process).
n=$(find "$FIX/tree" -type f -print0 | xargs -0 -P 4 -n 5 sha256sum | wc -l)
[ "$n" -eq 80 ]
n=$(find "$FIX/tree" -name '*.go' -print0 | xargs -0 -P 4 -n 5 grep -l "func f" | wc -l)
[ "$n" -eq 40 ]
