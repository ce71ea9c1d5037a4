package emulator_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/cmd/talosctl/pkg/talos/action"
	"github.com/siderolabs/talos/pkg/cluster"
	"github.com/siderolabs/talos/pkg/cluster/check"
	"github.com/siderolabs/talos/pkg/conditions"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	machinetype "github.com/siderolabs/talos/pkg/machinery/config/machine"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

// providerOp makes a call the way terraform-provider-talos v0.11.0 does (pkg/talos/util.go,
// talosClientOp): it first probes the node insecurely (StorageService.Disks answers only in
// maintenance mode) and otherwise connects with the client configuration; "node" metadata names
// the target.
func providerOp(ctx context.Context, endpoint, node string, tc *clientconfig.Config, op func(context.Context, *client.Client) error) error {
	nodeCtx := client.WithNode(ctx, node)

	c, err := client.New(ctx, client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), client.WithEndpoints(endpoint)) //nolint:gosec
	if err != nil {
		return err
	}

	if _, err = c.Disks(nodeCtx); err != nil {
		c.Close() //nolint:errcheck

		if c, err = client.New(ctx, client.WithConfig(tc), client.WithEndpoints(endpoint)); err != nil {
			return err
		}
	}

	defer c.Close() //nolint:errcheck

	return op(nodeCtx, c)
}

// retryProvider retries like the provider's resources: InvalidArgument ends at once, other errors
// are retried until the time-out.
func retryProvider(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)

	for {
		err := f()
		if err == nil || status.Code(err) == codes.InvalidArgument || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}

		time.Sleep(100 * time.Millisecond)
	}
}

type clusterNodes struct {
	byType map[machinetype.Type][]cluster.NodeInfo
}

func (c clusterNodes) Nodes() []cluster.NodeInfo {
	return append(append([]cluster.NodeInfo{}, c.byType[machinetype.TypeControlPlane]...), c.byType[machinetype.TypeWorker]...)
}

func (c clusterNodes) NodesByType(t machinetype.Type) []cluster.NodeInfo { return c.byType[t] }

type lineReporter struct{ lines []string }

func (r *lineReporter) Update(condition conditions.Condition) {
	line := condition.String()
	if len(r.lines) == 0 || r.lines[len(r.lines)-1] != line {
		r.lines = append(r.lines, line)
	}
}

// getHealth runs the checks of the provider's talos_cluster_health data source (client side:
// check.Wait with PreBootSequenceChecks, or DefaultClusterChecks without skip_kubernetes_checks).
func getHealth(ctx context.Context, h *harness, skipKubernetesChecks bool, timeout time.Duration) ([]string, error) {
	c, err := client.New(ctx, client.WithConfig(h.talosconfig()), client.WithEndpoints(h.cps...))
	if err != nil {
		return nil, err
	}

	provider := &cluster.ConfigClientProvider{DefaultClient: c}
	defer provider.Close() //nolint:errcheck

	controlPlanes, err := cluster.IPsToNodeInfos(h.cps)
	if err != nil {
		return nil, err
	}

	workers, err := cluster.IPsToNodeInfos(h.workers)
	if err != nil {
		return nil, err
	}

	state := struct {
		cluster.ClientProvider
		cluster.K8sProvider
		cluster.Info
	}{provider, &cluster.KubernetesClient{ClientProvider: provider}, clusterNodes{byType: map[machinetype.Type][]cluster.NodeInfo{
		machinetype.TypeControlPlane: controlPlanes,
		machinetype.TypeWorker:       workers,
	}}}

	checks := check.DefaultClusterChecks()
	if skipKubernetesChecks {
		checks = check.PreBootSequenceChecks()
	}

	checkCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	reporter := &lineReporter{}
	err = check.Wait(checkCtx, &state, checks, reporter)

	return reporter.lines, err
}

