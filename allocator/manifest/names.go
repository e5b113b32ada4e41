package manifest

import (
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxGeneratedNameLength is the length kube-apiserver cuts generateName to before it appends
// five random characters (k8s.io/apiserver/pkg/storage/names).
const maxGeneratedNameLength = 63 - 5

// maxNameDraws is how often a name is drawn for one pod: kube-apiserver's generic registry tries
// a create with generateName up to 8 times when the name drawn is taken
// (k8s.io/apiserver/pkg/registry/generic/registry: maxNameGenerationCreateAttempts).
const maxNameDraws = 8

// namer names pods with generateName as kube-apiserver does (names.SimpleNameGenerator):
// generateName cut to 58 characters and a suffix. Two generateNames that agree in those
// characters give names from one sequence of draws, so that the deterministic suffix never gives
// two pods of the input one name, however long and alike their owners' names are.
type namer struct {
	suffix func(generateName string, i int) string
	// draws counts the names drawn per namespace and cut generateName.
	draws map[nameKey]int
}

type nameKey struct{ namespace, base string }

func newNamer(suffix func(generateName string, i int) string) *namer {
	if suffix == nil {
		suffix = deterministicSuffix
	}
	return &namer{suffix: suffix, draws: make(map[nameKey]int)}
}

// name draws a name for pod from its generateName.
func (n *namer) name(pod *corev1.Pod) {
	base := cutGenerateName(pod.GenerateName)
	k := nameKey{pod.Namespace, base}
	i := n.draws[k]
	n.draws[k] = i + 1
	pod.Name = base + n.suffix(pod.GenerateName, i)
}

func cutGenerateName(generateName string) string {
	if len(generateName) > maxGeneratedNameLength {
		return generateName[:maxGeneratedNameLength]
	}
	return generateName
}

// suffixAlphabet is the alphabet of k8s.io/apimachinery/pkg/util/rand, from which kube-apiserver
// draws the suffix of generated names.
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// deterministicSuffix gives the i-th draw for generateName a five character suffix: i written in
// the suffix alphabet, offset by a hash of the 58 characters of generateName that the name keeps,
// so that the suffixes drawn for one such prefix never repeat (for fewer than 27⁵ draws) and look
// like the random ones. Hashing what the name keeps, not the whole generateName, matters: two
// owners whose names agree in their first 58 characters share one sequence, not two that may
// overlap.
func deterministicSuffix(generateName string, i int) string {
	h := fnv.New32a()
	h.Write([]byte(cutGenerateName(generateName)))
	const space = 27 * 27 * 27 * 27 * 27
	v := (uint64(h.Sum32()) + uint64(i)) % space
	var b [5]byte
	for j := 4; j >= 0; j-- {
		b[j] = suffixAlphabet[v%27]
		v /= 27
	}
	return string(b[:])
}

// uniqueNames makes the names of the pods read unique in their namespaces, once the whole input is
// read and the expanded pods that live pods stand for are dropped: a pod with generateName whose
// name another pod has (one read later, or one a caller's Suffix drew twice) is named again, up to
// maxNameDraws times; a pod read with only generateName is named; a StatefulSet's pod whose fixed
// name another pod has is an error. Pods read with their names keep them, repeated or not.
func (d *decoder) uniqueNames() error {
	o := d.objs
	taken := make(map[types.NamespacedName]*corev1.Pod, len(o.Pods))
	key := func(p *corev1.Pod) types.NamespacedName {
		return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	}
	for _, pod := range o.Pods {
		if _, expanded := d.expanded[pod]; !expanded && pod.Name != "" && taken[key(pod)] == nil {
			taken[key(pod)] = pod
		}
	}
	for _, pod := range o.Pods {
		e, expanded := d.expanded[pod]
		if !expanded && pod.Name != "" {
			continue
		}
		if pod.Name != "" && taken[key(pod)] == nil {
			taken[key(pod)] = pod
			continue
		}
		src, _ := o.Source(pod)
		// A StatefulSet's pod has generateName too (GetPodFromTemplate sets it) but its name is
		// fixed; kube-apiserver uses generateName only for a pod without a name.
		if pod.GenerateName == "" || e.controller.kind == "StatefulSet" {
			other, _ := o.Source(taken[key(pod)])
			return &Error{Source: src, Object: objectName(pod, nil), Field: "metadata.name",
				Err: fmt.Errorf("%w by the pod read at %s", ErrNameConflict, other)}
		}
		for draw := 0; ; draw++ {
			if draw == maxNameDraws {
				return &Error{Source: src, Object: objectName(pod, nil), Field: "metadata.generateName",
					Err: fmt.Errorf("%w: every one of %d names drawn from generateName %q is taken", ErrNameConflict, maxNameDraws, pod.GenerateName)}
			}
			d.namer.name(pod)
			if taken[key(pod)] == nil {
				break
			}
		}
		taken[key(pod)] = pod
	}
	return nil
}
