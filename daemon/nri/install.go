package nri

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// InstallHookBinary makes dst a copy of the executable src (the running
// daemon's own, /proc/self/exe), so that the hooks injected in hook mode
// run the daemon's version. dst's directory must exist, be owned by root
// and be writable by nobody else: the runtime runs the hook as root, and
// whoever can replace it runs code as root outside every container. An
// identical dst is left alone; otherwise the copy is written to a
// temporary file in the directory (mode 0755), synced, and renamed over
// dst, so a runtime never runs a half-written hook. Errors name the path
// and the reason.
func InstallHookBinary(src, dst string) error {
	dir := filepath.Dir(dst)
	if err := checkHookDir(dir); err != nil {
		return err
	}
	want, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading the daemon's executable %s: %w", src, err)
	}
	if done, err := hookUpToDate(dst, want); done || err != nil {
		return err
	}
	return writeHook(dir, dst, want)
}

// checkHookDir: dir exists, is a directory, is owned by root and is
// writable by nobody else.
func checkHookDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("nri.hook_path: directory %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("nri.hook_path: %s is not a directory", dir)
	case !ok || st.Uid != 0:
		return fmt.Errorf("nri.hook_path: directory %s is not owned by root", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("nri.hook_path: directory %s is writable by group or others (mode %s): anyone able to replace the hook runs code as root", dir, fi.Mode().Perm())
	}
	return nil
}

// hookUpToDate reports whether dst already is want as a root-owned
// regular file of mode 0755. A dst that cannot be read for another reason
// than its absence is an error.
func hookUpToDate(dst string, want []byte) (bool, error) {
	have, err := os.ReadFile(dst)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("nri.hook_path: %w", err)
	}
	if !bytes.Equal(have, want) {
		return false, nil
	}
	dfi, err := os.Lstat(dst)
	if err != nil || !dfi.Mode().IsRegular() || dfi.Mode().Perm() != 0o755 {
		return false, nil
	}
	owner, ok := dfi.Sys().(*syscall.Stat_t)
	return ok && owner.Uid == 0, nil
}

// writeHook writes want to a temporary file in dir (mode 0755), syncs it
// and renames it over dst; the temporary file is removed on every error.
func writeHook(dir, dst string, want []byte) error {
	tmp, err := os.CreateTemp(dir, ".enforcerd-hook-*")
	if err != nil {
		return fmt.Errorf("nri.hook_path: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(want); err != nil {
		tmp.Close()
		return fmt.Errorf("nri.hook_path: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("nri.hook_path: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("nri.hook_path: syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("nri.hook_path: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("nri.hook_path: %w", err)
	}
	return nil
}
