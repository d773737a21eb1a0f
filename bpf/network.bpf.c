//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * network=false at BPF LSM socket hooks (README "What is enforced"):
 * no socket of any family but AF_UNIX may be created or used, and no AF_UNIX
 * connect or send may reach a socket created outside the sandbox.
 *
 * Decisions are made on kernel objects (the struct socket, the peer struct
 * sock and the cgroup it was created in), never on syscall names, so every
 * path that reaches them is covered: connect, sendto/sendmsg/sendmmsg, TCP
 * fast open, io_uring, sockets inherited or passed in over SCM_RIGHTS.
 *
 * Every program first honours the verdict of the LSM programs before it
 * (if (ret) return ret).
 */
#include "net.h"

char LICENSE[] SEC("license") = "GPL";

/* fill_sockaddr records the destination of a connect/sendto. */
static __always_inline void fill_sockaddr(struct event *ev, struct sockaddr *sa)
{
	if (!sa)
		return;
	__u16 family = 0;
	bpf_probe_read_kernel(&family, sizeof(family), &sa->sa_family);
	if (family == AF_INET) {
		struct sockaddr_in in = {};
		bpf_probe_read_kernel(&in, sizeof(in), sa);
		ev->port = bpf_ntohs(in.sin_port);
		__builtin_memcpy(ev->addr, &in.sin_addr, 4);
	} else if (family == AF_INET6) {
		struct sockaddr_in6 in6 = {};
		bpf_probe_read_kernel(&in6, sizeof(in6), sa);
		ev->port = bpf_ntohs(in6.sin6_port);
		__builtin_memcpy(ev->addr, &in6.sin6_addr, 16);
	}
}

/* Direct (BTF) loads: every send and receive on the host passes here. */
static __always_inline __u16 socket_family(struct socket *sock)
{
	struct sock *sk = sock->sk;
	return sk ? sk->__sk_common.skc_family : 0;
}

/* How an inet operation may be allowed by the listed endpoints
 * (endpoints.h; docs/design.md "Allowed endpoints"). */
enum inet_use {
	USE_NONE,    /* never: bind, listen, accept */
	USE_ADDRESS, /* connect: the address given must be listed */
	USE_SEND,    /* sendmsg: the address given, else the connected peer
		      * (always the peer where the kernel ignores the address:
		      * send_address_ignored); never with control messages */
	USE_PEER,    /* recvmsg, shutdown: the connected peer must be listed */
	USE_OPTION,  /* get/setsockopt: a socket of a listed kind, unconnected
		      * or connected to a listed peer */
};

/* send_address_ignored: a send on sock goes to its connected peer
 * whatever address it names: a TCP socket past TCP_CLOSE (connecting,
 * connected, closing). tcp_sendmsg reads msg_name only for MSG_FASTOPEN on
 * an unconnected socket, where it connects to it; on a socket passed in
 * connected to an unlisted peer, a listed address would otherwise let the
 * data reach that peer (N8). */
static __always_inline bool send_address_ignored(struct socket *sock, __u32 kind)
{
	if (kind != ENDPOINT_TCP)
		return false;
	struct sock *sk = sock->sk; /* typed loads: sock_kind found one */
	return !sk || sk->__sk_common.skc_state != TCP_CLOSE;
}

/*
 * deny_inet handles every hook that "uses" a socket: any family but AF_UNIX is
 * denied under network=false, unless the listed endpoints allow this use
 * (use, sa/addrlen; for a send, msg: its address and control messages,
 * read only once a network ceiling applies). Closes N1 (unconnected sendto/sendmmsg), N2
 * (io_uring reaches the same hooks), N3 (other families) for sockets that
 * exist already (inherited or passed in), and N8 (endpoints).
 */
