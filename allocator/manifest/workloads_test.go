package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"note": "n"}},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "c", Image: "i"}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")}},
		},
	}
}

// numbered is a suffix source that makes the names easy to read.
func numbered(generateName string, i int) string { return fmt.Sprintf("n%04d", i) }

func ownerRef(apiVersion, kind, name, uid string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: typesUID(uid),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

func TestExpandDeployment(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Template: podTemplate(map[string]string{"app": "web"}),
		},
	}
	before := d.DeepCopy()
	pods, err := Expand(d, numbered)
	if err != nil {
		t.Fatal(err)
	}
	hash := podTemplateHash(&d.Spec.Template, nil)
	rs := "web-" + hash
	if len(pods) != 2 {
		t.Fatalf("got %d pods, want 2", len(pods))
	}
	for i, pod := range pods {
		want := &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name:            fmt.Sprintf("%s-n%04d", rs, i),
				GenerateName:    rs + "-",
				Namespace:       "ns",
				Labels:          map[string]string{"app": "web", "pod-template-hash": hash},
				Annotations:     map[string]string{"note": "n"},
				OwnerReferences: ownerRef("apps/v1", "ReplicaSet", rs, ""),
			},
			Spec: d.Spec.Template.Spec,
		}
		if !apiequality.Semantic.DeepEqual(pod, want) {
			t.Errorf("pod %d:\ngot  %+v\nwant %+v", i, pod, want)
		}
	}
	if !apiequality.Semantic.DeepEqual(d, before) {
		t.Error("Expand changed the Deployment")
	}
}

func TestPodTemplateHash(t *testing.T) {
	a := podTemplate(map[string]string{"app": "web"})
	b := podTemplate(map[string]string{"app": "db"})
	hash := podTemplateHash(&a, nil)
	if hash == "" || strings.Trim(hash, suffixAlphabet) != "" {
		t.Errorf("hash %q is not written in the alphabet %q", hash, suffixAlphabet)
	}
	if again := podTemplateHash(a.DeepCopy(), nil); again != hash {
		t.Errorf("the same template hashes to %q and %q", hash, again)
	}
	if other := podTemplateHash(&b, nil); other == hash {
		t.Errorf("templates with different labels have the same hash %q", hash)
	}
	if bumped := podTemplateHash(&a, ptr.To[int32](1)); bumped == hash {
		t.Errorf("a collision count does not change the hash %q", hash)
	}
}

func TestExpandStatefulSet(t *testing.T) {
	tmpl := podTemplate(map[string]string{"app": "db"})
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "data"}, {Name: "config"}}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "s-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To[int32](2),
			Ordinals:             &appsv1.StatefulSetOrdinals{Start: 5},
			ServiceName:          "db-headless",
			Template:             tmpl,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}, {ObjectMeta: metav1.ObjectMeta{Name: "logs"}}},
		},
	}
	pods, err := Expand(set, numbered)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 {
		t.Fatalf("got %d pods, want 2", len(pods))
	}
	for i, pod := range pods {
		ordinal := 5 + i
		name := fmt.Sprintf("db-%d", ordinal)
		equal(t, pod.Name, name)
		equal(t, pod.GenerateName, "db-")
		equal(t, pod.Namespace, "ns")
		equal(t, pod.Labels, map[string]string{
			"app": "db", "statefulset.kubernetes.io/pod-name": name, "apps.kubernetes.io/pod-index": fmt.Sprint(ordinal),
		})
		equal(t, pod.OwnerReferences, ownerRef("apps/v1", "StatefulSet", "db", "s-uid"))
		equal(t, pod.Spec.Hostname, name)
		equal(t, pod.Spec.Subdomain, "db-headless")
		pvc := func(claim string) corev1.VolumeSource {
			return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim + "-" + name}}
		}
		equal(t, pod.Spec.Volumes, []corev1.Volume{
			{Name: "data", VolumeSource: pvc("data")}, {Name: "config"}, {Name: "logs", VolumeSource: pvc("logs")},
		})
	}
	equal(t, set.Spec.Template.Spec.Volumes, []corev1.Volume{{Name: "data"}, {Name: "config"}})
}

