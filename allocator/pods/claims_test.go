package pods_test

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator/pods"
)

// generated is a claim as the resourceclaim controller of v1.37.2 creates it for pod p's entry from
// template t: the pod as owner with controller: true and no blockOwnerDeletion.
func generated(p *v1.Pod, entry, name string, t *resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: p.Namespace, Name: name, GenerateName: p.Name + "-" + entry + "-",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr(true)}},
		Annotations:     map[string]string{resourceapi.PodResourceClaimAnnotation: entry},
	}, Spec: t.Spec.Spec}
	return c
}

func TestPodClaims(t *testing.T) {
	tmpl := template("one-gpu", 1)
	tmpl.Spec.ObjectMeta.Labels = map[string]string{"team": "ml"}
	tmpl.Spec.ObjectMeta.Annotations = map[string]string{"note": "from template"}
	p := pod("train", "gpu=template:one-gpu")
	other := pod("other", "gpu=template:one-gpu")
	earlier := generated(p, "gpu", "train-gpu-zzzzz", tmpl)
	notOwned := generated(other, "gpu", "train-gpu-owned-by-other", tmpl)

	longPod := pod(strings.Repeat("p", 50), "c"+strings.Repeat("x", 19)+"=template:one-gpu")

	tests := []struct {
		name      string
		pod       *v1.Pod
		claims    []*resourceapi.ResourceClaim // in the snapshot
		wantName  []string
		wantGen   []bool
		wantErr   error
		checkMeta bool
	}{
		{name: "resourceClaimName is that claim", pod: pod("p", "gpu=claim:shared"), claims: []*resourceapi.ResourceClaim{claim("shared", 1)},
			wantName: []string{"shared"}, wantGen: []bool{false}},
		{name: "resourceClaimName of a missing claim waits for it", pod: pod("p", "gpu=claim:shared"), wantErr: pods.ErrClaimNotFound},
		{name: "template without status or earlier claim generates <pod>-<entry>-<suffix>", pod: p,
			wantName: []string{"train-gpu-aaaa0"}, wantGen: []bool{true}, checkMeta: true},
		{name: "template finds the claim generated earlier by annotation and owner", pod: p, claims: []*resourceapi.ResourceClaim{earlier},
			wantName: []string{"train-gpu-zzzzz"}, wantGen: []bool{false}},
		{name: "a claim with the annotation but another owner is not the pod's", pod: p, claims: []*resourceapi.ResourceClaim{notOwned},
			wantName: []string{"train-gpu-aaaa0"}, wantGen: []bool{true}},
		{name: "status names the claim", pod: func() *v1.Pod {
			q := p.DeepCopy()
			q.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("train-gpu-zzzzz")}}
			return q
		}(), claims: []*resourceapi.ResourceClaim{earlier}, wantName: []string{"train-gpu-zzzzz"}, wantGen: []bool{false}},
		{name: "status without a claim name: no claim needed", pod: func() *v1.Pod {
			q := p.DeepCopy()
			q.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu"}}
			return q
		}(), wantName: nil},
		{name: "status naming a claim of another owner: a new claim is generated", pod: func() *v1.Pod {
			q := p.DeepCopy()
			q.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("train-gpu-owned-by-other")}}
			return q
		}(), claims: []*resourceapi.ResourceClaim{notOwned}, wantName: []string{"train-gpu-aaaa0"}, wantGen: []bool{true}},
		{name: "missing template", pod: pod("p", "gpu=template:none"), wantErr: pods.ErrTemplateNotFound},
		{name: "long names are cut in proportion, without the trailing hyphen", pod: longPod,
			// base "ppp…(50)-cxxx…(20)-" is 72 > 57: pod 50*57/72 = 39, entry 20*57/72 = 15.
			wantName: []string{strings.Repeat("p", 39) + "-c" + strings.Repeat("x", 14) + "aaaa0"}, wantGen: []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(t, pods.Options{}, 0, node("n1", nil))
			must(t, c.AddOrUpdateTemplate(tmpl))
			for _, cl := range tt.claims {
				must(t, c.Snapshot().AddOrUpdateClaim(cl))
			}
			before := tt.pod.DeepCopy()
			got, err := c.PodClaims(tt.pod)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if !equality.Semantic.DeepEqual(before, tt.pod) {
				t.Error("pod modified")
			}
			if tt.wantErr != nil {
				return
			}
			if len(got) != len(tt.wantName) {
				t.Fatalf("got %d claims, want %d", len(got), len(tt.wantName))
			}
			for i, pc := range got {
				if pc.Claim.Name != tt.wantName[i] || pc.Generated != tt.wantGen[i] {
					t.Errorf("claim %d: %s generated=%v, want %s generated=%v", i, pc.Claim.Name, pc.Generated, tt.wantName[i], tt.wantGen[i])
				}
			}
			if tt.checkMeta {
				want := generated(tt.pod, "gpu", "train-gpu-aaaa0", tmpl)
				want.Labels = map[string]string{"team": "ml"}
				want.Annotations["note"] = "from template"
				if !equality.Semantic.DeepEqual(got[0].Claim, want) {
					t.Errorf("generated claim\n%+v\nwant\n%+v", got[0].Claim, want)
				}
				if len(tmpl.Spec.ObjectMeta.Annotations) != 1 {
					t.Error("template annotations modified")
				}
			}
		})
	}
}

