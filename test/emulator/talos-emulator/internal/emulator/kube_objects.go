package emulator

// The Kubernetes objects the emulated API serves, derived from the emulated nodes: a Node per
// configured node, kube-system's pods (mirror pods of the control planes, kube-proxy, CoreDNS) and
// the kube-proxy daemon set.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kubeNode is what the Kubernetes objects are derived from.
type kubeNode struct {
	view
	ready        corev1.ConditionStatus
	cordoned     bool
	labels       map[string]string
	proxy        bool
	coreDNS      bool
	cpScheduling bool
}

// snapshot collects the cluster's nodes as Kubernetes sees them: every node with the cluster's config
// (Ready while it runs healthy, Unknown while it is off).
func (k *kubeAPI) snapshot() []kubeNode {
	c := k.cluster
	views := c.views()

	c.mu.Lock()
	defer c.mu.Unlock()

	var nodes []kubeNode

	for _, v := range views {
		cfg := v.node.config()
		if cfg == nil || v.hostname == "" {
			continue
		}

		kn := kubeNode{
			view:         v,
			cordoned:     c.cordoned[v.hostname],
			labels:       map[string]string{},
			proxy:        cfg.Cluster().Proxy().Enabled(),
			coreDNS:      cfg.Cluster().CoreDNS().Enabled(),
			cpScheduling: cfg.Cluster().ScheduleOnControlPlanes(),
		}

		for key, value := range cfg.Machine().NodeLabels() {
			kn.labels[key] = value
		}

		switch {
		case v.phase == PhaseRunning && !v.unhealthy:
			kn.ready = corev1.ConditionTrue
		case v.phase == PhaseRunning:
			kn.ready = corev1.ConditionFalse
		default:
			kn.ready = corev1.ConditionUnknown
		}

		nodes = append(nodes, kn)
	}

	sort.Slice(nodes, func(i, j int) bool { return nodes[i].hostname < nodes[j].hostname })

	return nodes
}

// uid is a stable object UID derived from the object's identity.
func uid(parts ...string) types.UID {
	sum := sha256.Sum256([]byte(strings.Join(parts, "/")))
	h := hex.EncodeToString(sum[:16])

	return types.UID(fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]))
}

// nodeObject is the Node object of one node.
func (k *kubeAPI) nodeObject(kn kubeNode) corev1.Node {
	nodeLabels := map[string]string{
		"kubernetes.io/hostname": kn.hostname,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}

	for key, value := range kn.labels {
		nodeLabels[key] = value
	}

	var taints []corev1.Taint

	if kn.controlPlane {
		nodeLabels["node-role.kubernetes.io/control-plane"] = ""

		if !kn.cpScheduling {
			taints = append(taints, corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule})
		}
	}

	if kn.cordoned {
		taints = append(taints, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule})
	}

	return corev1.Node{
		TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: kn.hostname, UID: uid("node", kn.hostname), Labels: nodeLabels, ResourceVersion: "1"},
		Spec:       corev1.NodeSpec{Unschedulable: kn.cordoned, Taints: taints},
		Status: corev1.NodeStatus{
			Addresses:  append(internalIPs(kn.nodeIPs), corev1.NodeAddress{Type: corev1.NodeHostName, Address: kn.hostname}),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: kn.ready, Reason: readyReason(kn.ready)}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          imageTagOf(kn.kubeletImage),
				OSImage:                 fmt.Sprintf("Talos (%s)", kn.version),
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				ContainerRuntimeVersion: "containerd://2.1.0",
			},
		},
	}
}

// readyReason is the reason kubelet gives for its Ready condition.
func readyReason(status corev1.ConditionStatus) string {
	switch status {
	case corev1.ConditionTrue:
		return "KubeletReady"
	case corev1.ConditionFalse:
		return "KubeletNotReady"
	default:
		return "NodeStatusUnknown"
	}
}

// imageTagOf is the version tag of an image reference (empty when it is not a version).
func imageTagOf(image string) string {
	if tag := image[strings.LastIndex(image, ":")+1:]; strings.HasPrefix(tag, "v") {
		return tag
	}

	return ""
}

// pods derives kube-system's pods: the control planes' mirror pods, kube-proxy on every node (when
// enabled) and two CoreDNS replicas (when enabled), placed on schedulable nodes.
func (k *kubeAPI) pods(nodes []kubeNode) []corev1.Pod {
	var pods []corev1.Pod

	byHostname := map[string]kubeNode{}
	for _, kn := range nodes {
		byHostname[kn.hostname] = kn
	}

	for _, kn := range nodes {
		if kn.controlPlane {
			for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
				pods = append(pods, k.pod(kn, component+"-"+kn.hostname, map[string]string{"k8s-app": component, "tier": "control-plane"},
					map[string]string{"kubernetes.io/config.mirror": string(uid("mirror", component, kn.hostname)), "kubernetes.io/config.source": "file"},
					metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: kn.hostname, UID: uid("node", kn.hostname), Controller: boolPtr(true)}))
			}
		}

		if kn.proxy {
			pods = append(pods, k.pod(kn, "kube-proxy-"+string(uid("kube-proxy", kn.hostname))[:5], map[string]string{"k8s-app": "kube-proxy"}, nil,
				metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kube-proxy", UID: uid("daemonset", "kube-proxy"), Controller: boolPtr(true)}))
		}
	}

	if len(nodes) > 0 && nodes[0].coreDNS {
		for _, replica := range k.placeCoreDNS(nodes) {
			pods = append(pods, k.pod(byHostname[replica.hostname], replica.name, map[string]string{"k8s-app": "kube-dns"}, nil,
				metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "coredns-emulated", UID: uid("replicaset", "coredns"), Controller: boolPtr(true)}))
		}
	}

	return pods
}

