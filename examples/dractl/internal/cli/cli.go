package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

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
	// exitUnavailable: the cluster read could not be reached or did not answer in time; running
	// again later may succeed, which a script must tell from a mistake of its own.
	exitUnavailable = 4
)

// ErrUnavailable is wrapped by a Source's error when the cluster could not be reached or did not
// answer in time (refused connection, timeout, 503, 429): Run exits with ExitUnavailable, not
// ExitBadInput.
var ErrUnavailable = errors.New("the cluster is unavailable")

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // the lines after "Usage: dractl <name> ", the examples included
	flags   func(fs *flag.FlagSet) any
	run     func(env *env, opts any) (int, error)
	// arg, when set, takes the command's one positional argument (explain's pod); namespace is the
	// namespace of a name given without one.
	arg func(opts any, arg, namespace string) error
	// output is the default of -o: "text" unless the command's main output is for machines.
	output string
	// dropDevices says that the command reads the ResourceSlices and Nodes only through the
	// snapshot, which keeps its own copies: the slices go into the snapshot as they are read
	// (sliceFeed) and the Nodes read are let go as soon as they are copied (buildCluster), which
	// halves the memory of a large dump's devices.
	dropDevices bool
}

// env is what every subcommand gets: the parsed common flags, the loaded cluster and the output.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	output         string // text, yaml or json
	color          bool
	files          []string
	cluster        *cluster
	// name is the program's name in messages: "dractl" or "kubectl dra".
	name string
	// selector is --selector as given; scope says where the pods were read from ("in namespace
	// ml"), "" for the input of -f.
	selector, scope string
}

// noPending is what explain and place say when they have no pending pod to decide: that there
// are no pods at all, that none matches the selector, or that every pod has a node.
func (e *env) noPending() string {
	scope := cmp.Or(e.scope, "in the input")
	switch {
	case e.cluster.podCount == 0:
		return "No pods " + scope + "."
	case e.selector != "":
		return fmt.Sprintf("No pending pods %s match the selector %s.", scope, e.selector)
	}
	return "No pending pods: every pod " + scope + " has a node."
}

var commands = []*command{explainCommand, placeCommand, lintCommand, taintsCommand, inventoryCommand, topCommand, capacityCommand}

// liveUsage is the paragraph of the main usage that says how to read a live cluster.
const liveUsage = `Read the objects of a live cluster from kubectl (or run kubectl-dra, which reads them itself):

  kubectl get pods,nodes,namespaces,resourceslices,deviceclasses,resourceclaims,resourceclaimtemplates,devicetaintrules,podgroups -A -o yaml | dractl explain -f -
`

const mainUsage = `dractl explains Dynamic Resource Allocation for a cluster read from manifests.

Usage: dractl <command> -f FILE|DIR|- [flags]

Commands:
%s  version    print the version, the commit it was built from and the Kubernetes API it reads

%s
Input: files, directories (every .yaml, .yml and .json file below, links followed, entries
beginning with a dot skipped) or - for stdin; each file or stream at most --max-bytes, the pods
of all workloads together at most --max-pods.

Exit status: 0 fits (or nothing found), 1 does not fit (or a problem found, or the search for a
PodGroup gave up after --gang-budget tries), 2 dractl failed (a bug, or out of memory), 3 bad
input or usage (a permission missing included), 4 the cluster could not be reached or did not
answer in time (kubectl-dra).
Run "dractl <command> --help" for the flags and examples of a command.
`

func (o Options) usageText() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	text := fmt.Sprintf(mainUsage, b.String(), cmp.Or(o.Usage, liveUsage))
	if o.Source != nil {
		text = strings.Replace(text, "<command> -f FILE|DIR|- [flags]", "<command> [-f FILE|DIR|-] [flags]", 1)
	}
	if o.Name != "" {
		text = strings.ReplaceAll(text, "dractl", o.Name)
	}
	return text
}

// Exit statuses of Run, as the README documents them.
const (
	// ExitOK: everything asked about fits, or nothing was found.
	ExitOK = exitOK
	// ExitNotFit: a pod does not fit, a problem was found, or a PodGroup's search gave up.
	ExitNotFit = exitNotFit
	// ExitInternal: dractl itself failed (a panic, or the Go runtime's fatal errors).
	ExitInternal = exitInternal
	// ExitBadInput: the input, the command line or the cluster read is wrong.
	ExitBadInput = exitBadInput
	// ExitUnavailable: the cluster could not be reached or did not answer in time.
	ExitUnavailable = exitUnavailable
)

