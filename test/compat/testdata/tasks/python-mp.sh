# multiprocessing: a Pool (fork and spawn), a Lock and a Queue: POSIX
# semaphores (sem_open: /dev/shm/sem.*) the sandbox creates.
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
python3 mp.py
