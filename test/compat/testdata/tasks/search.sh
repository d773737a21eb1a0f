# rg and find over a source tree.
rg -q "func f17\(" "$FIX/tree"
[ "$(rg -l TODO "$FIX/tree" | wc -l)" -eq 40 ]
rg --files "$FIX/repo" >/dev/null
[ "$(find "$FIX/tree" -name '*.go' -newer "$FIX/tree/doc" -o -name '*.go' -print | wc -l)" -ge 1 ]
find "$FIX" -type f -size -1k -name '*.txt' | grep -q n1.txt
