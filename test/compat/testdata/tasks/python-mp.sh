# multiprocessing: a Pool (fork), a Lock and a Queue: POSIX semaphores
# (sem_open: /dev/shm/sem.*) the sandbox creates.
python3 - <<'PY'
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
    assert q.get(timeout=10) == 7
    with mp.Pool(3) as pool:
        assert sum(pool.map(sq, range(10))) == 285
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.map(abs, [-1, -2]) == [1, 2]
    print("ok")
PY
