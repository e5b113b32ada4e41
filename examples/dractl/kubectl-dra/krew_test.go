package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/pe"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// krewPlugin is a krew plugin manifest, krew.googlecontainertools.github.com/v1alpha2 Plugin, with the
// fields of sigs.k8s.io/krew/pkg/index.Plugin that krew reads.
type krewPlugin struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Homepage         string `json:"homepage"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector *metav1.LabelSelector `json:"selector"`
			URI      string                `json:"uri"`
			Sha256   string                `json:"sha256"`
			Files    []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// validateKrew checks what krew's index validation checks before it installs a plugin
// (sigs.k8s.io/krew/internal/index/validation: ValidatePlugin, validatePlatform, validateSelector), and
// that each of platforms is matched by exactly one platform of the manifest, as krew picks the first that
// matches.
func validateKrew(p krewPlugin, name string, platforms []string) error {
	var errs []error
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		errs = append(errs, fmt.Errorf("apiVersion %q, kind %q: want krew.googlecontainertools.github.com/v1alpha2 Plugin", p.APIVersion, p.Kind))
	}
	if p.Metadata.Name != name || !regexp.MustCompile(`^[\w-]+$`).MatchString(name) {
		errs = append(errs, fmt.Errorf("metadata.name %q: want %q (the binary is kubectl-%s)", p.Metadata.Name, name, name))
	}
	if p.Spec.ShortDescription == "" || strings.ContainsAny(p.Spec.ShortDescription, "\r\n") {
		errs = append(errs, fmt.Errorf("spec.shortDescription %q: want one line", p.Spec.ShortDescription))
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(p.Spec.Version) {
		errs = append(errs, fmt.Errorf("spec.version %q: want a semantic version with a v", p.Spec.Version))
	}
	if len(p.Spec.Platforms) == 0 {
		errs = append(errs, errors.New("spec.platforms: none"))
	}
	for i, pl := range p.Spec.Platforms {
		field := fmt.Sprintf("spec.platforms[%d]", i)
		if pl.URI == "" || pl.Bin == "" {
			errs = append(errs, fmt.Errorf("%s: uri %q, bin %q: both must be set", field, pl.URI, pl.Bin))
		}
		if !regexp.MustCompile(`^[a-f0-9]{64}$`).MatchString(pl.Sha256) {
			errs = append(errs, fmt.Errorf("%s.sha256 %q: want 64 lower-case hex digits", field, pl.Sha256))
		}
		if pl.Files != nil && len(pl.Files) == 0 {
			errs = append(errs, fmt.Errorf("%s.files: empty; leave it out or name files", field))
		}
		for j, f := range pl.Files {
			if f.From == "" || f.To == "" {
				errs = append(errs, fmt.Errorf("%s.files[%d]: from %q, to %q: both must be set", field, j, f.From, f.To))
			}
		}
		if pl.Selector == nil || (len(pl.Selector.MatchLabels) == 0 && len(pl.Selector.MatchExpressions) == 0) {
			errs = append(errs, fmt.Errorf("%s.selector: empty", field))
			continue
		}
		for k := range pl.Selector.MatchLabels {
			if k != "os" && k != "arch" {
				errs = append(errs, fmt.Errorf("%s.selector: key %q: krew knows os and arch", field, k))
			}
		}
	}
	for _, platform := range platforms {
		os, arch, _ := strings.Cut(platform, "/")
		matched := 0
		for _, pl := range p.Spec.Platforms {
			if pl.Selector == nil {
				continue
			}
			if sel, err := metav1.LabelSelectorAsSelector(pl.Selector); err == nil && sel.Matches(labels.Set{"os": os, "arch": arch}) {
				matched++
			}
		}
		if matched != 1 {
			errs = append(errs, fmt.Errorf("platform %s: matched by %d platforms of the manifest, want 1", platform, matched))
		}
	}
	return errors.Join(errs...)
}

// untar is the regular files of a .tar.gz archive by name.
func untar(t *testing.T, name string) map[string][]byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatalf("%s: %s: %v", name, h.Name, err)
		}
	}
}

// machine is the GOOS/GOARCH an executable was built for, read from its headers.
func machine(exe []byte) string {
	if f, err := elf.NewFile(bytes.NewReader(exe)); err == nil {
		return map[elf.Machine]string{elf.EM_X86_64: "linux/amd64", elf.EM_AARCH64: "linux/arm64"}[f.Machine]
	}
	if f, err := pe.NewFile(bytes.NewReader(exe)); err == nil {
		return map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "windows/amd64", pe.IMAGE_FILE_MACHINE_ARM64: "windows/arm64"}[f.Machine]
	}
	return "unknown"
}

// TestKrewManifest runs scripts/krew for two platforms (a release builds six; each is one more build of
// client-go), then checks the manifest it writes as krew would before installing, that each platform's
// sha256 is that of the archive the script built for it, that the archive holds the bin the manifest names
// (an executable for that platform) and LICENSE, and that the host's binary says the version.
func TestKrewManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kubectl-dra for two platforms")
	}
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("scripts/krew needs tar")
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	platforms := []string{host, "windows/arm64"}
	if host != "linux/amd64" {
		platforms = append(platforms, "linux/amd64")
	}
	const version = "v0.1.0"
	out := t.TempDir()
	cmd := exec.Command("../../../scripts/krew", version, out)
	cmd.Env = append(os.Environ(), "KREW_PLATFORMS="+strings.Join(platforms, " "), "KREW_BASE_URL=https://example.com/releases/"+version)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/krew: %v\n%s", err, b)
	}
	data, err := os.ReadFile(filepath.Join(out, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("plugin.yaml: %v\n%s", err, data)
	}
	if err := validateKrew(p, "dra", platforms); err != nil {
		t.Fatalf("plugin.yaml: %v\n%s", err, data)
	}
	if p.Spec.Version != version || len(p.Spec.Platforms) != len(platforms) {
		t.Errorf("plugin.yaml: version %s, %d platforms; want %s and %d", p.Spec.Version, len(p.Spec.Platforms), version, len(platforms))
	}
	for _, pl := range p.Spec.Platforms {
		platform := pl.Selector.MatchLabels["os"] + "/" + pl.Selector.MatchLabels["arch"]
		if dir, base := path.Split(pl.URI); dir != "https://example.com/releases/"+version+"/" {
			t.Errorf("%s: uri %s is not under KREW_BASE_URL", platform, pl.URI)
		} else {
			archive := filepath.Join(out, base)
			b, err := os.ReadFile(archive)
			if err != nil {
				t.Errorf("%s: %v", platform, err)
				continue
			}
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != pl.Sha256 {
				t.Errorf("%s: sha256 %s in the manifest, %x of %s", platform, pl.Sha256, sum, base)
			}
			files := untar(t, archive)
			if _, ok := files["LICENSE"]; !ok {
				t.Errorf("%s: no LICENSE in %s", platform, base)
			}
			exe, ok := files[pl.Bin]
			if got := machine(exe); !ok || got != platform && !strings.HasPrefix(platform, "darwin/") {
				t.Errorf("%s: bin %s in %s: present %v, built for %s", platform, pl.Bin, base, ok, got)
			}
			if platform != host {
				continue
			}
			bin := filepath.Join(t.TempDir(), pl.Bin)
			if err := os.WriteFile(bin, exe, 0o755); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "kubectl dra "+version+"\n") {
				t.Errorf("%s version: %v\n%s", base, err, b)
			}
		}
	}
}
