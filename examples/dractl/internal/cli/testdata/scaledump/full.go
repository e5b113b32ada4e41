package main

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// created is the creation time of every object: a fixed one, so that a dump is reproducible.
var created = metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))

// managed is a managedFields entry of the manager, as the API server records one per writer.
func managed(manager, subresource string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created,
		FieldsType: "FieldsV1", Subresource: subresource,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)},
	}
}

// fullPod adds to p what kube-apiserver returns for a pending pod of a Job: metadata, defaults, status.
func fullPod(p *corev1.Pod, i int) {
	job := fmt.Sprintf("train-%04d", i/4)
	p.UID = types.UID(fmt.Sprintf("6f1c2a9e-0000-4000-8000-%012d", i))
	p.ResourceVersion = fmt.Sprint(100000 + i)
	p.CreationTimestamp = created
	p.GenerateName = job + "-"
	p.Labels = map[string]string{"app": "trainer", "batch.kubernetes.io/job-name": job, "job-name": job,
		"batch.kubernetes.io/controller-uid": "c0ffee00-0000-4000-8000-" + fmt.Sprintf("%012d", i/4)}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job,
		UID: types.UID("c0ffee00-0000-4000-8000-" + fmt.Sprintf("%012d", i/4)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{managed("kube-controller-manager", ""), managed("kube-scheduler", "status")}
	c := &p.Spec.Containers[0]
	c.Image = "registry.example.com/ml/trainer:v1.4.2"
	c.ImagePullPolicy = corev1.PullIfNotPresent
	c.TerminationMessagePath = "/dev/termination-log"
	c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("8")
	c.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Gi")
	c.Env = []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "JOB_COMPLETION_INDEX", Value: fmt.Sprint(i % 4)}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.DNSPolicy = corev1.DNSClusterFirst
	p.Spec.SchedulerName = corev1.DefaultSchedulerName
	p.Spec.ServiceAccountName = "default"
	p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(30))
	p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	p.Spec.EnableServiceLinks = ptr.To(true)
	p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	p.Spec.Priority = ptr.To(int32(0))
	p.Spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(int32(420)),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3607))}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		},
	}}}}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, LastTransitionTime: created, Reason: corev1.PodReasonUnschedulable,
		Message: "0/5000 nodes are available: 5000 Insufficient example.com/gpu. preemption: 0/5000 nodes are available: 5000 No preemption victims found for incoming pod.",
	}}}
}

// fullNode adds to n what kube-apiserver returns for a Ready node: metadata, addresses, conditions,
// node info and images.
func fullNode(n *corev1.Node, i int) {
	n.UID = types.UID(fmt.Sprintf("0de0a1b2-0000-4000-8000-%012d", i))
	n.ResourceVersion = fmt.Sprint(50000 + i)
	n.CreationTimestamp = created
	for k, v := range map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "p5.48xlarge",
		"topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": fmt.Sprintf("us-east-1%c", 'a'+i%4),
		"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
	} {
		n.Labels[k] = v
	}
	n.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
	n.ManagedFields = []metav1.ManagedFieldsEntry{managed("kubelet", ""), managed("kubelet", "status"), managed("kube-controller-manager", "")}
	n.Spec.PodCIDR = fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)
	n.Spec.ProviderID = fmt.Sprintf("aws:///us-east-1a/i-%017x", i)
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/256, i%256)},
		{Type: corev1.NodeHostName, Address: n.Name},
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, LastHeartbeatTime: created, LastTransitionTime: created, Reason: reason, Message: msg}
	}
	n.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("b007%028x", i),
		KernelVersion: "6.1.112-124.190.amzn2023.x86_64", OSImage: "Amazon Linux 2023.6.20241010",
		ContainerRuntimeVersion: "containerd://1.7.22", KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
	}
	n.Status.Images = []corev1.ContainerImage{
		{Names: []string{"registry.example.com/ml/trainer@sha256:" + fmt.Sprintf("%064x", 1), "registry.example.com/ml/trainer:v1.4.2"}, SizeBytes: 9876543210},
		{Names: []string{"registry.k8s.io/pause@sha256:" + fmt.Sprintf("%064x", 2), "registry.k8s.io/pause:3.10"}, SizeBytes: 320368},
	}
}
