package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"

	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/examples/dractl/internal/cli"
)

// kind is one resource kubectl-dra lists.
type kind struct {
	group    string
	versions []string // tried in order: a version the server does not serve is skipped
	resource string
	// namespaced kinds are listed in the namespace of -n or of the context, or in all with -A.
	namespaced bool
	// everywhere: listed in every namespace whatever -n says, because what it says is about the
	// whole cluster.
	everywhere bool
	// optional: when no version is served, none are read (the feature is off in the cluster).
	optional bool
	// quota: listed only for a command given --enforce-quota, which applies them.
	quota bool
}

// kinds are what dractl reads, in the order `kubectl get pods,nodes,...` lists them. Namespaces are
// not read: dractl uses them only to validate claims asking for admin access, and objects from an
// API server are valid already, so listing them would ask for a permission for nothing.
// ResourceClaims are read in every namespace: a device that a claim of another namespace holds is
// in use, and a pod placed without knowing it would get it twice.
var kinds = []kind{
	{versions: []string{"v1"}, resource: "pods", namespaced: true},
	{versions: []string{"v1"}, resource: "nodes"},
	{group: "resource.k8s.io", versions: []string{"v1"}, resource: "resourceslices"},
	{group: "resource.k8s.io", versions: []string{"v1"}, resource: "deviceclasses"},
	{group: "resource.k8s.io", versions: []string{"v1"}, resource: "resourceclaims", namespaced: true, everywhere: true},
	{group: "resource.k8s.io", versions: []string{"v1"}, resource: "resourceclaimtemplates", namespaced: true},
	// DeviceTaintRules are served only with the DRADeviceTaintRules feature; the loader converts
	// every version to v1.
	{group: "resource.k8s.io", versions: []string{"v1", "v1beta2", "v1alpha3"}, resource: "devicetaintrules", optional: true},
	// PodGroups are served only with the GenericWorkload feature.
	{group: "scheduling.k8s.io", versions: []string{"v1beta1", "v1alpha3"}, resource: "podgroups", namespaced: true, optional: true},
	// ResourceQuotas limit the devices of the pods of their namespace, so they are read where the
	// pods are. Not optional: a user who asks for the quota and may not read it is told so, rather
	// than answered as if there were none.
	{versions: []string{"v1"}, resource: "resourcequotas", namespaced: true, quota: true},
}

// maxPages bounds the pages of one list, so that a server that keeps answering with a continue
// token ends the run: 10,000 pages of 500 are five million objects of one kind.
const maxPages = 10000

// live is where kubectl-dra's objects come from: the flags kubectl users know, and the client.
type live struct {
	// config are kubectl's own flags (cli-runtime's, as kubectl and its sample plugin take them):
	// the kubeconfig, $KUBECONFIG merged, context, cluster, user, namespace, impersonation, token,
	// server, TLS and --request-timeout.
	config        *genericclioptions.ConfigFlags
	allNamespaces bool
	// pageSize is the Limit of every list.
	pageSize int64
	// connect makes the client and says the namespace of the context; nil reads the kubeconfig.
	connect func(l *live) (dynamic.Interface, string, error)

	client dynamic.Interface
	ns     string // -n, or the namespace of the context
	// flags are the command's own flags, parsed: whether it was given --enforce-quota.
	flags *flag.FlagSet
}

const liveUsage = `Without -f, the objects are read from the cluster of the kubeconfig (--kubeconfig, --context),
in the namespace of -n or of the context, or in all with -A (kubectl's flags, --as and --token
included, mean what they mean to kubectl): pods, ResourceClaimTemplates,
PodGroups and, with --enforce-quota, ResourceQuotas in that namespace; nodes, ResourceSlices, DeviceClasses, DeviceTaintRules and the
ResourceClaims of every namespace (a device a claim holds is in use, whichever namespace the claim
is in). Only list, in pages; lists that are forbidden exit with 3, every permission missing named
in one message (PodGroups and DeviceTaintRules forbidden are read as not served, with a warning);
a cluster that cannot be reached or does not answer in time exits with 4.

  kubectl dra explain pod/train-0 -n ml
  kubectl dra top
`

// options are dractl's commands reading the cluster when not given -f, through the kubeconfig.
func options() cli.Options {
	return newLive(kubeconfig).options()
}

// newLive reads the cluster of the client connect makes.
func newLive(connect func(l *live) (dynamic.Interface, string, error)) *live {
	return &live{connect: connect, pageSize: 500}
}

func (l *live) options() cli.Options {
	return cli.Options{Name: "kubectl dra", Usage: liveUsage, Parser: l.parser, Source: l.load, Scope: l.scope, Namespace: l.namespaceOf, TrustAPIServer: true}
}

