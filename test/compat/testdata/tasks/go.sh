# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# A Go module (go 1.19, the image's Go): go build and go test, with
# GOCACHE and GOMODCACHE in the workspace and its dependency from a
# prepared module proxy (file://), no network.
export GOCACHE="$WS/gocache" GOMODCACHE="$WS/gomodcache" GOPATH="$WS/gopath"
export GOPROXY="file://$FIX/goproxy" GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p gomod
cd gomod
cat >go.mod <<'GO'
module example.com/app

go 1.19

require example.com/greet v1.0.0
GO
cat >main.go <<'GO'
package main

import (
	"fmt"

	"example.com/greet"
)

func main() { fmt.Println(greet.Hello("agent")) }
GO
cat >main_test.go <<'GO'
package main

import (
	"testing"

	"example.com/greet"
)

func TestHello(t *testing.T) {
	if got := greet.Hello("x"); got != "hello, x" {
		t.Fatal(got)
	}
}
GO
go build -o app .
./app | grep -qx 'hello, agent'
go test ./...
