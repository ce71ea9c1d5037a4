package emulator

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"talos-platform/test/emulator/talos-emulator/internal/pki"
)

// kubeAPI is a minimal Kubernetes API server for one cluster, on the cluster endpoint (when that is

// a loopback address): the reads Talos' health checks make (nodes, kube-system pods, daemon sets,

// deployments), and what talosctl's drain and uncordon do (get/patch a node, list pods on it, evict

// pods). Its objects are derived from the emulated nodes; only cordons and pod placement are kept.

type kubeAPI struct {
	cluster  *Cluster
	addr     netip.Addr
	server   *http.Server
	listener net.Listener

	mu        sync.Mutex
	tls       *tls.Config // the TLS of the CAs in tlsKey
	tlsKey    string
	coredns   []corednsPod
	generated int
}

// corednsPod is one CoreDNS replica and the node it runs on.

type corednsPod struct {
	name     string
	hostname string
}

// ensureKubeAPI starts the cluster's Kubernetes API once etcd exists; called with c.mu held.

func (c *Cluster) ensureKubeAPI(views []view) {
	if c.kube != nil || !c.etcd.bootstrapped {
		return
	}

	var cfg config.Provider

	for _, v := range views {
		if v.controlPlane {
			cfg = v.node.config()

			break
		}
	}

	if cfg == nil {
		return
	}

	endpoint := cfg.Cluster().Endpoint()

	host := endpoint.Hostname()
	port := endpoint.Port()

	if port == "" {
		port = "6443"
	}

	addr, err := netip.ParseAddr(host)
	if err != nil || !addr.IsLoopback() {
		if !c.kubeWarned {
			c.kubeWarned = true
			c.emu.log.Printf("cluster %s: endpoint %s is not a loopback IP address; the Kubernetes API is not emulated (Kubernetes checks and drains fail)", c.name, endpoint)
		}

		return
	}

	kube, err := startKubeAPI(c, cfg, addr, port)
	if err != nil {
		c.emu.log.Printf("cluster %s: Kubernetes API on %s: %v", c.name, endpoint, err)

		return
	}

	c.kube = kube
	c.emu.log.Printf("cluster %s: Kubernetes API on https://%s", c.name, net.JoinHostPort(host, port))
}

func startKubeAPI(c *Cluster, cfg config.Provider, addr netip.Addr, port string) (*kubeAPI, error) {
	k := &kubeAPI{cluster: c, addr: addr}

	// Checked now, so a config that cannot serve fails the start rather than every handshake.
	if _, err := k.tlsFor(cfg); err != nil {
		return nil, err
	}

	listener, err := net.Listen("tcp", net.JoinHostPort(addr.String(), port))
	if err != nil {
		return nil, err
	}

	k.listener = listener
	k.server = &http.Server{
		Handler:           k.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			// Each handshake follows the config the control plane runs now, as kube-apiserver does
			// once Talos re-renders its static pod after an apply (a rotated cluster.ca, acceptedCAs).
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
				return k.tlsFor(k.controlPlaneConfig(cfg))
			},
			MinVersion: tls.VersionTLS12,
		},
	}

	go k.server.ServeTLS(listener, "", "") //nolint:errcheck // ends with close

	return k, nil
}

// controlPlaneConfig is the config a control plane of the cluster runs now (the first one found),
// or fallback when none has one.
func (k *kubeAPI) controlPlaneConfig(fallback config.Provider) config.Provider {
	for _, v := range k.cluster.views() {
		if v.controlPlane {
			if cfg := v.node.config(); cfg != nil {
				return cfg
			}
		}
	}

	return fallback
}

// tlsFor is the API server's TLS under a config: its serving certificate issued from cluster.ca,
// client certificates verified against cluster.ca and cluster.acceptedCAs (kube-apiserver's
// --client-ca-file, which Talos writes from both). Kept while the CAs stay the same.
func (k *kubeAPI) tlsFor(cfg config.Provider) (*tls.Config, error) {
	k8sCA := cfg.Cluster().IssuingCA()
	if k8sCA == nil || len(k8sCA.Key) == 0 {
		return nil, errors.New("the control plane config has no Kubernetes CA key (cluster.ca)")
	}

	key := string(k8sCA.Crt)
	for _, accepted := range cfg.Cluster().AcceptedCAs() {
		key += "\n" + string(accepted.Crt)
	}

	k.mu.Lock()
	defer k.mu.Unlock()

	if k.tls != nil && k.tlsKey == key {
		return k.tls, nil
	}

	cert, err := pki.KubernetesServerCertificate(k8sCA, []netip.Addr{k.addr}, nil)
	if err != nil {
		return nil, err
	}

	pool, err := pki.CertPool(k8sCA.Crt)
	if err != nil {
		return nil, err
	}

	for _, accepted := range cfg.Cluster().AcceptedCAs() {
		pool.AppendCertsFromPEM(accepted.Crt)
	}

	k.tls = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	k.tlsKey = key

	return k.tls, nil
}

