package emulator

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/resource/meta"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	"github.com/cosi-project/runtime/pkg/state/registry"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	"github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"
)

// ephemeralSize is the EPHEMERAL volume size the nodes report (the health check wants a few GiB).
const ephemeralSize = 100 << 30

// resourceTimeout bounds every write into a node's resource state.
const resourceTimeout = 5 * time.Second

// newResourceState creates a node's COSI state the way machined does (in-memory, namespaced) and
// registers the namespaces and resource definitions the emulator serves, so that talosctl resolves
// aliases such as `machineconfig`, `kubeletspec` and `members`.
func newResourceState() state.State {
	st := state.WrapCore(namespaced.NewState(inmem.Build))
	ctx, cancel := context.WithTimeout(context.Background(), resourceTimeout)

	defer cancel()

	namespaces := registry.NewNamespaceRegistry(st)
	resources := registry.NewResourceRegistry(st)

	must(namespaces.RegisterDefault(ctx))
	must(resources.RegisterDefault(ctx))

	for _, ns := range []struct{ name, description string }{
		{v1alpha1.NamespaceName, "Talos v1alpha1 subsystems glue resources."},
		{cluster.NamespaceName, "Cluster configuration and discovery resources."},
		{configres.NamespaceName, "Talos node configuration."},
		{k8s.NamespaceName, "Kubernetes all node types resources."},
		{k8s.ControlPlaneNamespaceName, "Kubernetes control plane resources."},
	} {
		must(namespaces.Register(ctx, ns.name, ns.description))
	}

	for _, r := range []meta.ResourceWithRD{
		&block.VolumeStatus{},
		&cluster.Member{},
		&configres.MachineConfig{},
		&configres.MachineType{},
		&k8s.BootstrapManifestsConfig{},
		&k8s.KubeletSpec{},
		&k8s.Nodename{},
		&k8s.StaticPodStatus{},
		&runtime.Diagnostic{},
		&runtime.ExtensionStatus{},
		&runtime.MachineStatus{},
	} {
		must(resources.Register(ctx, r))
	}

	return st
}

func must(err error) {
	if err != nil {
		panic(fmt.Sprintf("emulator resource registry: %v", err))
	}
}

// maxConflictRetries bounds the retries of a write that raced another write of the same resource.
const maxConflictRetries = 3

// put creates or replaces a resource with the one fill describes (a bounded number of attempts).
func put[T resource.Resource](ctx context.Context, st state.State, r T, fill func(T)) error {
	fill(r)

	var err error

	for range maxConflictRetries {
		var existing resource.Resource

		existing, err = st.Get(ctx, r.Metadata())

		switch {
		case state.IsNotFoundError(err):
			err = st.Create(ctx, r)
		case err != nil:
			return err
		default:
			r.Metadata().SetVersion(existing.Metadata().Version())
			err = st.Update(ctx, r)
		}

		if err == nil || !state.IsConflictError(err) {
			return err
		}
	}

	return fmt.Errorf("%s: gave up after %d conflicting writes: %w", r.Metadata().ID(), maxConflictRetries, err)
}

// setMachineStatus stores MachineStatus; it reports whether stage or readiness changed.
func setMachineStatus(st state.State, stage runtime.MachineStage, ready bool, unmet []string) bool {
	if st == nil {
		return false
	}

	ctx, cancel := context.WithTimeout(context.Background(), resourceTimeout)
	defer cancel()

	current, err := safe.StateGetByID[*runtime.MachineStatus](ctx, st, runtime.MachineStatusID)
	if err == nil && current.TypedSpec().Stage == stage && current.TypedSpec().Status.Ready == ready &&
		len(current.TypedSpec().Status.UnmetConditions) == len(unmet) {
		return false
	}

	if err := put(ctx, st, runtime.NewMachineStatus(), func(r *runtime.MachineStatus) {
		r.TypedSpec().Stage = stage
		r.TypedSpec().Status.Ready = ready
		r.TypedSpec().Status.UnmetConditions = nil

		for _, name := range unmet {
			r.TypedSpec().Status.UnmetConditions = append(r.TypedSpec().Status.UnmetConditions,
				runtime.UnmetCondition{Name: "service " + name, Reason: "service not healthy"})
		}
	}); err != nil {
		return false
	}

	return true
}

