/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allowed endpoints under network=false (enforcerd run --allow-connect,
 * the API's allow_connect, the enforcerd.io/allow-connect annotation): the
 * per-cgroup lists user space writes (connect_allow), and the decision
 * whether one connect or send may reach one endpoint.
 *
 * The meet: an endpoint is allowed only when every registered, active
 * ancestor that denies network lists it (intersection). endpoint_decision
 * walks the ancestors again for that (only on the path where network is
 * denied, only when the deepest such ancestor has a list at all, and only
 * when more than one ancestor denies network);
 * resolve()'s cache holds no list, so a list change needs no invalidation
 * of its own: the lists are read live, and a registration writes its list
 * before its ceiling (enforcer/endpoints.go).
 *
 * What an endpoint is (docs/design.md "Allowed endpoints"):
 *  - ENDPOINT_TCP / ENDPOINT_UDP: an IP address and port, reached by a
 *    socket of that kind only (SOCK_STREAM + IPPROTO_TCP, SOCK_DGRAM +
 *    IPPROTO_UDP); IPv4 is stored and compared as the IPv4-mapped IPv6
 *    address, so an AF_INET6 socket naming ::ffff:a.b.c.d reaches a.b.c.d.
 *  - ENDPOINT_UNIX: a bound unix socket by the identity of its socket file
 *    (device, kernel encoding major<<20|minor, inode number and change
 *    time in ns: file systems reuse inode numbers, so a socket re-created
 *    at the path gets another identity), as the peer holds it
 *    (unix_sk(peer)->path). Abstract and unbound sockets have no such file
 *    and are never an endpoint.
 */
#ifndef ENFORCERD_ENDPOINTS_H
#define ENFORCERD_ENDPOINTS_H

#include "enforcerd.h"
#include "ctime.h"

/* ---- socket types and protocols (include/linux/net.h, uapi/linux/in.h) ---- */
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define IPPROTO_IP 0
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_IPV6 41
#define SOL_SOCKET 1
#define IPV6_V6ONLY 26

enum endpoint_kind {
	ENDPOINT_TCP = 1,
	ENDPOINT_UDP = 2,
	ENDPOINT_UNIX = 3,
};

enum endpoint_limits {
	MAX_ENDPOINTS = 16,
};

/* One allowed endpoint. */
struct endpoint {
	__u32 kind; /* enum endpoint_kind */
	__u32 port; /* tcp/udp: host byte order, never 0; unix: 0 */
	__u64 a;    /* tcp/udp: address bytes 0-7 (IPv6, IPv4 as ::ffff:a.b.c.d),
		     * loaded as a little-endian word; unix: device */
	__u64 b;    /* tcp/udp: address bytes 8-15; unix: inode number */
	__s64 c;    /* tcp/udp: 0; unix: the socket file's ctime in ns */
};

/* The endpoints one registered cgroup allows under network=false. */
struct endpoint_list {
	__u32 count; /* entries used in ep, at most MAX_ENDPOINTS */
	__u32 kinds; /* 1 << kind for every kind in ep */
	struct endpoint ep[MAX_ENDPOINTS];
};

/* connect_allow: registered cgroup id -> its list. No entry: nothing is
 * allowed. BPF_F_NO_PREALLOC: a replaced value is freed after RCU, so a
 * reader never sees a list half-overwritten. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CEILINGS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* cgroup v2 id, as in ceilings */
	__type(value, struct endpoint_list);
} connect_allow SEC(".maps");

/* The state of one endpoint_decision walk. */
struct endpoint_walk {
	struct endpoint want; /* kind 0: any endpoint of a kind in kinds */
	__u32 kinds;
	__u32 miss_deny;  /* an enforcing ancestor denying network lacks it */
	__u32 miss_audit; /* an audit-only one lacks it */
	__u32 seen_deny;  /* an enforcing ancestor denying network was seen */
};

static __always_inline bool endpoint_listed(const struct endpoint_list *l,
					    const struct endpoint_walk *w)
{
	if (!w->want.kind)
		return (l->kinds & w->kinds) != 0;
	__u32 n = l->count;
	for (int i = 0; i < MAX_ENDPOINTS; i++) {
		if (i >= n)
			break;
		const struct endpoint *p = &l->ep[i];
		if (p->kind == w->want.kind && p->port == w->want.port &&
		    p->a == w->want.a && p->b == w->want.b && p->c == w->want.c)
			return true;
	}
	return false;
}

/* endpoint_in_list: whether list l (a connect_allow value) holds w's
 * endpoint (no list, or no w: no). A global function: the verifier checks
 * the list's loop once per program, not at every call site. */
