package pods_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/fuzz"
)

// longPrefix makes every generated pod name share its first 58 characters, so that the claims generated
// for the pods share their generateName and collide whenever the suffix repeats.
var longPrefix = strings.Repeat("p", 60)

// fewSuffixes cycles through three suffixes: generated names collide all the time.
func fewSuffixes() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return []string{"bbbbb", "ccccc", "ddddd"}[n%3]
	}
}

// sequenceCluster loads a generated cluster for the sequence properties: names collide, the gang
// search has a budget, and the Choice is drawn, so that the steps run on the index of full nodes
// (FirstFit) and on BestFit's and Spread's rank index.
func sequenceCluster(t *rapid.T, c *fuzz.Cluster) *pods.Cluster {
	choice := pods.Choice(rapid.IntRange(0, 2).Draw(t, "choice"))
	return loadCluster(t, c, pods.Options{Choice: choice, Workers: 2, StepBudget: 2000, NameSuffix: fewSuffixes()})
}

// drawPod draws a pod in the generated namespace with up to two claims, through templates or shared.
func drawPod(t *rapid.T, c *fuzz.Cluster, name string) *v1.Pod {
	var claims []string
	for k := range rapid.IntRange(0, 2).Draw(t, "claims") {
		j := rapid.IntRange(0, len(c.Claims)-1).Draw(t, "claim")
		if rapid.IntRange(0, 3).Draw(t, "shared") == 0 {
			claims = append(claims, fmt.Sprintf("c%d=claim:%s", k, c.Claims[j].Name))
		} else {
			claims = append(claims, fmt.Sprintf("c%d=template:t-%d", k, j))
		}
	}
	p := pod(name, claims...)
	p.Namespace = fuzz.Namespace
	p.UID = types.UID("uid-" + name)
	return p
}

// checkHeld fails unless the snapshot's allocated claims, counted device by device, overdraw nothing,
// every claim the pods allocated is reserved by someone, and no claim outlives the pod or group that
// owns it.
func checkHeld(t *rapid.T, c *fuzz.Cluster, cl *pods.Cluster, gone map[types.UID]string, step int) {
	snap := cl.Snapshot()
	claims := snap.Claims("")
	if bad := fuzz.CheckUsage(c.Slices, claims, c.Gates()); len(bad) > 0 {
		t.Fatalf("step %d: %v", step, bad)
	}
	pre := map[string]bool{}
	for _, a := range c.Allocated {
		pre[a.Name] = true
	}
	for _, claim := range claims {
		if claim.Status.Allocation != nil && !pre[claim.Name] && len(claim.Status.ReservedFor) == 0 {
			t.Fatalf("step %d: claim %s is allocated but reserved by no one", step, claim.Name)
		}
		for _, ref := range claim.OwnerReferences {
			if who, ok := gone[ref.UID]; ok {
				t.Fatalf("step %d: claim %s outlives %s, which owns it", step, claim.Name, who)
			}
		}
	}
}

