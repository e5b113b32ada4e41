package manifest

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ownerKey identifies a controller in a namespace.
type ownerKey struct {
	kind, namespace, name string
}

// expansion says which workload a pod was expanded from.
type expansion struct {
	// controller is the pod's controller: a ReplicaSet, StatefulSet, DaemonSet or Job.
	controller ownerKey
	// deployment is the Deployment whose ReplicaSet controller is, for pods expanded from it.
	deployment ownerKey
}

// daemonPairsPerPod bounds the DaemonSet and Node pairs checked: Options.MaxPods times it, ten
// million by default, more than the largest clusters have (a hundred DaemonSets on 15,000 Nodes
// are 1.5 million).
const daemonPairsPerPod = 100

// pending is a workload expanded when the whole input has been read.
type pending struct {
	obj runtime.Object
	src Source
}

// addExpanded adds the pods expanded from a workload, each with its owner's source.
func (d *decoder) addExpanded(pods []*corev1.Pod, owner Source, e expansion) error {
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		e.controller = ownerKey{ref.Kind, pod.Namespace, ref.Name}
		added, err := d.add(pod, owner, false)
		if err != nil {
			return err
		}
		if d.expanded == nil {
			d.expanded = make(map[*corev1.Pod]expansion)
		}
		d.expanded[added.(*corev1.Pod)] = e
	}
	return nil
}

func (d *decoder) markReplicaSetOf(deployment ownerKey) {
	if d.replicaSetsOf == nil {
		d.replicaSetsOf = make(map[ownerKey]bool)
	}
	d.replicaSetsOf[deployment] = true
}

// finish expands the DaemonSets over the Nodes read, then drops the pods expanded from a
// workload when the input already has that workload's pods (or, for a Deployment, one of its
// ReplicaSets), as `kubectl get all -o yaml` writes a Deployment, its ReplicaSets and their pods
// together: the pods that exist stand for the ones the controller would create. Last it makes
// the pods' names unique (uniqueNames).
func (d *decoder) finish() error {
	// Every DaemonSet is checked against every Node, which pods or not is time: 150,000 DaemonSets
	// that select no node and 150,000 Nodes fit in 64 MiB and would take an hour.
	if pairs := len(d.daemonSets) * len(d.objs.Nodes); len(d.daemonSets) > 0 && pairs > daemonPairsPerPod*d.opts.MaxPods {
		p := d.daemonSets[0]
		return &Error{Source: p.src, Object: objectName(p.obj, nil), Err: fmt.Errorf(
			"%w: %d DaemonSets on %d nodes are %d to check, more than %d times Options.MaxPods (%d)",
			ErrTooManyPods, len(d.daemonSets), len(d.objs.Nodes), pairs, daemonPairsPerPod, d.opts.MaxPods)}
	}
	for _, p := range d.daemonSets {
		ds := p.obj.(*appsv1.DaemonSet)
		owner := p.src
		owner.Owner = objectName(ds, nil)
		left := d.opts.MaxPods - d.pods
		pods, ok, err := daemonSetPods(ds, d.objs.Nodes, d.namer, left, func(n int) error { return d.chargeTemplate(ds, n) })
		if err != nil {
			return &Error{Source: p.src, Object: owner.Owner, Field: "spec.template", Err: err}
		}
		if !ok {
			return &Error{Source: p.src, Object: owner.Owner, Err: fmt.Errorf(
				"%w: it runs on more than %d of the %d nodes, which with the %d pods expanded before is more than Options.MaxPods (%d) for the whole input",
				ErrTooManyPods, left, len(d.objs.Nodes), d.pods, d.opts.MaxPods)}
		}
		d.pods += len(pods)
		if err := d.addExpanded(pods, owner, expansion{}); err != nil {
			return err
		}
	}
	if len(d.expanded) > 0 {
		d.dropStandIns()
	}
	if !d.opts.NoDefaults {
		if err := d.admitPods(); err != nil {
			return err
		}
		if d.opts.Validate != nil {
			for _, pod := range d.objs.Pods {
				if err := d.opts.Validate(pod); err != nil {
					src, _ := d.objs.Source(pod)
					return &Error{Source: src, Object: objectName(pod, nil), Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
				}
			}
		}
	}
	if !d.opts.NoValidate {
		if err := d.adminAccess(); err != nil {
			return err
		}
	}
	return d.uniqueNames()
}

// dropStandIns drops the pods expanded from a workload whose pods (or, for a Deployment, one of
// its ReplicaSets) the input has.
func (d *decoder) dropStandIns() {
	o := d.objs
	live := make(map[ownerKey]bool)
	for _, pod := range o.Pods {
		if _, ok := d.expanded[pod]; ok {
			continue
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			continue
		}
		live[ownerKey{ref.Kind, pod.Namespace, ref.Name}] = true
		// A ReplicaSet "<deployment>-<pod-template-hash>" is the deployment controller's.
		if hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ref.Kind == "ReplicaSet" && hash != "" {
			if dep, ok := strings.CutSuffix(ref.Name, "-"+hash); ok {
				live[ownerKey{"Deployment", pod.Namespace, dep}] = true
			}
		}
	}
	kept := o.Pods[:0]
	for _, pod := range o.Pods {
		e, ok := d.expanded[pod]
		if ok && (live[e.controller] || e.deployment != (ownerKey{}) && (live[e.deployment] || d.replicaSetsOf[e.deployment])) {
			o.deleteSource(pod)
			continue
		}
		kept = append(kept, pod)
	}
	clear(o.Pods[len(kept):])
	o.Pods = kept
}
