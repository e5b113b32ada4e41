package manifest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A dump of a cluster as kubectl get -o json writes it repeats most of each pod's and node's strings
// across objects: the labels of one Job's pods, images, the API server's defaults, condition reasons and
// messages, node-info fields. Decoded, each is a string of its own; and every object carries its
// managedFields, raw JSON that no decision reads. With Options.Compact the decoder drops the
// managedFields of Pods and Nodes and makes equal strings share one copy (interner), so that a dump of
// 5,000 nodes and 10,000 pods holds what differs between them, not 10,000 copies of what does not.

// interner hands out one copy of each string it has seen. It is the decoder's, used from add, one
// object at a time.
type interner map[string]string

// maxInterned bounds the strings an interner keeps: past it, strings are kept as they are (a dump whose
// strings all differ gains nothing from interning, and must not grow a second copy of them all).
const maxInterned = 1 << 20

// of returns the kept copy of s, keeping s when it is new.
func (in interner) of(s string) string {
	if s == "" {
		return ""
	}
	if kept, ok := in[s]; ok {
		return kept
	}
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// at interns the string *s in place.
func (in interner) at(s *string) { *s = in.of(*s) }

// strings replaces a label or annotation map by one whose keys and values are interned (a map keeps
// the key it was first given, so the keys cannot be replaced in place).
func (in interner) strings(m *map[string]string) {
	if len(*m) == 0 {
		return
	}
	out := make(map[string]string, len(*m))
	for k, v := range *m {
		out[in.of(k)] = in.of(v)
	}
	*m = out
}

// meta compacts what ObjectMeta holds: it drops the managed fields and interns the rest.
func (in interner) meta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	in.at(&m.Namespace)
	in.at(&m.GenerateName)
	in.strings(&m.Labels)
	in.strings(&m.Annotations)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		in.at(&r.APIVersion)
		in.at(&r.Kind)
		in.at(&r.Name)
	}
}

// pod compacts a pod in place.
func (in interner) pod(p *corev1.Pod) {
	in.meta(&p.ObjectMeta)
	s := &p.Spec
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			in.container(&cs[i])
		}
	}
	in.at(&s.SchedulerName)
	in.at(&s.ServiceAccountName)
	in.at(&s.DeprecatedServiceAccount)
	in.at(&s.PriorityClassName)
	in.strings(&s.NodeSelector)
	for i := range s.Tolerations {
		t := &s.Tolerations[i]
		in.at(&t.Key)
		in.at(&t.Value)
	}
	for i := range s.Volumes {
		v := &s.Volumes[i]
		in.at(&v.Name)
		if pr := v.Projected; pr != nil {
			for j := range pr.Sources {
				if cm := pr.Sources[j].ConfigMap; cm != nil {
					in.at(&cm.Name)
				}
			}
		}
	}
	for i := range s.ResourceClaims {
		c := &s.ResourceClaims[i]
		in.at(&c.Name)
	}
	st := &p.Status
	for i := range st.Conditions {
		c := &st.Conditions[i]
		in.at(&c.Reason)
		in.at(&c.Message)
	}
}

// container compacts a container in place.
func (in interner) container(c *corev1.Container) {
	in.at(&c.Name)
	in.at(&c.Image)
	in.at(&c.TerminationMessagePath)
	for i := range c.Env {
		in.at(&c.Env[i].Name)
		in.at(&c.Env[i].Value)
	}
	for i := range c.VolumeMounts {
		in.at(&c.VolumeMounts[i].Name)
		in.at(&c.VolumeMounts[i].MountPath)
	}
	for i := range c.Resources.Claims {
		in.at(&c.Resources.Claims[i].Name)
	}
}

// node compacts a node in place.
func (in interner) node(n *corev1.Node) {
	in.meta(&n.ObjectMeta)
	st := &n.Status
	for i := range st.Conditions {
		c := &st.Conditions[i]
		in.at(&c.Reason)
		in.at(&c.Message)
	}
	ni := &st.NodeInfo
	// KubeProxyVersion is deprecated and no longer set by kubelets; it is kept as decoded.
	for _, s := range []*string{&ni.KernelVersion, &ni.OSImage, &ni.ContainerRuntimeVersion, &ni.KubeletVersion,
		&ni.OperatingSystem, &ni.Architecture} {
		in.at(s)
	}
	for i := range st.Images {
		for j := range st.Images[i].Names {
			in.at(&st.Images[i].Names[j])
		}
	}
}