// The pod layer's random-sequence property: place, assume (at once or steps later, so that placements
// go stale), remove, a driver writing status.devices, forks committed or discarded, gangs placed,
// assumed and removed, in an order rapid draws, with names that collide. After every step no device has
// two exclusive users, no share or counter set is overdrawn, nothing allocated is unreserved, and no
// claim outlives its owner.
func TestPropPodSequences(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		ctx := context.Background()
		root := sequenceCluster(t, c)
		cur := root // the Cluster the steps act on: the root or a fork of it
		type pending struct {
			on *pods.Cluster
			pl *pods.Placement
			gp *pods.GroupPlacement
		}
		var waiting []pending
		var placed []*v1.Pod
		var groups []*schedulingapi.PodGroup
		gone := map[types.UID]string{}
		steps := rapid.IntRange(1, 24).Draw(t, "steps")
		for step := range steps {
			switch rapid.IntRange(0, 8).Draw(t, "op") {
			case 0, 1: // place
				p := drawPod(t, c, fmt.Sprintf("%s-%d", longPrefix, step))
				pl, err := cur.Place(ctx, p)
				if err != nil {
					if !acceptable(err) && !errors.Is(err, allocator.ErrConflict) {
						t.Fatalf("step %d: place: %v", step, err)
					}
					continue
				}
				waiting = append(waiting, pending{on: cur, pl: pl})
			case 2, 3: // assume a placement made earlier
				if len(waiting) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(waiting)-1).Draw(t, "assume")
				w := waiting[i]
				waiting = append(waiting[:i:i], waiting[i+1:]...)
				if w.on != cur {
					continue // made on a fork since committed or discarded
				}
				var err error
				if w.gp != nil {
					err = cur.AssumeGroup(w.gp)
				} else {
					err = cur.Assume(w.pl)
				}
				switch {
				case errors.Is(err, allocator.ErrConflict):
				case err != nil:
					t.Fatalf("step %d: assume: %v", step, err)
				case w.gp != nil:
					for _, p := range w.gp.Pods {
						if p != nil {
							placed = append(placed, p.Pod)
						}
					}
				default:
					placed = append(placed, w.pl.Pod)
				}
			case 4: // remove a placed pod
				if len(placed) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(placed)-1).Draw(t, "remove")
				p := placed[i]
				placed = append(placed[:i:i], placed[i+1:]...)
				if err := cur.Remove(p); err != nil {
					t.Fatalf("step %d: remove %s: %v", step, p.Name, err)
				}
				if cur == root {
					gone[p.UID] = "Pod " + p.Name
				}
			case 5: // the driver writes status.devices of an allocated claim
				var allocated []*resourceapi.ResourceClaim
				for _, claim := range cur.Snapshot().Claims("") {
					if claim.Status.Allocation != nil {
						allocated = append(allocated, claim)
					}
				}
				if len(allocated) == 0 {
					continue
				}
				claim := allocated[rapid.IntRange(0, len(allocated)-1).Draw(t, "status")].DeepCopy()
				claim.Status.Devices = nil
				for _, r := range claim.Status.Allocation.Devices.Results {
					claim.Status.Devices = append(claim.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: r.Driver, Pool: r.Pool, Device: r.Device, ShareID: shareIDString(r.ShareID)})
				}
				if err := cur.Snapshot().AddOrUpdateClaim(claim); err != nil {
					t.Fatalf("step %d: driver status of %s: %v", step, claim.Name, err)
				}
			case 6: // fork, or end the fork
				switch {
				case cur == root:
					cur = root.Fork()
				case rapid.Bool().Draw(t, "commit"):
					if err := cur.Commit(); err != nil && !errors.Is(err, allocator.ErrConflict) {
						t.Fatalf("step %d: commit: %v", step, err)
					}
					cur, placed = root, nil
				default:
					if err := cur.Snapshot().Discard(); err != nil {
						t.Fatal(err)
					}
					cur, placed = root, nil
				}
			case 7: // place a gang
				n := rapid.IntRange(1, 3).Draw(t, "gang")
				g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: fuzz.Namespace, Name: fmt.Sprintf("g-%d", step), UID: types.UID(fmt.Sprintf("uid-g-%d", step))}}
				g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: int32(n)}
				if err := cur.AddOrUpdatePodGroup(g); err != nil {
					t.Fatal(err)
				}
				var members []*v1.Pod
				for k := range n {
					p := drawPod(t, c, fmt.Sprintf("%s-%d-%d", longPrefix, step, k))
					p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g.Name}
					members = append(members, p)
				}
				// kube-scheduler's pass, or the search for any placement: both give placements to assume.
				var gp *pods.GroupPlacement
				var err error
				if rapid.Bool().Draw(t, "scheduler's pass") {
					gp, err = cur.PlaceGroup(ctx, g, members)
				} else {
					gp, err = cur.SearchGroupPlacement(ctx, g, members, &pods.Budget{Limit: 500})
				}
				if err != nil {
					if !acceptable(err) && !errors.Is(err, pods.ErrGroupUnschedulable) && !errors.Is(err, allocator.ErrConflict) {
						t.Fatalf("step %d: place group: %v", step, err)
					}
					continue
				}
				groups = append(groups, g)
				waiting = append(waiting, pending{on: cur, gp: gp})
			case 8: // remove a gang: its pods, then the group
				if len(groups) == 0 || cur != root {
					continue
				}
				g := groups[rapid.IntRange(0, len(groups)-1).Draw(t, "group")]
				for i := 0; i < len(placed); {
					if sg := placed[i].Spec.SchedulingGroup; sg != nil && *sg.PodGroupName == g.Name {
						if err := cur.Remove(placed[i]); err != nil {
							t.Fatalf("step %d: remove %s: %v", step, placed[i].Name, err)
						}
						gone[placed[i].UID] = "Pod " + placed[i].Name
						placed = append(placed[:i:i], placed[i+1:]...)
						continue
					}
					i++
				}
				if err := cur.RemovePodGroup(g); err != nil {
					t.Fatalf("step %d: remove group %s: %v", step, g.Name, err)
				}
				gone[g.UID] = "PodGroup " + g.Name
			}
			checkHeld(t, c, cur, gone, step)
			if cur != root {
				checkHeld(t, c, root, gone, step)
			}
		}
	})
}

func shareIDString(id *types.UID) *string {
	if id == nil {
		return nil
	}
	s := string(*id)
	return &s
}

// Goroutines place, assume and remove pods of a generated cluster on one Cluster at once, and commit
// forks of it, as the Cluster's doc allows; afterwards nothing is overdrawn. Run under the race detector
// in CI. (The interleaving is the scheduler's: TestPropPodSequences replays any order deterministically.)
func TestPropConcurrentPodSequences(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		cl := sequenceCluster(t, c)
		const workers = 4
		podsOf := make([][]*v1.Pod, workers)
		for w := range podsOf {
			for i := range rapid.IntRange(1, 6).Draw(t, "pods") {
				podsOf[w] = append(podsOf[w], drawPod(t, c, fmt.Sprintf("%s-w%d-%d", longPrefix, w, i)))
			}
		}
		ctx := context.Background()
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				target := cl
				if w%2 == 1 {
					target = cl.Fork() // odd workers commit a fork at the end
				}
				for i, p := range podsOf[w] {
					pl, err := target.Place(ctx, p)
					if err != nil {
						if !acceptable(err) && !errors.Is(err, allocator.ErrConflict) {
							errs <- fmt.Errorf("place %s: %w", p.Name, err)
							return
						}
						continue
					}
					if err := target.Assume(pl); err != nil && !errors.Is(err, allocator.ErrConflict) {
						errs <- fmt.Errorf("assume %s: %w", p.Name, err)
						return
					}
					if i%3 == 2 {
						if err := target.Remove(p); err != nil {
							errs <- fmt.Errorf("remove %s: %w", p.Name, err)
							return
						}
					}
				}
				if target != cl {
					if err := target.Commit(); err != nil && !errors.Is(err, allocator.ErrConflict) {
						errs <- fmt.Errorf("commit: %w", err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		checkHeld(t, c, cl, nil, -1)
	})
}