static __always_inline int deny_inet(struct socket *sock, __u16 hook,
				     struct sockaddr *sa, int addrlen,
				     struct msghdr *msg, enum inet_use use)
{
	if (socket_family(sock) == AF_UNIX)
		return 0;
	struct effective e; /* resolve_for() writes it */
	if (!resolve_for(&e, DENY_NETWORK))
		return 0;
	int d = verdict(&e, DENY_NETWORK);
	if (!d)
		return 0;
	if (msg) {
		/* A send's header (typed loads), read only now that a
		 * network ceiling applies: its address, and N8: control
		 * messages (IP_RETOPTS source routes, IPV6_RTHDR,
		 * IP_PKTINFO, ...) are never allowed with endpoints. */
		sa = msg->msg_name;
		addrlen = msg->msg_namelen;
		if (msg->msg_controllen)
			use = USE_NONE;
	}
	struct endpoint_walk w = {};
	__u32 kind = use == USE_NONE ? 0 : sock_kind(sock);
	if (kind) {
		w.want.kind = kind;
		bool ok;
		if (use == USE_ADDRESS || (use == USE_SEND && sa && !send_address_ignored(sock, kind)))
			ok = sockaddr_endpoint(sa, addrlen, &w);
		else if (use == USE_OPTION && !BPF_CORE_READ(sock, sk, __sk_common.skc_dport)) {
			/* unconnected: options before connect */
			w.want.kind = 0;
			w.kinds = 1U << kind;
			ok = true;
		} else
			ok = peer_endpoint(sock, &w);
		if (ok)
			d = endpoint_decision(&e, d, &w);
		if (!d)
			return 0;
	}
	record_event(&e, hook, d, DENY_NETWORK, {
		fill_socket(ev, sock);
		fill_sockaddr(ev, sa);
	});
	return verdict_ret(d);
}

/* N3: creation of any non-AF_UNIX socket (AF_INET/6, AF_PACKET, raw, ping,
 * AF_NETLINK, AF_VSOCK, AF_ALG, ...), including io_uring IORING_OP_SOCKET. */
SEC("lsm/socket_create")
int BPF_PROG(socket_create, int family, int type, int protocol, int kern,
	     int ret)
{
	if (ret)
		return ret; /* an earlier LSM already denied */
	if (kern || family == AF_UNIX)
		return 0; /* kernel-internal sockets; unix is governed by peers */
	struct effective e; /* resolve_for() writes it */
	if (!resolve_for(&e, DENY_NETWORK))
		return 0;
	int d = verdict(&e, DENY_NETWORK);
	if (!d)
		return 0;
	/* N8: a TCP or UDP socket when the ceiling lists such endpoints; it
	 * can reach nothing but them (the hooks below). */
	__u32 kind = inet_kind(type, protocol);
	if (kind && (family == AF_INET || family == AF_INET6)) {
		struct endpoint_walk w = {.kinds = 1U << kind};
		d = endpoint_decision(&e, d, &w);
		if (!d)
			return 0;
	}
	record_event(&e, HOOK_SOCKET_CREATE, d, DENY_NETWORK, {
		ev->object_kind = OBJ_SOCKET;
		ev->family = family;
		ev->sock_type = type;
		ev->protocol = protocol;
	});
	return verdict_ret(d);
}

SEC("lsm/socket_bind")
int BPF_PROG(socket_bind, struct socket *sock, struct sockaddr *address,
	     int addrlen, int ret)
{
	if (ret)
		return ret;
	return deny_inet(sock, HOOK_SOCKET_BIND, address, addrlen, NULL, USE_NONE);
}

/* N2/N4: connect of an existing non-unix socket (inherited, passed in, or
 * io_uring IORING_OP_CONNECT). AF_UNIX connects are judged by peer below. */
SEC("lsm/socket_connect")
int BPF_PROG(socket_connect, struct socket *sock, struct sockaddr *address,
	     int addrlen, int ret)
{
	if (ret)
		return ret;
	return deny_inet(sock, HOOK_SOCKET_CONNECT, address, addrlen, NULL, USE_ADDRESS);
}

SEC("lsm/socket_listen")
int BPF_PROG(socket_listen, struct socket *sock, int backlog, int ret)
{
	if (ret)
		return ret;
	return deny_inet(sock, HOOK_SOCKET_LISTEN, NULL, 0, NULL, USE_NONE);
}

SEC("lsm/socket_accept")
int BPF_PROG(socket_accept, struct socket *sock, struct socket *newsock,
	     int ret)
{
	if (ret)
		return ret;
	return deny_inet(sock, HOOK_SOCKET_ACCEPT, NULL, 0, NULL, USE_NONE);
}