// Options say how a program built on dractl's commands is named and where its objects come from
// when it is given no -f. The zero value is dractl: -f is required.
type Options struct {
	// Name is the program's name in usage and messages; "dractl" when empty.
	Name string
	// Usage, when set, replaces the paragraph of the main usage that says how to read a live
	// cluster.
	Usage string
	// Parser, when set, parses the command line in place of the flag package, as kubectl's
	// plugins parse theirs with spf13/pflag: it is given the command's own flags and adds those
	// Source reads (a kubeconfig, a namespace). It is called once for each Run.
	Parser func(fs *flag.FlagSet) FlagParser
	// Source, when set, reads the objects when a command is given no -f, after the command line
	// is parsed. opts are the manifest options dractl reads files with (see TrustAPIServer). An error is bad input (exit
	// status 3) and should say what to do, as "needs list on resource.k8s.io resourceclaims";
	// one wrapping ErrUnavailable exits with ExitUnavailable.
	// warn tells the user of something read otherwise than asked, which does not stop the run.
	Source func(ctx context.Context, opts manifest.Options, warn func(msg string)) (*manifest.Objects, error)
	// TrustAPIServer says that the objects of Source come from an API server, which validated them
	// when they were written: Source gets manifest options with NoValidate set and no Validate hook,
	// and the snapshot does not validate them again (allocator.Options TrustAPIServer), so an object
	// stored under an older release's rules is read, not refused. Objects read with -f are
	// validated all the same.
	TrustAPIServer bool
	// Scope, when set, says where Source read the pods, as "in namespace ml", for the messages
	// that say there are none; called after Source.
	Scope func() string
	// Namespace, when set, is the namespace of a name given without one (explain's pod argument),
	// called after the command line is parsed; "default" when nil.
	Namespace func() (string, error)
}

// FlagParser parses one command line: Parse returns the positional arguments, or flag.ErrHelp
// for -h and --help, or an error naming the flag that is wrong; PrintDefaults writes the help of
// every flag.
type FlagParser interface {
	Parse(args []string) ([]string, error)
	PrintDefaults(w io.Writer)
}

// goFlags is the flag package's parser: flags may follow positional arguments, as kubectl allows.
type goFlags struct{ fs *flag.FlagSet }

func (g goFlags) Parse(args []string) ([]string, error) { return parseInterspersed(g.fs, args) }

func (g goFlags) PrintDefaults(w io.Writer) {
	g.fs.SetOutput(w)
	g.fs.PrintDefaults()
}

// Run is dractl: args without the program name; it returns the exit status (ExitOK, ExitNotFit,
// ExitInternal or ExitBadInput).
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Options{}.Run(args, stdin, stdout, stderr)
}

// run is the whole command for the tests: dractl with files.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Run(args, stdin, stdout, stderr)
}