func (k *kubeAPI) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	_ = k.server.Shutdown(ctx) //nolint:errcheck
	_ = k.server.Close()       //nolint:errcheck
}

func (k *kubeAPI) routes() http.Handler {
	mux := http.NewServeMux()

	mux.HandleFunc("GET /version", k.version)
	mux.HandleFunc("GET /api", k.apiVersions)
	mux.HandleFunc("GET /apis", k.apiGroups)
	mux.HandleFunc("GET /api/v1", k.coreResources)
	mux.HandleFunc("GET /api/v1/nodes", k.listNodes)
	mux.HandleFunc("GET /api/v1/nodes/{name}", k.getNode)
	mux.HandleFunc("PATCH /api/v1/nodes/{name}", k.patchNode)
	mux.HandleFunc("DELETE /api/v1/nodes/{name}", k.deleteNode)
	mux.HandleFunc("GET /api/v1/pods", k.listPods)
	mux.HandleFunc("GET /api/v1/namespaces/{namespace}/pods", k.listPods)
	mux.HandleFunc("GET /api/v1/namespaces/{namespace}/pods/{name}", k.getPod)
	mux.HandleFunc("DELETE /api/v1/namespaces/{namespace}/pods/{name}", k.evictPod)
	mux.HandleFunc("POST /api/v1/namespaces/{namespace}/pods/{name}/eviction", k.evictPod)
	mux.HandleFunc("GET /apis/apps/v1/namespaces/{namespace}/daemonsets", k.listDaemonSets)
	mux.HandleFunc("GET /apis/apps/v1/namespaces/{namespace}/daemonsets/{name}", k.getDaemonSet)
	mux.HandleFunc("GET /apis/apps/v1/namespaces/{namespace}/deployments", k.listDeployments)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !k.cluster.kubernetesUp() {
			writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the control plane is unavailable: etcd has no quorum")

			return
		}

		mux.ServeHTTP(w, r)
	})
}

func (k *kubeAPI) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"major": "1", "minor": "36", "gitVersion": "v1.36.0-talos-emulator", "platform": "linux/amd64"})
}

func (k *kubeAPI) apiVersions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
}

func (k *kubeAPI) apiGroups(w http.ResponseWriter, _ *http.Request) {
	group := func(name string) metav1.APIGroup {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: name + "/v1", Version: "v1"}

		return metav1.APIGroup{Name: name, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
	}

	writeJSON(w, http.StatusOK, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group("apps"), group("policy")}})
}

func (k *kubeAPI) coreResources(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "nodes", Kind: "Node", Verbs: metav1.Verbs{"get", "list", "patch"}},
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list", "delete"}},
			{Name: "pods/eviction", Namespaced: true, Group: "policy", Version: "v1", Kind: "Eviction", Verbs: metav1.Verbs{"create"}},
		},
	})
}

func (k *kubeAPI) listNodes(w http.ResponseWriter, r *http.Request) {
	selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())

		return
	}

	list := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}

	for _, kn := range k.snapshot() {
		node := k.nodeObject(kn)
		if selector.Matches(labels.Set(node.Labels)) {
			list.Items = append(list.Items, node)
		}
	}

	writeJSON(w, http.StatusOK, list)
}

func (k *kubeAPI) findNode(name string) (corev1.Node, bool) {
	for _, kn := range k.snapshot() {
		if kn.hostname == name {
			return k.nodeObject(kn), true
		}
	}

	return corev1.Node{}, false
}

func (k *kubeAPI) getNode(w http.ResponseWriter, r *http.Request) {
	node, ok := k.findNode(r.PathValue("name"))
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("nodes %q not found", r.PathValue("name")))

		return
	}

	writeJSON(w, http.StatusOK, node)
}

// deleteNode answers `kubectl delete node`. The emulated Nodes are the cluster's configured nodes, so
// a node whose machine was reset or deleted is gone already (404), and one that still runs is
// registered again at once by its kubelet, as a real kubelet does: the answer is the deleted object
// and nothing changes.
func (k *kubeAPI) deleteNode(w http.ResponseWriter, r *http.Request) {
	node, ok := k.findNode(r.PathValue("name"))
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("nodes %q not found", r.PathValue("name")))

		return
	}

	writeJSON(w, http.StatusOK, node)
}

// patchNode applies a strategic-merge (or merge) patch; of the result only spec.unschedulable is

// kept (cordon, uncordon).

