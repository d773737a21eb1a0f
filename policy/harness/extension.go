package harness

import (
	"errors"
	"fmt"
)

// ExtensionPermission is a permission an extension declares in its manifest
// and must hold before it receives the matching hook events (seed 004).
type ExtensionPermission uint8

// The closed extension-permission vocabulary, in declaration order. Each is
// one bit of an ExtensionPermissionSet.
const (
	ExtToolsIntercept           ExtensionPermission = iota // tools.intercept: before/after tool-call hooks
	ExtToolsTransformOutput                                // tools.transform_output: rewrite a tool's output (separate consent)
	ExtToolsOverride                                       // tools.override: reserved, rejected by the strict parser
	ExtLLMContent                                          // privacy.llm_content: read model input/output
	ExtSessionLifecycle                                    // session.lifecycle: session lifecycle hooks
	ExtSessionDrive                                        // session.drive: propose turns after local user consent; grants no hook
	ExtToolsRegister                                       // tools.register: register new tools
	ExtProvidersRegister                                   // providers.register: register model providers
	ExtContextProvidersRegister                            // context_providers.register: accepted and inert
	ExtMemoryRead                                          // memory.read: memory.query
	ExtMemoryWrite                                         // memory.write: memory.append
	ExtConfigWrite                                         // config.write: its own namespaced config
	ExtConfigSubscribe                                     // config.subscribe: hot-reload of its own config
	ExtAudioInput                                          // audio.input: capture audio
	ExtAudioOutput                                         // audio.output: play audio
)

// AllExtensionPermissions lists every ExtensionPermission in declaration
// order. A test pins it against the declared constants.
var AllExtensionPermissions = []ExtensionPermission{
	ExtToolsIntercept, ExtToolsTransformOutput, ExtToolsOverride, ExtLLMContent,
	ExtSessionLifecycle, ExtSessionDrive, ExtToolsRegister, ExtProvidersRegister,
	ExtContextProvidersRegister, ExtMemoryRead, ExtMemoryWrite, ExtConfigWrite,
	ExtConfigSubscribe, ExtAudioInput, ExtAudioOutput,
}

// String is the wire name ("tools.intercept", ...); "" outside the vocabulary.
func (p ExtensionPermission) String() string {
	switch p {
	case ExtToolsIntercept:
		return "tools.intercept"
	case ExtToolsTransformOutput:
		return "tools.transform_output"
	case ExtToolsOverride:
		return "tools.override"
	case ExtLLMContent:
		return "privacy.llm_content"
	case ExtSessionLifecycle:
		return "session.lifecycle"
	case ExtSessionDrive:
		return "session.drive"
	case ExtToolsRegister:
		return "tools.register"
	case ExtProvidersRegister:
		return "providers.register"
	case ExtContextProvidersRegister:
		return "context_providers.register"
	case ExtMemoryRead:
		return "memory.read"
	case ExtMemoryWrite:
		return "memory.write"
	case ExtConfigWrite:
		return "config.write"
	case ExtConfigSubscribe:
		return "config.subscribe"
	case ExtAudioInput:
		return "audio.input"
	case ExtAudioOutput:
		return "audio.output"
	}
	return ""
}

// ParseExtensionPermission parses a wire name exactly (case-sensitive, no
// trimming: "session_drive" and "Tools.Intercept" are unknown).
func ParseExtensionPermission(s string) (ExtensionPermission, bool) {
	if s == "" {
		return 0, false
	}
	for _, p := range AllExtensionPermissions {
		if p.String() == s {
			return p, true
		}
	}
	return 0, false
}

// Reserved reports whether p is reserved for a future implementation; the
// strict parser rejects it. Only tools.override is.
func (p ExtensionPermission) Reserved() bool { return p == ExtToolsOverride }

// ExtensionPermissionSet is a set of extension permissions (a bitset value).
type ExtensionPermissionSet uint16

// Has reports whether p is in s.
func (s ExtensionPermissionSet) Has(p ExtensionPermission) bool {
	return p < 16 && s&(1<<p) != 0
}