// TestProviderLifecycle drives the emulator through the provider's calls: configs pushed in
// maintenance mode, bootstrap retried until the node is back, the health data source, the
// kubeconfig resource, a config change applied in place and one that needs a reboot, and the
// reset of ConfigurationApply's on_destroy.
func TestProviderLifecycle(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 11, 3, 2, "v1.13.0")
	ctx := context.Background()
	tc := h.talosconfig()

	for _, addr := range h.all() {
		h.waitFor("maintenance mode", func() error { _, err := h.insecureClient(addr).Disks(ctx); return err })

		err := providerOp(ctx, addr, addr, tc, func(nodeCtx context.Context, c *client.Client) error {
			resp, err := c.ApplyConfiguration(nodeCtx, &machine.ApplyConfigurationRequest{Data: h.nodeConfig(addr), Mode: machine.ApplyConfigurationRequest_AUTO})
			if err == nil && resp.GetMessages()[0].GetMode() != machine.ApplyConfigurationRequest_NO_REBOOT {
				err = fmt.Errorf("maintenance apply resolved to %s, want NO_REBOOT", resp.GetMessages()[0].GetMode())
			}

			return err
		})
		if err != nil {
			t.Fatalf("ConfigurationApply %s: %v", addr, err)
		}
	}

	// The node installs and reboots: bootstrap fails (Unavailable) until it is back, and is retried.
	attempts := 0

	err := retryProvider(ctx, waitTimeout, func() error {
		attempts++

		return providerOp(ctx, h.cps[0], h.cps[0], tc, func(nodeCtx context.Context, c *client.Client) error {
			return c.Bootstrap(nodeCtx, &machine.BootstrapRequest{})
		})
	})
	if err != nil {
		t.Fatalf("Bootstrap after %d attempts: %v", attempts, err)
	}

	// A second bootstrap is refused with AlreadyExists, which the provider keeps retrying.
	err = providerOp(ctx, h.cps[0], h.cps[0], tc, func(nodeCtx context.Context, c *client.Client) error {
		return c.Bootstrap(nodeCtx, &machine.BootstrapRequest{})
	})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "etcd data directory is not empty") {
		t.Fatalf("second bootstrap: want AlreadyExists, got %v", err)
	}

	lines, err := getHealth(ctx, h, true, waitTimeout)
	if err != nil {
		t.Fatalf("getHealth (skip Kubernetes checks): %v\n%s", err, strings.Join(lines, "\n"))
	}

	lines, err = getHealth(ctx, h, false, waitTimeout)
	if err != nil {
		t.Fatalf("getHealth: %v\n%s", err, strings.Join(lines, "\n"))
	}

	if !containsLine(lines, "all k8s nodes to report ready: OK") || !containsLine(lines, "etcd members to be control plane nodes: OK") {
		t.Fatalf("health checks did not all run: %q", lines)
	}

	var kubeconfig []byte

	err = providerOp(ctx, h.cps[0], h.cps[0], tc, func(nodeCtx context.Context, c *client.Client) error {
		kubeconfig, err = c.Kubeconfig(nodeCtx)

		return err
	})
	if err != nil {
		t.Fatalf("Kubeconfig: %v", err)
	}

	assertKubernetesNodes(t, kubeconfig, h.endpoint(), 5)

	// In place: the kubelet image; the node keeps its boot.
	cp2 := h.node(h.cps[1])
	bootID := cp2.Status().BootID
	changed := patchConfig(t, cp2.Config(), "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.36.3\n")

	mode := applyAuto(t, h, tc, h.cps[1], changed)
	if mode != machine.ApplyConfigurationRequest_NO_REBOOT || cp2.Status().BootID != bootID {
		t.Fatalf("kubelet image change: mode %s, rebooted %v; want NO_REBOOT without reboot", mode, cp2.Status().BootID != bootID)
	}

	h.waitFor("kubelet spec updated", func() error {
		spec, err := safe.StateGetByID[*k8s.KubeletSpec](client.WithNode(ctx, h.cps[1]), h.client(h.cps[:1]).COSI, k8s.KubeletID)
		if err != nil {
			return err
		}

		if spec.TypedSpec().Image != "ghcr.io/siderolabs/kubelet:v1.36.3" {
			return fmt.Errorf("image %s", spec.TypedSpec().Image)
		}

		return nil
	})

	// Talos applies machine.install changes live too (they matter to the next upgrade).
	changed = patchConfig(t, cp2.Config(), "machine:\n  install:\n    disk: /dev/sdb\n")
	if mode = applyAuto(t, h, tc, h.cps[1], changed); mode != machine.ApplyConfigurationRequest_NO_REBOOT {
		t.Fatalf("install disk change: mode %s, want NO_REBOOT", mode)
	}

	// Not in place: udev rules; AUTO resolves to a reboot.
	changed = patchConfig(t, cp2.Config(), "machine:\n  udev:\n    rules:\n      - SUBSYSTEM==\"drm\", GROUP=\"44\"\n")
	if mode = applyAuto(t, h, tc, h.cps[1], changed); mode != machine.ApplyConfigurationRequest_REBOOT {
		t.Fatalf("udev rules change: mode %s, want REBOOT", mode)
	}

	h.waitFor("cp2 rebooted", func() error {
		if st := cp2.Status(); st.BootID == bootID || st.Phase != emulator.PhaseRunning {
			return fmt.Errorf("boot %s, phase %s", st.BootID, st.Phase)
		}

		return nil
	})

	// on_destroy {reset = true, graceful = false, reboot = true} on a worker: the provider's tracker
	// waits for stopAllServices, then for the node to answer in maintenance mode.
	resetNode(t, h, h.workers[1])

	// STATE (the config) and EPHEMERAL are gone; Talos stays installed and boots into maintenance.
	if st := h.node(h.workers[1]).Status(); st.Phase != emulator.PhaseMaintenance || !st.Installed || st.Hostname != "" {
		t.Fatalf("after reset: %+v; want maintenance mode, installed, no config", st)
	}
}

