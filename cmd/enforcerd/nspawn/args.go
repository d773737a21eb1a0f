package nspawn

import (
	"fmt"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
)

// nspawnDefaultPath is the PATH systemd-nspawn gives a machine's command
// when none is set with --setenv.
const nspawnDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// nspawnArgs is what enforcerd reads of a systemd-nspawn command line.
type nspawnArgs struct {
	directory string   // -D/--directory
	machine   string   // -M/--machine
	chdir     string   // --chdir
	envPath   string   // PATH from -E/--setenv, else nspawnDefaultPath
	command   []string // the machine's command: the first argument that is no option, and the rest
	keepUnit  bool     // --keep-unit is given
}

// nspawnShortValue are the short options of systemd-nspawn 252 that
// take a value; every other letter takes none (h a b j q x n U P).
const nspawnShortValue = "DuLMSZipE"

// nspawnLongNoValue are the long options of systemd-nspawn that take no
// value; nspawnLongOptional those whose value is only given with "=".
// Every other long option takes a value ("--opt=V" or "--opt V").
var (
	nspawnLongNoValue = map[string]bool{
		"help": true, "version": true, "quiet": true, "no-pager": true, "ephemeral": true, "read-only": true,
		"as-pid2": true, "boot": true, "keep-unit": true, "private-network": true, "network-veth": true,
		"pipe": true, "private-users-chown": true,
	}
	nspawnLongOptional = map[string]bool{"private-users": true, "volatile": true}
)

// nspawnRefused are options enforcerd nspawn refuses, with why: a
// booting machine's init cannot mount under a ceiling, and the others run
// the machine from files other than -D DIR, where the daemon resolves
// the command, the write roots and the exec allow list (or, for
// --oci-bundle, ignore the bundle's hooks and annotations).
var nspawnRefused = map[string]string{
	"boot":       "a booting machine's init (PID 1) mounts file systems, which every ceiling denies; run the agent's command instead",
	"b":          "a booting machine's init (PID 1) mounts file systems, which every ceiling denies; run the agent's command instead",
	"oci-bundle": "systemd-nspawn never runs an OCI bundle's hooks and ignores its annotations; give -D DIR and the command",
	"image":      "the daemon resolves the machine's files in -D DIR; a disk image is not supported",
	"i":          "the daemon resolves the machine's files in -D DIR; a disk image is not supported",
	"ephemeral":  "an ephemeral snapshot is not the directory the daemon resolves the machine's files in",
	"x":          "an ephemeral snapshot is not the directory the daemon resolves the machine's files in",
	"template":   "the machine's files must be in -D DIR when the daemon resolves them",
}

// parseNspawnArgs reads a systemd-nspawn command line (without the
// program name) as nspawn's getopt does ("+" mode: options end at the
// first argument that is none, or after "--"). Errors: an option
// enforcerd nspawn refuses (nspawnRefused), an option that lacks its
// value, no -D/--directory, no command.
func parseNspawnArgs(args []string) (nspawnArgs, error) {
	a := nspawnArgs{envPath: nspawnDefaultPath}
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		var err error
		if long, ok := strings.CutPrefix(arg, "--"); ok {
			i, err = a.longOption(args, i, long)
		} else if len(arg) < 2 || arg[0] != '-' {
			break // the command
		} else {
			i, err = a.shortOptions(args, i)
		}
		if err != nil {
			return a, err
		}
	}
	a.command = args[i:]
	if a.directory == "" {
		return a, fmt.Errorf("no -D/--directory: enforcerd nspawn runs machines from a directory, where the daemon resolves their files")
	}
	if len(a.command) == 0 {
		return a, fmt.Errorf("no command for the machine after its options: give the agent's command (nspawn's default, a shell, is what a ceiling's shell=none refuses)")
	}
	return a, nil
}