/*
 * N1: sendto/sendmsg/sendmmsg on unconnected inet sockets, TCP fast open
 * (MSG_FASTOPEN) and io_uring sends all pass security_socket_sendmsg. For
 * AF_UNIX stream sockets connected before the ceiling applied (inherited or
 * passed in), the connected peer decides (N4).
 */
SEC("lsm/socket_sendmsg")
int BPF_PROG(socket_sendmsg, struct socket *sock, struct msghdr *msg, int size,
	     int ret)
{
	if (ret)
		return ret;
	/* Both rules are verdicts on the network bit alone: a process
	 * outside every sandbox, or under a ceiling that allows network,
	 * returns on this CPU's answer, before its socket and message
	 * header are read. */
	if (answer_allows(this_cpu_answer(), DENY_NETWORK))
		return 0;
	if (socket_family(sock) != AF_UNIX)
		return deny_inet(sock, HOOK_SOCKET_SENDMSG, NULL, 0, msg, USE_SEND);
	return check_unix_peer(sock, NULL, HOOK_SOCKET_SENDMSG, true);
}

SEC("lsm/socket_recvmsg")
int BPF_PROG(socket_recvmsg, struct socket *sock, struct msghdr *msg, int size,
	     int flags, int ret)
{
	if (ret)
		return ret;
	return deny_inet(sock, HOOK_SOCKET_RECVMSG, NULL, 0, NULL, USE_PEER);
}

/* N4/N5: connect to a listening unix socket (filesystem or abstract) that was
 * created outside the sandbox: container engine, D-Bus, resolver. */
SEC("lsm/unix_stream_connect")
int BPF_PROG(unix_stream_connect, struct sock *sock, struct sock *other,
	     struct sock *newsk, int ret)
{
	if (ret)
		return ret;
	return check_unix_peer(sock->sk_socket, other, HOOK_UNIX_STREAM_CONNECT, false);
}

/* N4/N5: datagram connect and every datagram send to a unix socket created
 * outside the sandbox. */
SEC("lsm/unix_may_send")
int BPF_PROG(unix_may_send, struct socket *sock, struct socket *other, int ret)
{
	if (ret)
		return ret;
	/* A typed load: every datagram on the host passes here. */
	struct sock *osk = other->sk;
	return check_unix_peer(sock, osk, HOOK_UNIX_MAY_SEND, false);
}

/* N6: options and shutdown of an inet socket inherited or passed in:
 * getsockopt(TCP_ZEROCOPY_RECEIVE) moves received data into a mapping
 * without recvmsg; setsockopt and shutdown act on the connection (shutdown
 * sends a FIN). AF_UNIX sockets keep their options (SO_PEERCRED, ...). */
SEC("lsm/socket_getsockopt")
int BPF_PROG(socket_getsockopt, struct socket *sock, int level, int optname,
	     int ret)
{
	if (ret)
		return ret;
	return deny_inet(sock, HOOK_SOCKET_GETSOCKOPT, NULL, 0, NULL, USE_OPTION);
}

SEC("lsm/socket_setsockopt")
int BPF_PROG(socket_setsockopt, struct socket *sock, int level, int optname,
	     int ret)
{
	if (ret)
		return ret;
	/* N8: options that change where packets go (IP source routes,
	 * IPV6_RTHDR, ...) stay denied: only the socket level, TCP and UDP
	 * options, and IPV6_V6ONLY. */
	bool plain = level == SOL_SOCKET || level == IPPROTO_TCP ||
		     level == IPPROTO_UDP ||
		     (level == IPPROTO_IPV6 && optname == IPV6_V6ONLY);
	return deny_inet(sock, HOOK_SOCKET_SETSOCKOPT, NULL, 0, NULL,
			 plain ? USE_OPTION : USE_NONE);
}

SEC("lsm/socket_shutdown")
int BPF_PROG(socket_shutdown, struct socket *sock, int how, int ret)
{
	if (ret)
		return ret;
	return deny_inet(sock, HOOK_SOCKET_SHUTDOWN, NULL, 0, NULL, USE_PEER);
}