func containsLine(lines []string, want string) bool {
	for _, line := range lines {
		if line == want {
			return true
		}
	}

	return false
}

func applyAuto(t *testing.T, h *harness, tc *clientconfig.Config, addr string, data []byte) machine.ApplyConfigurationRequest_Mode {
	t.Helper()

	var mode machine.ApplyConfigurationRequest_Mode

	err := providerOp(context.Background(), addr, addr, tc, func(nodeCtx context.Context, c *client.Client) error {
		resp, err := c.ApplyConfiguration(nodeCtx, &machine.ApplyConfigurationRequest{Data: data, Mode: machine.ApplyConfigurationRequest_AUTO})
		if err == nil {
			mode = resp.GetMessages()[0].GetMode()
		}

		return err
	})
	if err != nil {
		t.Fatalf("apply to %s: %v", addr, err)
	}

	return mode
}

// assertKubernetesNodes uses the kubeconfig as any Kubernetes client would.
func assertKubernetesNodes(t *testing.T, kubeconfig []byte, endpoint string, want int) {
	t.Helper()

	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}

	for _, c := range cfg.Clusters {
		if c.Server != endpoint {
			t.Fatalf("kubeconfig server %s, want %s", c.Server, endpoint)
		}
	}

	rest, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	clientset, err := kubernetes.NewForConfig(rest)
	if err != nil {
		t.Fatal(err)
	}

	nodes, err := clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}

	if len(nodes.Items) != want {
		t.Fatalf("%d Kubernetes nodes, want %d", len(nodes.Items), want)
	}
}

