package cli

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// cluster is the input: the objects read, the snapshot built from them and the pods to place.
type cluster struct {
	objs    *manifest.Objects
	snap    *allocator.Snapshot
	pods    *pods.Cluster
	groups  map[types.NamespacedName]*schedulingv1beta1.PodGroup
	pending []*corev1.Pod // in scheduling order
	// podCount is how many pods the input has, pending or not, before a selector narrows pending.
	podCount int
	// gangBudget is the most tries of each PodGroup's search (--gang-budget).
	gangBudget int
}

// newSnapshot is the snapshot a run builds.
func newSnapshot(trustAPIServer bool) *allocator.Snapshot {
	var shares atomic.Uint64
	return allocator.NewSnapshot(allocator.Options{
		TrustAPIServer: trustAPIServer,
		// Deterministic share IDs keep the output the same for the same input.
		ShareIDs: func() types.UID {
			return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", shares.Add(1)))
		},
	})
}

// sliceFeed adds each ResourceSlice to the snapshot as the loader reads it (manifest.Options.TakeSlice),
// so that the slices as read, the most memory of a large dump (about 100 MB for 5,000 nodes of 8 GPUs),
// are never all alive at once: each is collected once the snapshot has its copy. A slice read again
// replaces the one read before, as kubectl apply would (and as buildCluster keeps the latest of the
// other kinds), with the same warning.
type sliceFeed struct {
	snap   *allocator.Snapshot
	stderr io.Writer
	name   string
	// seen is where each slice name was read, for the warning.
	seen map[string]manifest.Source
}

func newSliceFeed(snap *allocator.Snapshot, stderr io.Writer, name string) *sliceFeed {
	return &sliceFeed{snap: snap, stderr: stderr, name: name, seen: map[string]manifest.Source{}}
}

// take is the manifest.Options.TakeSlice of a run.
func (f *sliceFeed) take(s *resourceapi.ResourceSlice, src manifest.Source) error {
	if old, ok := f.seen[s.Name]; ok {
		fmt.Fprintf(f.stderr, "%s: %s: ResourceSlice %s replaces the one read at %s, as kubectl apply would\n", f.name, src, s.Name, old)
	}
	f.seen[s.Name] = src
	return f.snap.AddOrUpdateSlice(s)
}

// buildCluster builds the snapshot from the objects read: slices, classes, claims (their allocations
// are the allocated state), taint rules and nodes, and a pods.Cluster with the templates and PodGroups.
// Pods with a node are running (their allocated claims are in the claims); pods without one and not
// finished are pending. With dropDevices, each ResourceSlice and Node is removed from objs once the
// snapshot has its copy, so that it can be collected (objs does not keep it alive through its sources):
// the slices of 5,000 nodes of 8 GPUs are about 100 MB as read.
func buildCluster(objs *manifest.Objects, stderr io.Writer, name string, trustAPIServer, dropDevices bool) (*cluster, error) {
	return buildInto(newSnapshot(trustAPIServer), objs, stderr, name, dropDevices)
}

