package emulator_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/bundle"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/role"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

// testTimings keep the emulated steps short; every wait in the tests is bounded by waitTimeout.
var testTimings = emulator.Timings{
	Boot:     150 * time.Millisecond,
	Services: 250 * time.Millisecond,
	Shutdown: 150 * time.Millisecond,
	EtcdJoin: 100 * time.Millisecond,
	Install:  100 * time.Millisecond,
}

const waitTimeout = 45 * time.Second

// harness is one emulator with a cluster's nodes on 127.77.<subnet>.0/24, a range other test tiers do
// not use (control planes .11…, workers .21…, the Kubernetes endpoint .10), and the configs the
// provider would generate for them.
type harness struct {
	t       *testing.T
	emu     *emulator.Emulator
	subnet  int
	cps     []string
	workers []string
	bundle  *bundle.Bundle
	secrets *secrets.Bundle
}

// newHarness starts nodes in maintenance mode; every test uses its own subnet.
func newHarness(t *testing.T, subnet, controlPlanes, workers int, version string) *harness {
	t.Helper()

	emu, err := emulator.New(emulator.Options{Version: version, Timings: testTimings, Logger: log.New(testWriter{t}, "", log.Lmicroseconds)})
	if err != nil {
		t.Fatal(err)
	}

	h := &harness{t: t, emu: emu, subnet: subnet}
	t.Cleanup(emu.Stop)

	for i := range controlPlanes {
		h.cps = append(h.cps, h.addNode(fmt.Sprintf("cp%d", i+1), 11+i))
	}

	for i := range workers {
		h.workers = append(h.workers, h.addNode(fmt.Sprintf("w%d", i+1), 21+i))
	}

	h.secrets, err = secrets.NewBundle(secrets.NewClock(), config.TalosVersionCurrent)
	if err != nil {
		t.Fatal(err)
	}

	h.bundle, err = bundle.NewBundle(
		bundle.WithInputOptions(&bundle.InputOptions{
			ClusterName: fmt.Sprintf("emu%d", subnet),
			Endpoint:    h.endpoint(),
			KubeVersion: "1.36.0",
			GenOptions:  []generate.Option{generate.WithInstallDisk("/dev/sda"), generate.WithSecretsBundle(h.secrets)},
		}),
		bundle.WithVerbose(false),
	)
	if err != nil {
		t.Fatal(err)
	}

	return h
}

func (h *harness) addNode(name string, host int) string {
	addr := netip.MustParseAddr(fmt.Sprintf("127.77.%d.%d", h.subnet, host))

	if _, err := h.emu.AddNode(emulator.NodeSpec{Name: name, Address: addr}); err != nil {
		h.t.Fatal(err)
	}

	return addr.String()
}

func (h *harness) endpoint() string {
	return fmt.Sprintf("https://127.77.%d.10:6443", h.subnet)
}

// nodeConfig is the config of a node: the bundle's, with the node's hostname.
func (h *harness) nodeConfig(addr string) []byte {
	h.t.Helper()

	base, name := h.bundle.WorkerCfg, h.name(addr)
	if strings.HasPrefix(name, "cp") {
		base = h.bundle.ControlPlaneCfg
	}

	return patchConfig(h.t, base, "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: off\nhostname: "+name+"\n")
}

func patchConfig(t *testing.T, base config.Provider, patch string) []byte {
	t.Helper()

	patches, err := configpatcher.LoadPatches([]string{patch})
	if err != nil {
		t.Fatal(err)
	}

	out, err := configpatcher.Apply(configpatcher.WithConfig(base), patches)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := out.Config()
	if err != nil {
		t.Fatal(err)
	}

	data, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		t.Fatal(err)
	}

	return data
}

func (h *harness) name(addr string) string {
	n, ok := h.emu.Node(addr)
	if !ok {
		h.t.Fatalf("no node %s", addr)
	}

	return n.Name()
}

func (h *harness) all() []string { return append(append([]string{}, h.cps...), h.workers...) }

// insecureClient talks to a node the way clients talk to maintenance mode.
func (h *harness) insecureClient(addr string) *client.Client {
	h.t.Helper()

	c, err := client.New(context.Background(), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), client.WithEndpoints(addr)) //nolint:gosec
	if err != nil {
		h.t.Fatal(err)
	}

	h.t.Cleanup(func() { c.Close() }) //nolint:errcheck

	return c
}

