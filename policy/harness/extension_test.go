package harness

import (
	"errors"
	"strings"
	"testing"
)

func TestParseValidExtensionPermissions(t *testing.T) {
	for s, want := range map[string]ExtensionPermission{
		"tools.intercept":            ExtToolsIntercept,
		"tools.transform_output":     ExtToolsTransformOutput,
		"tools.override":             ExtToolsOverride,
		"privacy.llm_content":        ExtLLMContent,
		"session.lifecycle":          ExtSessionLifecycle,
		"session.drive":              ExtSessionDrive,
		"tools.register":             ExtToolsRegister,
		"providers.register":         ExtProvidersRegister,
		"context_providers.register": ExtContextProvidersRegister,
		"memory.read":                ExtMemoryRead,
		"memory.write":               ExtMemoryWrite,
		"config.write":               ExtConfigWrite,
		"config.subscribe":           ExtConfigSubscribe,
		"audio.input":                ExtAudioInput,
		"audio.output":               ExtAudioOutput,
	} {
		if got, ok := ParseExtensionPermission(s); !ok || got != want {
			t.Errorf("ParseExtensionPermission(%q) = %v, %v", s, got, ok)
		}
	}
	for _, bad := range []string{"invalid", "", "session_drive", "Tools.Intercept", " tools.intercept", "tools.intercept "} {
		if _, ok := ParseExtensionPermission(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestAllExtensionPermissionsRoundTrip(t *testing.T) {
	for _, p := range AllExtensionPermissions {
		if got, ok := ParseExtensionPermission(p.String()); !ok || got != p {
			t.Errorf("%q does not round-trip", p)
		}
		if p.Reserved() != (p == ExtToolsOverride) {
			t.Errorf("%q reserved = %v", p, p.Reserved())
		}
	}
}

func TestSessionDriveIsActiveAndGrantsNoHooks(t *testing.T) {
	s, err := ParseExtensionPermissions([]string{"session.drive"})
	if err != nil || !s.Has(ExtSessionDrive) || s.Has(ExtSessionLifecycle) {
		t.Fatalf("%v %v", s.Names(), err)
	}
	for _, h := range AllHookKinds {
		if s.AllowsHook(h) {
			t.Errorf("session.drive allows %s", h)
		}
	}
}

func TestLenientParserSkipsInvalid(t *testing.T) {
	s := ParseExtensionPermissionsLenient([]string{"tools.intercept", "bogus", "session.lifecycle"})
	if s.Len() != 2 || !s.Has(ExtToolsIntercept) || !s.Has(ExtSessionLifecycle) || s.Has(ExtLLMContent) {
		t.Fatal(s.Names())
	}
}

func TestAllowsHookChecksTheRequiredPermission(t *testing.T) {
	var s ExtensionPermissionSet
	if s.AllowsHook(HookBeforeToolCall) || !s.IsEmpty() || s.Len() != 0 {
		t.Fatal("empty set allows a hook")
	}
	s = s.Grant(ExtToolsIntercept)
	if !s.AllowsHook(HookBeforeToolCall) || !s.AllowsHook(HookAfterToolCall) || s.AllowsHook(HookBeforeMessage) {
		t.Fatal("tools.intercept hooks wrong")
	}
	if s.AllowsHook(HookKind("on_anything")) {
		t.Fatal("an unknown hook is allowed")
	}
	if s.Grant(ExtensionPermission(40)) != s || s.Has(ExtensionPermission(200)) {
		t.Fatal("out-of-vocabulary permission changed the set")
	}
}

func TestStrictParserRejectsUnknownAndReserved(t *testing.T) {
	s, err := ParseExtensionPermissions([]string{"providers.register"})
	if err != nil || !s.Has(ExtProvidersRegister) {
		t.Fatal(err)
	}
	_, err = ParseExtensionPermissions([]string{"tools.intercept", "tools.override"})
	if !errors.Is(err, ErrReservedExtensionPermission) || !strings.Contains(err.Error(), `"tools.override"`) {
		t.Fatalf("reserved: %v", err)
	}
	s, err = ParseExtensionPermissions([]string{"tools.intercept", "tools.intercpt"})
	if !errors.Is(err, ErrUnknownExtensionPermission) || !strings.Contains(err.Error(), `"tools.intercpt"`) || s != 0 {
		t.Fatalf("unknown: %v %v", err, s)
	}
	for _, names := range [][]string{{"memory.read", "memory.write"}, {"audio.input", "audio.output"}} {
		s, err := ParseExtensionPermissions(names)
		if err != nil || s.Len() != 2 {
			t.Errorf("%v: %v", names, err)
		}
	}
	s, err = ParseExtensionPermissions([]string{"context_providers.register"})
	if err != nil || !s.Has(ExtContextProvidersRegister) || s.Has(ExtProvidersRegister) {
		t.Fatal("context_providers.register")
	}
	if s, err := ParseExtensionPermissions(nil); err != nil || !s.IsEmpty() {
		t.Fatal("empty manifest")
	}
}

func FuzzParseExtensionPermissions(f *testing.F) {
	f.Add("tools.intercept\nsession.lifecycle")
	f.Add("tools.override")
	f.Add("bogus\nmemory.read")
	f.Add("")
	f.Fuzz(func(t *testing.T, manifest string) {
		names := strings.Split(manifest, "\n")
		s, err := ParseExtensionPermissions(names)
		lenient := ParseExtensionPermissionsLenient(names)
		if err != nil {
			if s != 0 || !(errors.Is(err, ErrUnknownExtensionPermission) || errors.Is(err, ErrReservedExtensionPermission)) {
				t.Fatalf("%v %v", s, err)
			}
			return
		}
		if s.Has(ExtToolsOverride) {
			t.Fatal("strict parser granted a reserved permission")
		}
		if s != lenient {
			t.Fatalf("strict %v != lenient %v on valid input", s.Names(), lenient.Names())
		}
		for _, n := range names {
			p, ok := ParseExtensionPermission(n)
			if !ok || !s.Has(p) || p.String() != n {
				t.Fatalf("%q not in the parsed set", n)
			}
		}
	})
}