// pod is one running pod on a node, ready when the node is.
func (k *kubeAPI) pod(kn kubeNode, name string, podLabels, annotations map[string]string, owner metav1.OwnerReference) corev1.Pod {
	ready := corev1.ConditionFalse
	phase := corev1.PodRunning

	if kn.ready == corev1.ConditionTrue {
		ready = corev1.ConditionTrue
	}

	if kn.phase != PhaseRunning {
		phase = corev1.PodUnknown
	}

	return corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "kube-system", UID: uid("pod", name), Labels: podLabels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{owner}, ResourceVersion: "1",
		},
		Spec: corev1.PodSpec{NodeName: kn.hostname, Containers: containers(kn, podLabels["k8s-app"])},
		Status: corev1.PodStatus{
			Phase:      phase,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: name, Ready: ready == corev1.ConditionTrue,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}},
		},
	}
}

// containers is the one container of a Kubernetes component's pod, named after its k8s-app label as
// Talos' manifests name it, on the Kubernetes version the node's kubelet runs (the emulator keeps
// one version per node; Talos takes each component's image from the config). talosctl upgrade-k8s
// detects the version it upgrades from by these (DetectLowestVersion).
func containers(kn kubeNode, app string) []corev1.Container {
	switch app {
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy":
	default:
		return nil
	}

	_, tag, ok := strings.Cut(kn.kubeletImage, ":")
	if !ok {
		return nil
	}

	return []corev1.Container{{Name: app, Image: "registry.k8s.io/" + app + ":" + tag}}
}

// placeCoreDNS keeps two CoreDNS replicas on schedulable nodes (workers first), moving a replica
// whose node is gone or cordoned.
func (k *kubeAPI) placeCoreDNS(nodes []kubeNode) []corednsPod {
	k.mu.Lock()
	defer k.mu.Unlock()

	schedulable := func(kn kubeNode) bool {
		return !kn.cordoned && kn.ready == corev1.ConditionTrue && (!kn.controlPlane || kn.cpScheduling || !hasWorkers(nodes))
	}

	byHostname := map[string]kubeNode{}
	for _, kn := range nodes {
		byHostname[kn.hostname] = kn
	}

	kept := k.coredns[:0]

	for _, replica := range k.coredns {
		if _, ok := byHostname[replica.hostname]; ok {
			kept = append(kept, replica)
		}
	}

	k.coredns = kept

	for len(k.coredns) < 2 {
		target := ""

		for _, kn := range nodes {
			if schedulable(kn) && !k.hasReplicaOn(kn.hostname) {
				target = kn.hostname

				break
			}
		}

		if target == "" {
			for _, kn := range nodes {
				if schedulable(kn) {
					target = kn.hostname

					break
				}
			}
		}

		if target == "" {
			break
		}

		k.generated++
		k.coredns = append(k.coredns, corednsPod{name: fmt.Sprintf("coredns-emulated-%05d", k.generated), hostname: target})
	}

	return append([]corednsPod(nil), k.coredns...)
}

func (k *kubeAPI) hasReplicaOn(hostname string) bool {
	for _, replica := range k.coredns {
		if replica.hostname == hostname {
			return true
		}
	}

	return false
}

func hasWorkers(nodes []kubeNode) bool {
	for _, kn := range nodes {
		if !kn.controlPlane {
			return true
		}
	}

	return false
}

// daemonSets is kube-proxy's daemon set (when kube-proxy is enabled).
func (k *kubeAPI) daemonSets(nodes []kubeNode) []appsv1.DaemonSet {
	if len(nodes) == 0 || !nodes[0].proxy {
		return nil
	}

	ready := int32(0)

	for _, kn := range nodes {
		if kn.ready == corev1.ConditionTrue {
			ready++
		}
	}

	total := int32(len(nodes))

	return []appsv1.DaemonSet{{
		TypeMeta:   metav1.TypeMeta{Kind: "DaemonSet", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", UID: uid("daemonset", "kube-proxy"), Labels: map[string]string{"k8s-app": "kube-proxy", "tier": "node"}},
		Status: appsv1.DaemonSetStatus{
			DesiredNumberScheduled: total, CurrentNumberScheduled: total, NumberReady: ready, NumberAvailable: ready, UpdatedNumberScheduled: total,
		},
	}}
}

// internalIPs are a kubelet's node IPs as its Node's InternalIP addresses, primary first.
func internalIPs(ips []netip.Addr) []corev1.NodeAddress {
	out := make([]corev1.NodeAddress, 0, len(ips)+1)
	for _, ip := range ips {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}

	return out
}
