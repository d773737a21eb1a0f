#!/bin/sh
# Prepares the compatibility suite's read-only fixtures in $FIX, outside
# every sandbox and outside every write root (the suite runs it once, as
# root, unconfined): a git repository, SQLite databases (rollback journal
# and WAL), a source tree to search and hash, a wheel directory, a Go
# module proxy and an npm cache. Nothing here needs the network.
set -eu
: "${FIX:?}"
mkdir -p "$FIX"
cd "$FIX"
t0=$(cut -d' ' -f1 /proc/uptime)
mark() { echo "fixtures: $1 done at +$(awk -v t0="$t0" '{ printf "%.1f", $1 - t0 }' /proc/uptime)s"; }
export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@example.com \
	GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@example.com

# A source tree.
mkdir -p tree/src tree/doc
for i in $(seq 1 40); do
	printf 'package main\n\n// f%d returns %d.\nfunc f%d() int { return %d }\n' "$i" "$i" "$i" "$i" >"tree/src/f$i.go"
	printf 'notes %d: TODO check the ceiling\n' "$i" >"tree/doc/n$i.txt"
done

mark tree
# A repository with history and a branch.
git init -q -b main repo
cp -r tree/src repo/
(cd repo && git add -A && git commit -qm "first" &&
	echo "// changed" >>src/f1.go && git commit -qam "second" &&
	git branch topic && echo x >untracked.txt)

mark repo
# SQLite: a rollback-journal database and a WAL one.
sqlite3 ref.db "create table t(id integer primary key, name text); insert into t(name) values ('a'),('b'),('c');"
sqlite3 wal.db "pragma journal_mode=wal; create table t(id integer primary key, name text); insert into t(name) values ('a'),('b');" >/dev/null
# A WAL database is read with its -shm index: readers need it to exist.
sqlite3 wal.db "select count(*) from t;" >/dev/null

mark sqlite
# A wheel, written by hand (the image has no wheel builder; PyPI is not
# reachable): pure Python, no dependencies.
mkdir -p wheels
python3 - <<'PY'
import zipfile
n = "compatdemo-1.0"
files = {
    "compatdemo/__init__.py": "def answer():\n    return 42\n",
    n + ".dist-info/METADATA": "Metadata-Version: 2.1\nName: compatdemo\nVersion: 1.0\n",
    n + ".dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: compat\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
files[n + ".dist-info/RECORD"] = "".join(p + ",,\n" for p in files) + n + ".dist-info/RECORD,,\n"
with zipfile.ZipFile("wheels/compatdemo-1.0-py3-none-any.whl", "w") as z:
    for p, s in files.items():
        z.writestr(p, s)
PY

mark wheel
# A Go module proxy (GOPROXY=file://...) serving example.com/greet v1.0.0.
mkdir -p goproxy/example.com/greet/@v gosrc
cat >gosrc/go.mod <<'GO'
module example.com/greet

go 1.19
GO
cat >gosrc/greet.go <<'GO'
// Package greet greets.
package greet

// Hello greets who.
func Hello(who string) string { return "hello, " + who }
GO
python3 - <<'PY'
import zipfile
d = "goproxy/example.com/greet/@v/"
with zipfile.ZipFile(d + "v1.0.0.zip", "w") as z:
    for f in ("go.mod", "greet.go"):
        z.write("gosrc/" + f, "example.com/greet@v1.0.0/" + f)
open(d + "list", "w").write("v1.0.0\n")
open(d + "v1.0.0.info", "w").write('{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}\n')
open(d + "v1.0.0.mod", "w").write(open("gosrc/go.mod").read())
PY

mark goproxy
# An npm project whose dependency is a local package tarball, with its
# lock file (written here: npm itself takes most of a minute under TCG).
mkdir -p npm/pkg/package npm/proj
cat >npm/pkg/package/package.json <<'JS'
{"name": "compat-dep", "version": "1.0.0", "main": "index.js"}
JS
echo 'module.exports = (a, b) => a + b;' >npm/pkg/package/index.js
tar -C npm/pkg -czf npm/compat-dep-1.0.0.tgz package
cat >npm/proj/package.json <<'JS'
{"name": "compat-proj", "version": "1.0.0", "private": true,
 "dependencies": {"compat-dep": "file:../compat-dep-1.0.0.tgz"}}
JS
python3 - <<'PY'
import base64, hashlib, json
sri = "sha512-" + base64.b64encode(hashlib.sha512(open("npm/compat-dep-1.0.0.tgz", "rb").read()).digest()).decode()
dep = "file:../compat-dep-1.0.0.tgz"
lock = {"name": "compat-proj", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
        "packages": {"": {"name": "compat-proj", "version": "1.0.0", "dependencies": {"compat-dep": dep}},
                     "node_modules/compat-dep": {"version": "1.0.0", "resolved": dep, "integrity": sri}}}
json.dump(lock, open("npm/proj/package-lock.json", "w"), indent=2)
PY
mark npm

# A multiprocessing program (read from here: the task writes nothing).
cat >mp.py <<'PY'
import multiprocessing as mp

def sq(x):
    return x * x

if __name__ == "__main__":
    lock = mp.Lock()
    with lock:
        pass
    q = mp.Queue()
    p = mp.Process(target=q.put, args=(7,))
    p.start(); p.join()
    assert q.get(timeout=30) == 7
    with mp.Pool(3) as pool:
        assert sum(pool.map(sq, range(10))) == 285
    with mp.get_context("spawn").Pool(2) as pool:
        assert pool.map(sq, [1, 2]) == [1, 4]
    print("ok")
PY
chmod -R a+rX "$FIX"