func (k *kubeAPI) patchNode(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")

	node, ok := k.findNode(name)
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("nodes %q not found", name))

		return
	}

	patch, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())

		return
	}

	contentType := r.Header.Get("Content-Type")
	if !strings.HasPrefix(contentType, "application/strategic-merge-patch+json") && !strings.HasPrefix(contentType, "application/merge-patch+json") {
		writeStatus(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "the emulator takes strategic-merge and merge patches only; got "+contentType)

		return
	}

	original, err := json.Marshal(node)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, "InternalError", err.Error())

		return
	}

	patched, err := strategicpatch.StrategicMergePatch(original, patch, corev1.Node{})
	if err != nil {
		writeStatus(w, http.StatusUnprocessableEntity, "Invalid", err.Error())

		return
	}

	var result corev1.Node
	if err = json.Unmarshal(patched, &result); err != nil {
		writeStatus(w, http.StatusUnprocessableEntity, "Invalid", err.Error())

		return
	}

	k.cluster.mu.Lock()
	k.cluster.cordoned[name] = result.Spec.Unschedulable
	k.cluster.mu.Unlock()

	k.cluster.record("/registry/minions/"+name, fmt.Sprintf("unschedulable=%v", result.Spec.Unschedulable))

	node, _ = k.findNode(name)
	writeJSON(w, http.StatusOK, node)
}

func (k *kubeAPI) listPods(w http.ResponseWriter, r *http.Request) {
	namespace := r.PathValue("namespace")

	labelSelector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())

		return
	}

	fieldSelector, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())

		return
	}

	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}

	for _, pod := range k.pods(k.snapshot()) {
		if namespace != "" && pod.Namespace != namespace {
			continue
		}

		podFields := fields.Set{"metadata.name": pod.Name, "metadata.namespace": pod.Namespace, "spec.nodeName": pod.Spec.NodeName, "status.phase": string(pod.Status.Phase)}

		if labelSelector.Matches(labels.Set(pod.Labels)) && fieldSelector.Matches(podFields) {
			list.Items = append(list.Items, pod)
		}
	}

	writeJSON(w, http.StatusOK, list)
}

func (k *kubeAPI) findPod(namespace, name string) (corev1.Pod, bool) {
	for _, pod := range k.pods(k.snapshot()) {
		if pod.Namespace == namespace && pod.Name == name {
			return pod, true
		}
	}

	return corev1.Pod{}, false
}

func (k *kubeAPI) getPod(w http.ResponseWriter, r *http.Request) {
	pod, ok := k.findPod(r.PathValue("namespace"), r.PathValue("name"))
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("pods %q not found", r.PathValue("name")))

		return
	}

	writeJSON(w, http.StatusOK, pod)
}

// evictPod evicts (or deletes) a pod: a CoreDNS replica is rescheduled under a new name; mirror

// and DaemonSet pods come back as they were (as their owners recreate them).

func (k *kubeAPI) evictPod(w http.ResponseWriter, r *http.Request) {
	namespace, name := r.PathValue("namespace"), r.PathValue("name")

	if _, ok := k.findPod(namespace, name); !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("pods %q not found", name))

		return
	}

	if r.Method == http.MethodPost {
		var eviction policyv1.Eviction
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&eviction); err != nil {
			writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())

			return
		}
	}

	k.mu.Lock()
	for i, replica := range k.coredns {
		if replica.name == name {
			k.coredns = append(k.coredns[:i], k.coredns[i+1:]...)

			break
		}
	}
	k.mu.Unlock()

	k.cluster.record("/registry/pods/"+namespace+"/"+name, "evicted")
	writeJSON(w, http.StatusCreated, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
}

func (k *kubeAPI) listDaemonSets(w http.ResponseWriter, r *http.Request) {
	selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())

		return
	}

	list := appsv1.DaemonSetList{TypeMeta: metav1.TypeMeta{Kind: "DaemonSetList", APIVersion: "apps/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}

	for _, ds := range k.daemonSets(k.snapshot()) {
		if ds.Namespace == r.PathValue("namespace") && selector.Matches(labels.Set(ds.Labels)) {
			list.Items = append(list.Items, ds)
		}
	}

	writeJSON(w, http.StatusOK, list)
}

func (k *kubeAPI) getDaemonSet(w http.ResponseWriter, r *http.Request) {
	for _, ds := range k.daemonSets(k.snapshot()) {
		if ds.Namespace == r.PathValue("namespace") && ds.Name == r.PathValue("name") {
			writeJSON(w, http.StatusOK, ds)

			return
		}
	}

	writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("daemonsets.apps %q not found", r.PathValue("name")))
}

func (k *kubeAPI) listDeployments(w http.ResponseWriter, r *http.Request) {
	selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())

		return
	}

	list := appsv1.DeploymentList{TypeMeta: metav1.TypeMeta{Kind: "DeploymentList", APIVersion: "apps/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	nodes := k.snapshot()

	if len(nodes) > 0 && nodes[0].coreDNS && r.PathValue("namespace") == "kube-system" {
		replicas := int32(2)
		deployment := appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system", UID: uid("deployment", "coredns"), Labels: map[string]string{"k8s-app": "kube-dns"}},
			Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		}

		if selector.Matches(labels.Set(deployment.Labels)) {
			list.Items = append(list.Items, deployment)
		}
	}

	writeJSON(w, http.StatusOK, list)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	writeJSON(w, code, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   metav1.StatusReason(reason),
		Code:     int32(code),
	})
}
