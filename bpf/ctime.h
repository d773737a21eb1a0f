/* SPDX-License-Identifier: GPL-2.0 */
/*
 * inode_ctime_ns: an inode's change time across kernel versions (exec.h:
 * files changed since a registration; endpoints.h: the identity of a
 * listed unix socket file).
 */
#ifndef ENFORCERD_CTIME_H
#define ENFORCERD_CTIME_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/* The inode's ctime: i_ctime (timespec64) before 6.6, __i_ctime in
 * 6.6-6.10, i_ctime_sec/i_ctime_nsec since 6.11. */
struct inode___ctime_v66 {
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));

struct inode___ctime_v61 {
	struct timespec64 i_ctime;
} __attribute__((preserve_access_index));

static __always_inline __s64 inode_ctime_ns(struct inode *inode)
{
	__s64 sec;
	__s64 nsec;
	if (bpf_core_field_exists(inode->i_ctime_sec)) {
		sec = BPF_CORE_READ(inode, i_ctime_sec);
		nsec = BPF_CORE_READ(inode, i_ctime_nsec);
	} else if (bpf_core_field_exists(struct inode___ctime_v66, __i_ctime)) {
		struct inode___ctime_v66 *i = (void *)inode;
		sec = BPF_CORE_READ(i, __i_ctime.tv_sec);
		nsec = BPF_CORE_READ(i, __i_ctime.tv_nsec);
	} else {
		struct inode___ctime_v61 *i = (void *)inode;
		sec = BPF_CORE_READ(i, i_ctime.tv_sec);
		nsec = BPF_CORE_READ(i, i_ctime.tv_nsec);
	}
	return sec * 1000000000LL + nsec;
}

/* inode_ctime_ns_btf: inode_ctime_ns by typed loads, for an inode the
 * verifier knows by its BTF type (a hook's argument, or reached from one by
 * pointer loads): each field is one load, not a bpf_probe_read_kernel call.
 * An inode read from memory by a helper (endpoints.h) is a plain number to
 * the verifier and must use inode_ctime_ns. */
static __always_inline __s64 inode_ctime_ns_btf(struct inode *inode)
{
	__s64 sec;
	__s64 nsec;
	if (bpf_core_field_exists(inode->i_ctime_sec)) {
		sec = inode->i_ctime_sec;
		nsec = inode->i_ctime_nsec;
	} else if (bpf_core_field_exists(struct inode___ctime_v66, __i_ctime)) {
		struct inode___ctime_v66 *i = (void *)inode;
		sec = i->__i_ctime.tv_sec;
		nsec = i->__i_ctime.tv_nsec;
	} else {
		struct inode___ctime_v61 *i = (void *)inode;
		sec = i->i_ctime.tv_sec;
		nsec = i->i_ctime.tv_nsec;
	}
	return sec * 1000000000LL + nsec;
}

#endif /* ENFORCERD_CTIME_H */
