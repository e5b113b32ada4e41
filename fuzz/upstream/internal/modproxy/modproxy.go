package modproxy

import (
	"archive/zip"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// Library is the module path of the library every other module of the repository requires.
const Library = "github.com/dralloc/dralloc"

// Module is one version of one module, ready to be written into a proxy folder.
type Module struct {
	module.Version
	// Time is what the proxy's .info file says: the commit time for a commit, the time it was read
	// for a work tree.
	Time time.Time
	// GoMod is the module's go.mod file as the zip holds it.
	GoMod []byte
	files []modzip.File
}

// PseudoVersion is the version the go command gives commit rev of the repository at repo when no tag
// names it: v0.0.0-, the committer time in UTC, and the first 12 hex digits of the commit hash
// (golang.org/x/mod/module.PseudoVersion; cmd/go/internal/modfetch/coderepo.go does the same).
func PseudoVersion(repo, rev string) (string, error) {
	hash, t, err := commit(repo, rev)
	if err != nil {
		return "", err
	}
	return module.PseudoVersion("", "", t, hash[:12]), nil
}

// CommitOf is the full hash of the commit that pseudo-version v names, after checking, as the go command
// does when it fetches a pseudo-version from the repository itself, that the commit exists in the
// repository at repo and that its committer time is the time v carries.
func CommitOf(repo, v string) (string, error) {
	if !module.IsPseudoVersion(v) {
		return "", fmt.Errorf("version %s of %s: not a pseudo-version", v, Library)
	}
	rev, err := module.PseudoVersionRev(v)
	if err != nil {
		return "", fmt.Errorf("version %s of %s: %w", v, Library, err)
	}
	hash, t, err := commit(repo, rev)
	if err != nil {
		return "", fmt.Errorf("version %s of %s: %w", v, Library, err)
	}
	want, err := module.PseudoVersionTime(v)
	if err != nil {
		return "", fmt.Errorf("version %s of %s: %w", v, Library, err)
	}
	if !t.Equal(want) {
		return "", fmt.Errorf("version %s of %s: commit %s was made at %s, the version says %s", v, Library, hash, t.Format(time.RFC3339), want.Format(time.RFC3339))
	}
	return hash, nil
}

// commit is the full hash and committer time of rev.
func commit(repo, rev string) (string, time.Time, error) {
	out, err := git(repo, "log", "-1", "--format=%H %ct", rev+"^{commit}", "--")
	if err != nil {
		return "", time.Time{}, err
	}
	var hash string
	var unix int64
	if _, err := fmt.Sscanf(string(out), "%s %d", &hash, &unix); err != nil || len(hash) != 40 {
		return "", time.Time{}, fmt.Errorf("git log %s: unexpected output %q", rev, out)
	}
	return hash, time.Unix(unix, 0).UTC(), nil
}

// FromCommit is the module at subdir ("" for the root) of commit rev of the repository at repo, at
// version v: the files git archive gives for that commit, as the go command fetches a module from git.
func FromCommit(repo, rev, subdir, modPath, v string) (Module, error) {
	hash, t, err := commit(repo, rev)
	if err != nil {
		return Module{}, err
	}
	// core.autocrlf=input and core.eol=lf: the bytes as committed, whatever the local settings
	// (golang.org/x/mod/zip.CreateFromVCS runs git archive the same way).
	out, err := git(repo, "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", hash)
	if err != nil {
		return Module{}, err
	}
	zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
	if err != nil {
		return Module{}, fmt.Errorf("git archive %s: %w", hash, err)
	}
	m := Module{Version: module.Version{Path: modPath, Version: v}, Time: t}
	subdir, prefix := dirPrefix(subdir)
	var license *zip.File
	for _, f := range zr.File {
		if f.Name == "LICENSE" {
			license = f
		}
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		m.files = append(m.files, zipFile{name: name, f: f})
	}
	if subdir != "" && license != nil && !slices.ContainsFunc(m.files, func(f modzip.File) bool { return f.Path() == "LICENSE" }) {
		// A module in a subdirectory without a LICENSE gets the root's (cmd/go/internal/modfetch/coderepo.go).
		m.files = append(m.files, zipFile{name: "LICENSE", f: license})
	}
	return m, m.readGoMod()
}

// FromWorkTree is the module at subdir of the work tree at repo, at version v: the files git tracks
// there and those it would track (not ignored), as they are on disk, so that what is served is what the
// next commit would publish.
func FromWorkTree(repo, subdir, modPath, v string) (Module, error) {
	subdir, prefix := dirPrefix(subdir)
	out, err := git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", cmp.Or(subdir, "."))
	if err != nil {
		return Module{}, err
	}
	m := Module{Version: module.Version{Path: modPath, Version: v}, Time: time.Now().UTC().Truncate(time.Second)}
	haveLicense := false
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok || rel == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(repo, name)); errors.Is(err, fs.ErrNotExist) {
			continue // tracked but deleted in the work tree: the next commit does not have it
		}
		m.files = append(m.files, diskFile{rel: rel, abs: filepath.Join(repo, name)})
		haveLicense = haveLicense || rel == "LICENSE"
	}
	if subdir != "" && !haveLicense {
		if _, err := os.Stat(filepath.Join(repo, "LICENSE")); err == nil {
			m.files = append(m.files, diskFile{rel: "LICENSE", abs: filepath.Join(repo, "LICENSE")})
		}
	}
	return m, m.readGoMod()
}