// resetNode resets like ConfigurationApply's on_destroy: the action tracker waits for the
// stopAllServices event, then its post check finds the node in maintenance mode (or rebooted).
func resetNode(t *testing.T, h *harness, addr string) {
	t.Helper()

	tc := h.talosconfig()

	err := providerOp(context.Background(), addr, addr, tc, func(_ context.Context, c *client.Client) error {
		executor := &executor{c: c, nodes: []string{addr}}

		return action.NewTracker(
			executor,
			action.StopAllServicesEventFn,
			func(ctx context.Context, c *client.Client) (string, error) {
				resp, err := c.ResetGenericWithResponse(ctx, &machine.ResetRequest{
					Graceful: false,
					Reboot:   true,
					SystemPartitionsToWipe: []*machine.ResetPartitionSpec{
						{Label: "STATE", Wipe: true},
						{Label: "EPHEMERAL", Wipe: true},
					},
				})
				if err != nil {
					return "", err
				}

				return resp.GetMessages()[0].GetActorId(), nil
			},
			action.WithPostCheck(func(ctx context.Context, c *client.Client, preActionBootID string) error {
				insecure, err := client.New(ctx, client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), client.WithEndpoints(addr)) //nolint:gosec
				if err != nil {
					return err
				}

				defer insecure.Close() //nolint:errcheck

				if _, err = insecure.Disks(client.WithNode(ctx, addr)); err == nil {
					return nil
				}

				return action.BootIDChangedPostCheckFn(ctx, c, preActionBootID)
			}),
			action.WithTimeout(waitTimeout),
		).Run()
	})
	if err != nil {
		t.Fatalf("reset %s: %v", addr, err)
	}

	h.waitPhase(addr, emulator.PhaseMaintenance)
}

type executor struct {
	c     *client.Client
	nodes []string
}

func (e *executor) WithClient(f func(context.Context, *client.Client) error, _ ...grpc.DialOption) error {
	return f(client.WithNodes(context.Background(), e.nodes...), e.c)
}

func (e *executor) NodeList() []string { return e.nodes }

// TestStagedConfig: the provider's staged_if_needing_reboot asks with a dry run whether a change
// needs a reboot, then stages it; the node runs it from its next reboot (`rollout` reads the
// persistent config to see what is pending).
func TestStagedConfig(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 20, 1, 0, "v1.13.0")
	h.applyAll()
	h.bootstrap()

	ctx := context.Background()
	addr := h.cps[0]
	tc := h.talosconfig()
	changed := patchConfig(t, h.node(addr).Config(), "machine:\n  udev:\n    rules:\n      - SUBSYSTEM==\"drm\", GROUP=\"44\"\n")

	var dryRun *machine.ApplyConfigurationResponse

	err := providerOp(ctx, addr, addr, tc, func(nodeCtx context.Context, c *client.Client) error {
		var err error

		dryRun, err = c.ApplyConfiguration(nodeCtx, &machine.ApplyConfigurationRequest{Data: changed, Mode: machine.ApplyConfigurationRequest_AUTO, DryRun: true})

		return err
	})
	if err != nil || dryRun.GetMessages()[0].GetMode() != machine.ApplyConfigurationRequest_REBOOT ||
		!strings.Contains(dryRun.GetMessages()[0].GetModeDetails(), "Dry run summary") {
		t.Fatalf("dry run: %v, %v; want REBOOT and a summary", dryRun, err)
	}

	udev := func(id string) bool {
		mc, err := safe.StateGetByID[*configres.MachineConfig](client.WithNode(ctx, addr), h.client(h.cps).COSI, id)
		if err != nil {
			t.Fatalf("machine config %s: %v", id, err)
		}

		return len(mc.Config().Machine().Udev().Rules()) > 0
	}

	if udev(configres.ActiveID) || udev(configres.PersistentID) {
		t.Fatal("the dry run changed the config")
	}

	err = providerOp(ctx, addr, addr, tc, func(nodeCtx context.Context, c *client.Client) error {
		_, err := c.ApplyConfiguration(nodeCtx, &machine.ApplyConfigurationRequest{Data: changed, Mode: machine.ApplyConfigurationRequest_STAGED})

		return err
	})
	if err != nil {
		t.Fatalf("staged apply: %v", err)
	}

	h.waitFor("the staged config on disk", func() error {
		if !udev(configres.PersistentID) {
			return errorf("persistent config without the change")
		}

		return nil
	})

	if udev(configres.ActiveID) {
		t.Fatal("a staged change runs before the reboot")
	}

	h.rebootAndWait(addr)

	if !udev(configres.ActiveID) {
		t.Fatal("the staged change does not run after the reboot")
	}
}