// longOption reads the long option args[i] ("--" cut off: long), with
// its value from the next argument unless it has none or gives it with
// "=", and returns the index of the last argument it read.
func (a *nspawnArgs) longOption(args []string, i int, long string) (int, error) {
	name, val, hasVal := strings.Cut(long, "=")
	if !hasVal && !nspawnLongNoValue[name] && !nspawnLongOptional[name] {
		if i+1 >= len(args) {
			return i, fmt.Errorf("systemd-nspawn option --%s lacks its value", name)
		}
		i++
		val = args[i]
	}
	return i, a.set(name, val)
}

// shortOptions reads the cluster of short options args[i] ("-qD DIR",
// "-DDIR"): letters without a value, up to one that takes the rest of
// the cluster or else the next argument as its value. It returns the
// index of the last argument it read.
func (a *nspawnArgs) shortOptions(args []string, i int) (int, error) {
	arg := args[i]
	for j := 1; j < len(arg); j++ {
		o := string(arg[j])
		if !strings.Contains(nspawnShortValue, o) {
			if err := a.set(o, ""); err != nil {
				return i, err
			}
			continue
		}
		val := arg[j+1:]
		if val == "" {
			if i+1 >= len(args) {
				return i, fmt.Errorf("systemd-nspawn option -%s lacks its value", o)
			}
			i++
			val = args[i]
		}
		return i, a.set(o, val)
	}
	return i, nil
}

// set records the option name (a letter or a long name) with its value
// val. Errors: an option enforcerd nspawn refuses (nspawnRefused).
func (a *nspawnArgs) set(name, val string) error {
	if why, ok := nspawnRefused[name]; ok {
		return fmt.Errorf("systemd-nspawn option %s is refused: %s", optName(name), why)
	}
	switch name {
	case "D", "directory":
		a.directory = val
	case "M", "machine":
		a.machine = val
	case "chdir":
		a.chdir = val
	case "E", "setenv":
		if v, ok := strings.CutPrefix(val, "PATH="); ok {
			a.envPath = v
		}
	case "keep-unit":
		a.keepUnit = true
	}
	return nil
}

func optName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// nspawnSettings is what enforcerd reads of a machine's .nspawn file
// (systemd.nspawn(5)): [Exec] Boot= and Parameters=.
type nspawnSettings struct {
	bootSet, boot bool
	parameters    []string
}

// parseNspawnSettings reads a .nspawn file's [Exec] Boot= (a systemd
// boolean; the last assignment wins) and Parameters= (words split at
// white space; an empty assignment resets the list, a later one
// appends). Errors: a file go-systemd's unit parser refuses, a Boot=
// value that is no boolean, a quoted Parameters= value (enforcerd does
// not unquote: give the command without quotes).
func parseNspawnSettings(text string) (nspawnSettings, error) {
	var s nspawnSettings
	opts, err := unit.DeserializeOptions(strings.NewReader(text))
	if err != nil {
		return s, fmt.Errorf("parse: %w", err)
	}
	for _, o := range opts {
		if o.Section != "Exec" {
			continue
		}
		switch o.Name {
		case "Boot":
			b, ok := systemdBool(o.Value)
			if !ok {
				return s, fmt.Errorf("[Exec] Boot=%s is not a boolean", o.Value)
			}
			s.bootSet, s.boot = true, b
		case "Parameters":
			if strings.ContainsAny(o.Value, "\"'\\") {
				return s, fmt.Errorf("[Exec] Parameters=%s: quotes and escapes are not supported by enforcerd nspawn", o.Value)
			}
			if strings.TrimSpace(o.Value) == "" {
				s.parameters = nil
				continue
			}
			s.parameters = append(s.parameters, strings.Fields(o.Value)...)
		}
	}
	return s, nil
}

// systemdBool parses a systemd boolean (parse_boolean: 1 yes y true t on,
// 0 no n false f off; any letter case).
func systemdBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "yes", "y", "true", "t", "on":
		return true, true
	case "0", "no", "n", "false", "f", "off":
		return false, true
	}
	return false, false
}