// Run is the whole command as o configures it: args without the program name. It returns the exit
// status; a panic is reported as the program's own failure, with its stack, and ExitInternal.
func (o Options) Run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	name := cmp.Or(o.Name, "dractl")
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "%s: internal error: %v\n%s", name, r, debug.Stack())
			code = exitInternal
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, o.usageText())
		return exitBadInput
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, o.usageText())
		return exitOK
	case "version":
		return runVersion(name, args[1:], stdout, stderr)
	}
	var cmd *command
	for _, c := range commands {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", name, args[0], o.usageText())
		return exitBadInput
	}

	fs := flag.NewFlagSet(name+" "+cmd.name, flag.ContinueOnError)
	// The flag package writes a mistake before returning it; Run names it itself.
	fs.SetOutput(io.Discard)
	var files stringList
	fs.Var(&files, "f", "a manifest file, a directory of them, or - for stdin (repeatable)")
	defaultOutput := cmp.Or(cmd.output, "text")
	output := fs.String("o", defaultOutput, "output format: text, yaml or json")
	color := fs.String("color", "auto", "colour the text output: auto (on a terminal), always or never")
	maxBytes := fs.Int64("max-bytes", manifest.DefaultMaxBytes, "the most bytes one file or stream may have, and one document once its YAML aliases are expanded")
	var selector string
	fs.StringVar(&selector, "selector", "", "a label selector (as app=train,tier!=web): only the pending pods it matches are decided; pods with a node count whatever it says")
	fs.StringVar(&selector, "l", "", "short for --selector")
	maxPods := fs.Int("max-pods", manifest.DefaultMaxPods, "the most pods the workloads (Deployments, Jobs, DaemonSets...) of the input may expand into together")
	opts := cmd.flags(fs)
	// A mistake is named in one line, as kubectl names it, not followed by every flag's help.
	fs.Usage = func() {}
	var parser FlagParser = goFlags{fs}
	if o.Parser != nil {
		parser = o.Parser(fs)
	}
	positional, err := parser.Parse(args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "%s\n\nUsage: %s %s %s\nFlags:\n", cmd.summary, name, cmd.name, cmd.usage)
			parser.PrintDefaults(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "%s %s: %v\nSee '%s %s --help' for the flags.\n", name, cmd.name, err, name, cmd.name)
		return exitBadInput
	}
	if len(positional) > 0 && (cmd.arg == nil || len(positional) > 1) {
		fmt.Fprintf(stderr, "%s %s: unexpected argument %q (files are given with -f)\n", name, cmd.name, positional[len(positional)-1])
		return exitBadInput
	}
	if len(files) == 0 && o.Source == nil {
		fmt.Fprintf(stderr, "%s %s: no input: give -f FILE, -f DIR or -f - for stdin\n", name, cmd.name)
		return exitBadInput
	}
	switch *output {
	case "text", "yaml", "json":
	default:
		fmt.Fprintf(stderr, "%s %s: -o %s: must be text, yaml or json\n", name, cmd.name, *output)
		return exitBadInput
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, output: *output, files: files, name: name}
	switch *color {
	case "always":
		e.color = true
	case "never":
	case "auto":
		e.color = isTerminal(stdout)
	default:
		fmt.Fprintf(stderr, "%s %s: --color %s: must be auto, always or never\n", name, cmd.name, *color)
		return exitBadInput
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: --selector %q: %v\n", name, cmd.name, selector, err)
		return exitBadInput
	}
	e.selector = selector
	if *maxBytes <= 0 || *maxPods <= 0 {
		fmt.Fprintf(stderr, "%s %s: --max-bytes and --max-pods must be positive\n", name, cmd.name)
		return exitBadInput
	}
	if len(positional) == 1 {
		ns := "default"
		if o.Namespace != nil {
			if ns, err = o.Namespace(); err != nil {
				fmt.Fprintf(stderr, "%s %s: %v\n", name, cmd.name, err)
				return exitBadInput
			}
		}
		if err := cmd.arg(opts, positional[0], ns); err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", name, cmd.name, err)
			return exitBadInput
		}
	}
	mopts := manifest.Options{SkipUnknown: true, Stdin: stdin, Validate: validate, MaxBytes: *maxBytes, MaxPods: *maxPods, Compact: true}
	trust := len(files) == 0 && o.TrustAPIServer
	if trust {
		mopts.NoValidate, mopts.Validate = true, nil
	}
	snap := newSnapshot(trust)
	if cmd.dropDevices {
		// The slices go into the snapshot as they are read, never all alive at once.
		mopts.TakeSlice = newSliceFeed(snap, stderr, name).take
	}
	var objs *manifest.Objects
	if len(files) > 0 {
		objs, err = manifest.Load(files, mopts)
	} else {
		objs, err = o.Source(context.Background(), mopts, func(msg string) {
			fmt.Fprintf(stderr, "%s %s: warning: %s\n", name, cmd.name, msg)
		})
	}
	if err == nil {
		e.cluster, err = buildInto(snap, objs, stderr, name, cmd.dropDevices)
	}
	if err == nil && !sel.Empty() {
		// As kubectl get -l narrows what it lists: the pods asked about. The pods with a node are
		// kept, since what they hold on their nodes counts for every pod placed there.
		e.cluster.pending = slices.DeleteFunc(e.cluster.pending, func(p *corev1.Pod) bool { return !sel.Matches(labels.Set(p.Labels)) })
	}
	if o.Scope != nil {
		e.scope = o.Scope()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", name, cmd.name, err)
		if errors.Is(err, ErrUnavailable) {
			return exitUnavailable
		}
		return exitBadInput
	}
	code, err = cmd.run(e, opts)
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", name, cmd.name, err)
		if code == exitOK {
			code = exitBadInput
		}
	}
	return code
}

// parseInterspersed parses flags that may follow positional arguments, as kubectl allows
// ("explain pod/train-0 -n ml"), and returns the positional ones. Everything after "--" is
// positional. Each round consumes at least one argument, so it ends.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		before := len(args)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(rest) < before && args[before-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
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

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
