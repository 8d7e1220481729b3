// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package harness

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// builds caches one build per package for the whole test process.
var (
	buildMu  sync.Mutex
	builds   = map[string]*build{}
	buildDir string
)

type build struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// Build compiles the main package pkg (an import path, e.g.
// "github.com/wirebatch/wirebatch/loadgen") once per test process and
// returns the binary's path. Later calls, from any test, reuse the binary.
// The binaries live in a temporary directory that Main removes.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	b := builds[pkg]
	if b == nil {
		b = new(build)
		builds[pkg] = b
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", Prefix+"bin-")
		if err != nil {
			buildMu.Unlock()
			t.Fatal(err)
		}
		buildDir = dir
	}
	dir := buildDir
	buildMu.Unlock()

	b.once.Do(func() {
		b.path = filepath.Join(dir, path.Base(pkg))
		goCmd, err := exec.LookPath("go")
		if err != nil {
			// Not on PATH (e.g. under sudo): the toolchain that built the test.
			goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		b.out, b.err = exec.Command(goCmd, "build", "-o", b.path, pkg).CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, b.err, b.out)
	}
	return b.path
}

// Main runs the tests of a package that uses Build and removes the built
// binaries afterwards. Call it from TestMain: func TestMain(m *testing.M) { harness.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	buildMu.Lock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	buildMu.Unlock()
	os.Exit(code)
}
