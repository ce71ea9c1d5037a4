package emulator

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/cosi-project/runtime/pkg/state"
	"github.com/google/uuid"
	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
	machinetype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/protobuf/proto"
)

// Phase is where a node is in its power and boot cycle.
type Phase string

// Phases of a node.
const (
	// PhaseOff: powered off (or between shutdown and boot); nothing answers.
	PhaseOff Phase = "off"
	// PhaseBooting: the API answers, services are starting.
	PhaseBooting Phase = "booting"
	// PhaseMaintenance: booted without a config; the insecure maintenance API answers.
	PhaseMaintenance Phase = "maintenance"
	// PhaseRunning: booted with a config; services reached their state.
	PhaseRunning Phase = "running"
)

// Faults are the failures injected into one node (through the control API).
type Faults struct {
	// UpgradeFails: the installer fails; the node keeps its version and does not reboot.
	UpgradeFails bool `json:"upgradeFails"`
	// UpgradeRollback: the upgrade installs, but the node boots back into the old version.
	UpgradeRollback bool `json:"upgradeRollback"`
	// Unhealthy: kubelet (and etcd on a control plane) report unhealthy; a diagnostic is raised.
	Unhealthy bool `json:"unhealthy"`
	// Down: the node is powered off and stays off until the fault is cleared.
	Down bool `json:"down"`
	// SnapshotFails: etcd snapshots taken on this node fail.
	SnapshotFails bool `json:"snapshotFails"`
	// EtcdNoSpace: etcd raised its NOSPACE alarm for this node's member (the database hit its quota).
	EtcdNoSpace bool `json:"etcdNoSpace"`
}

// Node is one emulated Talos machine.
type Node struct {
	emu  *Emulator
	name string
	addr netip.Addr
	// extra: the node's other addresses (NodeSpec.Extra).
	extra []netip.Addr

	mu sync.Mutex
	// gen counts boots; a timer scheduled for an older boot does nothing.
	gen         uint64
	phase       Phase
	version     string
	nextVersion string
	// image is the installer the node booted from (its schematic shows as an extension); nextImage
	// the one an upgrade installed, booted next.
	image     string
	nextImage string
	bootID    string
	cfg       config.Provider
	staged    config.Provider
	installed bool
	etcdData  bool
	// leftEtcd: the node left etcd (`etcd leave`), which stops its etcd service for good: Talos
	// starts it again only at the next boot, so the node does not rejoin before then.
	leftEtcd    bool
	recoverData []byte
	faults      Faults
	stage       runtime.MachineStage
	busy        string
	events      *eventLog
	services    *serviceTable
	resources   state.State
	server      *nodeServer
	cluster     *Cluster
}

func newNode(e *Emulator, spec NodeSpec) *Node {
	return &Node{
		emu:      e,
		name:     spec.Name,
		addr:     spec.Address,
		extra:    spec.Extra,
		phase:    PhaseOff,
		version:  e.opts.Version,
		events:   newEventLog(),
		services: newServiceTable(),
	}
}

// Name is the node's name in the emulator (not its hostname).
func (n *Node) Name() string { return n.name }

// Address is the node's Talos API address.
func (n *Node) Address() netip.Addr { return n.addr }