func TestExpandJob(t *testing.T) {
	job := func(parallelism, completions *int32, mode batchv1.CompletionMode) *batchv1.Job {
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: "j-uid"},
			Spec: batchv1.JobSpec{
				Parallelism: parallelism,
				Completions: completions,
				Template:    podTemplate(map[string]string{"app": "train"}),
			},
		}
		if mode != "" {
			j.Spec.CompletionMode = &mode
		}
		return j
	}
	labels := map[string]string{
		"app": "train", "batch.kubernetes.io/job-name": "train", "job-name": "train",
		"batch.kubernetes.io/controller-uid": "j-uid", "controller-uid": "j-uid",
	}
	cases := []struct {
		name string
		job  *batchv1.Job
		pods int
	}{
		{"neither parallelism nor completions: one pod", job(nil, nil, ""), 1},
		{"parallelism 3: three pods", job(ptr.To[int32](3), nil, ""), 3},
		{"parallelism 3 of 2 completions: two pods", job(ptr.To[int32](3), ptr.To[int32](2), ""), 2},
		{"parallelism 0: none", job(ptr.To[int32](0), nil, ""), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := Expand(tc.job, numbered)
			if err != nil {
				t.Fatal(err)
			}
			if len(pods) != tc.pods {
				t.Fatalf("got %d pods, want %d", len(pods), tc.pods)
			}
			for i, pod := range pods {
				equal(t, pod.Name, fmt.Sprintf("train-n%04d", i))
				equal(t, pod.GenerateName, "train-")
				equal(t, pod.Labels, labels)
				equal(t, pod.Finalizers, []string{"batch.kubernetes.io/job-tracking"})
				equal(t, pod.OwnerReferences, ownerRef("batch/v1", "Job", "train", "j-uid"))
			}
		})
	}

	t.Run("suspended: none", func(t *testing.T) {
		j := job(ptr.To[int32](2), nil, "")
		j.Spec.Suspend = ptr.To(true)
		pods, _ := Expand(j, numbered)
		equal(t, len(pods), 0)
	})

	t.Run("manual selector: no labels added", func(t *testing.T) {
		j := job(nil, nil, "")
		j.Spec.ManualSelector = ptr.To(true)
		pods, _ := Expand(j, numbered)
		equal(t, pods[0].Labels, map[string]string{"app": "train"})
	})

	t.Run("indexed: parallelism 2 of 4 completions gives indexes 0 and 1", func(t *testing.T) {
		pods, err := Expand(job(ptr.To[int32](2), ptr.To[int32](4), batchv1.IndexedCompletion), numbered)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, len(pods), 2)
		for i, pod := range pods {
			index := fmt.Sprint(i)
			equal(t, pod.GenerateName, "train-"+index+"-")
			// Each index has its own generateName, so each draws the first name of its own sequence.
			equal(t, pod.Name, fmt.Sprintf("train-%d-n0000", i))
			equal(t, pod.Annotations, map[string]string{"note": "n", "batch.kubernetes.io/job-completion-index": index})
			equal(t, pod.Labels["batch.kubernetes.io/job-completion-index"], index)
			equal(t, pod.Spec.Hostname, "train-"+index)
			equal(t, pod.Spec.Containers[0].Env, []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"},
			}}})
		}
	})
}

func TestExpandReplicaSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "r-uid"},
		Spec:       appsv1.ReplicaSetSpec{Template: podTemplate(map[string]string{"app": "x"})},
	}
	pods, err := Expand(rs, numbered)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, len(pods), 1) // replicas default to 1
	equal(t, pods[0].Name, "rs-n0000")
	equal(t, pods[0].Labels, map[string]string{"app": "x"})
	equal(t, pods[0].OwnerReferences, ownerRef("apps/v1", "ReplicaSet", "rs", "r-uid"))

	rs.Spec.Replicas = ptr.To[int32](0)
	pods, _ = Expand(rs, numbered)
	equal(t, len(pods), 0)
}

