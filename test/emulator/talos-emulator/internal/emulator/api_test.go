package emulator_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

// TestMaintenanceThenMutualTLS: a fresh node takes an insecure config, validated by Talos'
// machinery; once configured it accepts only clients with a certificate from its OS CA.
func TestMaintenanceThenMutualTLS(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 12, 1, 0, "v1.13.0")
	ctx := context.Background()
	addr := h.cps[0]

	h.waitPhase(addr, emulator.PhaseMaintenance)

	// Talos' validation runs: a config that does not validate is InvalidArgument.
	invalid := patchConfig(t, h.bundle.ControlPlaneCfg, "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\nhostname: both\n")

	_, err := h.insecureClient(addr).ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: invalid})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "'auto' and 'hostname' cannot be set at the same time") {
		t.Fatalf("invalid config: want InvalidArgument from validation, got %v", err)
	}

	// Maintenance mode is read-only for everyone: no bootstrap.
	err = h.insecureClient(addr).Bootstrap(ctx, &machine.BootstrapRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bootstrap in maintenance mode: want PermissionDenied, got %v", err)
	}

	h.applyAll()

	if _, err = h.insecureClient(addr).Disks(ctx); err == nil {
		t.Fatal("an insecure client still reaches the configured node")
	}

	version, err := h.client([]string{addr}).Version(ctx)
	if err != nil {
		t.Fatalf("version over mTLS: %v", err)
	}

	if got := version.GetMessages()[0].GetVersion().GetTag(); got != "v1.13.0" {
		t.Fatalf("version %s, want v1.13.0", got)
	}

	// The server certificate is from the OS CA and names the node's address: verification passes
	// with the CA as the only root.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(h.bundle.ControlPlaneCfg.Machine().Security().IssuingCA().Crt)

	conn, err := tls.Dial("tcp", addr+":50000", &tls.Config{RootCAs: pool, ServerName: addr, MinVersion: tls.VersionTLS12})
	if err == nil {
		conn.Close() //nolint:errcheck
	} else if !strings.Contains(err.Error(), "certificate required") && !strings.Contains(err.Error(), "bad certificate") {
		t.Fatalf("server certificate does not verify against the OS CA: %v", err)
	}

	// A certificate from another CA is refused.
	other, err := secrets.NewBundle(secrets.NewClock(), config.TalosVersionCurrent)
	if err != nil {
		t.Fatal(err)
	}

	foreignCert, err := other.GenerateTalosAPIClientCertificate(role.MakeSet(role.Admin))
	if err != nil {
		t.Fatal(err)
	}

	foreign, err := client.New(ctx, client.WithConfig(clientconfig.NewConfig("foreign", nil, h.bundle.ControlPlaneCfg.Machine().Security().IssuingCA().Crt, foreignCert)), client.WithEndpoints(addr))
	if err != nil {
		t.Fatal(err)
	}

	defer foreign.Close() //nolint:errcheck

	if _, err = foreign.Version(ctx); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}

	// Roles come from the certificate: a reader may read, not bootstrap nor read the kubeconfig.
	reader := h.client([]string{addr}, role.Reader)

	if _, err = reader.Version(ctx); err != nil {
		t.Fatalf("reader version: %v", err)
	}

	if err = reader.Bootstrap(ctx, &machine.BootstrapRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("reader bootstrap: want PermissionDenied, got %v", err)
	}
}

// TestRouting: apid's routing by metadata, as talosctl and the health checks rely on it.
func TestRouting(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 13, 1, 2, "v1.13.0")
	h.applyAll()

	ctx := context.Background()
	c := h.client(h.cps[:1])

	// "nodes": every node answers, each reply carries the node's address as hostname; an address
	// nobody answers on comes back as an error entry (the client filters it into the error), the
	// others still answer.
	unknown := "127.77.13.99"

	resp, err := c.Version(client.WithNodes(ctx, h.cps[0], h.workers[0], unknown))
	if err == nil || !strings.Contains(err.Error(), unknown) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("want the unknown node's error, got %v", err)
	}

	var answered []string

	for _, msg := range resp.GetMessages() {
		answered = append(answered, msg.GetMetadata().GetHostname())
	}

	slices.Sort(answered)

	if strings.Join(answered, ",") != h.cps[0]+","+h.workers[0] {
		t.Fatalf("want the replies of cp1 and w1 with their addresses, got %v", answered)
	}

	// "node": one-to-one to another node through the endpoint.
	hostname, err := c.MachineClient.Hostname(client.WithNode(ctx, h.workers[1]), &emptypb.Empty{})
	if err != nil || hostname.GetMessages()[0].GetHostname() != "w2" {
		t.Fatalf("hostname of w2 through cp1: %v, %v", hostname, err)
	}

	// COSI reads go one-to-one; one-to-many is refused as apid refuses it.
	members, err := safe.StateListAll[*cluster.Member](client.WithNode(ctx, h.workers[0]), c.COSI)
	if err != nil || members.Len() != 3 {
		t.Fatalf("discovery members through w1: %v, %v", members.Len(), err)
	}

	_, err = safe.StateListAll[*cluster.Member](client.WithNodes(ctx, h.workers[0], h.workers[1]), c.COSI)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "one-2-many proxying is not supported") {
		t.Fatalf("COSI one-to-many: want InvalidArgument, got %v", err)
	}

	// A worker is not a control plane: the control-plane APIs say so.
	_, err = c.Kubeconfig(client.WithNode(ctx, h.workers[0]))
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "only available on control plane nodes") {
		t.Fatalf("kubeconfig on a worker: %v", err)
	}
}

// TestAddressInUse: a node whose address is taken (another emulator, another test) fails at once.
func TestAddressInUse(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 18, 1, 0, "v1.13.0")

	other, err := emulator.New(emulator.Options{Version: "v1.13.0"})
	if err != nil {
		t.Fatal(err)
	}

	defer other.Stop()

	h.waitPhase(h.cps[0], emulator.PhaseMaintenance)

	if _, err = other.AddNode(emulator.NodeSpec{Name: "again", Address: netip.MustParseAddr(h.cps[0])}); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("want address already in use, got %v", err)
	}
}

// TestSensitiveResources: the machine config is for admins only, as in Talos.
func TestSensitiveResources(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 19, 1, 0, "v1.13.0")
	h.applyAll()

	ctx := client.WithNode(context.Background(), h.cps[0])

	if _, err := safe.StateGetByID[*configres.MachineConfig](ctx, h.client(h.cps).COSI, configres.ActiveID); err != nil {
		t.Fatalf("admin reads the machine config: %v", err)
	}

	_, err := safe.StateGetByID[*configres.MachineConfig](ctx, h.client(h.cps, role.Reader).COSI, configres.ActiveID)
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("reader reads the machine config: want PermissionDenied, got %v", err)
	}

	if _, err = safe.StateListAll[*cluster.Member](ctx, h.client(h.cps, role.Reader).COSI); err != nil {
		t.Fatalf("reader lists members: %v", err)
	}
}
