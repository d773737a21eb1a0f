# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# sqlite3: a database in the workspace, rollback journal and WAL.
sqlite3 app.db "create table t(id integer primary key, v text); begin; insert into t(v) values ('a'),('b'); commit; create index iv on t(v);"
sqlite3 app.db "select count(*) from t;" | grep -qx 2
sqlite3 walapp.db "pragma journal_mode=wal; create table t(v); insert into t values (1);" >/dev/null
sqlite3 walapp.db "insert into t values (2); select count(*) from t;" | grep -qx 2
sqlite3 walapp.db "pragma wal_checkpoint(truncate);" >/dev/null
