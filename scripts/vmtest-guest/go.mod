module github.com/enforcerd/enforcerd/scripts/vmtest-guest

go 1.26

require github.com/cilium/ebpf v0.22.0

require golang.org/x/sys v0.43.0 // indirect