// parser parses the command line as kubectl does, with spf13/pflag: kubectl's flags from
// cli-runtime (so -nml is -n ml, and --as, --token, --server mean what they mean to kubectl),
// -A/--all-namespaces, and the command's own flags (-f, -o, ...) as pflag takes Go's flags.
func (l *live) parser(fs *flag.FlagSet) cli.FlagParser {
	pfs := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	pfs.SetOutput(io.Discard) // Run names a mistake itself, in one line
	pfs.Usage = func() {}
	pfs.SortFlags = false
	l.config = genericclioptions.NewConfigFlags(true)
	l.config.AddFlags(pfs)
	pfs.BoolVarP(&l.allNamespaces, "all-namespaces", "A", false, "read pods, claim templates and PodGroups of every namespace")
	l.flags = fs
	fs.VisitAll(func(f *flag.Flag) {
		switch f.Name {
		case "l":
			// --selector's shorthand, which pflag writes -l, --selector as kubectl does.
		case "selector":
			pf := pflag.PFlagFromGoFlag(f)
			pf.Shorthand = "l"
			pfs.AddFlag(pf)
		default:
			pfs.AddGoFlag(f)
		}
	})
	return pflagParser{pfs}
}

// pflagParser is a cli.FlagParser over a pflag.FlagSet.
type pflagParser struct{ fs *pflag.FlagSet }

func (p pflagParser) Parse(args []string) ([]string, error) {
	err := p.fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return nil, flag.ErrHelp
	}
	return p.fs.Args(), err
}

func (p pflagParser) PrintDefaults(w io.Writer) { io.WriteString(w, p.fs.FlagUsages()) }

// kubeconfig reads the kubeconfig as kubectl does, through cli-runtime's ConfigFlags:
// --kubeconfig, else every file of $KUBECONFIG merged, else ~/.kube/config; the flags override
// the current context, its cluster, user and namespace.
func kubeconfig(l *live) (dynamic.Interface, string, error) {
	if l.config == nil {
		l.config = genericclioptions.NewConfigFlags(true)
	}
	ns, _, err := l.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := l.config.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-dra"
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	return client, ns, nil
}

// connected makes the client once.
func (l *live) connected() error {
	if l.client != nil {
		return nil
	}
	client, ns, err := l.connect(l)
	if err != nil {
		return err
	}
	// -n wins over the namespace connect says (the context's), whatever connect read.
	flagNS := ""
	if l.config != nil && l.config.Namespace != nil {
		flagNS = *l.config.Namespace
	}
	l.client, l.ns = client, cmp.Or(flagNS, ns, "default")
	return nil
}

// scope says where the pods were read, for the messages saying there are none.
func (l *live) scope() string {
	if l.allNamespaces {
		return "in any namespace"
	}
	return "in namespace " + l.ns
}

// namespaceOf is the namespace of a pod named without one.
func (l *live) namespaceOf() (string, error) {
	if err := l.connected(); err != nil {
		return "", err
	}
	return l.ns, nil
}

