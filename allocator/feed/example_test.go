package feed_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/feed"
	"github.com/dralloc/dralloc/allocator/pods"
)

// A Feed is every informer's event handler; with client-go:
//
//	f := feed.New(cluster, feed.Options{OnError: func(err error) { logger.Error(err, "feed") }})
//	for _, inf := range []cache.SharedIndexInformer{slices, classes, claims, templates, rules, groups, nodes} {
//		reg, _ := inf.AddEventHandler(f)
//		synced = append(synced, reg.HasSynced)
//	}
//	cache.WaitForCacheSync(ctx.Done(), synced...)
//
// Here the events are delivered by hand: a node is added, a class added and deleted through a tombstone.
func ExampleFeed() {
	snap := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
	cluster := pods.New(snap, pods.Options{})
	f := feed.New(cluster, feed.Options{OnError: func(err error) { fmt.Println("error:", err) }})

	f.OnAdd(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "10"}}, true)
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu", ResourceVersion: "11"}}
	f.OnAdd(class, true)
	fmt.Println(len(snap.Nodes()), len(snap.Classes()))
	f.OnDelete(struct {
		Key string
		Obj any
	}{Key: "gpu", Obj: class})
	fmt.Println(len(snap.Nodes()), len(snap.Classes()), f.Stats().Applied)
	// Output:
	// 1 1
	// 1 0 map[DeviceClass:2 Node:1]
}