// refreshResources rewrites the node's resources from its current state: config, machine type,
// kubelet spec, node name, discovery members, volumes, static pods, diagnostics.
func (n *Node) refreshResources() {
	n.mu.Lock()
	st := n.resources
	cfg := n.cfg
	persistent := n.cfg
	image := n.image

	if n.staged != nil {
		persistent = n.staged
	}
	addr := n.addr
	unhealthy := n.faults.Unhealthy
	phase := n.phase
	cl := n.cluster
	n.mu.Unlock()

	if st == nil || phase == PhaseOff {
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), resourceTimeout)
	defer cancel()

	if err := n.writeResources(ctx, st, cfg, persistent, addr, unhealthy, phase, cl); err != nil {
		n.emu.log.Printf("%s: updating resources: %v", n.name, err)
	}

	if err := writeSchematic(ctx, st, image); err != nil {
		n.emu.log.Printf("%s: updating resources: %v", n.name, err)
	}
}

//nolint:gocognit,gocyclo,cyclop
func (n *Node) writeResources(ctx context.Context, st state.State, cfg, persistent config.Provider, addr netip.Addr, unhealthy bool,
	phase Phase, cl *Cluster,
) error {
	// EPHEMERAL is there in every boot (maintenance included): the health check reads its size.
	if err := put(ctx, st, block.NewVolumeStatus(block.NamespaceName, "EPHEMERAL"), func(r *block.VolumeStatus) {
		r.TypedSpec().Phase = block.VolumePhaseReady
		r.TypedSpec().Type = block.VolumeTypePartition
		r.TypedSpec().Location = "/dev/sda6"
		r.TypedSpec().MountLocation = "/var"
		r.TypedSpec().Size = ephemeralSize
	}); err != nil {
		return err
	}

	if unhealthy {
		if err := put(ctx, st, runtime.NewDiagnostic(runtime.NamespaceName, "emulated-unhealthy"), func(r *runtime.Diagnostic) {
			r.TypedSpec().Message = "emulated fault: node unhealthy"
			r.TypedSpec().Details = []string{"injected through the emulator's control API"}
		}); err != nil {
			return err
		}
	} else if err := destroyIfPresent(ctx, st, runtime.NewDiagnostic(runtime.NamespaceName, "emulated-unhealthy").Metadata()); err != nil {
		return err
	}

	if cfg == nil {
		return nil
	}

	hostname := hostnameOf(cfg, addr)

	// v1alpha1 is the config the node runs; persistent the one on disk (a staged change shows there
	// until the next reboot).
	if err := put(ctx, st, configres.NewMachineConfig(cfg), func(*configres.MachineConfig) {}); err != nil {
		return err
	}

	if err := put(ctx, st, configres.NewMachineConfigWithID(persistent, configres.PersistentID), func(*configres.MachineConfig) {}); err != nil {
		return err
	}

	if err := put(ctx, st, configres.NewMachineType(), func(r *configres.MachineType) {
		r.SetMachineType(cfg.Machine().Type())
	}); err != nil {
		return err
	}

	if err := put(ctx, st, k8s.NewNodename(k8s.NamespaceName, k8s.NodenameID), func(r *k8s.Nodename) {
		r.TypedSpec().Nodename = hostname
		r.TypedSpec().HostnameVersion = "1"
	}); err != nil {
		return err
	}

	if err := put(ctx, st, k8s.NewKubeletSpec(k8s.NamespaceName, k8s.KubeletID), func(r *k8s.KubeletSpec) {
		r.TypedSpec().Image = cfg.Machine().Kubelet().Image()
		r.TypedSpec().ExpectedNodename = hostname
		r.TypedSpec().Args = []string{"--hostname-override=" + hostname, "--node-ip=" + addr.String()}
		r.TypedSpec().Config = map[string]any{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1"}
	}); err != nil {
		return err
	}

	if cfg.Machine().Type().IsControlPlane() {
		if err := put(ctx, st, k8s.NewBootstrapManifestsConfig(), func(r *k8s.BootstrapManifestsConfig) {
			r.TypedSpec().Server = cfg.Cluster().Endpoint().String()
			r.TypedSpec().ClusterDomain = cfg.Cluster().Network().DNSDomain()
			r.TypedSpec().PodCIDRs = cfg.Cluster().Network().PodCIDRs()
			r.TypedSpec().ProxyEnabled = cfg.Cluster().Proxy().Enabled()
			r.TypedSpec().CoreDNSEnabled = cfg.Cluster().CoreDNS().Enabled()
			r.TypedSpec().CNIName = cfg.Cluster().Network().CNI().Name()
		}); err != nil {
			return err
		}

		if err := n.writeStaticPods(ctx, st, hostname, phase == PhaseRunning && cl != nil && cl.kubernetesUp()); err != nil {
			return err
		}
	}

	if cl != nil {
		if err := writeMembers(ctx, st, n.emu.clusterNodes(cl)); err != nil {
			return err
		}
	}

	return nil
}

// factorySchematic finds the schematic ID in an Image Factory installer reference
// (`factory.talos.dev/<platform>-installer/<id>:<version>`).
var factorySchematic = regexp.MustCompile(`/([0-9a-f]{64})(?:[:@]|$)`)

// writeSchematic reports the schematic of an Image Factory image the way such an image carries it:
// a virtual extension named "schematic" whose version is the schematic ID (Talos lists it with
// `talosctl get extensions`). The resource ID is the emulator's own (Talos uses the layer's file
// name); images not from the Factory carry none.
func writeSchematic(ctx context.Context, st state.State, image string) error {
	match := factorySchematic.FindStringSubmatch(image)
	if match == nil {
		return nil
	}

	return put(ctx, st, runtime.NewExtensionStatus(runtime.NamespaceName, "schematic"), func(r *runtime.ExtensionStatus) {
		r.TypedSpec().Image = "schematic.sqsh"
		r.TypedSpec().Metadata.Name = "schematic"
		r.TypedSpec().Metadata.Version = match[1]
	})
}

// writeStaticPods reports the control plane's static pods (kube-apiserver, controller manager,
// scheduler) while Kubernetes runs, as kubelet does.
func (n *Node) writeStaticPods(ctx context.Context, st state.State, hostname string, running bool) error {
	for _, pod := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		md := k8s.NewStaticPodStatus(k8s.NamespaceName, fmt.Sprintf("kube-system/%s-%s", pod, hostname)).Metadata()

		if !running {
			if err := destroyIfPresent(ctx, st, md); err != nil {
				return err
			}

			continue
		}

		if err := put(ctx, st, k8s.NewStaticPodStatus(k8s.NamespaceName, md.ID()), func(r *k8s.StaticPodStatus) {
			r.TypedSpec().PodStatus = map[string]any{
				"phase": "Running",
				"conditions": []any{
					map[string]any{"type": "Ready", "status": "True"},
				},
			}
		}); err != nil {
			return err
		}
	}

	return nil
}

// writeMembers publishes the cluster discovery members: every configured node of the cluster.
func writeMembers(ctx context.Context, st state.State, nodes []*Node) error {
	for _, other := range nodes {
		v := other.view()
		if v.hostname == "" {
			continue
		}

		machineType := other.config()
		if machineType == nil {
			continue
		}

		if err := put(ctx, st, cluster.NewMember(cluster.NamespaceName, v.hostname), func(r *cluster.Member) {
			r.TypedSpec().NodeID = v.hostname
			r.TypedSpec().Addresses = v.addresses
			r.TypedSpec().Hostname = v.hostname
			r.TypedSpec().MachineType = machineType.Machine().Type()
			r.TypedSpec().OperatingSystem = fmt.Sprintf("Talos (%s)", v.version)
		}); err != nil {
			return err
		}
	}

	return nil
}

func destroyIfPresent(ctx context.Context, st state.State, md *resource.Metadata) error {
	err := st.Destroy(ctx, md)
	if err != nil && !state.IsNotFoundError(err) {
		return err
	}

	return nil
}
