# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# multiprocessing: Pools (fork and spawn), a Lock and a Queue: POSIX
# semaphores (sem_open: /dev/shm/sem.*) the sandbox creates. The program
# is a fixture: the task writes nothing of its own.
python3 "$FIX/mp.py" | grep -qx ok
