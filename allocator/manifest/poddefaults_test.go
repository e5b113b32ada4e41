package manifest

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func TestDefaultPodCreatePath(t *testing.T) {
	ctr := func(name string, limits, requests corev1.ResourceList, ports ...corev1.ContainerPort) corev1.Container {
		return corev1.Container{Name: name, Ports: ports, Resources: corev1.ResourceRequirements{Limits: limits, Requests: requests}}
	}
	withPodResources := func(limits, requests corev1.ResourceList, ctrs ...corev1.Container) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{SchedulerName: corev1.DefaultSchedulerName, Containers: ctrs}}
		if limits != nil || requests != nil {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: limits, Requests: requests}
		}
		return p
	}
	port := func(container, host int32, protocol corev1.Protocol) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: container, HostPort: host, Protocol: protocol}
	}
	hostNet := func(hostNetwork bool, init, main corev1.Container) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{SchedulerName: corev1.DefaultSchedulerName, HostNetwork: hostNetwork,
			InitContainers: []corev1.Container{init}, Containers: []corev1.Container{main}}}
	}

	cases := []struct {
		name     string
		in, want *corev1.Pod
	}{
		// DefaultPodLevelResources, defaultPodLevelRequests: a pod-level limit without a request is the request.
		{"pod-level limits only: the requests are the limits",
			withPodResources(list("cpu", "2", "memory", "1Gi"), nil, ctr("c", nil, nil)),
			withPodResources(list("cpu", "2", "memory", "1Gi"), list("cpu", "2", "memory", "1Gi"), ctr("c", nil, nil))},
		// The containers' cpu requests (100m + 200m) become the pod's cpu request; no container has a cpu
		// limit, so no pod-level cpu limit is made.
		{"pod-level memory limit: cpu request from the containers, memory from the limit",
			withPodResources(list("memory", "1Gi"), nil, ctr("a", nil, list("cpu", "100m")), ctr("b", nil, list("cpu", "200m"))),
			withPodResources(list("memory", "1Gi"), list("cpu", "300m", "memory", "1Gi"),
				ctr("a", nil, list("cpu", "100m")), ctr("b", nil, list("cpu", "200m")))},
		// defaultPodLevelLimits: every container has a cpu limit (500m); the pod's request (1) is higher,
		// so the pod-level limit is raised to it.
		{"pod-level request above the containers' limits: the pod-level limit is the request",
			withPodResources(nil, list("cpu", "1"), ctr("c", list("cpu", "500m"), nil)),
			withPodResources(list("cpu", "1"), list("cpu", "1"), ctr("c", list("cpu", "500m"), list("cpu", "500m")))},
		{"pod-level request below the containers' limits: the pod-level limit is their sum",
			withPodResources(nil, list("cpu", "100m"), ctr("a", list("cpu", "500m"), nil), ctr("b", list("cpu", "250m"), nil)),
			withPodResources(list("cpu", "750m"), list("cpu", "100m"),
				ctr("a", list("cpu", "500m"), list("cpu", "500m")), ctr("b", list("cpu", "250m"), list("cpu", "250m")))},
		{"pod-level request, a container without a limit: no pod-level limit",
			withPodResources(nil, list("cpu", "1"), ctr("a", list("cpu", "500m"), nil), ctr("b", nil, nil)),
			withPodResources(nil, list("cpu", "1"), ctr("a", list("cpu", "500m"), list("cpu", "500m")), ctr("b", nil, nil))},
		// defaultHugePagePodLevelLimits: the containers' hugepage limit becomes the pod's, then its request.
		{"pod-level resources: hugepages of the containers become pod-level limits and requests",
			withPodResources(list("cpu", "1"), nil, ctr("c", list("hugepages-2Mi", "4Mi"), nil)),
			withPodResources(list("cpu", "1", "hugepages-2Mi", "4Mi"), list("cpu", "1", "hugepages-2Mi", "4Mi"),
				ctr("c", list("hugepages-2Mi", "4Mi"), list("hugepages-2Mi", "4Mi")))},
		// An extended resource is not a pod-level resource: it is neither copied up nor defaulted.
		{"pod-level resources leave extended resources to the containers",
			withPodResources(list("cpu", "1", "example.com/gpu", "1"), nil, ctr("c", list("example.com/gpu", "1"), nil)),
			withPodResources(list("cpu", "1", "example.com/gpu", "1"), list("cpu", "1"),
				ctr("c", list("example.com/gpu", "1"), list("example.com/gpu", "1")))},
		{"no pod-level resources: nothing at pod level",
			withPodResources(nil, nil, ctr("c", list("cpu", "1"), nil)),
			withPodResources(nil, nil, ctr("c", list("cpu", "1"), list("cpu", "1")))},
		// defaultHostNetworkPorts: every port with hostPort 0, of containers and init containers.
		{"host network: hostPort defaults to containerPort, a hostPort given is kept",
			hostNet(true, ctr("init", nil, nil, port(53, 0, corev1.ProtocolUDP)), ctr("c", nil, nil, port(8080, 0, ""), port(9090, 9191, ""))),
			hostNet(true, ctr("init", nil, nil, port(53, 53, corev1.ProtocolUDP)),
				ctr("c", nil, nil, port(8080, 8080, corev1.ProtocolTCP), port(9090, 9191, corev1.ProtocolTCP)))},
		{"no host network: no hostPort, the protocol is TCP",
			hostNet(false, ctr("init", nil, nil, port(53, 0, "")), ctr("c", nil, nil, port(8080, 0, ""))),
			hostNet(false, ctr("init", nil, nil, port(53, 0, corev1.ProtocolTCP)), ctr("c", nil, nil, port(8080, 0, corev1.ProtocolTCP)))},
		// SetDefaults_ResourceList rounds quantities up to the milli scale before the pod-level
		// defaults: the pod's cpu limit is 1m, the container's memory limit 1m, which the container's
		// request, then the pod's, takes; every container has a memory limit, so the pod gets one too.
		{"quantities are rounded up to thousandths before the pod-level defaults",
			func() *corev1.Pod {
				p := withPodResources(list("cpu", "0.0001"), nil, ctr("c", list("memory", "0.0005"), nil))
				p.Spec.Overhead = list("cpu", "0.00001")
				return p
			}(),
			func() *corev1.Pod {
				p := withPodResources(list("cpu", "1m", "memory", "1m"), list("cpu", "1m", "memory", "1m"),
					ctr("c", list("memory", "1m"), list("memory", "1m")))
				p.Spec.Overhead = list("cpu", "1m")
				return p
			}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := Default(tc.in, time.Time{})
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got  %s\nwant %s", rendered(got.(*corev1.Pod).Spec), rendered(tc.want.Spec))
			}
			if !apiequality.Semantic.DeepEqual(tc.in, before) {
				t.Errorf("Default changed its input")
			}
			if again := Default(got, time.Time{}); !apiequality.Semantic.DeepEqual(again, got) {
				t.Errorf("defaulting twice differs from once: %s", rendered(again.(*corev1.Pod).Spec))
			}
		})
	}
}

// rendered is v as JSON, for messages.
func rendered(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
