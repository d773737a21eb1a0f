# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# git: a repository's life in the workspace: init, add, commit, branch,
# rebase, stash, worktree, gc, a local clone.
git init -q -b main proj
cd proj
printf 'one\n' >a.txt
git add a.txt
git commit -qm "add a"
git branch topic
printf 'two\n' >>a.txt
git commit -qam "main: two"
git switch -q topic
printf 'b\n' >b.txt
git add b.txt
git commit -qm "topic: add b"
git rebase -q main
git switch -q main
git merge -q --ff-only topic
printf 'wip\n' >>a.txt
git stash -q
git stash list | grep -q 'stash@{0}'
git stash pop -q
git commit -qam "after stash"
git worktree add -q ../wt topic
(cd ../wt && printf 'c\n' >c.txt && git add c.txt && git commit -qm "wt: c")
git worktree remove ../wt
git gc -q
git fsck --no-progress >/dev/null
cd "$WS"
git clone -q proj clone
git -C clone log --oneline | wc -l | grep -qx 4
