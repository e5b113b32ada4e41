package explainer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/feed"
	"github.com/dralloc/dralloc/allocator/pods"
)

// TestLiveResyncKeepsAssumedAllocation: a Feed on real informers that resync every 100ms. A pod is
// placed and assumed on the only GPU; the informers deliver the unallocated claim again and again, and
// the allocation stays, so a second pod finds no node. Then the allocation is written through the API
// server (as kube-scheduler writes it): the Feed applies the newer version; and when the claim is
// deallocated in the cluster, the GPU is free again for the second pod.
func TestLiveResyncKeepsAssumedAllocation(t *testing.T) {
	c := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ns := podNamespace(t, c)
	p := uniqueName("r")
	cleanupClusterObjects(t, c, p)
	res := c.ResourceV1()
	nodeName, className := p+"-node", p+"-gpu"
	if _, err := c.CoreV1().Nodes().Create(ctx, node(nodeName), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.ResourceSlices().Create(ctx, slice(p+"-slice", nodeName, 1, dev{"gpu-0", "a100", 0}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.DeviceClasses().Create(ctx, class(className, "a100"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "second"} {
		if _, err := res.ResourceClaims(ns).Create(ctx, claim(ns, name, className, 1, false), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	cluster := pods.New(allocator.NewSnapshot(allocator.Options{TrustAPIServer: true}), pods.Options{})
	var feedErrs atomic.Int32
	f := feed.New(cluster, feed.Options{OnError: func(err error) { t.Log(err); feedErrs.Add(1) }})
	factory := informers.NewSharedInformerFactory(c, 100*time.Millisecond)
	var synced []cache.InformerSynced
	for _, inf := range []cache.SharedIndexInformer{factory.Core().V1().Nodes().Informer(), factory.Resource().V1().ResourceSlices().Informer(),
		factory.Resource().V1().DeviceClasses().Informer(), factory.Resource().V1().ResourceClaims().Informer()} {
		reg, err := inf.AddEventHandler(f)
		if err != nil {
			t.Fatal(err)
		}
		synced = append(synced, reg.HasSynced)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("informers did not sync")
	}

	podFor := func(name, claimName string) *v1.Pod {
		pd := pod(ns, name, claimName, "", "")
		pd.UID = types.UID("uid-" + name)
		return pd
	}
	pl, err := cluster.Place(ctx, podFor("a", "first"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Assume(pl); err != nil {
		t.Fatal(err)
	}
	// Wait for resyncs to deliver both claims a few times more (every one dropped as not newer).
	stale := f.Stats().Stale["ResourceClaim"]
	eventually(t, 60*time.Second, "resyncs of the claims", func() error {
		if n := f.Stats().Stale["ResourceClaim"]; n < stale+6 {
			return fmt.Errorf("%d resynced claim events", n-stale)
		}
		return nil
	})
	if held, _ := cluster.Snapshot().Claim(ns, "first"); held.Status.Allocation == nil {
		t.Fatal("a resync undid the assumed allocation")
	}
	if _, err := cluster.Place(ctx, podFor("b", "second")); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("a second pod for the only GPU: %v, want ErrNoNode", err)
	}

	// kube-scheduler's write of the allocation: the Feed applies the newer version.
	written, err := res.ResourceClaims(ns).UpdateStatus(ctx, pl.Claims[0].Claim, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the written allocation", func() error {
		if held, _ := cluster.Snapshot().Claim(ns, "first"); held.ResourceVersion != written.ResourceVersion || held.Status.Allocation == nil {
			return fmt.Errorf("held at version %s, written %s", held.ResourceVersion, written.ResourceVersion)
		}
		return nil
	})
	// The claim is released in the cluster: the GPU is free for the second pod.
	freed := written.DeepCopy()
	freed.Status.ReservedFor, freed.Status.Allocation = nil, nil
	if _, err := res.ResourceClaims(ns).UpdateStatus(ctx, freed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the GPU freed", func() error {
		_, err := cluster.Place(ctx, podFor("b", "second"))
		return err
	})
	if n := feedErrs.Load(); n > 0 {
		t.Fatalf("%d feed errors", n)
	}
}
