# xargs -P: a pool of four processes hashing the fixture tree.
n=$(find "$FIX/tree" -type f -print0 | xargs -0 -P 4 -n 5 sha256sum | wc -l)
[ "$n" -eq 80 ]
find "$FIX/tree" -name '*.go' | xargs -P 4 -I{} sh -c 'grep -q "func f" "{}"'
