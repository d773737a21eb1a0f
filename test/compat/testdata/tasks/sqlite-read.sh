# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# sqlite3: read-only queries of databases outside the write root: a
# rollback-journal database (shared lock on the file) and a WAL one
# (opened read-only; its -shm index exists).
sqlite3 "$FIX/ref.db" "select count(*) from t;" | grep -qx 3
sqlite3 -readonly "$FIX/ref.db" "select name from t where id = 2;" | grep -qx b
sqlite3 "file:$FIX/ref.db?mode=ro" "select count(*) from t;" | grep -qx 3
sqlite3 -readonly "$FIX/wal.db" "select count(*) from t;" | grep -qx 2
