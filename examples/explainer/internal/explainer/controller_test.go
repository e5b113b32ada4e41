package explainer

import (
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// TestControllerRecordsEvents is TestLiveControllerRecordsEvents on client-go's fake clientset: the
// same scenarios, without an API server (so it runs everywhere).
func TestControllerRecordsEvents(t *testing.T) {
	testControllerRecordsEvents(t, fake.NewClientset(), markUnschedulable)
}
