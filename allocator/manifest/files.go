package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultMaxBytes is the size a file or stream may have unless Options.MaxBytes says otherwise:
// 64 MiB. kube-apiserver refuses a request body over 3 MiB, so one object is at most that; a file
// or stream is bounded well above it, for `kubectl get -A -o yaml` of a large cluster, which is
// one List of every object.
const DefaultMaxBytes = 64 << 20

// maxDirDepth bounds how deep Load descends into directories (each directory or link to one is a
// level), so that a tree of links cannot keep it busy.
const maxDirDepth = 64

// Load reads the manifests at paths, in the order given: a file, a directory, or "-" for stdin.
//
// A directory is read recursively, in lexical order: every regular file whose name ends in .yaml,
// .yml or .json (any case), and every directory, symbolic links followed. Entries whose names
// begin with a dot are skipped: hidden files and directories (.git), and the ..data link and
// ..<timestamp> directory the kubelet writes into a ConfigMap or Secret volume, whose files are
// links into ..data, so each object of a mounted ConfigMap is read once, under its own name (kubectl
// apply -f reads a mounted ConfigMap's objects twice, once under ..<timestamp>). Below one path
// given, a file or directory reached twice (two links to it, a link to a directory above it) is
// read once, so a loop of links ends; directories nest at most 64 deep. A named pipe, device or
// socket in a directory is an error naming it: one could block or never end. A dangling link is an
// error where its name is a manifest's.
//
// A path given explicitly may also be a named pipe or a character device, as kubectl reads
// /dev/stdin or the pipe of `-f <(kubectl get ...)`; it is opened without waiting for a writer.
// Every file and stream, stdin included, is bounded by Options.MaxBytes.
func Load(paths []string, opts Options) (*Objects, error) {
	d := newDecoder(opts)
	for _, path := range paths {
		if path == "-" {
			stdin := opts.Stdin
			if stdin == nil {
				stdin = os.Stdin
			}
			if err := d.stream(stdin, "-"); err != nil {
				return nil, err
			}
			continue
		}
		// Each path given is read as given: one twice is read twice, as kubectl does.
		w := walker{seen: make(map[string]bool)}
		files, err := w.files(path)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			if err := d.file(file.path, file.explicit); err != nil {
				return nil, err
			}
		}
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return d.objs, nil
}

// ErrNotRegular reports a named pipe, device or socket found in a directory, or a socket or block
// device given as a path: Load reads regular files (and, given explicitly, pipes and character
// devices).
var ErrNotRegular = errors.New("not a regular file")

type manifestFile struct {
	path string
	// explicit is a path given to Load, not found in a directory.
	explicit bool
}

// walker lists the files of the paths given to Load.
type walker struct {
	// seen are the real paths (links resolved) of the directories and files found in directories.
	seen map[string]bool
}

func (w *walker) files(path string) ([]manifestFile, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []manifestFile{{path: path, explicit: true}}, nil
	}
	var files []manifestFile
	err = w.dir(path, 0, &files)
	return files, err
}

// dir appends the manifest files below the directory path.
func (w *walker) dir(path string, depth int, files *[]manifestFile) error {
	if depth >= maxDirDepth {
		return &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("directories nested more than %d deep", maxDirDepth)}
	}
	if first, err := w.first(path); err != nil || !first {
		return err
	}
	entries, err := os.ReadDir(path) // sorted by name: the result does not depend on the file system
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if strings.HasPrefix(entry.Name(), ".") {
			continue
		}
		p := filepath.Join(path, entry.Name())
		manifest := false
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			manifest = true
		}
		mode := entry.Type()
		if mode&fs.ModeSymlink != 0 {
			info, err := os.Stat(p)
			if err != nil && !manifest {
				continue // a dangling link that would not be read anyway
			} else if err != nil {
				return err
			}
			mode = info.Mode().Type()
		}
		if mode.IsDir() {
			if err := w.dir(p, depth+1, files); err != nil {
				return err
			}
			continue
		}
		if !manifest {
			continue
		}
		if !mode.IsRegular() {
			return notRegular(p, mode)
		}
		if first, err := w.first(p); err != nil || !first {
			return err
		}
		*files = append(*files, manifestFile{path: p})
	}
	return nil
}

// first reports whether path, resolved to its real path, is seen for the first time.
func (w *walker) first(path string) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return false, err
	}
	if w.seen[real] {
		return false, nil
	}
	w.seen[real] = true
	return true, nil
}

func notRegular(path string, mode fs.FileMode) error {
	kind := "special file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case mode&fs.ModeSocket != 0:
		kind = "socket"
	case mode&fs.ModeCharDevice != 0:
		kind = "character device"
	case mode&fs.ModeDevice != 0:
		kind = "block device"
	}
	return &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, kind)}
}

// file reads one file. It is opened with O_NONBLOCK, so that opening a named pipe never waits for
// a writer, and checked after opening, so that a regular file swapped for a pipe after the
// directory was listed is refused too.
func (d *decoder) file(path string, explicit bool) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	mode := info.Mode()
	switch {
	case mode.IsRegular():
	case explicit && (mode&fs.ModeNamedPipe != 0 || mode&fs.ModeCharDevice != 0):
	default:
		return notRegular(path, mode)
	}
	return d.stream(f, path)
}

// bounded reads at most max bytes of r; reading more fails with errTooLarge.
type bounded struct {
	r    io.Reader
	left int64
}

// errTooLarge is what bounded returns past its limit; stream turns it into an *Error.
var errTooLarge = errors.New("stream over its limit")

func (b *bounded) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed tells a stream of exactly max bytes from a longer one
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errTooLarge
	}
	return n, err
}
