# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# git over a repository outside the write root: what a reader does.
cd "$FIX/repo"
git status --short
git log --oneline --stat
git diff HEAD~1 --stat
git show --stat HEAD
git grep -q "func f1"
git blame -s src/f1.go >/dev/null
git branch --list
git rev-parse HEAD