// Grant returns s plus p (p outside the vocabulary is ignored).
func (s ExtensionPermissionSet) Grant(p ExtensionPermission) ExtensionPermissionSet {
	if p.String() == "" {
		return s
	}
	return s | 1<<p
}

// Len returns the number of permissions in s.
func (s ExtensionPermissionSet) Len() int {
	n := 0
	for _, p := range AllExtensionPermissions {
		if s.Has(p) {
			n++
		}
	}
	return n
}

// IsEmpty reports whether s holds no permission.
func (s ExtensionPermissionSet) IsEmpty() bool { return s.Len() == 0 }

// Names returns the wire names in s, in declaration order.
func (s ExtensionPermissionSet) Names() []string {
	var out []string
	for _, p := range AllExtensionPermissions {
		if s.Has(p) {
			out = append(out, p.String())
		}
	}
	return out
}

// ErrUnknownExtensionPermission and ErrReservedExtensionPermission are the
// sentinels the strict parser's errors wrap.
var (
	ErrUnknownExtensionPermission  = errors.New("unknown extension permission")
	ErrReservedExtensionPermission = errors.New("reserved extension permission is not implemented yet")
)

// ParseExtensionPermissions is the strict manifest parser (seed 004
// try_from_strings): every name must parse and must not be reserved. The
// first offending name fails the whole manifest with an error that quotes it
// and wraps ErrUnknownExtensionPermission or ErrReservedExtensionPermission;
// on error the set is empty. Repeats are harmless.
func ParseExtensionPermissions(names []string) (ExtensionPermissionSet, error) {
	var s ExtensionPermissionSet
	for _, n := range names {
		p, ok := ParseExtensionPermission(n)
		if !ok {
			return 0, fmt.Errorf("%w: %q", ErrUnknownExtensionPermission, n)
		}
		if p.Reserved() {
			return 0, fmt.Errorf("%w: %q", ErrReservedExtensionPermission, n)
		}
		s = s.Grant(p)
	}
	return s, nil
}

// ParseExtensionPermissionsLenient skips names that do not parse (seed 004
// from_strings). Only for callers that already validated the manifest;
// manifests go through ParseExtensionPermissions so typos fail loudly.
// Reserved names are kept, as the seed's lenient parser keeps them.
func ParseExtensionPermissionsLenient(names []string) ExtensionPermissionSet {
	var s ExtensionPermissionSet
	for _, n := range names {
		if p, ok := ParseExtensionPermission(n); ok {
			s = s.Grant(p)
		}
	}
	return s
}

// HookKind is an extension hook event (the hooks seed 004's tests use).
type HookKind string

// The hook vocabulary. Seed 004 only shows the hooks its tests exercise;
// this port covers exactly those.
const (
	HookBeforeToolCall HookKind = "before_tool_call"
	HookAfterToolCall  HookKind = "after_tool_call"
	HookBeforeMessage  HookKind = "before_message"
	HookOnSessionStart HookKind = "on_session_start"
)

// AllHookKinds lists every HookKind.
var AllHookKinds = []HookKind{HookBeforeToolCall, HookAfterToolCall, HookBeforeMessage, HookOnSessionStart}

// RequiredPermission is the permission an extension needs to subscribe to
// h; ok is false for a hook outside the vocabulary (nobody may subscribe).
func (h HookKind) RequiredPermission() (p ExtensionPermission, ok bool) {
	switch h {
	case HookBeforeToolCall, HookAfterToolCall:
		return ExtToolsIntercept, true
	case HookBeforeMessage:
		return ExtLLMContent, true
	case HookOnSessionStart:
		return ExtSessionLifecycle, true
	}
	return 0, false
}

// AllowsHook reports whether s holds the permission h requires.
func (s ExtensionPermissionSet) AllowsHook(h HookKind) bool {
	p, ok := h.RequiredPermission()
	return ok && s.Has(p)
}