func TestExpandLongNames(t *testing.T) {
	long := strings.Repeat("a", 70)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: long, Namespace: "ns"},
		Spec:       appsv1.ReplicaSetSpec{Template: podTemplate(nil)},
	}
	pods, _ := Expand(rs, nil)
	// kube-apiserver keeps 58 characters of generateName and appends 5.
	equal(t, pods[0].GenerateName, long+"-")
	equal(t, len(pods[0].Name), 63)
	equal(t, pods[0].Name[:58], long[:58])

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: long, Namespace: "ns"},
		Spec:       batchv1.JobSpec{CompletionMode: ptr.To(batchv1.IndexedCompletion), Template: podTemplate(nil)},
	}
	pods, _ = Expand(job, nil)
	equal(t, pods[0].GenerateName, long[:55]+"-0-")
	equal(t, pods[0].Spec.Hostname, long[:61]+"-0")
}

func TestDeterministicSuffix(t *testing.T) {
	seen := make(map[string]int)
	for i := range 20000 {
		s := deterministicSuffix("web-abc-", i)
		if len(s) != 5 || strings.Trim(s, suffixAlphabet) != "" {
			t.Fatalf("suffix %d is %q, not five characters of %q", i, s, suffixAlphabet)
		}
		if j, ok := seen[s]; ok {
			t.Fatalf("pods %d and %d both get suffix %q", j, i, s)
		}
		seen[s] = i
	}
	if deterministicSuffix("a-", 0) == deterministicSuffix("b-", 0) {
		t.Error("the first pods of two owners get the same suffix")
	}
}

func TestExpandUnknownKind(t *testing.T) {
	_, err := Expand(&appsv1.DaemonSet{}, nil)
	if !errors.Is(err, ErrUnknownKind) {
		t.Errorf("got %v, want ErrUnknownKind", err)
	}
}

// TestExpandedPodsGiveWayToLivePods reads workloads next to what a cluster already runs for them,
// as `kubectl get all -o yaml` writes it: the pods that exist stand for those the controller would
// create, and are not doubled.
func TestExpandedPodsGiveWayToLivePods(t *testing.T) {
	deployment := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
`
	replicaSet := `
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f9c
  namespace: ns
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d, controller: true}]
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, pod-template-hash: 5d8f9c}}
    spec: {containers: [{name: c, image: i}]}
`
	livePod := `
apiVersion: v1
kind: Pod
metadata:
  name: web-5d8f9c-abcde
  namespace: ns
  labels: {app: web, pod-template-hash: 5d8f9c}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f9c, uid: r, controller: true}]
spec: {containers: [{name: c, image: i}]}
`
	job := `
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ns, uid: j}
spec:
  parallelism: 3
  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}
`
	liveJobPod := `
apiVersion: v1
kind: Pod
metadata:
  name: train-xyz12
  namespace: ns
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: j, controller: true}]
spec: {containers: [{name: c, image: i}]}
`
	cases := []struct {
		name string
		docs []string
		want []string
	}{
		{"a Deployment alone is expanded", []string{deployment}, []string{"Deployment ns/web", "Deployment ns/web"}},
		{"a Deployment gives way to its ReplicaSet", []string{deployment, replicaSet}, []string{"ReplicaSet ns/web-5d8f9c", "ReplicaSet ns/web-5d8f9c"}},
		{"a Deployment and its ReplicaSet give way to their pods", []string{livePod, deployment, replicaSet}, []string{"web-5d8f9c-abcde"}},
		{"a Job gives way to its pods", []string{job, liveJobPod}, []string{"train-xyz12"}},
		{"a Job alone is expanded", []string{job}, []string{"Job ns/train", "Job ns/train", "Job ns/train"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := decodeString(t, strings.Join(tc.docs, "\n---\n"), Options{})
			var got []string // a pod read as it is by its name, one expanded by its owner
			for _, p := range objs.Pods {
				src, _ := objs.Source(p)
				if src.Owner != "" {
					got = append(got, src.Owner)
				} else {
					got = append(got, p.Name)
				}
			}
			equal(t, got, tc.want)
			equal(t, len(objs.Pods), len(objs.sources))
		})
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