func TestPodClaimsOfPodGroup(t *testing.T) {
	group := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gang", UID: "uid-gang"}}
	group.Spec.ResourceClaims = []schedulingapi.PodGroupResourceClaim{
		{Name: "fabric", ResourceClaimTemplateName: ptr("one-gpu")},
		{Name: "shared", ResourceClaimName: ptr("shared")},
	}
	member := func(name string, claims ...string) *v1.Pod {
		p := pod(name, claims...)
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr("gang")}
		return p
	}
	tests := []struct {
		name      string
		pods      []*v1.Pod
		opts      pods.Options
		wantGroup bool
		wantSame  bool // every pod resolves to the same claim
		wantErr   error
	}{
		{name: "a matching template entry is the group's one claim", pods: []*v1.Pod{member("a", "fabric=template:one-gpu"), member("b", "fabric=template:one-gpu")}, wantGroup: true, wantSame: true},
		{name: "a matching claim entry is the group's claim", pods: []*v1.Pod{member("a", "shared=claim:shared")}, wantGroup: true},
		{name: "an entry with the same name but another template is the pod's own", pods: []*v1.Pod{member("a", "fabric=template:other")}, wantGroup: false},
		{name: "without DRAWorkloadResourceClaims the entry is the pod's own", opts: pods.Options{DisableWorkloadClaims: true}, pods: []*v1.Pod{member("a", "fabric=template:one-gpu"), member("b", "fabric=template:one-gpu")}, wantGroup: false},
		{name: "a missing PodGroup waits", pods: []*v1.Pod{func() *v1.Pod {
			p := member("a", "fabric=template:one-gpu")
			p.Spec.SchedulingGroup.PodGroupName = ptr("nope")
			return p
		}()}, wantErr: pods.ErrPodGroupNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(t, tt.opts, 0, node("n1", nil))
			must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
			must(t, c.AddOrUpdateTemplate(template("other", 1)))
			must(t, c.AddOrUpdatePodGroup(group))
			must(t, c.Snapshot().AddOrUpdateClaim(claim("shared", 1)))
			var names []string
			for _, p := range tt.pods {
				got, err := c.PodClaims(p)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				if err != nil {
					return
				}
				if (got[0].PodGroup != nil) != tt.wantGroup {
					t.Errorf("pod %s: group claim %v, want %v", p.Name, got[0].PodGroup != nil, tt.wantGroup)
				}
				if tt.wantGroup && got[0].Generated {
					owner := got[0].Claim.OwnerReferences[0]
					if owner.Kind != "PodGroup" || owner.UID != group.UID || owner.APIVersion != "scheduling.k8s.io/v1beta1" ||
						owner.Controller == nil || !*owner.Controller || owner.BlockOwnerDeletion != nil {
						t.Errorf("owner %+v, want the PodGroup as controller without blockOwnerDeletion", owner)
					}
					if !strings.HasPrefix(got[0].Claim.Name, "gang-fabric-") {
						t.Errorf("name %s, want gang-fabric-<suffix>", got[0].Claim.Name)
					}
				}
				names = append(names, got[0].Claim.Name)
				if got[0].Generated {
					// The controller creates it once; the next pod finds it.
					must(t, c.Snapshot().AddOrUpdateClaim(got[0].Claim))
				}
			}
			if tt.wantSame {
				for _, n := range names {
					if n != names[0] {
						t.Errorf("claims %v, want one claim for the group", names)
					}
				}
			}
		})
	}
}
