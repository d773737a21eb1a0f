//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel objects shared with the host outside the file system, for every
 * enforced process whatever its ceiling (tamper protection, DENY_TAMPER):
 *
 *  - SysV IPC: no attach to, and no use of, a shared memory segment, message
 *    queue or semaphore set created outside the sandbox (shmat, shmctl,
 *    msgsnd, msgrcv, msgctl, semop, semctl, and shmget/msgget/semget of an
 *    existing key). Objects the sandbox creates keep working.
 *  - Kernel keys: no request_key() upcall (the kernel would run
 *    /sbin/request-key as root outside the sandbox, with sandbox-chosen
 *    arguments), and no access of any kind to a key or keyring created
 *    outside the sandbox (root's user keyring is shared with the host).
 *    Keys and keyrings the sandbox creates keep working.
 *  - POSIX message queues: the same rule as SysV objects (mqueue.h; the
 *    creator is recorded here, the opens and unlinks are decided in
 *    file.bpf.c).
 *  - Named FIFOs, under network=false (fifo.h: the creator is recorded
 *    here, opens are decided in file.bpf.c).
 *  - ptys made from /dev/ptmx (devices.h: the creator is recorded here,
 *    every use of a terminal is decided in file.bpf.c).
 *
 * Beside IPC objects, two small rules with their own headers live here
 * because their hooks had no program: exclusive locks on files the
 * sandbox may not write (locks.h; leases are decided at file_fcntl in
 * tamper.bpf.c) and the task name (comm.h).
 *
 * Neither kind of object has LSM blob storage for BPF, so the creator is
 * recorded in a hash map keyed by the object's address, at the allocation
 * hook (which runs in the creator's context), and dropped at the free hook.
 * Every creation on the host is recorded, not only enforced ones: a
 * container's runtime creates objects in the container's cgroup before its
 * registration (runc joins a new session keyring before the OCI
 * createRuntime hook runs), and those belong to the sandbox too.
 *
 * "Inside" is decided as for processes (tamper.bpf.c): the creator's cgroup
 * was in the subtree of the current task's sandbox, the deepest registered
 * ancestor. The record holds the creator's cgroup ancestors, so a nested
 * registration sees objects of its outer sandbox as outside, and the outer
 * sandbox sees the nested one's objects as inside.
 *
 * Fail direction: an object without a record is outside. A creation that
 * cannot be recorded is refused when the creator is enforced or its
 * registration is pending; for any other process it is allowed, and the
 * object stays outside every sandbox.
 *
 * Every program first honours the verdict of the LSM programs before it.
 */
#include "ipc.h"
#include "mqueue.h"
#include "shm.h"
#include "fifo.h"
#include "locks.h"
#include "comm.h"
#include "devices.h"

char LICENSE[] SEC("license") = "GPL";

/* A zeroed record: the value every new record starts from (never written). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct owner);
} owner_zero SEC(".maps");

/* record_creator records the current task as the creator of obj. Returns 0,
 * or the error that refuses the creation when the record cannot be made and
 * the creator is enforced (or pending). The record is filled in place (too
 * big for the stack; a per-CPU scratch value could be overwritten by a task
 * that preempts this one): until then it names no cgroup, so anything that
 * looks at it meanwhile sees an outside object. */
static __always_inline int record_creator(void *owners, __u64 obj, __u16 hook,
					  struct effective *e)
{
	__u32 zero = 0;
	struct owner *z = bpf_map_lookup_elem(&owner_zero, &zero);
	if (z && bpf_map_update_elem(owners, &obj, z, BPF_ANY) == 0) {
		struct owner *o = bpf_map_lookup_elem(owners, &obj);
		if (o) {
			for (int i = 0; i < MAX_CGROUP_LEVEL; i++)
				o->anc[i] = bpf_get_current_ancestor_cgroup_id(i);
			return 0;
		}
	}
	/* Map full: never leave a stale record behind. */
	bpf_map_delete_elem(owners, &obj);
	if (resolve(e))
		return tamper(e, hook, RULE_OWNER_UNRECORDED, OBJ_NONE, 0);
	if (e->pending)
		return -ENOMEM; /* not enforced yet, but its objects must be
				 * the sandbox's: refuse rather than fail open */
	return 0;
}

/* created_inside: obj has a record whose creator was in the subtree of the
 * current task's sandbox. */
static __always_inline bool created_inside(void *owners, __u64 obj,
					   const struct effective *e)
{
	struct owner *o = bpf_map_lookup_elem(owners, &obj);
	return o && owner_inside(o, e);
}

/* ---- SysV IPC ---- */

/* ipc_use: the verdict for using (or attaching, associating, controlling)
 * a SysV IPC object. A NULL object is a system-wide query (IPC_INFO,
 * SHM_INFO, MSG_INFO, SEM_INFO): nothing to protect. */
static __always_inline int ipc_use(struct kern_ipc_perm *perm, __u16 hook)
{
	if (!perm)
		return 0;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	if (created_inside(&ipc_owners, (__u64)perm, &e))
		return 0;
	return tamper(&e, hook, RULE_IPC_OUTSIDE, OBJ_NONE, BPF_CORE_READ(perm, id));
}

/* Every ipcperms() check: shmat, msgsnd, msgrcv, semop, semtimedop, the
 * *ctl reads and writes, and shmget/msgget/semget of an existing key. */
SEC("lsm/ipc_permission")
int BPF_PROG(ipc_permission, struct kern_ipc_perm *ipcp, short flag, int ret)
{
	if (ret)
		return ret;
	return ipc_use(ipcp, HOOK_IPC_PERMISSION);
}

/* The same for the calls that skip ipcperms(): IPC_RMID, IPC_SET,
 * SHM_LOCK/SHM_UNLOCK, *_STAT_ANY (owner or capability checked instead). */
SEC("lsm/shm_shmctl")
int BPF_PROG(shm_shmctl, struct kern_ipc_perm *perm, int cmd, int ret)
{
	if (ret)
		return ret;
	return ipc_use(perm, HOOK_SHM_SHMCTL);
}

SEC("lsm/msg_queue_msgctl")
int BPF_PROG(msg_queue_msgctl, struct kern_ipc_perm *perm, int cmd, int ret)
{
	if (ret)
		return ret;
	return ipc_use(perm, HOOK_MSG_QUEUE_MSGCTL);
}

SEC("lsm/sem_semctl")
int BPF_PROG(sem_semctl, struct kern_ipc_perm *perm, int cmd, int ret)
{
	if (ret)
		return ret;
	return ipc_use(perm, HOOK_SEM_SEMCTL);
}

/* Defence in depth: ipc_permission runs first on both paths. */
SEC("lsm/shm_shmat")
int BPF_PROG(shm_shmat, struct kern_ipc_perm *perm, char *shmaddr, int shmflg,
	     int ret)
{
	if (ret)
		return ret;
	return ipc_use(perm, HOOK_SHM_SHMAT);
}

SEC("lsm/shm_associate")
int BPF_PROG(shm_associate, struct kern_ipc_perm *perm, int shmflg, int ret)
{
	if (ret)
		return ret;
	return ipc_use(perm, HOOK_SHM_ASSOCIATE);
}

SEC("lsm/msg_queue_associate")
int BPF_PROG(msg_queue_associate, struct kern_ipc_perm *perm, int msqflg,
	     int ret)
{
	if (ret)
		return ret;
	return ipc_use(perm, HOOK_MSG_QUEUE_ASSOCIATE);
}

SEC("lsm/sem_associate")
int BPF_PROG(sem_associate, struct kern_ipc_perm *perm, int semflg, int ret)
{
	if (ret)
		return ret;
	return ipc_use(perm, HOOK_SEM_ASSOCIATE);
}

/* Creation runs in the creator's context, before the object gets an id. */
SEC("lsm/shm_alloc_security")
int BPF_PROG(shm_alloc_security, struct kern_ipc_perm *perm, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	return record_creator(&ipc_owners, (__u64)perm, HOOK_SHM_ALLOC_SECURITY, &e);
}

SEC("lsm/msg_queue_alloc_security")
int BPF_PROG(msg_queue_alloc_security, struct kern_ipc_perm *perm, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	return record_creator(&ipc_owners, (__u64)perm, HOOK_MSG_QUEUE_ALLOC_SECURITY, &e);
}

SEC("lsm/sem_alloc_security")
int BPF_PROG(sem_alloc_security, struct kern_ipc_perm *perm, int ret)
{
	if (ret)
		return ret;
	struct effective e = {};
	return record_creator(&ipc_owners, (__u64)perm, HOOK_SEM_ALLOC_SECURITY, &e);
}

/* Also called when a creation fails after *_alloc_security. */
SEC("lsm/shm_free_security")
int BPF_PROG(shm_free_security, struct kern_ipc_perm *perm)
{
	__u64 k = (__u64)perm;
	bpf_map_delete_elem(&ipc_owners, &k);
	return 0;
}

SEC("lsm/msg_queue_free_security")
int BPF_PROG(msg_queue_free_security, struct kern_ipc_perm *perm)
{
	__u64 k = (__u64)perm;
	bpf_map_delete_elem(&ipc_owners, &k);
	return 0;
}

SEC("lsm/sem_free_security")
int BPF_PROG(sem_free_security, struct kern_ipc_perm *perm)
{
	__u64 k = (__u64)perm;
	bpf_map_delete_elem(&ipc_owners, &k);
	return 0;
}

/* ---- Keys ---- */

/* bytes_eq compares the first n bytes (n <= 24). */
static __always_inline bool bytes_eq(const char *a, const char *b, int n)
{
#pragma unroll
	for (int i = 0; i < 24; i++) {
		if (i < n && a[i] != b[i])
			return false;
	}
	return true;
}

/* key_shared_name: keyrings the kernel shares between every holder of a
 * uid, whoever created them first: a persistent keyring ("_persistent.<uid>")
 * and its user namespace's register. Outside every sandbox. */
static __always_inline bool key_shared_name(const char *d)
{
	return bytes_eq(d, "_persistent.", 12) ||
	       bytes_eq(d, ".persistent_register", 21);
}

/*
 * Creation of every key (key_alloc(), before it gets a serial), in the
 * creator's context:
 *  - the authorisation key of a request_key() construction
 *    (".request_key_auth", request_key_auth_new()) from an enforced process
 *    is refused: construct_key() then returns before it calls
 *    call_sbin_request_key() or the key type's own upcall, so no usermode
 *    helper runs outside the sandbox on its behalf (this includes kernel
 *    upcalls made in its context, e.g. the NFS idmapper's: fail closed);
 *  - user and user session keyrings (root's is the host's) and persistent
 *    keyrings are shared: never recorded, whoever creates them;
 *  - every other key records its creator.
 */
SEC("lsm/key_alloc")
int BPF_PROG(key_alloc, struct key *key, const struct cred *cred,
	     unsigned long flags, int ret)
{
	if (ret)
		return ret;
	__u64 k = (__u64)key;
	struct effective e = {}; /* one for every path: the 6.1 verifier's
				  * combined stack limit */
	char buf[24] = {};
	bpf_probe_read_kernel_str(buf, sizeof(buf), BPF_CORE_READ(key, type, name));
	if (bytes_eq(buf, ".request_key_auth", 18)) {
		bpf_map_delete_elem(&key_owners, &k);
		if (!resolve(&e))
			return 0;
		return tamper(&e, HOOK_KEY_ALLOC, RULE_KEY_REQUEST_AUTH, OBJ_NONE, 0);
	}
	__builtin_memset(buf, 0, sizeof(buf));
	bpf_probe_read_kernel_str(buf, sizeof(buf), BPF_CORE_READ(key, description));
	if ((flags & KEY_ALLOC_UID_KEYRING) || key_shared_name(buf)) {
		bpf_map_delete_elem(&key_owners, &k);
		return 0;
	}
	return record_creator(&key_owners, k, HOOK_KEY_ALLOC, &e);
}

/* Linux 6.1 has this hook; 6.12 has no bpf_lsm_key_free. There a record
 * stays until the address is reused by another key, whose key_alloc
 * replaces (or drops) it: never a wrong verdict, only a bounded leak. */
SEC("lsm/key_free")
int BPF_PROG(key_free, struct key *key)
{
	__u64 k = (__u64)key;
	bpf_map_delete_elem(&key_owners, &k);
	return 0;
}

/* Every permission check on a key or keyring (view, read, write, search,
 * link, setattr, unlink, invalidate, assume authority, the deferred checks
 * of keyctl read): refused on anything created outside the sandbox.
 *
 * key_permission(key_ref_t key_ref, const struct cred *cred,
 *                enum key_need_perm need_perm) on 6.1 and 6.12. key_ref_t
 * points to a declared-only struct, which the verifier refuses to load
 * from the context, so the argument is fetched with bpf_get_func_arg();
 * its low bit is the possession flag. */
SEC("lsm/key_permission")
int key_permission(__u64 *ctx)
{
	int ret = (int)ctx[3];
	if (ret)
		return ret;
	struct effective e; /* resolve() writes it */
	if (!resolve(&e))
		return 0;
	__u64 ref = 0;
	bpf_get_func_arg(ctx, 0, &ref); /* on failure 0: no record, outside */
	__u64 k = ref & ~1ULL;
	if (created_inside(&key_owners, k, &e))
		return 0;
	__s32 serial = 0;
	bpf_probe_read_kernel(&serial, sizeof(serial),
			      (void *)k + bpf_core_field_offset(struct key, serial));
	return tamper(&e, HOOK_KEY_PERMISSION, RULE_KEY_OUTSIDE, OBJ_NONE, (__u32)serial);
}

/* ---- POSIX message queues (mqueue.h) ---- */

/* Every inode allocation on the host; only those on an mqueue superblock
 * (a queue being created, or a mount's root) go past two loads and a
 * compare; those on a mounted tmpfs (a file created there) past
 * resolve(), to record an enforced creator on its sandbox's POSIX shm
 * superblock (shm.h). */
SEC("lsm/inode_alloc_security")
int BPF_PROG(inode_alloc_security, struct inode *inode, int ret)
{
	if (ret)
		return ret;
	if ((ret = mqueue_record_creator(inode, HOOK_INODE_ALLOC_SECURITY)))
		return ret;
	return shm_record_creator(inode, HOOK_INODE_ALLOC_SECURITY);
}

/* ---- FIFOs (fifo.h) ---- */

/* Every dentry given an inode (creations and lookups alike); only a FIFO
 * inode, or a pty slave's on devpts (devices.h: its creator), goes past a
 * load and a compare. */
SEC("lsm/d_instantiate")
void BPF_PROG(d_instantiate, struct dentry *dentry, struct inode *inode)
{
	fifo_instantiate(dentry, inode);
	pty_record_creator(inode);
}

/* Every inode's end; only a pty slave's goes past a load and a compare
 * (devices.h: its record goes with it). */
SEC("lsm/inode_free_security")
void BPF_PROG(inode_free_security, struct inode *inode)
{
	pty_forget(inode);
}

/* ---- Locks (locks.h) ---- */

/* flock(2), POSIX and OFD record locks (fcntl F_SETLK*, F_OFD_SETLK*), and
 * leases (after file_fcntl): an exclusive lock on a file the sandbox may
 * not write. */
SEC("lsm/file_lock")
int BPF_PROG(file_lock, struct file *file, unsigned int cmd, int ret)
{
	if (ret)
		return ret;
	return lock_exclusive(file, cmd);
}

/* ---- The task name (comm.h) ---- */

SEC("lsm/task_prctl")
int BPF_PROG(task_prctl, int option, unsigned long arg2, unsigned long arg3,
	     unsigned long arg4, unsigned long arg5, int ret)
{
	if (ret)
		return ret;
	return comm_prctl(option); /* 0: no decision, prctl(2) goes on (comm.h) */
}
