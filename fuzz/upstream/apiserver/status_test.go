package apiserver_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
	driverclaim "github.com/dralloc/dralloc/inventory/claim"
)

// conditionTime is the lastTransitionTime of the conditions drivers report here: whole seconds, the
// resolution the API server keeps.
var conditionTime = metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))

// withDeviceStatuses returns a copy of the allocated claim whose status.devices has, built with
// inventory/claim as a driver builds it, one entry per allocated device (and share): a Ready condition,
// opaque data and network data with an interface name, a MAC address and an IPv4 and an IPv6 address.
func withDeviceStatuses(t fataler, claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	t.Helper()
	out := claim.DeepCopy()
	for i, r := range claim.Status.Allocation.Devices.Results {
		st := driverclaim.DeviceStatus(r)
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
			Reason: "Prepared", Message: "device " + r.Device + " is prepared", LastTransitionTime: conditionTime,
			ObservedGeneration: claim.Generation})
		st.Data = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"request":%q,"index":%d}`, r.Request, i)}
		st.NetworkData = driverclaim.NetworkData(fmt.Sprintf("net%d", i), fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256),
			netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i / 256), byte(i % 256)}), 16),
			netip.MustParsePrefix(fmt.Sprintf("fd00::%x/64", i+1)))
		var err error
		if out, err = driverclaim.SetDeviceStatus(out, st); err != nil {
			t.Fatalf("device status of %s/%s/%s: %v", r.Driver, r.Pool, r.Device, err)
		}
	}
	return out
}

// TestPlacedPodClaimsAreAccepted places a pod on a fleet of DGX H100 nodes with allocator/pods — a claim
// of its own from a template, a shared claim it names, and an extended resource backed by a DeviceClass —
// and writes every claim of the placement as kube-scheduler and the drivers do: Create for the claims that
// do not exist yet, then UpdateStatus with the allocation, reservedFor as pods.Cluster writes it and the
// status.devices entries built by inventory/claim. The API server must accept them and read them back equal.
func TestPlacedPodClaimsAreAccepted(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	f := newFleet(t, c, 2)
	pod := f.pod(t, "train")
	placed, err := f.cluster.Place(ctx, pod)
	if err != nil {
		t.Fatalf("place: %v", err)
	}
	if len(placed.Claims) != 3 {
		t.Fatalf("placement has %d claims, want the template's, the shared one and the extended-resource claim", len(placed.Claims))
	}
	for _, pc := range placed.Claims {
		writePlacedClaim(t, c, pc)
	}
	t.Logf("pod %s placed on %s; %d claims written", pod.Name, placed.Node, len(placed.Claims))
}

// writePlacedClaim writes one claim of a placement to the API server, with status.devices added, and checks
// that it reads back equal.
func writePlacedClaim(t fataler, c kubernetes.Interface, pc pods.PlacedClaim) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	claims := c.ResourceV1().ResourceClaims(pc.Claim.Namespace)
	var current *resourceapi.ResourceClaim
	var err error
	if pc.Generated {
		fresh := pc.Claim.DeepCopy()
		fresh.Status = resourceapi.ResourceClaimStatus{}
		fresh.ResourceVersion, fresh.UID = "", ""
		if current, err = claims.Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ResourceClaim %s/%s:\n%s\nkube-apiserver: %v", fresh.Namespace, fresh.Name, toYAML(fresh), err)
		}
	} else if current, err = claims.Get(ctx, pc.Claim.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get ResourceClaim %s/%s: %v", pc.Claim.Namespace, pc.Claim.Name, err)
	}
	current.Status = *pc.Claim.Status.DeepCopy()
	current = withDeviceStatuses(t, current)
	sent := current.Status.DeepCopy()
	got, err := claims.UpdateStatus(ctx, current, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("write status of ResourceClaim %s/%s:\n%s\nkube-apiserver: %v", current.Namespace, current.Name, toYAML(sent), err)
	}
	if !equality.Semantic.DeepEqual(&got.Status, sent) {
		t.Fatalf("ResourceClaim %s/%s: status read back:\n%s\nsent:\n%s", got.Namespace, got.Name, toYAML(got.Status), toYAML(sent))
	}
	if len(got.Status.ReservedFor) == 0 || len(got.Status.Devices) == 0 {
		t.Fatalf("ResourceClaim %s/%s: written without reservedFor or devices", got.Namespace, got.Name)
	}
	return got
}

// fleet is a set of nodes with inventory's DGX H100 slices, classes for whole GPUs and MIG devices (the
// GPU class backs an extended resource), a template for one GPU and a shared claim for two MIG devices, in
// one namespace, loaded into a pods.Cluster.
type fleet struct {
	ns                 string
	nodes              []*corev1.Node
	slices             []*resourceapi.ResourceSlice
	classes            []*resourceapi.DeviceClass
	template           *resourceapi.ResourceClaimTemplate
	shared             *resourceapi.ResourceClaim
	extendedResource   corev1.ResourceName
	cluster            *pods.Cluster
	gpuClass, migClass string
}

// newFleet builds a fleet, creates its objects in the API server and loads what the server stored.
func newFleet(t *testing.T, c kubernetes.Interface, nodes int) *fleet {
	t.Helper()
	f := buildFleet(t, podNamespace(t, c), nodes)
	ctx := context.Background()
	for i, node := range f.nodes {
		got, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create Node %s: %v", node.Name, err)
		}
		// kube-apiserver's TaintNodesByCondition admission taints a new node not-ready; the node lifecycle
		// controller, which does not run here, removes the taint once the kubelet reports the node ready.
		got.Spec.Taints = nil
		if f.nodes[i], err = c.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("untaint Node %s: %v", node.Name, err)
		}
	}
	for i, s := range f.slices {
		got, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ResourceSlice %s: %v", s.Name, err)
		}
		f.slices[i] = got
	}
	for i, class := range f.classes {
		got, err := c.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create DeviceClass %s: %v", class.Name, err)
		}
		f.classes[i] = got
	}
	var err error
	if f.template, err = c.ResourceV1().ResourceClaimTemplates(f.ns).Create(ctx, f.template, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaimTemplate: %v", err)
	}
	if f.shared, err = c.ResourceV1().ResourceClaims(f.ns).Create(ctx, f.shared, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim: %v", err)
	}
	f.load(t)
	return f
}

// buildFleet makes the objects of a fleet in namespace ns, with fresh names, without creating them.
func buildFleet(t *testing.T, ns string, nodes int) *fleet {
	t.Helper()
	f := &fleet{ns: ns}
	tmpl, err := inventory.Profile("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Mode = inventory.ModeDynamicMIG
	for range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("dgxh100"), Labels: map[string]string{"example.com/rack": "r1"}}}
		// The DGX H100's allocatable, which NodeResourcesFit reads (a kubelet reports it; the API server keeps
		// the status a Node is created with).
		node.Status.Allocatable = tmpl.Allocatable.DeepCopy()
		f.nodes = append(f.nodes, node)
		sl, err := tmpl.Slices(node.Name, 1)
		if err != nil {
			t.Fatal(err)
		}
		f.slices = append(f.slices, sl...)
	}
	f.gpuClass, f.migClass = uniqueName("gpu"), uniqueName("mig")
	f.extendedResource = corev1.ResourceName("example.com/" + f.gpuClass)
	gpu := nvidiaClass(f.gpuClass, inventory.TypeGPU)
	gpu.Spec.ExtendedResourceName = ptr.To(string(f.extendedResource))
	f.classes = []*resourceapi.DeviceClass{gpu, nvidiaClass(f.migClass, inventory.TypeMIG)}
	one := nvidiaClaim("one-gpu", f.gpuClass, 1, "", false)
	f.template = &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu", Namespace: f.ns}}
	f.template.Spec.Spec = one.Spec
	f.shared = nvidiaClaim("shared-mig", f.migClass, 2, "1g.10gb", false)
	f.shared.Namespace = f.ns
	return f
}

// load builds the fleet's pods.Cluster from its objects.
func (f *fleet) load(t *testing.T) {
	t.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, x := range f.nodes {
		must(t, snap.AddOrUpdateNode(x))
	}
	for _, x := range f.slices {
		must(t, snap.AddOrUpdateSlice(x))
	}
	for _, x := range f.classes {
		must(t, snap.AddOrUpdateClass(x))
	}
	must(t, snap.AddOrUpdateClaim(f.shared))
	f.cluster = pods.New(snap, pods.Options{})
	must(t, f.cluster.AddOrUpdateTemplate(f.template))
}

// newPod is a pod using the fleet's template, its shared claim and its extended resource.
func (f *fleet) newPod(name string) *corev1.Pod {
	one := resource.MustParse("1")
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/train:1", Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{f.extendedResource: one},
			Requests: corev1.ResourceList{f.extendedResource: one},
			Claims:   []corev1.ResourceClaim{{Name: "gpu"}, {Name: "mig"}},
		}}},
		ResourceClaims: []corev1.PodResourceClaim{
			{Name: "gpu", ResourceClaimTemplateName: ptr.To(f.template.Name)},
			{Name: "mig", ResourceClaimName: ptr.To(f.shared.Name)},
		},
	}}
}

// pod creates a pending pod with newPod.
func (f *fleet) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	got, err := client(t).CoreV1().Pods(f.ns).Create(context.Background(), f.newPod(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Pod %s/%s: %v", f.ns, name, err)
	}
	return got
}

// statusCase is one status.devices entry list written to an allocated claim, with the field Kubernetes'
// validation (pkg/apis/resource/validation, validateDeviceStatus) names, "" when it is accepted.
type statusCase struct {
	name  string
	edit  func(devices []resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus
	field string
}

const sharedID = "7f6e4c1a-0000-4000-8000-000000000001"

// statusBase is an allocated claim with a whole device and a share of a device.
func statusBase() *resourceapi.ResourceClaim {
	c := validClaim()
	c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "nic.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}})
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: driver, Pool: pool, Device: "gpu-0"},
		{Request: "nic", Driver: "nic.example.com", Pool: "fabric", Device: "nic-0", ShareID: ptr.To(types.UID(sharedID))},
	}}}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: "uid-train"}}
	return c
}

func entry(device string) resourceapi.AllocatedDeviceStatus {
	st := resourceapi.AllocatedDeviceStatus{Driver: driver, Pool: pool, Device: device}
	if device == "nic-0" {
		st = resourceapi.AllocatedDeviceStatus{Driver: "nic.example.com", Pool: "fabric", Device: device, ShareID: ptr.To(sharedID)}
	}
	return st
}

func ready() metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared", LastTransitionTime: conditionTime}
}

// one edits a list holding the entry of gpu-0.
func one(edit func(d *resourceapi.AllocatedDeviceStatus)) func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
	return func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
		d := entry("gpu-0")
		edit(&d)
		return []resourceapi.AllocatedDeviceStatus{d}
	}
}

func network(edit func(nd *resourceapi.NetworkDeviceData)) func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
	return one(func(d *resourceapi.AllocatedDeviceStatus) {
		d.NetworkData = driverclaim.NetworkData("eth1", "02:00:00:00:00:01", netip.MustParsePrefix("10.0.0.1/24"))
		edit(d.NetworkData)
	})
}

func ips(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("10.0.0.%d/24", i+1))
	}
	return out
}

var statusCases = []statusCase{
	{"entries for both devices with conditions, data and network data", func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
		gpu, nic := entry("gpu-0"), entry("nic-0")
		gpu.Conditions = []metav1.Condition{ready()}
		gpu.Data = &runtime.RawExtension{Raw: []byte(`{"a":1}`)}
		nic.NetworkData = driverclaim.NetworkData("eth1", "02:00:00:00:00:01", netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("fd00::1/64"))
		return []resourceapi.AllocatedDeviceStatus{gpu, nic}
	}, ""},
	{"no driver", one(func(d *resourceapi.AllocatedDeviceStatus) { d.Driver = "" }), "status.devices[0].driver"},
	{"driver with an underscore", one(func(d *resourceapi.AllocatedDeviceStatus) { d.Driver = "gpu_example.com" }), "status.devices[0].driver"},
	{"pool not a DNS subdomain", one(func(d *resourceapi.AllocatedDeviceStatus) { d.Pool = "Pool_A" }), "status.devices[0].pool"},
	{"device not a DNS label", one(func(d *resourceapi.AllocatedDeviceStatus) { d.Device = "GPU_0" }), "status.devices[0].device"},
	{"device that is not allocated", one(func(d *resourceapi.AllocatedDeviceStatus) { d.Device = "gpu-1" }), "status.devices[0]"},
	{"share ID not a UUID", func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
		d := entry("nic-0")
		d.ShareID = ptr.To("share-1")
		return []resourceapi.AllocatedDeviceStatus{d}
	}, "status.devices[0].shareID"},
	{"share ID in upper case", func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
		d := entry("nic-0")
		d.ShareID = ptr.To(strings.ToUpper(sharedID))
		return []resourceapi.AllocatedDeviceStatus{d}
	}, "status.devices[0].shareID"},
	{"share ID on a device allocated whole", one(func(d *resourceapi.AllocatedDeviceStatus) { d.ShareID = ptr.To(sharedID) }), "status.devices[0]"},
	{"shared device without its share ID", func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
		d := entry("nic-0")
		d.ShareID = nil
		return []resourceapi.AllocatedDeviceStatus{d}
	}, "status.devices[0]"},
	{"entry given twice", func([]resourceapi.AllocatedDeviceStatus) []resourceapi.AllocatedDeviceStatus {
		return []resourceapi.AllocatedDeviceStatus{entry("gpu-0"), entry("gpu-0")}
	}, "status.devices[1]"},
	{"8 conditions", one(func(d *resourceapi.AllocatedDeviceStatus) {
		for i := range 8 {
			c := ready()
			c.Type = fmt.Sprintf("Ready%d", i)
			d.Conditions = append(d.Conditions, c)
		}
	}), ""},
	{"9 conditions", one(func(d *resourceapi.AllocatedDeviceStatus) {
		for i := range 9 {
			c := ready()
			c.Type = fmt.Sprintf("Ready%d", i)
			d.Conditions = append(d.Conditions, c)
		}
	}), "status.devices[0].conditions"},
	{"two conditions of one type", one(func(d *resourceapi.AllocatedDeviceStatus) { d.Conditions = []metav1.Condition{ready(), ready()} }), "status.devices[0].conditions[1]"},
	{"condition without reason", one(func(d *resourceapi.AllocatedDeviceStatus) {
		c := ready()
		c.Reason = ""
		d.Conditions = []metav1.Condition{c}
	}), "status.devices[0].conditions[0].reason"},
	{"condition with status Maybe", one(func(d *resourceapi.AllocatedDeviceStatus) {
		c := ready()
		c.Status = "Maybe"
		d.Conditions = []metav1.Condition{c}
	}), "status.devices[0].conditions[0].status"},
	{"condition type not a label name", one(func(d *resourceapi.AllocatedDeviceStatus) {
		c := ready()
		c.Type = "is ready"
		d.Conditions = []metav1.Condition{c}
	}), "status.devices[0].conditions[0].type"},
	{"condition without lastTransitionTime", one(func(d *resourceapi.AllocatedDeviceStatus) {
		c := ready()
		c.LastTransitionTime = metav1.Time{}
		d.Conditions = []metav1.Condition{c}
	}), "status.devices[0].conditions[0].lastTransitionTime"},
	{"condition with negative observedGeneration", one(func(d *resourceapi.AllocatedDeviceStatus) {
		c := ready()
		c.ObservedGeneration = -1
		d.Conditions = []metav1.Condition{c}
	}), "status.devices[0].conditions[0].observedGeneration"},
	{"data a JSON array", one(func(d *resourceapi.AllocatedDeviceStatus) { d.Data = &runtime.RawExtension{Raw: []byte(`[1,2]`)} }), "status.devices[0].data"},
	{"data of 10 KiB", one(func(d *resourceapi.AllocatedDeviceStatus) {
		d.Data = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"a":%q}`, strings.Repeat("x", 10*1024-8))}
	}), ""},
	{"data over 10 KiB", one(func(d *resourceapi.AllocatedDeviceStatus) {
		d.Data = &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"a":%q}`, strings.Repeat("x", 10*1024))}
	}), "status.devices[0].data"},
	{"interface name of 256 bytes", network(func(nd *resourceapi.NetworkDeviceData) { nd.InterfaceName = strings.Repeat("e", 256) }), ""},
	{"interface name of 257 bytes", network(func(nd *resourceapi.NetworkDeviceData) { nd.InterfaceName = strings.Repeat("e", 257) }),
		"status.devices[0].networkData.interfaceName"},
	{"hardware address of 129 bytes", network(func(nd *resourceapi.NetworkDeviceData) { nd.HardwareAddress = strings.Repeat("a", 129) }),
		"status.devices[0].networkData.hardwareAddress"},
	{"hardware address that is not a MAC address", network(func(nd *resourceapi.NetworkDeviceData) { nd.HardwareAddress = "not a mac" }), ""},
	{"16 addresses", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = ips(16) }), ""},
	{"17 addresses", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = ips(17) }), "status.devices[0].networkData.ips"},
	{"address without prefix length", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = []string{"10.0.0.1"} }),
		"status.devices[0].networkData.ips[0]"},
	{"address with leading zeros", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = []string{"010.0.0.1/24"} }),
		"status.devices[0].networkData.ips[0]"},
	{"address given twice", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = []string{"10.0.0.1/24", "10.0.0.1/24"} }),
		"status.devices[0].networkData.ips[1]"},
	{"IPv6 address written twice differently", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = []string{"fd00::1/64", "fd00:0::1/64"} }),
		"status.devices[0].networkData.ips[1]"},
	{"IPv6 address not in canonical form", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = []string{"FD00::1/64"} }),
		"status.devices[0].networkData.ips[0]"},
	{"address with host bits", network(func(nd *resourceapi.NetworkDeviceData) { nd.IPs = []string{"10.0.0.1/8"} }), ""},
}

// TestDeviceStatusValidation writes status.devices entries to an allocated claim: each must get the verdict
// Kubernetes' validation gives it, and inventory/claim.ValidateDeviceStatuses must give the same verdict
// naming the same fields, for the entries it accepts and those it rejects.
func TestDeviceStatusValidation(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	ns := namespace(t, c)
	agree := 0
	var differ []string
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			base := named(statusBase(), ns).(*resourceapi.ResourceClaim)
			status := base.Status.DeepCopy()
			base.Status = resourceapi.ResourceClaimStatus{}
			created, err := c.ResourceV1().ResourceClaims(ns).Create(ctx, base, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			created.Status = *status
			created.Status.Devices = tc.edit(nil)
			_, err = c.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
			api, err := apiVerdict(err)
			if err != nil {
				t.Fatalf("update status: %v", err)
			}
			local := verdictOf(driverclaim.ValidateDeviceStatuses(created))
			t.Logf("kube-apiserver: %v; inventory/claim: %v", api, local)
			switch {
			case tc.field == "" && api.rejected:
				t.Errorf("kube-apiserver rejected what Kubernetes accepts: %s", api.reason)
			case tc.field != "" && !api.names(tc.field):
				t.Errorf("kube-apiserver: %v, want rejected at %s (%s)", api, tc.field, api.reason)
			}
			if api.rejected == local.rejected && slices.Equal(api.fields, local.fields) {
				agree++
				return
			}
			differ = append(differ, fmt.Sprintf("%q: kube-apiserver %v, inventory/claim %v", tc.name, api, local))
			t.Errorf("inventory/claim.ValidateDeviceStatuses: %v (%s), kube-apiserver: %v (%s)", local, local.reason, api, api.reason)
		})
	}
	t.Logf("inventory/claim agrees with kube-apiserver on %d of %d status.devices verdicts (same verdict, same fields)\n%s",
		agree, len(statusCases), strings.Join(differ, "\n"))
}