// buildInto is buildCluster with the snapshot given: one that a sliceFeed has filled with the slices
// while they were read.
func buildInto(snap *allocator.Snapshot, objs *manifest.Objects, stderr io.Writer, name string, dropDevices bool) (*cluster, error) {
	warn := func(kind string, kept, dropped runtime.Object) {
		src, _ := objs.Source(kept)
		old, _ := objs.Source(dropped)
		fmt.Fprintf(stderr, "%s: %s: %s replaces the one read at %s, as kubectl apply would\n", name, src, kind, old)
	}
	objs.Pods = latest(objs.Pods, "Pod", warn)
	objs.Nodes = latest(objs.Nodes, "Node", warn)
	objs.Slices = latest(objs.Slices, "ResourceSlice", warn)
	objs.Classes = latest(objs.Classes, "DeviceClass", warn)
	objs.Claims = latest(objs.Claims, "ResourceClaim", warn)
	objs.Templates = latest(objs.Templates, "ResourceClaimTemplate", warn)
	objs.TaintRules = latest(objs.TaintRules, "DeviceTaintRule", warn)
	objs.PodGroups = latest(objs.PodGroups, "PodGroup", warn)
	c := &cluster{objs: objs, snap: snap, groups: map[types.NamespacedName]*schedulingv1beta1.PodGroup{}}
	for i, s := range objs.Slices {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			return nil, c.at(s, err)
		}
		if dropDevices {
			objs.Slices[i] = nil
		}
	}
	if dropDevices {
		objs.Slices = nil
	}
	for _, cl := range objs.Classes {
		if err := snap.AddOrUpdateClass(cl); err != nil {
			return nil, c.at(cl, err)
		}
	}
	for _, cl := range objs.Claims {
		if err := snap.AddOrUpdateClaim(cl); err != nil {
			return nil, c.at(cl, err)
		}
	}
	for _, r := range objs.TaintRules {
		if err := snap.AddOrUpdateTaintRule(r); err != nil {
			return nil, c.at(r, err)
		}
	}
	for i, n := range objs.Nodes {
		if err := snap.AddOrUpdateNode(n); err != nil {
			return nil, c.at(n, err)
		}
		if dropDevices {
			objs.Nodes[i] = nil
		}
	}
	if dropDevices {
		objs.Nodes = nil
	}
	var suffixes atomic.Uint64
	// kube-scheduler's NodeUnschedulable and NodeResourcesFit filters (a cordoned node, extended
	// resources a device plugin offers, cpu, memory, the node's pods) are the pods package's, on by
	// default.
	c.pods = pods.New(snap, pods.Options{
		NameSuffix: func() string { return suffix(suffixes.Add(1)) },
	})
	for _, t := range objs.Templates {
		if err := c.pods.AddOrUpdateTemplate(t); err != nil {
			return nil, c.at(t, err)
		}
	}
	for _, g := range objs.PodGroups {
		if err := c.pods.AddOrUpdatePodGroup(g); err != nil {
			return nil, c.at(g, err)
		}
		c.groups[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = g
	}
	c.podCount = len(objs.Pods)
	for _, p := range objs.Pods {
		if p.UID == "" {
			// The API server gives every object a UID when it is created; manifests as applied have
			// none, and reservedFor and owner references need one to tell pods apart.
			p.UID = uidFor("Pod", p.Namespace, p.Name)
		}
		// A pod with a node is placed: its allocated claims are in the snapshot already, and what it
		// takes on its node (requests, host ports, one of the node's pods) counts for the others.
		finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !finished && p.Spec.NodeName == "" {
			c.pending = append(c.pending, p)
		}
		if !finished && p.Spec.NodeName != "" {
			if err := c.pods.AddOrUpdatePod(p); err != nil {
				return nil, c.at(p, err)
			}
		}
	}
	// As kube-scheduler's default queue sort (PrioritySort): higher priority first, then the pod
	// that was created earlier; the input order breaks ties.
	slices.SortStableFunc(c.pending, func(a, b *corev1.Pod) int {
		if c := cmp.Compare(priority(b), priority(a)); c != 0 {
			return c
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return c, nil
}

// latest keeps, of objects with the same namespace and name, the one read last (in the place of the
// first), as applying the files one after the other leaves it; warn is told of each one dropped.
func latest[T interface {
	runtime.Object
	GetNamespace() string
	GetName() string
}](list []T, kind string, warn func(kind string, kept, dropped runtime.Object)) []T {
	index := map[types.NamespacedName]int{}
	out := list[:0:0]
	for _, obj := range list {
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if i, ok := index[key]; ok {
			name := kind + " " + obj.GetName()
			if key.Namespace != "" {
				name = kind + " " + key.Namespace + "/" + key.Name
			}
			warn(name, obj, out[i])
			out[i] = obj
			continue
		}
		index[key] = len(out)
		out = append(out, obj)
	}
	return out
}

// validate refuses ResourceSlices that kube-apiserver would refuse (inventory.ValidateSlice checks
// the API's limits and formats), so that a pool the allocator cannot use is an error naming the
// slice and field instead of devices that silently never match.
func validate(obj runtime.Object) error {
	s, ok := obj.(*resourceapi.ResourceSlice)
	if !ok {
		return nil
	}
	return inventory.ValidateSlice(s).ToAggregate()
}

// at prefixes err with where obj was read: file, document and item.
func (c *cluster) at(obj runtime.Object, err error) error {
	if src, ok := c.objs.Source(obj); ok {
		return fmt.Errorf("%s: %w", src, err)
	}
	return err
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// uidFor is a UID for an object that has none, the same for the same object in every run.
func uidFor(kind, namespace, name string) types.UID {
	h := sha256.Sum256([]byte(kind + "/" + namespace + "/" + name))
	h[6] = h[6]&0x0f | 0x80 // version 8: a custom UUID
	h[8] = h[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))
}

// suffix is the i-th five-character name suffix, from the alphabet the API server uses for
// generateName: i written in base 27 with that alphabet ("bbbbc" for 1, "bbbbd" for 2), so that runs
// on the same input name claims the same.
func suffix(i uint64) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for j := len(b) - 1; j >= 0; j-- {
		b[j] = alphabet[i%uint64(len(alphabet))]
		i /= uint64(len(alphabet))
	}
	return string(b)
}