// Status is a node's state as the control API reports it.
type Status struct {
	Name      string   `json:"name"`
	Address   string   `json:"address"`
	Phase     Phase    `json:"phase"`
	Stage     string   `json:"stage"`
	Version   string   `json:"version"`
	BootID    string   `json:"bootId"`
	Hostname  string   `json:"hostname,omitempty"`
	Type      string   `json:"type,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Installed bool     `json:"installed"`
	EtcdData  bool     `json:"etcdData"`
	Faults    Faults   `json:"faults"`
	Unmet     []string `json:"unmet,omitempty"`
}

// Status reports the node's state.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()

	st := Status{
		Name:      n.name,
		Address:   n.addr.String(),
		Phase:     n.phase,
		Stage:     n.stage.String(),
		Version:   n.version,
		BootID:    n.bootID,
		Installed: n.installed,
		EtcdData:  n.etcdData,
		Faults:    n.faults,
	}

	if n.cfg != nil {
		st.Hostname = hostnameOf(n.cfg, n.addr)
		st.Type = n.cfg.Machine().Type().String()
		st.Cluster = n.cfg.Cluster().Name()
	}

	_, st.Unmet = n.services.allHealthy(n.expectedServicesLocked())

	return st
}

// hostnameOf is the hostname a config gives the node (the HostnameConfig document, or the legacy
// machine.network.hostname), else a name derived from the address (Talos derives one from the MAC).
func hostnameOf(cfg config.Provider, addr netip.Addr) string {
	if hc := cfg.NetworkHostnameConfig(); hc != nil && hc.Hostname() != "" {
		return hc.Hostname()
	}

	return "talos-" + strings.ReplaceAll(addr.String(), ".", "-")
}

// view is a consistent copy of what the cluster logic needs to know about a node.
type view struct {
	node         *Node
	addr         netip.Addr
	hostname     string
	phase        Phase
	controlPlane bool
	etcdData     bool
	leftEtcd     bool
	unhealthy    bool
	kubeletImage string
	version      string
	// etcdPeer: the address its etcd advertises; nodeIPs: those its kubelet reports (Talos' rules,
	// addresses.go). Both from its config; the API address without one.
	etcdPeer netip.Addr
	nodeIPs  []netip.Addr
	// addresses: every address it holds, the API address first.
	addresses []netip.Addr
}

func (n *Node) view() view {
	n.mu.Lock()
	defer n.mu.Unlock()

	v := view{node: n, addr: n.addr, phase: n.phase, etcdData: n.etcdData, leftEtcd: n.leftEtcd, unhealthy: n.faults.Unhealthy, version: n.version}

	v.addresses = append([]netip.Addr{n.addr}, n.extra...)
	v.etcdPeer, v.nodeIPs = n.addr, []netip.Addr{n.addr}

	if n.cfg != nil {
		v.hostname = hostnameOf(n.cfg, n.addr)
		v.controlPlane = n.cfg.Machine().Type().IsControlPlane()
		v.kubeletImage = n.cfg.Machine().Kubelet().Image()

		if peer := etcdAdvertised(n.cfg, v.addresses); peer.IsValid() {
			v.etcdPeer = peer
		}

		if ips := kubeletNodeIPs(n.cfg, v.addresses); len(ips) > 0 {
			v.nodeIPs = ips
		}
	}

	return v
}

func (n *Node) currentCluster() *Cluster {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.cluster
}

func (n *Node) isControlPlane() bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.cfg != nil && n.cfg.Machine().Type() != machinetype.TypeWorker
}

// config returns the node's current config (nil in maintenance mode).
func (n *Node) config() config.Provider {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.cfg
}

// Config returns the node's current machine config (nil in maintenance mode).
func (n *Node) Config() config.Provider {
	return n.config()
}

// publish records a runtime event of the current boot.
func (n *Node) publish(actorID string, payload proto.Message) {
	n.mu.Lock()
	events := n.events
	n.mu.Unlock()

	events.publish(actorID, payload)
}

// powerOn boots the node: off the network for Timings.Boot, then the API answers (maintenance mode
// without a config, mTLS with one) while services start.
func (n *Node) powerOn() error {
	n.mu.Lock()

	if n.phase != PhaseOff || n.faults.Down {
		n.mu.Unlock()

		return nil
	}

	n.gen++
	gen := n.gen
	n.mu.Unlock()

	n.emu.after(n.emu.opts.Timings.Boot, func() {
		if err := n.boot(gen); err != nil {
			n.emu.log.Printf("%s: boot failed: %v", n.name, err)
		}
	})

	return nil
}

// boot brings the node up with the config and version it has on disk.
func (n *Node) boot(gen uint64) error {
	n.mu.Lock()

	if n.gen != gen || n.phase != PhaseOff || n.faults.Down {
		n.mu.Unlock()

		return nil
	}

	bootConfig := n.cfg
	if n.staged != nil {
		bootConfig = n.staged
	}
	n.mu.Unlock()

	// The API certificate comes from the OS CA: a control plane holds its key, a worker gets its
	// certificate from a control plane (trustd) and waits until one exists.
	var signer *x509.PEMEncodedCertificateAndKey

	if bootConfig != nil {
		if signer = n.emu.issuingCA(bootConfig); signer == nil {
			n.emu.log.Printf("%s: waiting for a control plane with the OS CA key (trustd) before the API can start", n.name)
			n.emu.after(n.emu.opts.Timings.Boot, func() {
				if err := n.boot(gen); err != nil {
					n.emu.log.Printf("%s: boot failed: %v", n.name, err)
				}
			})

			return nil
		}
	}

	n.mu.Lock()

	if n.gen != gen || n.phase != PhaseOff || n.faults.Down {
		n.mu.Unlock()

		return nil
	}

	if n.staged != nil {
		n.cfg, n.staged = n.staged, nil
	}

	if n.nextVersion != "" {
		if !n.faults.UpgradeRollback {
			n.version = n.nextVersion
			n.image = n.nextImage
		} else {
			n.emu.log.Printf("%s: booting back into %s (fault upgradeRollback; %s was installed)", n.name, n.version, n.nextVersion)
		}

		n.nextVersion = ""
		n.nextImage = ""
	}

	n.bootID = uuid.NewString()
	n.leftEtcd = false
	n.events = newEventLog()
	n.services = newServiceTable()
	n.resources = newResourceState()
	n.stage = runtime.MachineStageBooting
	n.phase = PhaseBooting

	if n.cfg != nil {
		n.cluster = n.emu.cluster(n.cfg.Cluster().ID(), n.cfg.Cluster().Name())
	} else {
		n.cluster = nil
	}

	server, err := startNodeServer(n, signer)
	if err != nil {
		n.phase = PhaseOff
		n.mu.Unlock()

		return err
	}

	n.server = server
	maintenance := n.cfg == nil
	n.mu.Unlock()

	n.publish("", &machine.SequenceEvent{Sequence: "boot", Action: machine.SequenceEvent_START})
	n.refreshResources()
	n.updateMachineStatus()

	n.emu.after(n.emu.opts.Timings.Services, func() {
		n.finishBoot(gen, maintenance)
	})

	return nil
}

// finishBoot starts the services of the booted node and reports its final stage.
func (n *Node) finishBoot(gen uint64, maintenance bool) {
	n.mu.Lock()

	if n.gen != gen || n.phase != PhaseBooting {
		n.mu.Unlock()

		return
	}

	if maintenance {
		n.phase = PhaseMaintenance
		n.stage = runtime.MachineStageMaintenance
		n.mu.Unlock()
		n.publish("", &machine.TaskEvent{Task: "runningMaintenance", Action: machine.TaskEvent_START})
		n.refreshResources()
		n.updateMachineStatus()

		return
	}

	n.phase = PhaseRunning
	n.stage = runtime.MachineStageRunning
	n.installed = true

	// The first install boots the installer its config names.
	if n.image == "" {
		n.image = n.cfg.Machine().Install().Image()
	}
	cp := n.cfg.Machine().Type().IsControlPlane()
	unhealthy := n.faults.Unhealthy
	n.mu.Unlock()

	for _, id := range []string{"machined", "apid", "containerd", "cri", "udevd", "syslogd"} {
		n.setService(id, stateRunning, "Health check successful", boolPtr(true))
	}

	if cp {
		n.setService("trustd", stateRunning, "Health check successful", boolPtr(true))
	}

	n.setKubelet(unhealthy)
	n.publish("", &machine.SequenceEvent{Sequence: "boot", Action: machine.SequenceEvent_STOP})

	// etcd's state (and quorum) depends on the other control planes: the cluster decides it.
	if c := n.currentCluster(); c != nil {
		c.reconcile()
	}

	n.refreshResources()
	n.updateMachineStatus()
}

// expectedServicesLocked lists the services the node should run (none in maintenance); n.mu held.
func (n *Node) expectedServicesLocked() []string {
	if n.cfg == nil {
		return nil
	}

	return expectedServices(n.cfg.Machine().Type().IsControlPlane())
}

// setKubelet reports kubelet healthy or (fault) unhealthy.
func (n *Node) setKubelet(unhealthy bool) {
	if unhealthy {
		n.setService("kubelet", stateRunning, "Health check failed: emulated fault: node unhealthy", boolPtr(false))

		return
	}

	n.setService("kubelet", stateRunning, "Health check successful", boolPtr(true))
}

// setService changes a service's state and publishes the ServiceStateEvent Talos sends.
func (n *Node) setService(id, state, message string, healthy *bool) {
	n.mu.Lock()

	if n.phase == PhaseOff {
		n.mu.Unlock()

		return
	}

	changed := n.services.set(id, state, message, healthy)
	n.mu.Unlock()

	if !changed {
		return
	}

	event := &machine.ServiceStateEvent{Service: id, Action: serviceAction(state), Message: message}
	if healthy != nil {
		event.Health = &machine.ServiceHealth{Healthy: *healthy}
	} else {
		event.Health = &machine.ServiceHealth{Unknown: true}
	}

	n.publish("", event)
	n.updateMachineStatus()
}

func serviceAction(state string) machine.ServiceStateEvent_Action {
	switch state {
	case stateRunning:
		return machine.ServiceStateEvent_RUNNING
	case statePreparing:
		return machine.ServiceStateEvent_PREPARING
	case stateWaiting:
		return machine.ServiceStateEvent_WAITING
	case stateFinished:
		return machine.ServiceStateEvent_FINISHED
	default:
		return machine.ServiceStateEvent_INITIALIZED
	}
}

// updateMachineStatus recomputes MachineStatus (stage, readiness, unmet conditions), stores it as the
// COSI resource and publishes a MachineStatusEvent when it changed.
func (n *Node) updateMachineStatus() {
	n.mu.Lock()

	if n.phase == PhaseOff {
		n.mu.Unlock()

		return
	}

	stage := n.stage
	ready, unmet := n.services.allHealthy(n.expectedServicesLocked())

	if n.phase == PhaseBooting || n.phase == PhaseMaintenance {
		ready = false
	}

	resources := n.resources
	events := n.events
	n.mu.Unlock()

	if stage == runtime.MachineStageMaintenance {
		ready, unmet = true, nil
	}

	changed := setMachineStatus(resources, stage, ready, unmet)
	if !changed {
		return
	}

	status := &machine.MachineStatusEvent_MachineStatus{Ready: ready}
	for _, name := range unmet {
		status.UnmetConditions = append(status.UnmetConditions, &machine.MachineStatusEvent_MachineStatus_UnmetCondition{
			Name:   "service " + name,
			Reason: "service not healthy",
		})
	}

	events.publish("", &machine.MachineStatusEvent{Stage: machine.MachineStatusEvent_MachineStage(stage), Status: status})
}

// setStage moves the node to a machine stage (upgrading, resetting, rebooting...).
func (n *Node) setStage(stage runtime.MachineStage) {
	n.mu.Lock()
	n.stage = stage
	n.mu.Unlock()

	n.updateMachineStatus()
}

// shutdown stops everything the node serves: the API (streams break, as on a real reboot), the
// services; the node is off the network until powered on again.
func (n *Node) shutdown(reason string) {
	n.mu.Lock()

	if n.phase == PhaseOff {
		n.mu.Unlock()

		return
	}

	n.gen++
	n.phase = PhaseOff
	n.stage = runtime.MachineStageUnknown
	server := n.server
	n.server = nil
	events := n.events
	cluster := n.cluster
	n.mu.Unlock()

	n.emu.log.Printf("%s: shutting down (%s)", n.name, reason)
	events.close()

	if server != nil {
		server.stop()
	}

	if cluster != nil {
		cluster.reconcile()
	}
}

// powerOff shuts the node down and leaves it off.
func (n *Node) powerOff(reason string) {
	n.shutdown(reason)
}

// reboot runs the reboot sequence: events, shutdown, and a boot after Timings.Shutdown.
func (n *Node) reboot(actorID, reason string) {
	n.setStage(runtime.MachineStageRebooting)
	n.publish(actorID, &machine.SequenceEvent{Sequence: "reboot", Action: machine.SequenceEvent_START})
	n.publish(actorID, &machine.TaskEvent{Task: "stopAllServices", Action: machine.TaskEvent_START})
	n.publish(actorID, &machine.TaskEvent{Task: "stopAllServices", Action: machine.TaskEvent_STOP})

	// Leave the API up a moment so the caller gets its response and sees the events.
	n.emu.after(n.emu.opts.Timings.Services, func() {
		n.shutdown(reason)

		n.mu.Lock()
		n.gen++
		gen := n.gen
		n.mu.Unlock()

		n.emu.after(n.emu.opts.Timings.Shutdown, func() {
			if err := n.boot(gen); err != nil {
				n.emu.log.Printf("%s: boot failed: %v", n.name, err)
			}
		})
	})
}

// tryBusy marks a long operation (upgrade, reset) as running; only one at a time, as in Talos.
func (n *Node) tryBusy(operation string) error {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.busy != "" {
		return fmt.Errorf("another operation is in progress: %s", n.busy)
	}

	n.busy = operation

	return nil
}

func (n *Node) doneBusy() {
	n.mu.Lock()
	n.busy = ""
	n.mu.Unlock()
}

// SetFaults replaces the node's faults; Down powers the node off, clearing it powers it on again,
// and health faults take effect at once.
func (n *Node) SetFaults(f Faults) {
	n.mu.Lock()
	old := n.faults
	n.faults = f
	running := n.phase == PhaseRunning
	cluster := n.cluster
	n.mu.Unlock()

	switch {
	case f.Down && !old.Down:
		n.powerOff("fault: down")
	case !f.Down && old.Down:
		if err := n.powerOn(); err != nil {
			n.emu.log.Printf("%s: power on: %v", n.name, err)
		}
	}

	if running && f.Unhealthy != old.Unhealthy {
		n.setKubelet(f.Unhealthy)
		n.refreshResources()

		if cluster != nil {
			cluster.reconcile()
		}
	}
}

// Faults returns the node's faults.
func (n *Node) Faults() Faults {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.faults
}

// Reboot reboots the node as if its power button was pressed (for tests and the control API).
func (n *Node) Reboot() {
	n.mu.Lock()
	phase := n.phase
	n.mu.Unlock()

	if phase == PhaseOff {
		_ = n.powerOn() //nolint:errcheck // powerOn only logs

		return
	}

	n.reboot(uuid.NewString(), "control API")
}
