package scaling_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator/scaling"
)

// Name is how decisions and errors name what waits for a node.
func ExamplePending_Name() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "trainer"}}
	gang := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gang"}}
	fmt.Println(scaling.Pending{Pod: pod}.Name())
	fmt.Println(scaling.Pending{Group: gang, Pods: []*v1.Pod{pod}}.Name())
	// Output:
	// Pod ml/trainer
	// PodGroup ml/gang
}
