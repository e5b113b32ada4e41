//go:build unix

package manifest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func podYAML(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: ns}\n"
}

// tree writes files (name → content) below a new directory and makes the links (name → target);
// it returns the directory.
func tree(t *testing.T, files, links map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loaded lists the pods read as "name @ file", the file relative to dir.
func loaded(objs *Objects, dir string) []string {
	var got []string
	for _, p := range objs.Pods {
		src, _ := objs.Source(p)
		got = append(got, p.Name+" @ "+strings.TrimPrefix(src.File, dir+"/"))
	}
	return got
}

// loadSoon is Load, failing the test instead of hanging when Load blocks (on a named pipe).
func loadSoon(t *testing.T, paths []string, opts Options) (*Objects, error) {
	t.Helper()
	type result struct {
		objs *Objects
		err  error
	}
	done := make(chan result, 1)
	go func() {
		objs, err := Load(paths, opts)
		done <- result{objs, err}
	}()
	select {
	case r := <-done:
		return r.objs, r.err
	case <-time.After(time.Minute): // a hang detector, not a timing assertion
		t.Fatalf("Load(%q) blocked", paths)
		return nil, nil
	}
}

func TestLoadFollowsLinksToDirectories(t *testing.T) {
	dir := tree(t, map[string]string{
		"real/a.yaml":  podYAML("a"),
		"other/b.yaml": podYAML("b"),
	}, map[string]string{
		"link":      "real",     // a link to a directory given as the path
		"real/more": "../other", // a link to a directory inside it
		"real/loop": "..",       // a link back up: read once, no loop
		"real/gone": "nowhere",  // a dangling link to no manifest: ignored
	})
	objs, err := loadSoon(t, []string{filepath.Join(dir, "link")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, loaded(objs, dir), []string{"a @ link/a.yaml", "b @ link/loop/other/b.yaml"})

	if err := os.Symlink("nowhere", filepath.Join(dir, "real", "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSoon(t, []string{dir}, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dangling link to a manifest: got %v, want an error wrapping os.ErrNotExist", err)
	}
}

// TestLoadConfigMapVolume reads a directory laid out as the kubelet mounts a ConfigMap: the data in
// a ..<timestamp> directory, a ..data link to it, and every key a link into ..data. Each object
// is read once, under its key's name.
func TestLoadConfigMapVolume(t *testing.T) {
	const stamp = "..2026_12_04_10_00_00.123456789"
	dir := tree(t, map[string]string{
		stamp + "/pods.yaml":  podYAML("p") + "---\n" + podYAML("q"),
		stamp + "/extra.json": `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e", "namespace": "ns"}}`,
	}, map[string]string{
		"..data":     stamp,
		"pods.yaml":  "..data/pods.yaml",
		"extra.json": "..data/extra.json",
	})
	objs, err := loadSoon(t, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, loaded(objs, dir), []string{"e @ extra.json", "p @ pods.yaml", "q @ pods.yaml"})

	// Given explicitly, ..data is read like any directory.
	objs, err = loadSoon(t, []string{filepath.Join(dir, "..data")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, len(objs.Pods), 3)
}

func TestLoadReadsALinkedFileOnce(t *testing.T) {
	dir := tree(t, map[string]string{"a.yaml": podYAML("a")}, map[string]string{"b.yaml": "a.yaml"})
	objs, err := loadSoon(t, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, loaded(objs, dir), []string{"a @ a.yaml"})
}

func TestLoadBoundsDirectoryDepth(t *testing.T) {
	dir := t.TempDir()
	deep := dir
	for range maxDirDepth + 1 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := loadSoon(t, []string{dir}, Options{})
	if err == nil || !strings.Contains(err.Error(), "nested more than 64 deep") {
		t.Fatalf("got %v, want an error about the depth", err)
	}
}

// TestLoadRefusesSpecialFilesInDirectories: a named pipe would block forever, /dev/zero never
// ends; both, and sockets, are errors naming the path.
func TestLoadRefusesSpecialFilesInDirectories(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		kind string
	}{
		{"a named pipe", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skip("no named pipes:", err)
			}
		}, "named pipe"},
		{"a link to /dev/zero", func(t *testing.T, path string) {
			if _, err := os.Stat("/dev/zero"); err != nil {
				t.Skip("no /dev/zero")
			}
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "character device"},
		{"a socket", func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Skip("no unix sockets:", err)
			}
			t.Cleanup(func() { l.Close() })
		}, "socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A short directory name: a socket's path is limited to about 100 bytes.
			dir, err := os.MkdirTemp("", "m")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(podYAML("a")), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "b.yaml")
			tc.make(t, path)
			_, err = loadSoon(t, []string{dir}, Options{})
			want := "open " + path + ": not a regular file: " + tc.kind
			if !errors.Is(err, ErrNotRegular) || err.Error() != want {
				t.Fatalf("got %v, want %q wrapping ErrNotRegular", err, want)
			}
		})
	}
}

// TestLoadExplicitPipe: a named pipe given as the path is read, as kubectl reads the pipe of
// `-f <(...)`, and opening it does not wait for a writer.
func TestLoadExplicitPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip("no named pipes:", err)
	}
	objs, err := loadSoon(t, []string{path}, Options{})
	if err != nil || objs.Len() != 0 {
		t.Fatalf("a pipe without a writer: got %v, %v; want nothing read", objs, err)
	}
	// The pipe of `-f <(kubectl get ...)`: /dev/fd/N of a pipe whose writer is open.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	if _, err := os.Stat(fd); err != nil {
		t.Skip("no /dev/fd:", err)
	}
	go func() {
		w.WriteString(podYAML("piped"))
		w.Close()
	}()
	objs, err = loadSoon(t, []string{fd}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, loaded(objs, "/dev/fd"), []string{"piped @ " + filepath.Base(fd)})
}

func TestLoadBoundsFilesAndStreams(t *testing.T) {
	content := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}}`
	dir := tree(t, map[string]string{"a.json": content}, nil)
	file := filepath.Join(dir, "a.json")
	size := int64(len(content))

	if _, err := loadSoon(t, []string{file}, Options{MaxBytes: size}); err != nil {
		t.Errorf("a file of exactly MaxBytes: %v", err)
	}
	_, err := loadSoon(t, []string{file}, Options{MaxBytes: size - 1})
	want := file + ": too large: more than " + itoa(size-1) + " bytes (Options.MaxBytes)"
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Errorf("a file over MaxBytes: got %v, want %q", err, want)
	}
	_, err = loadSoon(t, []string{"-"}, Options{MaxBytes: 10, Stdin: strings.NewReader(podYAML("a"))})
	if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "-: too large") {
		t.Errorf("stdin over MaxBytes: got %v", err)
	}
	_, err = loadSoon(t, []string{"-"}, Options{MaxBytes: 10, Stdin: strings.NewReader(`{"apiVersion": "v1", "kind": "Pod"}`)})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("a JSON stream over MaxBytes: got %v", err)
	}
	// /dev/zero is one endless line: read up to the bound, then refused.
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err = loadSoon(t, []string{"/dev/zero"}, Options{MaxBytes: 1 << 20})
		if !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "/dev/zero: too large") {
			t.Errorf("/dev/zero: got %v", err)
		}
	}
	if _, err := Decode(strings.NewReader(content+"\n"+content), "in.json", Options{MaxBytes: size}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Decode over MaxBytes: got %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
