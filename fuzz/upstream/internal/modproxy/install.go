package modproxy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Installer runs `go install module/pkg@version` as a user would who has never seen the repository: outside
// any module and workspace, with an empty module cache of its own, the proxy folder first in GOPROXY and
// the public proxy after it (for the dependencies), and the checksum database asked about everything but
// this repository's modules, which it has never seen.
type Installer struct {
	// Proxy is the folder Serve wrote.
	Proxy string
	// Dir is where the installer keeps its module cache (ModCache) and binaries (Bin); created if missing.
	Dir string
	// Offline adds the module cache of the go command running the tests as a second proxy, before the
	// public one, so that dependencies already downloaded here are not fetched again; the modules of this
	// repository still come from Proxy only, as Proxy comes first.
	Offline bool
}

// Env is the environment the installs run with.
func (in Installer) Env(ctx context.Context) ([]string, error) {
	proxies := []string{"file://" + filepath.ToSlash(in.Proxy)}
	if in.Offline {
		out, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
		if err != nil {
			return nil, fmt.Errorf("go env GOMODCACHE: %w", err)
		}
		proxies = append(proxies, "file://"+filepath.ToSlash(filepath.Join(strings.TrimSpace(string(out)), "cache", "download")))
	}
	proxies = append(proxies, "https://proxy.golang.org")
	return append(os.Environ(),
		"GOWORK=off",
		"GOPROXY="+strings.Join(proxies, ","),
		"GONOSUMDB="+Library,
		"GOMODCACHE="+filepath.Join(in.Dir, "mod"),
		"GOBIN="+in.Bin(),
		// No -mod=mod: the go.sum files served must already hold every checksum, as for a user.
		// -modcacherw: the test's temporary folder can be removed; -trimpath: the build cache of one run
		// serves the next although each has its own module cache.
		"GOFLAGS=-modcacherw -trimpath",
	), nil
}

// Bin is the folder binaries are installed into.
func (in Installer) Bin() string { return filepath.Join(in.Dir, "bin") }

// Install runs go install pkgAtVersion (for example
// github.com/dralloc/dralloc/examples/dractl/kubectl-dra@v0.1.0) and returns the installed binary's path.
func (in Installer) Install(ctx context.Context, pkgAtVersion string) (string, error) {
	if err := os.MkdirAll(in.Bin(), 0o755); err != nil {
		return "", err
	}
	env, err := in.Env(ctx)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "install", pkgAtVersion)
	cmd.Dir, cmd.Env = in.Dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s: %w\n%s", pkgAtVersion, err, out.Bytes())
	}
	pkg, _, _ := strings.Cut(pkgAtVersion, "@")
	return filepath.Join(in.Bin(), filepath.Base(pkg)), nil
}
