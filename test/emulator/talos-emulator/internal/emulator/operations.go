package emulator

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configdiff"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const stageShuttingDown = runtime.MachineStageShuttingDown

// defaultTryTimeout is how long a config applied with --mode=try stays before it is rolled back.
const defaultTryTimeout = time.Minute

// validationMode is the runtime mode configs are validated against: bare metal, installed to disk
// once the first config was applied (Talos' modeWrapper).
type validationMode struct{ installed bool }

func (m validationMode) String() string        { return "metal" }
func (m validationMode) RequiresInstall() bool { return !m.installed }
func (m validationMode) InContainer() bool     { return false }

var tagPattern = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?$`)

// parseTag normalizes a Talos version tag (1.13.9 → v1.13.9).
func parseTag(tag string) (string, error) {
	m := tagPattern.FindStringSubmatch(tag)
	if m == nil {
		return "", fmt.Errorf("%q is not a Talos version tag (vX.Y.Z)", tag)
	}

	return fmt.Sprintf("v%s.%s.%s%s", m[1], m[2], m[3], m[4]), nil
}

// imageVersion is the Talos version an installer image installs: its tag. (A real node runs the
// installer; the emulator trusts the tag, so an image pinned by digest only is refused.)
func imageVersion(image string) (string, error) {
	if image == "" {
		return "", errors.New("installer image name is required")
	}

	name := image
	if at := strings.Index(name, "@"); at >= 0 {
		name = name[:at]
	}

	slash := strings.LastIndex(name, "/")
	colon := strings.LastIndex(name, ":")

	if colon < 0 || colon < slash {
		return "", fmt.Errorf("image %q has no tag; the emulator takes the Talos version from the installer image's tag", image)
	}

	return parseTag(name[colon+1:])
}

// setEtcdData records whether the node's EPHEMERAL partition holds etcd data.
func (n *Node) setEtcdData(v bool) {
	n.mu.Lock()
	n.etcdData = v
	n.mu.Unlock()
}

// setLeftEtcd records that the node left etcd with `etcd leave` (until its next boot).
func (n *Node) setLeftEtcd() {
	n.mu.Lock()
	n.leftEtcd = true
	n.mu.Unlock()
}

// installFromMaintenance takes the first config: the node installs and reboots into it.
func (n *Node) installFromMaintenance(cfg config.Provider) error {
	n.mu.Lock()

	// The maintenance API answers from the start of the boot; a config arriving before the node
	// settled into maintenance mode is taken all the same.
	if n.cfg != nil || (n.phase != PhaseMaintenance && n.phase != PhaseBooting) {
		n.mu.Unlock()

		return status.Error(codes.FailedPrecondition, "the node is not in maintenance mode")
	}

	n.cfg = cfg
	n.mu.Unlock()

	actorID := ""

	n.setStage(runtime.MachineStageInstalling)
	n.publish(actorID, &machine.SequenceEvent{Sequence: "install", Action: machine.SequenceEvent_START})

	n.emu.after(n.emu.opts.Timings.Install, func() {
		n.publish(actorID, &machine.SequenceEvent{Sequence: "install", Action: machine.SequenceEvent_STOP})
		n.reboot(actorID, "installed")
	})

	return nil
}

// applyConfig applies a config to a configured node in the mode ApplyConfiguration chose.
func (n *Node) applyConfig(cfg config.Provider, mode machine.ApplyConfigurationRequest_Mode, tryTimeout time.Duration) error {
	n.mu.Lock()
	previous := n.cfg

	switch mode { //nolint:exhaustive
	case machine.ApplyConfigurationRequest_STAGED:
		n.staged = cfg
	default:
		n.cfg = cfg
		n.staged = nil
	}

	cl := n.cluster
	hostname := hostnameOf(cfg, n.addr)
	n.mu.Unlock()

	if cl != nil {
		cl.record("/talos-emulator/config/"+hostname, time.Now().UTC().Format(time.RFC3339Nano))
	}

	switch mode { //nolint:exhaustive
	case machine.ApplyConfigurationRequest_REBOOT:
		n.reboot("", "config applied with a reboot")

		return nil
	case machine.ApplyConfigurationRequest_TRY:
		if tryTimeout <= 0 {
			tryTimeout = defaultTryTimeout
		}

		n.emu.after(tryTimeout, func() {
			n.mu.Lock()
			if n.cfg == cfg {
				n.cfg = previous
			}
			n.mu.Unlock()
			n.configChanged()
		})
	}

	n.configChanged()

	return nil
}

// configChanged updates what depends on the config of a running node (resources, kubelet, etcd).
func (n *Node) configChanged() {
	n.refreshResources()

	if cl := n.currentCluster(); cl != nil {
		cl.reconcile()
	}
}

// ReplaceConfig changes the node's config as if someone applied it behind the program's back
// (drift); it takes effect without a reboot, like a no-reboot apply.
func (n *Node) ReplaceConfig(cfg config.Provider) error {
	if n.config() == nil {
		return errors.New("the node has no config yet (maintenance mode)")
	}

	return n.applyConfig(cfg, machine.ApplyConfigurationRequest_NO_REBOOT, 0)
}

// canApplyImmediate tells whether a config change applies without a reboot: Talos compares the
// v1alpha1 documents after taking over, from the current config, every field it applies live.
func canApplyImmediate(current, next config.Provider) error {
	cur := current.RawV1Alpha1()
	if cur == nil {
		return errors.New("current config is not v1alpha1")
	}

	nextRaw := next.RawV1Alpha1()
	if nextRaw == nil {
		return errors.New("new config is not v1alpha1")
	}

	nextRaw = nextRaw.DeepCopy()
	nextRaw.ConfigDebug = cur.ConfigDebug
	nextRaw.ClusterConfig = cur.ClusterConfig

	if m, c := nextRaw.MachineConfig, cur.MachineConfig; m != nil && c != nil {
		m.MachineCA, m.MachineAcceptedCAs, m.MachineCertSANs = c.MachineCA, c.MachineAcceptedCAs, c.MachineCertSANs
		m.MachineTime, m.MachineInstall, m.MachineNetwork = c.MachineTime, c.MachineInstall, c.MachineNetwork //nolint:staticcheck
		m.MachineSysfs, m.MachineSysctls, m.MachineLogging = c.MachineSysfs, c.MachineSysctls, c.MachineLogging
		m.MachineControlPlane, m.MachineKubelet, m.MachineKernel = c.MachineControlPlane, c.MachineKubelet, c.MachineKernel
		m.MachineRegistries, m.MachinePods, m.MachineSeccompProfiles = c.MachineRegistries, c.MachinePods, c.MachineSeccompProfiles //nolint:staticcheck
		m.MachineNodeAnnotations, m.MachineNodeLabels, m.MachineNodeTaints = c.MachineNodeAnnotations, c.MachineNodeLabels, c.MachineNodeTaints

		if mf, cf := m.MachineFeatures, c.MachineFeatures; mf != nil && cf != nil {
			mf.KubernetesTalosAPIAccessConfig, mf.KubePrismSupport = cf.KubernetesTalosAPIAccessConfig, cf.KubePrismSupport
			mf.HostDNSSupport, mf.ImageCacheSupport = cf.HostDNSSupport, cf.ImageCacheSupport
			mf.FeatureNodeAddressSortAlgorithm = cf.FeatureNodeAddressSortAlgorithm
		}
	}

	if reflect.DeepEqual(cur, nextRaw) {
		return nil
	}

	diff, err := configdiff.DiffConfigs(container.NewV1Alpha1(cur), container.NewV1Alpha1(nextRaw))
	if err != nil {
		return fmt.Errorf("error calculating diff: %w", err)
	}

	return fmt.Errorf("this config change can't be applied in immediate mode\ndiff:\n%s", diff)
}

// dryRunDiff is the diff a dry-run apply reports.
func dryRunDiff(current, next config.Provider) (string, error) {
	if current == nil {
		return "Config diff:\n\n(no current config: maintenance mode)", nil
	}

	diff, err := configdiff.DiffConfigs(current, next)
	if err != nil {
		return "", fmt.Errorf("failed to generate diff: %w", err)
	}

	if diff == "" {
		diff = "No changes."
	}

	return "Config diff:\n\n" + diff, nil
}

// reset wipes what the request asks (everything, or STATE/EPHEMERAL) and reboots or powers off. A
// graceful reset of a control plane leaves etcd first, as Talos does.
func (n *Node) reset(actorID string, req *machine.ResetRequest) error {
	if err := n.tryBusy("reset"); err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}

	cl := n.currentCluster()

	if req.GetGraceful() && n.isControlPlane() && cl != nil {
		if _, member := cl.memberOf(n.addr); member {
			if err := cl.leave(n); err != nil {
				n.doneBusy()

				return fmt.Errorf("failed to leave etcd cluster: %w", err)
			}
		}
	}

	wipeState, wipeEphemeral := false, false

	for _, spec := range req.GetSystemPartitionsToWipe() {
		if !spec.GetWipe() {
			continue
		}

		switch spec.GetLabel() {
		case "STATE":
			wipeState = true
		case "EPHEMERAL":
			wipeEphemeral = true
		}
	}

	wipeAll := len(req.GetSystemPartitionsToWipe()) == 0 && req.GetMode() != machine.ResetRequest_USER_DISKS

	n.setStage(runtime.MachineStageResetting)
	n.publish(actorID, &machine.SequenceEvent{Sequence: "reset", Action: machine.SequenceEvent_START})

	// The sequence runs after the call returned, as in Talos: the caller's event watch (talosctl's
	// and the provider's reset tracking wait for stopAllServices) is in place by then.
	n.emu.after(n.emu.opts.Timings.Services, func() {
		n.publish(actorID, &machine.TaskEvent{Task: "stopAllServices", Action: machine.TaskEvent_START})
		n.publish(actorID, &machine.TaskEvent{Task: "stopAllServices", Action: machine.TaskEvent_STOP})
	})

	n.emu.after(2*n.emu.opts.Timings.Services, func() {
		defer n.doneBusy()

		n.shutdown("reset")

		n.mu.Lock()
		if wipeAll || wipeState {
			n.cfg, n.staged = nil, nil
		}

		if wipeAll || wipeEphemeral {
			n.etcdData = false
		}

		if wipeAll {
			n.installed = false
		}

		n.recoverData = nil
		n.gen++
		gen := n.gen
		n.mu.Unlock()

		if cl != nil {
			cl.reconcile()
		}

		if !req.GetReboot() {
			n.emu.log.Printf("%s: reset done, powered off", n.name)

			return
		}

		n.emu.after(n.emu.opts.Timings.Shutdown, func() {
			if err := n.boot(gen); err != nil {
				n.emu.log.Printf("%s: boot failed: %v", n.name, err)
			}
		})
	})

	return nil
}

// upgradeLegacy is MachineService.Upgrade: validated and acknowledged at once, the install and the
// reboot follow (the fault upgradeFails ends the sequence with an error instead).
func (n *Node) upgradeLegacy(actorID, image string, force, _ bool) error {
	n.mu.Lock()
	installed := n.installed
	running := n.phase == PhaseRunning
	cl := n.cluster
	n.mu.Unlock()

	if !running || !installed {
		return status.Error(codes.FailedPrecondition, "Talos is not installed")
	}

	tag, err := imageVersion(image)
	if err != nil {
		return fmt.Errorf("error validating installer image %q: %w", image, err)
	}

	if n.isControlPlane() && !force && cl != nil {
		if err = cl.quorumWithout(n.addr); err != nil {
			return fmt.Errorf("error validating etcd for upgrade: %w", err)
		}
	}

	if err = n.tryBusy("upgrade"); err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}

	n.setStage(runtime.MachineStageUpgrading)
	n.publish(actorID, &machine.SequenceEvent{Sequence: "upgrade", Action: machine.SequenceEvent_START})
	n.publish(actorID, &machine.PhaseEvent{Phase: "upgrade", Action: machine.PhaseEvent_START})

	n.emu.after(n.emu.opts.Timings.Install, func() {
		defer n.doneBusy()

		if n.Faults().UpgradeFails {
			n.publish(actorID, &machine.PhaseEvent{Phase: "upgrade", Action: machine.PhaseEvent_STOP})
			n.publish(actorID, &machine.SequenceEvent{
				Sequence: "upgrade",
				Action:   machine.SequenceEvent_NOOP,
				Error:    &common.Error{Code: common.Code_FATAL, Message: "failed to install " + image + ": emulated fault: installer failed"},
			})
			n.setStage(runtime.MachineStageRunning)

			return
		}

		n.installVersion(tag, image)
		n.publish(actorID, &machine.PhaseEvent{Phase: "upgrade", Action: machine.PhaseEvent_STOP})
		n.publish(actorID, &machine.SequenceEvent{Sequence: "upgrade", Action: machine.SequenceEvent_STOP})
		n.reboot(actorID, "upgrade to "+tag)
	})

	return nil
}

// installVersion writes a version to the inactive boot slot: it runs from the next boot on.
func (n *Node) installVersion(tag, image string) {
	n.mu.Lock()
	n.nextVersion = tag
	n.nextImage = image
	cl := n.cluster
	n.mu.Unlock()

	n.emu.log.Printf("%s: installed %s (%s); active from the next boot", n.name, tag, image)

	if cl != nil {
		cl.record("/talos-emulator/installed/"+n.addr.String(), tag)
	}
}