// talosconfig is the cluster's talosconfig with a certificate of the given roles.
func (h *harness) talosconfig(roles ...role.Role) *clientconfig.Config {
	h.t.Helper()

	if len(roles) == 0 {
		return h.bundle.TalosConfig()
	}

	cert, err := h.secrets.GenerateTalosAPIClientCertificate(role.MakeSet(roles...))
	if err != nil {
		h.t.Fatal(err)
	}

	return clientconfig.NewConfig("reader", nil, h.bundle.ControlPlaneCfg.Machine().Security().IssuingCA().Crt, cert)
}

// client is an mTLS client of the cluster (admin unless roles are given).
func (h *harness) client(endpoints []string, roles ...role.Role) *client.Client {
	h.t.Helper()

	c, err := client.New(context.Background(), client.WithConfig(h.talosconfig(roles...)), client.WithEndpoints(endpoints...))
	if err != nil {
		h.t.Fatal(err)
	}

	h.t.Cleanup(func() { c.Close() }) //nolint:errcheck

	return c
}

// applyAll applies every node's config in maintenance mode and waits until all run.
func (h *harness) applyAll() {
	h.t.Helper()

	for _, addr := range h.all() {
		h.waitFor("maintenance mode on "+addr, func() error {
			_, err := h.insecureClient(addr).Disks(context.Background())

			return err
		})

		_, err := h.insecureClient(addr).ApplyConfiguration(context.Background(), &machine.ApplyConfigurationRequest{
			Data: h.nodeConfig(addr),
			Mode: machine.ApplyConfigurationRequest_AUTO,
		})
		if err != nil {
			h.t.Fatalf("apply config on %s: %v", addr, err)
		}
	}

	for _, addr := range h.all() {
		h.waitPhase(addr, emulator.PhaseRunning)
	}
}

// bootstrap bootstraps etcd on the first control plane and waits for every control plane to be a
// voting member.
func (h *harness) bootstrap() {
	h.t.Helper()

	c := h.client(h.cps[:1])

	if err := c.Bootstrap(client.WithNode(context.Background(), h.cps[0]), &machine.BootstrapRequest{}); err != nil {
		h.t.Fatalf("bootstrap: %v", err)
	}

	h.waitFor("every control plane a voting etcd member", func() error {
		resp, err := c.EtcdMemberList(client.WithNode(context.Background(), h.cps[0]), &machine.EtcdMemberListRequest{})
		if err != nil {
			return err
		}

		voters := 0

		for _, m := range resp.GetMessages()[0].GetMembers() {
			if !m.GetIsLearner() {
				voters++
			}
		}

		if voters != len(h.cps) {
			return fmt.Errorf("%d voting members", voters)
		}

		return nil
	})
}

func (h *harness) waitPhase(addr string, phase emulator.Phase) {
	h.t.Helper()

	n, _ := h.emu.Node(addr)

	h.waitFor(fmt.Sprintf("%s %s", addr, phase), func() error {
		// before the bootstrap a control plane's etcd waits; everything else must be up
		if st := n.Status(); st.Phase != phase || (phase == emulator.PhaseRunning && len(st.Unmet) > 0 && strings.Join(st.Unmet, ",") != "etcd") {
			return fmt.Errorf("phase %s, unmet %v", st.Phase, st.Unmet)
		}

		return nil
	})
}

// waitFor retries f until it succeeds or waitTimeout ends.
func (h *harness) waitFor(what string, f func() error) {
	h.t.Helper()

	deadline := time.Now().Add(waitTimeout)

	for {
		err := f()
		if err == nil {
			return
		}

		if time.Now().After(deadline) {
			h.t.Fatalf("waiting for %s: %v", what, err)
		}

		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) node(addr string) *emulator.Node {
	n, ok := h.emu.Node(addr)
	if !ok {
		h.t.Fatalf("no node %s", addr)
	}

	return n
}

// readAll reads a stream reader to the end.
func readAll(t *testing.T, r io.ReadCloser, err error) []byte {
	t.Helper()

	if err != nil {
		t.Fatal(err)
	}

	defer r.Close() //nolint:errcheck

	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}

	return data
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))

	return len(p), nil
}
