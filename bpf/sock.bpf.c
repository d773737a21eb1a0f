//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * network=false at cgroup-BPF hooks: the second layer, and the only one on
 * hosts where BPF LSM programs cannot load. Attached once at the cgroup2 root
 * (effective for every descendant, BPF_F_ALLOW_MULTI); the ancestor walk in
 * resolve() picks the ceiling.
 *
 * Coverage is narrower than the LSM layer: the kernel runs cgroup/sock_create
 * only for AF_INET/AF_INET6 sockets, and connect/sendmsg hooks only for inet
 * addresses. enforcer.Coverage reports the difference as the partial gap
 * network-non-inet when only this layer is attached.
 *
 * Return 1 allows; 0 rejects with EPERM.
 */
/* cgroup-BPF programs: the cgroup id by its helper (walk.h). */
#define ENFORCERD_CGROUP_ID_HELPER
#include "enforcerd.h"
#include "endpoints.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * sock_verdict: network=false for one inet socket creation (port 0, no
 * address) or one connect/send to ip4 or ip6 and port. N8: a TCP or UDP
 * socket may be created when the ceiling lists endpoints of its kind, and
 * may connect or send to a listed endpoint of its kind (endpoints.h).
 */
static __always_inline int sock_verdict(__u16 hook, __u16 family, __u32 type,
					__u32 protocol, __u32 ip4,
					const __u32 *ip6, __u16 port)
{
	struct effective e; /* resolve_for() writes it */
	if (!resolve_for(&e, DENY_NETWORK))
		return 1;
	int v = verdict(&e, DENY_NETWORK);
	if (!v)
		return 1;
	__u32 kind = inet_kind(type, protocol);
	if (kind) {
		struct endpoint_walk w = {};
		if (hook == HOOK_CGROUP_SOCK_CREATE) {
			w.kinds = 1U << kind;
		} else {
			w.want.kind = kind;
			w.want.port = port;
			if (ip6) {
				w.want.a = (__u64)ip6[0] | ((__u64)ip6[1] << 32);
				w.want.b = (__u64)ip6[2] | ((__u64)ip6[3] << 32);
			} else {
				w.want.a = 0;
				w.want.b = ipv4_mapped_b(ip4);
			}
		}
		/* port 0 is never listed: no endpoint matches it */
		v = endpoint_decision(&e, v, &w);
		if (!v)
			return 1;
	}
	record_event(&e, hook, v, DENY_NETWORK, {
		ev->object_kind = OBJ_SOCKET;
		ev->family = family;
		ev->sock_type = type;
		ev->protocol = protocol;
		ev->port = port;
		if (ip6) {
			__builtin_memcpy(ev->addr, ip6, 16);
		} else {
			__builtin_memcpy(ev->addr, &ip4, 4);
		}
	});
	return v == DECISION_DENIED ? 0 : 1;
}

/* N3 (inet part): socket(AF_INET/AF_INET6, ...). */
SEC("cgroup/sock_create")
int sock_create(struct bpf_sock *sk)
{
	if (sk->family == AF_UNIX)
		return 1;
	return sock_verdict(HOOK_CGROUP_SOCK_CREATE, sk->family, sk->type,
			    sk->protocol, 0, NULL, 0);
}

SEC("cgroup/connect4")
int connect4(struct bpf_sock_addr *ctx)
{
	return sock_verdict(HOOK_CGROUP_CONNECT4, AF_INET, ctx->type,
			    ctx->protocol, ctx->user_ip4, NULL,
			    bpf_ntohs(ctx->user_port));
}

SEC("cgroup/connect6")
int connect6(struct bpf_sock_addr *ctx)
{
	__u32 ip6[4] = {ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2],
			ctx->user_ip6[3]};
	return sock_verdict(HOOK_CGROUP_CONNECT6, AF_INET6, ctx->type,
			    ctx->protocol, 0, ip6, bpf_ntohs(ctx->user_port));
}

/* N1: unconnected UDP sendto/sendmsg (connect4/6 never fire for these). */
SEC("cgroup/sendmsg4")
int sendmsg4(struct bpf_sock_addr *ctx)
{
	return sock_verdict(HOOK_CGROUP_SENDMSG4, AF_INET, ctx->type,
			    ctx->protocol, ctx->user_ip4, NULL,
			    bpf_ntohs(ctx->user_port));
}

SEC("cgroup/sendmsg6")
int sendmsg6(struct bpf_sock_addr *ctx)
{
	__u32 ip6[4] = {ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2],
			ctx->user_ip6[3]};
	return sock_verdict(HOOK_CGROUP_SENDMSG6, AF_INET6, ctx->type,
			    ctx->protocol, 0, ip6, bpf_ntohs(ctx->user_port));
}