// readGoMod sets GoMod from the files and checks that it declares the module's path.
func (m *Module) readGoMod() error {
	for _, f := range m.files {
		if f.Path() != "go.mod" {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		if m.GoMod, err = io.ReadAll(r); err != nil {
			return err
		}
		if got := modfile.ModulePath(m.GoMod); got != m.Path {
			return fmt.Errorf("module %s@%s: go.mod declares module %q", m.Path, m.Version.Version, got)
		}
		return nil
	}
	return fmt.Errorf("module %s@%s: no go.mod", m.Path, m.Version.Version)
}

// Write adds the modules to the proxy folder dir, laid out as the GOPROXY protocol says
// (https://go.dev/ref/mod#goproxy-protocol): $module/@v/list, and $version.info, .mod and .zip for each.
// A version already in dir is replaced.
func Write(dir string, mods ...Module) error {
	for _, m := range mods {
		escPath, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		escVersion, err := module.EscapeVersion(m.Version.Version)
		if err != nil {
			return err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		var z bytes.Buffer
		if err := modzip.Create(&z, m.Version, m.files); err != nil {
			return err
		}
		info, err := json.Marshal(struct {
			Version string
			Time    time.Time
		}{m.Version.Version, m.Time})
		if err != nil {
			return err
		}
		base := filepath.Join(vdir, escVersion)
		for ext, data := range map[string][]byte{".info": info, ".mod": m.GoMod, ".zip": z.Bytes()} {
			if err := os.WriteFile(base+ext, data, 0o644); err != nil {
				return err
			}
		}
		list, err := os.ReadFile(filepath.Join(vdir, "list"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		versions := strings.Fields(string(list))
		if !slices.Contains(versions, m.Version.Version) {
			versions = append(versions, m.Version.Version)
		}
		if err := os.WriteFile(filepath.Join(vdir, "list"), []byte(strings.Join(versions, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Workspace is the module folders the go.work file at repo uses, relative to repo, with their module
// paths, in the file's order.
func Workspace(repo string) (dirs, paths []string, err error) {
	name := filepath.Join(repo, "go.work")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, err
	}
	wf, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, u := range wf.Use {
		gomod := filepath.Join(repo, filepath.FromSlash(u.Path), "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: use %s: %w", name, u.Path, err)
		}
		p := modfile.ModulePath(data)
		if p == "" {
			return nil, nil, fmt.Errorf("%s: no module line", gomod)
		}
		dirs, paths = append(dirs, path.Clean(u.Path)), append(paths, p)
	}
	return dirs, paths, nil
}

// Required is the version of the library that the go.mod file at gomod requires, after checking that
// the file has no replace directive for it (`go install pkg@version` refuses a module with one).
func Required(gomod string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Replace {
		if r.Old.Path == Library {
			return "", fmt.Errorf("%s:%d: replace %s: go install ...@version refuses a module that replaces a dependency; the go.work at the root develops the modules together", gomod, r.Syntax.Start.Line, Library)
		}
	}
	for _, r := range f.Require {
		if r.Mod.Path == Library {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s: no require of %s", gomod, Library)
}

// Serve writes into dir every module of the workspace at repo except the library, from the work tree at
// version v, and the library at each version one of them requires, from the commit that version names.
// It returns the modules written, the library's versions first.
func Serve(dir, repo, v string) ([]module.Version, error) {
	dirs, paths, err := Workspace(repo)
	if err != nil {
		return nil, err
	}
	var libs, others []Module
	for i, d := range dirs {
		if paths[i] == Library {
			continue
		}
		req, err := Required(filepath.Join(repo, filepath.FromSlash(d), "go.mod"))
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(libs, func(m Module) bool { return m.Version.Version == req }) {
			hash, err := CommitOf(repo, req)
			if err != nil {
				return nil, fmt.Errorf("%s/go.mod: %w", d, err)
			}
			lib, err := FromCommit(repo, hash, "", Library, req)
			if err != nil {
				return nil, err
			}
			libs = append(libs, lib)
		}
		m, err := FromWorkTree(repo, d, paths[i], v)
		if err != nil {
			return nil, err
		}
		others = append(others, m)
	}
	all := append(libs, others...)
	if err := Write(dir, all...); err != nil {
		return nil, err
	}
	var served []module.Version
	for _, m := range all {
		served = append(served, m.Version)
	}
	return served, nil
}

// dirPrefix is subdir cleaned, "" for the root, and the prefix its files' paths have.
func dirPrefix(subdir string) (string, string) {
	subdir = path.Clean(filepath.ToSlash(subdir))
	if subdir == "." || subdir == "" {
		return "", ""
	}
	return subdir, subdir + "/"
}

// git runs git in repo and returns its standard output.
func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), repo, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// zipFile is a file of a git archive.
type zipFile struct {
	name string
	f    *zip.File
}

func (z zipFile) Path() string                 { return z.name }
func (z zipFile) Lstat() (os.FileInfo, error)  { return z.f.FileInfo(), nil }
func (z zipFile) Open() (io.ReadCloser, error) { return z.f.Open() }

// diskFile is a file of the work tree.
type diskFile struct{ rel, abs string }

func (d diskFile) Path() string                 { return d.rel }
func (d diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(d.abs) }
func (d diskFile) Open() (io.ReadCloser, error) { return os.Open(d.abs) }