__attribute__((noinline)) int endpoint_in_list(const struct endpoint_list *l,
					       const struct endpoint_walk *w)
{
	return l && w && endpoint_listed(l, w);
}

static long endpoint_level(__u32 level, void *ctx)
{
	struct endpoint_walk *w = ctx;
	__u64 id = bpf_get_current_ancestor_cgroup_id(level);
	if (!id)
		return 1;
	struct ceiling *c = bpf_map_lookup_elem(&ceilings, &id);
	if (!c)
		return 0;
	if ((c->flags & CEILING_PENDING) || !(c->deny & DENY_NETWORK))
		return 0;
	bool audit = (c->flags & CEILING_AUDIT_ONLY) != 0;
	if (!audit)
		w->seen_deny = 1;
	struct endpoint_list *l = bpf_map_lookup_elem(&connect_allow, &id);
	if (l && endpoint_listed(l, w))
		return 0;
	if (audit)
		w->miss_audit = 1;
	else
		w->miss_deny = 1;
	return 0;
}

/*
 * endpoint_decision turns d, the network verdict of an operation that
 * network=false refuses (DECISION_DENIED or DECISION_AUDITED), into the
 * verdict with the allowed endpoints: 0 when every active ancestor denying
 * network lists w's endpoint, DECISION_AUDITED when only audit-only ones
 * miss it, else DECISION_DENIED.
 *
 * When resolve() saw exactly one such ancestor (SEEN_NET_ONE, walk.h),
 * the one that decided d, its list alone decides and nothing is walked:
 * a socket() under a typical agent ceiling cost about 1,500 instructions
 * in this walk (docs/performance.md).
 *
 * Fail direction: no list on the deepest ancestor that decided, a task
 * deeper than MAX_CGROUP_LEVEL, or a denial with no enforcing ancestor
 * found by the walk (the entry went away under us) keep d.
 */
static __always_inline int endpoint_decision(const struct effective *e, int d,
					     struct endpoint_walk *w)
{
	if (!d)
		return 0;
	__u64 id = d == DECISION_DENIED ? e->deny_cgid[0] : e->audit_cgid[0];
	struct endpoint_list *l = bpf_map_lookup_elem(&connect_allow, &id);
	if (!l)
		return d;
	/* One ancestor denies (or audits) network, and it decided d: its
	 * list alone is the meet. SEEN_NET_ONE also says the walk reached
	 * the task's own level: the task is not deeper than
	 * MAX_CGROUP_LEVEL, which the walk below asks the kernel. */
	if (e->seen & SEEN_NET_ONE)
		return endpoint_in_list(l, w) ? 0 : d;
	if (bpf_get_current_ancestor_cgroup_id(MAX_CGROUP_LEVEL))
		return d;
	LOOP_STATE_UNKNOWN(*w, miss_deny, seen_deny); /* loop.h */
	bpf_loop(MAX_CGROUP_LEVEL, endpoint_level, w, 0);
	if (w->miss_deny || (d == DECISION_DENIED && !w->seen_deny))
		return DECISION_DENIED;
	if (w->miss_audit)
		return DECISION_AUDITED;
	return 0;
}

/* inet_kind: the endpoint kind a socket of this type and protocol reaches
 * (protocol 0, at socket creation, is the family's default: TCP for
 * SOCK_STREAM, UDP for SOCK_DGRAM); 0 for every other socket (raw, ping,
 * SCTP, MPTCP, UDP-Lite, ...). */
static __always_inline __u32 inet_kind(__u32 type, __u32 protocol)
{
	if (type == SOCK_STREAM && (protocol == IPPROTO_TCP || protocol == IPPROTO_IP))
		return ENDPOINT_TCP;
	if (type == SOCK_DGRAM && (protocol == IPPROTO_UDP || protocol == IPPROTO_IP))
		return ENDPOINT_UDP;
	return 0;
}

/* sock_kind: inet_kind of an existing AF_INET/AF_INET6 socket (its
 * protocol is resolved by then: never IPPROTO_IP for TCP or UDP). */
static __always_inline __u32 sock_kind(struct socket *sock)
{
	/* Typed (BTF) loads: sock is a hook's argument or the socket of a
	 * file (bpf_sock_from_file); every inet operation under a network
	 * ceiling asks. */
	struct sock *sk = sock->sk;
	if (!sk)
		return 0;
	__u16 family = sk->__sk_common.skc_family;
	if (family != AF_INET && family != AF_INET6)
		return 0;
	__u32 protocol = sk->sk_protocol;
	if (protocol == IPPROTO_IP)
		return 0;
	return inet_kind(sk->sk_type, protocol);
}

