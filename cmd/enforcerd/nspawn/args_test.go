package nspawn

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseNspawnArgs(t *testing.T) {
	cases := []struct {
		args    []string
		dir     string
		machine string
		command []string
		keep    bool
		path    string
		err     string
	}{
		{args: []string{"-D", "/m", "/bin/agent", "-b"}, dir: "/m", command: []string{"/bin/agent", "-b"}},
		{args: []string{"--register=no", "--keep-unit", "-qD/m", "--machine", "a1", "agent"}, dir: "/m", machine: "a1", command: []string{"agent"}, keep: true},
		{args: []string{"--directory=/m", "-E", "PATH=/opt/bin", "--chdir", "/w", "--", "-x"}, dir: "/m", command: []string{"-x"}, path: "/opt/bin"},
		{args: []string{"--private-users", "--volatile", "-D", "/m", "agent"}, dir: "/m", command: []string{"agent"}},
		{args: []string{"-D", "/m", "--boot"}, err: "--boot is refused"},
		{args: []string{"-bD", "/m"}, err: "-b is refused"},
		{args: []string{"-qb", "-D", "/m"}, err: "-b is refused"},
		{args: []string{"--oci-bundle=/b", "agent"}, err: "--oci-bundle is refused"},
		{args: []string{"--oci-bundle", "/b", "agent"}, err: "--oci-bundle is refused"},
		{args: []string{"-i", "/img.raw", "agent"}, err: "-i is refused"},
		{args: []string{"-x", "-D", "/m", "agent"}, err: "-x is refused"},
		{args: []string{"-D", "/m"}, err: "no command"},
		{args: []string{"agent"}, err: "no -D/--directory"},
		{args: []string{"-D"}, err: "lacks its value"},
		{args: []string{"--machine"}, err: "lacks its value"},
	}
	for _, tc := range cases {
		a, err := parseNspawnArgs(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		want := tc.path
		if want == "" {
			want = nspawnDefaultPath
		}
		if a.directory != tc.dir || a.machine != tc.machine || !slices.Equal(a.command, tc.command) || a.keepUnit != tc.keep || a.envPath != want {
			t.Errorf("%q: got %+v", tc.args, a)
		}
	}
}

func TestParseNspawnSettings(t *testing.T) {
	cases := []struct {
		text   string
		boot   bool
		set    bool
		params []string
		err    string
	}{
		{text: "[Exec]\nBoot=no\nParameters=/usr/bin/agent --serve\n", set: true, params: []string{"/usr/bin/agent", "--serve"}},
		{text: "[Exec]\nBoot=off\nBoot=yes\n", set: true, boot: true},
		{text: "[Exec]\nParameters=a b\nParameters=\nParameters=c\n[Network]\nBoot=no\n", params: []string{"c"}},
		{text: "[Files]\nBind=/x\n"},
		{text: "[Exec]\nBoot=maybe\n", err: "not a boolean"},
		{text: "[Exec]\nParameters=sh -c 'x'\n", err: "quotes"},
		{text: "[Exec\nBoot=no\n", err: "parse"},
	}
	for _, tc := range cases {
		s, err := parseNspawnSettings(tc.text)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.text, err, tc.err)
			}
			continue
		}
		if err != nil || s.boot != tc.boot || s.bootSet != tc.set || !slices.Equal(s.parameters, tc.params) {
			t.Errorf("%q: got %+v, %v", tc.text, s, err)
		}
	}
}

// TestPrestartMachine: --prestart refuses a machine without a trusted
// .nspawn file, or whose file does not say Boot=no, or names no command;
// the first file found wins (/etc before /run, as nspawn reads them).
func TestPrestartMachine(t *testing.T) {
	etc, run := t.TempDir(), t.TempDir()
	old := nspawnSettingsDirs
	nspawnSettingsDirs = []string{etc, run}
	t.Cleanup(func() { nspawnSettingsDirs = old })
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name+".nspawn"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(etc, "good", "[Exec]\nBoot=no\nParameters=/usr/bin/agent\n")
	write(run, "good", "[Exec]\nBoot=yes\n")
	write(run, "runonly", "[Exec]\nBoot=no\nParameters=agent x\n")
	write(etc, "boots", "[Exec]\nParameters=/usr/bin/agent\n")
	write(etc, "nocmd", "[Exec]\nBoot=no\n")
	for _, tc := range []struct {
		name, err string
		command   []string
	}{
		{name: "good", command: []string{"/usr/bin/agent"}},
		{name: "runonly", command: []string{"agent", "x"}},
		{name: "boots", err: "the machine boots"},
		{name: "nocmd", err: "no Parameters="},
		{name: "missing", err: "no missing.nspawn"},
		{name: "a/b", err: "not a machine name"},
	} {
		m, _, err := prestartMachine(tc.name, "")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(m.command, tc.command) || m.directory != "/var/lib/machines/"+tc.name {
			t.Errorf("%s: %+v, %v", tc.name, m, err)
		}
	}
}

func FuzzParseNspawnArgs(f *testing.F) {
	for _, s := range []string{"-D\x00/m\x00agent", "-qbD/m", "--oci-bundle=/b", "--machine\x00x\x00--\x00-D", "-E\x00PATH=/x\x00-D/m\x00a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		a, err := parseNspawnArgs(args)
		if err != nil {
			return
		}
		if a.directory == "" || len(a.command) == 0 {
			t.Fatalf("%q: accepted without a directory or command: %+v", args, a)
		}
		// The same line that boots is refused.
		if _, err := parseNspawnArgs(append([]string{"--boot"}, args...)); err == nil {
			t.Fatalf("%q: accepted with --boot first", args)
		}
	})
}

func FuzzParseNspawnSettings(f *testing.F) {
	for _, s := range []string{"[Exec]\nBoot=no\nParameters=/a b\n", "[Exec]\nBoot=1\n", "[Exec\n", "[Exec]\nParameters='x'\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseNspawnSettings(s)
		if err != nil {
			return
		}
		for _, p := range st.parameters {
			if p == "" || strings.ContainsAny(p, " \t\n\"'\\") {
				t.Fatalf("%q: parameter %q", s, p)
			}
		}
	})
}