// load lists every kind and reads the objects as dractl reads `kubectl get -o json`: the same
// decoding, conversions and defaults; without the validation an API server has done already
// (options sets cli.Options.TrustAPIServer, so opts come with NoValidate).
func (l *live) load(ctx context.Context, opts manifest.Options, warn func(string)) (*manifest.Objects, error) {
	if err := l.connected(); err != nil {
		return nil, err
	}
	objs := &manifest.Objects{}
	// Every list is made even after one is refused, so that one run names every permission
	// missing, not one per run.
	var denied []*forbidden
	for _, k := range kinds {
		if k.quota && !l.enforceQuota() {
			continue
		}
		items, err := l.list(ctx, k)
		var f *forbidden
		if errors.As(err, &f) {
			if k.optional {
				// As when the kind is not served: its feature may be off for this user as for the
				// cluster, and what the others read is still right without it.
				warn(fmt.Sprintf("%s: read as if the cluster did not serve them", f.need()))
				continue
			}
			denied = append(denied, f)
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(denied) > 0 {
			continue // the run ends with the refusals; nothing read is decided
		}
		// The API server lists in the order of its storage keys, by namespace and name; sorting
		// keeps that order whatever serves the list, so the same cluster gives the same output.
		slices.SortStableFunc(items, func(a, b listed) int {
			return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
		})
		// Decoded a page at a time, so that --max-bytes bounds a page, not the whole cluster.
		for chunk := range slices.Chunk(items, int(l.pageSize)) {
			read, err := decode(chunk, k.resource+" of the cluster", opts)
			if err != nil {
				return nil, err
			}
			objs.Append(read)
		}
	}
	if len(denied) > 0 {
		return nil, missing(denied)
	}
	return objs, nil
}

// enforceQuota says whether the command was given --enforce-quota (explain, place and capacity have it).
func (l *live) enforceQuota() bool {
	if l.flags == nil {
		return false
	}
	f := l.flags.Lookup("enforce-quota")
	return f != nil && f.Value.String() == "true"
}

// listed is one object as listed: its JSON, and its namespace and name to sort by. A kind is held
// as JSON until it is decoded, not as the client's unstructured maps, which take about five times
// the memory (6,000 pods of the live-scale cluster: 14 MB of JSON, about 80 MB of maps).
type listed struct {
	namespace, name string
	json            []byte
}

// decode reads items as one List, as kubectl writes several objects.
func decode(items []listed, name string, opts manifest.Options) (*manifest.Objects, error) {
	var list bytes.Buffer
	list.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	for i, it := range items {
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(it.json)
	}
	list.WriteString("]}")
	return manifest.Decode(&list, name, opts)
}

// list lists every object of k in pages of l.pageSize, in the first version the server serves.
func (l *live) list(ctx context.Context, k kind) ([]listed, error) {
	ns := ""
	if k.namespaced && !k.everywhere && !l.allNamespaces {
		ns = l.ns
	}
	for _, v := range k.versions {
		gvr := schema.GroupVersionResource{Group: k.group, Version: v, Resource: k.resource}
		items, err := l.listVersion(ctx, gvr, ns)
		if apierrors.IsNotFound(err) {
			continue // this version of the group is not served
		}
		if err != nil {
			return nil, listError(k, ns, err)
		}
		return items, nil
	}
	if k.optional {
		return nil, nil
	}
	return nil, fmt.Errorf("cannot list %s: %s %s is not served by the cluster (resource.k8s.io/v1 needs Kubernetes 1.34 or later)", k.resource, cmp.Or(k.group, "core"), k.versions[0])
}

// listVersion lists every object of gvr in ns, a page at a time, each page kept as JSON.
func (l *live) listVersion(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]listed, error) {
	var items []listed
	opts := metav1.ListOptions{Limit: l.pageSize}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("more than %d pages of %d %s: the server keeps sending a continue token", maxPages, l.pageSize, gvr.Resource)
		}
		list, err := l.client.Resource(gvr).Namespace(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			data, err := json.Marshal(list.Items[i].Object)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", gvr.Resource, list.Items[i].GetName(), err)
			}
			items = append(items, listed{namespace: list.Items[i].GetNamespace(), name: list.Items[i].GetName(), json: data})
		}
		next := list.GetContinue()
		if next == "" {
			return items, nil
		}
		if next == opts.Continue {
			return nil, fmt.Errorf("the server sent the same continue token twice for %s", gvr.Resource)
		}
		opts.Continue = next
	}
}

// forbidden is a list the user may not make: the kind, and the namespace listed ("" for all, or
// for a kind without namespace).
type forbidden struct {
	k  kind
	ns string
}

func (f *forbidden) Error() string { return "cannot " + f.need() }

// need is the permission in words: the verb, the resource with its API group, and where: in one
// namespace (a Role there grants it), or cluster-wide (only a ClusterRole, bound with a
// ClusterRoleBinding, grants a list of a kind without namespace or of every namespace).
func (f *forbidden) need() string {
	on := f.k.resource
	if f.k.group != "" {
		on = f.k.group + " " + f.k.resource
	}
	switch {
	case !f.k.namespaced:
		return "list " + on + " (cluster-scoped: a ClusterRole)"
	case f.ns != "":
		return "list " + on + " in namespace " + f.ns
	case f.k.everywhere:
		return "list " + on + " in every namespace (a ClusterRole: a device that a claim of any namespace holds is in use)"
	}
	return "list " + on + " in every namespace (a ClusterRole, as -A asks)"
}

// missing is the one error naming every permission refused.
func missing(denied []*forbidden) error {
	var b strings.Builder
	fmt.Fprintf(&b, "forbidden: %s refused; the user needs:", plural(len(denied), "list"))
	for _, f := range denied {
		b.WriteString("\n  " + f.need())
	}
	b.WriteString("\n(the ClusterRole of examples/dractl/kubectl-dra/deploy/clusterrole.yaml grants every one, and nothing more)")
	return errors.New(b.String())
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// listError says what failed, and for a forbidden list which permission is missing.
func listError(k kind, ns string, err error) error {
	where := " in all namespaces"
	switch {
	case !k.namespaced:
		where = ""
	case ns != "":
		where = " in namespace " + ns
	}
	switch {
	case apierrors.IsForbidden(err):
		return &forbidden{k: k, ns: ns}
	case unavailable(err):
		return fmt.Errorf("cannot list %s%s: %w: %w", k.resource, where, cli.ErrUnavailable, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("cannot list %s%s: the cluster does not accept the credentials of the kubeconfig: %w", k.resource, where, err)
	}
	return fmt.Errorf("cannot list %s%s: %w", k.resource, where, err)
}

// unavailable says whether err is the cluster's not answering rather than its refusing: no
// connection, a timeout (the client's --request-timeout, or the server's 504), or a server that is
// overloaded or not ready (503, 429), which client-go itself retries for the same reason. A TLS
// certificate the client does not trust is the kubeconfig's mistake, not the cluster's absence.
func unavailable(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return false
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}