/* ipv4_mapped_b: the second word of ::ffff:a.b.c.d for s_addr (network
 * order as loaded from memory). */
static __always_inline __u64 ipv4_mapped_b(__u32 s_addr)
{
	return ((__u64)s_addr << 32) | 0xffff0000ULL;
}

/* sockaddr_endpoint fills w->want's address and port from a connect or
 * send address of addrlen bytes. False (no endpoint: deny) for any family
 * but AF_INET/AF_INET6 (AF_UNSPEC included: udp_sendmsg reads an address
 * from it) and for a length the kernel would refuse. */
static __always_inline bool sockaddr_endpoint(struct sockaddr *sa, int addrlen,
					      struct endpoint_walk *w)
{
	if (!sa)
		return false;
	__u16 family = 0;
	bpf_probe_read_kernel(&family, sizeof(family), &sa->sa_family);
	if (family == AF_INET) {
		if (addrlen < (int)sizeof(struct sockaddr_in))
			return false;
		struct sockaddr_in in = {};
		bpf_probe_read_kernel(&in, sizeof(in), sa);
		w->want.port = bpf_ntohs(in.sin_port);
		w->want.a = 0;
		w->want.b = ipv4_mapped_b(in.sin_addr.s_addr);
		return true;
	}
	if (family == AF_INET6) {
		if (addrlen < 24) /* SIN6_LEN_RFC2133 */
			return false;
		__u64 addr[2] = {};
		bpf_probe_read_kernel(addr, sizeof(addr),
				      &((struct sockaddr_in6 *)sa)->sin6_addr);
		__u16 port = 0;
		bpf_probe_read_kernel(&port, sizeof(port),
				      &((struct sockaddr_in6 *)sa)->sin6_port);
		w->want.port = bpf_ntohs(port);
		w->want.a = addr[0];
		w->want.b = addr[1];
		return true;
	}
	return false;
}

/* peer_endpoint fills w->want's address and port from the peer an inet
 * socket is connected (or connecting) to. False when it has none (port 0:
 * unconnected, listening) or is not inet. */
static __always_inline bool peer_endpoint(struct socket *sock,
					  struct endpoint_walk *w)
{
	struct sock *sk = sock->sk; /* typed loads, as sock_kind's */
	if (!sk)
		return false;
	__u16 family = sk->__sk_common.skc_family;
	__u16 dport = sk->__sk_common.skc_dport;
	if (!dport)
		return false;
	w->want.port = bpf_ntohs(dport);
	if (family == AF_INET) {
		w->want.a = 0;
		w->want.b = ipv4_mapped_b(sk->__sk_common.skc_daddr);
		return true;
	}
	if (family == AF_INET6) {
		__u64 addr[2] = {};
		bpf_probe_read_kernel(addr, sizeof(addr),
				      &sk->__sk_common.skc_v6_daddr);
		w->want.a = addr[0];
		w->want.b = addr[1];
		return true;
	}
	return false;
}

/* unix_endpoint fills w->want with the identity of the socket file a unix
 * peer is bound to (unix_sk(peer)->path; an accepted stream socket carries
 * its listener's). False for abstract and unbound sockets. */
static __always_inline bool unix_endpoint(struct sock *peer,
					  struct endpoint_walk *w)
{
	if (!peer)
		return false;
	struct unix_sock *u = (struct unix_sock *)peer;
	struct dentry *d = BPF_CORE_READ(u, path.dentry);
	if (!d)
		return false;
	struct inode *ino = BPF_CORE_READ(d, d_inode);
	if (!ino)
		return false;
	w->want.kind = ENDPOINT_UNIX;
	w->want.port = 0;
	w->want.a = BPF_CORE_READ(ino, i_sb, s_dev);
	w->want.b = BPF_CORE_READ(ino, i_ino);
	w->want.c = inode_ctime_ns(ino);
	return true;
}

/*
 * inet_peer_decision: the verdict d (network denied or audited) for an
 * operation on an existing inet socket that needs nothing but its peer to
 * be listed: reads and writes through the file, recvmsg, a send without
 * address. An unconnected socket, or one of a kind no endpoint can have,
 * keeps d.
 */
static __always_inline int inet_peer_decision(const struct effective *e, int d,
					      struct socket *sock)
{
	struct endpoint_walk w = {};
	w.want.kind = sock_kind(sock);
	if (!w.want.kind || !peer_endpoint(sock, &w))
		return d;
	return endpoint_decision(e, d, &w);
}

#endif /* ENFORCERD_ENDPOINTS_H */
