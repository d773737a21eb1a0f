# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# tar with gzip and xz: create, list, extract.
tar -C "$FIX" -czf tree.tgz tree
tar -tzf tree.tgz | grep -q tree/src/f1.go
tar -C "$FIX" -cJf tree.txz tree
mkdir out
tar -C out -xJf tree.txz
cmp out/tree/src/f1.go "$FIX/tree/src/f1.go"
gzip -k out/tree/doc/n1.txt
xz -k out/tree/doc/n2.txt
gunzip -c out/tree/doc/n1.txt.gz >/dev/null
