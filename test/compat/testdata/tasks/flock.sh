# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# flock(1): exclusive and shared locks on files in the workspace, a lock
# held by a subshell while another waits.
flock lock.x -c 'echo held >state'
flock -s lock.x cat state
( flock 9; sleep 0.2; echo finished >>state ) 9>lock.y &
sleep 0.05
flock -w 10 lock.y -c 'cat state'
wait
grep -q finished state
flock -n -s "$FIX/ref.db" true
