package pods

import (
	"crypto/sha1"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// uidOf is the UID of a pod or PodGroup or, for one that has none, a UID derived from its kind, namespace
// and name. The API server gives every object a UID when it creates it, and the claims a placement writes
// name their pod or PodGroup by UID (owner references and reservedFor, which the API server refuses without
// one); objects read from manifests that were never created have none, and get the same derived UID in every
// call, so that they own and hold their claims as created objects do.
func uidOf(obj metav1.Object) types.UID {
	if uid := obj.GetUID(); uid != "" {
		return uid
	}
	kind := "PodGroup"
	if _, ok := obj.(*v1.Pod); ok {
		kind = "Pod"
	}
	sum := sha1.Sum([]byte(kind + "/" + obj.GetNamespace() + "/" + obj.GetName()))
	sum[6] = sum[6]&0x0f | 0x50 // version 5: name-based, SHA-1
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}
