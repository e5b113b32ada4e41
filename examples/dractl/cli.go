package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// Exit statuses. 2 is dractl's own failure, not the user's bad input, because Go's runtime exits
// with 2 on a panic or fatal error it cannot recover (out of memory, a deadlock): a script must be
// able to tell a bug in dractl from a mistake in its input.
const (
	exitOK       = 0 // everything asked about fits, or nothing was found
	exitNotFit   = 1 // a pod does not fit, a problem was found, or a PodGroup's search gave up
	exitInternal = 2 // dractl itself failed: a panic, recovered here or not, or the runtime's fatal errors
	exitBadInput = 3 // the input or the command line is wrong
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // the lines after "Usage: dractl <name> ", the examples included
	flags   func(fs *flag.FlagSet) any
	run     func(env *env, opts any) (int, error)
	// output is the default of -o: "text" unless the command's main output is for machines.
	output string
}

// env is what every subcommand gets: the parsed common flags, the loaded cluster and the output.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	output         string // text, yaml or json
	color          bool
	files          []string
	cluster        *cluster
}

var commands = []*command{explainCommand, placeCommand, lintCommand, taintsCommand, inventoryCommand}

const mainUsage = `dractl explains Dynamic Resource Allocation for a cluster read from manifests.

Usage: dractl <command> -f FILE|DIR|- [flags]

Commands:
%s
Read the objects of a live cluster from kubectl:

  kubectl get pods,nodes,resourceslices,deviceclasses,resourceclaims,resourceclaimtemplates,devicetaintrules,podgroups -A -o yaml | dractl explain -f -

Input: files, directories (every .yaml, .yml and .json file below, links followed, entries
beginning with a dot skipped) or - for stdin; each file or stream at most --max-bytes, the pods
of all workloads together at most --max-pods.

Exit status: 0 fits (or nothing found), 1 does not fit (or a problem found, or the search for a
PodGroup gave up after --gang-budget tries), 2 dractl failed (a bug, or out of memory), 3 bad
input or usage.
Run "dractl <command> --help" for the flags and examples of a command.
`

func usageText() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	return fmt.Sprintf(mainUsage, b.String())
}

// run is the whole command: args without the program name. It returns the exit status; a panic is
// reported as dractl's own failure, with its stack, and exitInternal.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "dractl: internal error: %v\n%s", r, debug.Stack())
			code = exitInternal
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText())
		return exitBadInput
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText())
		return exitOK
	}
	var cmd *command
	for _, c := range commands {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "dractl: unknown command %q\n\n%s", args[0], usageText())
		return exitBadInput
	}

	fs := flag.NewFlagSet("dractl "+cmd.name, flag.ContinueOnError)
	// The flag package prints the usage on a bad flag and on -h; the buffer keeps it until we know
	// which: --help goes to stdout with exit status 0, a mistake to stderr.
	var parseOut bytes.Buffer
	fs.SetOutput(&parseOut)
	var files stringList
	fs.Var(&files, "f", "a manifest file, a directory of them, or - for stdin (repeatable)")
	defaultOutput := cmp.Or(cmd.output, "text")
	output := fs.String("o", defaultOutput, "output format: text, yaml or json")
	color := fs.String("color", "auto", "colour the text output: auto (on a terminal), always or never")
	maxBytes := fs.Int64("max-bytes", manifest.DefaultMaxBytes, "the most bytes one file or stream may have, and one document once its YAML aliases are expanded")
	maxPods := fs.Int("max-pods", manifest.DefaultMaxPods, "the most pods the workloads (Deployments, Jobs, DaemonSets...) of the input may expand into together")
	opts := cmd.flags(fs)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "%s\n\nUsage: dractl %s %s\nFlags:\n", cmd.summary, cmd.name, cmd.usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return exitOK
		}
		stderr.Write(parseOut.Bytes())
		return exitBadInput
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dractl %s: unexpected argument %q (files are given with -f)\n", cmd.name, fs.Arg(0))
		return exitBadInput
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "dractl %s: no input: give -f FILE, -f DIR or -f - for stdin\n", cmd.name)
		return exitBadInput
	}
	switch *output {
	case "text", "yaml", "json":
	default:
		fmt.Fprintf(stderr, "dractl %s: -o %s: must be text, yaml or json\n", cmd.name, *output)
		return exitBadInput
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, output: *output, files: files}
	switch *color {
	case "always":
		e.color = true
	case "never":
	case "auto":
		e.color = isTerminal(stdout)
	default:
		fmt.Fprintf(stderr, "dractl %s: --color %s: must be auto, always or never\n", cmd.name, *color)
		return exitBadInput
	}
	if *maxBytes <= 0 || *maxPods <= 0 {
		fmt.Fprintf(stderr, "dractl %s: --max-bytes and --max-pods must be positive\n", cmd.name)
		return exitBadInput
	}
	c, err := loadCluster(files, manifest.Options{SkipUnknown: true, Stdin: stdin, Validate: validate, MaxBytes: *maxBytes, MaxPods: *maxPods}, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dractl %s: %v\n", cmd.name, err)
		return exitBadInput
	}
	e.cluster = c
	code, err = cmd.run(e, opts)
	if err != nil {
		fmt.Fprintf(stderr, "dractl %s: %v\n", cmd.name, err)
		if code == exitOK {
			code = exitBadInput
		}
	}
	return code
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// isTerminal reports whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// paint wraps s in an ANSI colour when colour is on.
func (e *env) paint(code, s string) string {
	if !e.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (e *env) good(s string) string { return e.paint("32", s) }
func (e *env) bad(s string) string  { return e.paint("31", s) }
func (e *env) warn(s string) string { return e.paint("33", s) }

// splitName splits "namespace/name"; a name without namespace is in "default".
func splitName(s string) (string, string, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		return "default", s, nil
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q: must be namespace/name", s)
	}
	return ns, name, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
