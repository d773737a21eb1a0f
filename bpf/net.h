/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Socket decisions shared by network.bpf.c (socket hooks) and file.bpf.c
 * (reads and writes of socket files: splice, sendfile, write(2)).
 */
#ifndef ENFORCERD_NET_H
#define ENFORCERD_NET_H

#include "enforcerd.h"
#include "endpoints.h"

static __always_inline void fill_socket(struct event *ev, struct socket *sock)
{
	ev->object_kind = OBJ_SOCKET;
	ev->family = BPF_CORE_READ(sock, sk, __sk_common.skc_family);
	ev->sock_type = BPF_CORE_READ(sock, type);
	ev->protocol = BPF_CORE_READ(sock, sk, sk_protocol);
}

/*
 * outside_sandbox reports whether sk was created outside the subtree of the
 * deepest cgroup that denies network to the current task (at level
 * net_level). A socket records its creator's cgroup at allocation
 * (sk->sk_cgrp_data.cgroup); decide on that object, not on a path or name,
 * so filesystem and abstract unix sockets are treated alike (N4, N5).
 *
 * Fail direction: anything unreadable counts as outside (deny).
 */
static __always_inline bool outside_sandbox(struct sock *sk, int net_level,
					    __u64 sandbox_id)
{
	if (!sk)
		return true;
	/* Typed (BTF) loads: sk is a hook's argument or was read through
	 * one; every unix send under a network ceiling passes here. */
	struct cgroup *cg = sk->sk_cgrp_data.cgroup;
	if (!cg || net_level < 0)
		return true;
	int cl = cg->level;
	if (cl == net_level)
		/* The common peer: a socket created in the sandbox's own
		 * cgroup (a socketpair, a server of the container's). */
		return cg->kn->id != sandbox_id;
	return !cgroup_in_subtree(cg, net_level, sandbox_id);
}

/* unix_peer: the peer of sock, a connected unix socket (NULL: none, or
 * sock is no unix socket). Typed loads through bpf_skc_to_unix_sock, which
 * checks the socket's family. */
static __always_inline struct sock *unix_peer(struct socket *sock)
{
	struct sock *sk = sock->sk;
	if (!sk)
		return NULL;
	struct unix_sock *u = bpf_skc_to_unix_sock(sk);
	return u ? u->peer : NULL;
}

/* check_unix_peer denies an AF_UNIX connect/send to a socket created outside
 * the sandbox; socketpair and sockets created inside keep working. */
/* check_unix_peer_e: the same, for a caller that resolved e already. */
static __always_inline int check_unix_peer_e(struct effective *ep, struct socket *sock,
					     struct sock *peer, __u16 hook, bool connected)
{
	struct effective *e = ep;
	int d = verdict(e, DENY_NETWORK);
	if (!d)
		return 0;
	if (connected) {
		/* A send on a connected socket: its peer decides. An
		 * unconnected datagram has none (unix_may_send decides). */
		peer = unix_peer(sock);
		if (!peer)
			return 0;
	}
	__u64 sandbox = d == DECISION_DENIED ? e->deny_cgid[0] : e->audit_cgid[0];
	if (!outside_sandbox(peer, e->net_level, sandbox))
		return 0;
	/* A peer bound to a listed socket file (endpoints.h). */
	struct endpoint_walk w = {};
	if (unix_endpoint(peer, &w)) {
		d = endpoint_decision(e, d, &w);
		if (!d)
			return 0;
	}
	record_event(e, hook, d, DENY_NETWORK, {
		fill_socket(ev, sock);
		/* The peer's inode identifies the broker socket. */
		struct socket *ps = BPF_CORE_READ(peer, sk_socket);
		if (ps) {
			struct inode *ino = BPF_CORE_READ(ps, file, f_inode);
			if (ino)
				ev->ino = BPF_CORE_READ(ino, i_ino);
		}
	});
	return verdict_ret(d);
}

static __always_inline int check_unix_peer(struct socket *sock,
					   struct sock *peer, __u16 hook,
					   bool connected)
{
	struct effective e; /* resolve_for() writes it */
	if (!resolve_for(&e, DENY_NETWORK))
		return 0;
	return check_unix_peer_e(&e, sock, peer, hook, connected);
}

#endif /* ENFORCERD_NET_H */
