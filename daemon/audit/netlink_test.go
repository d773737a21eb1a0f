package audit

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUserMessage: one netlink message of the given type, a request that
// asks for an acknowledgement, its length counting the text and its NUL,
// padded to the netlink alignment; an empty text is the NUL alone (the
// probe: too short for the kernel to log).
func TestUserMessage(t *testing.T) {
	for _, text := range []string{`record="denial" res=failed`, "", "abc"} {
		b := userMessage(unix.AUDIT_USER_AVC, 7, text)
		if len(b)%unix.NLMSG_ALIGNTO != 0 {
			t.Errorf("%q: %d bytes, not aligned", text, len(b))
		}
		msgs, err := syscall.ParseNetlinkMessage(b)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%q: %v, %d messages", text, err, len(msgs))
		}
		h := msgs[0].Header
		if h.Type != unix.AUDIT_USER_AVC || h.Flags != unix.NLM_F_REQUEST|unix.NLM_F_ACK || h.Seq != 7 || h.Pid != 0 ||
			int(h.Len) != unix.NLMSG_HDRLEN+len(text)+1 {
			t.Errorf("%q: header %+v", text, h)
		}
		if got := string(msgs[0].Data[:len(text)+1]); got != text+"\x00" {
			t.Errorf("payload %q, want %q and a NUL", got, text)
		}
	}
}
