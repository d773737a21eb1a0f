# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# rg and find over a source tree.
rg -q 'func f17\(' "$FIX/tree"
[ "$(rg -l TODO "$FIX/tree" | wc -l)" -eq 40 ]
rg --files "$FIX/repo" | grep -q f1.go
rg -n --type go 'return 4[0-9]' "$FIX/tree" | grep -q f40.go
[ "$(find "$FIX/tree" -name '*.go' -type f | wc -l)" -eq 40 ]
find "$FIX" -type f -size -2k -name '*.txt' | grep -q n1.txt
find "$FIX/tree" -newer "$FIX/tree/src/f1.go" -type f >/dev/null
