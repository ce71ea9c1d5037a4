package emulator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

func (h *harness) members(via string) []*machine.EtcdMember {
	h.t.Helper()

	resp, err := h.client(h.cps[:1]).EtcdMemberList(client.WithNode(context.Background(), via), &machine.EtcdMemberListRequest{QueryLocal: true})
	if err != nil {
		h.t.Fatalf("etcd members via %s: %v", via, err)
	}

	return resp.GetMessages()[0].GetMembers()
}

func (h *harness) waitMembers(via string, want ...string) {
	h.t.Helper()

	h.waitFor("etcd members "+strings.Join(want, ","), func() error {
		var got []string

		for _, m := range h.members(via) {
			if !m.GetIsLearner() {
				got = append(got, m.GetHostname())
			}
		}

		if strings.Join(got, ",") != strings.Join(want, ",") {
			return errorf("voting members %v", got)
		}

		return nil
	})
}

func (h *harness) snapshot(via string) ([]byte, error) {
	r, err := h.client(h.cps[:1]).EtcdSnapshot(client.WithNodes(context.Background(), via), &machine.EtcdSnapshotRequest{})
	if err != nil {
		return nil, err
	}

	defer r.Close() //nolint:errcheck

	var buf bytes.Buffer

	_, err = buf.ReadFrom(r)

	return buf.Bytes(), err
}

// wipeEphemeral resets EPHEMERAL on the nodes at once (talosctl reset --graceful=false --reboot
// --system-labels-to-wipe=EPHEMERAL) and waits for them to be back.
func (h *harness) wipeEphemeral(addrs ...string) {
	h.t.Helper()

	bootIDs := map[string]string{}

	for _, addr := range addrs {
		bootIDs[addr] = h.node(addr).Status().BootID

		// each through its own API: an endpoint that is itself being reset goes away under the next call
		err := h.client([]string{addr}).ResetGeneric(client.WithNodes(context.Background(), addr), &machine.ResetRequest{
			Graceful:               false,
			Reboot:                 true,
			SystemPartitionsToWipe: []*machine.ResetPartitionSpec{{Label: "EPHEMERAL", Wipe: true}},
		})
		if err != nil {
			h.t.Fatalf("reset EPHEMERAL on %s: %v", addr, err)
		}
	}

	for _, addr := range addrs {
		n := h.node(addr)

		h.waitFor(addr+" rebooted", func() error {
			if st := n.Status(); st.BootID == bootIDs[addr] || st.Phase != emulator.PhaseRunning {
				return errorf("%s %s", st.Phase, st.BootID)
			}

			return nil
		})
	}
}

// TestEtcdOperations covers the day-two etcd procedures: snapshot (read back as talosctl does),
// leave and rejoin, removal of a member whose node is gone, lost quorum, and the disaster recovery
// (all control planes wiped, bootstrap from the snapshot).
func TestEtcdOperations(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 14, 3, 0, "v1.13.0")
	ctx := context.Background()

	h.applyAll()
	h.bootstrap()

	// A snapshot: a bbolt database plus its SHA-256, as etcd streams it; talosctl reads it back
	// with etcdutl's snapshot status.
	data, err := h.snapshot(h.cps[0])
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}

	if len(data)%512 != sha256.Size {
		t.Fatalf("snapshot size %d: the SHA-256 trailer talosctl checks for is missing", len(data))
	}

	file := filepath.Join(t.TempDir(), "db.snapshot")
	if err = os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	st, err := snapshot.NewV3(zap.NewNop()).Status(file)
	if err != nil {
		t.Fatalf("etcdutl snapshot status: %v", err)
	}

	if st.Revision < 3 || st.TotalKey < 3 {
		t.Fatalf("snapshot status %+v: want the bootstrap's keys", st)
	}

	// Fault: snapshots on cp1 fail; cp2 still takes one.
	h.node(h.cps[0]).SetFaults(emulator.Faults{SnapshotFails: true})

	if _, err = h.snapshot(h.cps[0]); err == nil || !strings.Contains(err.Error(), "emulated fault: snapshot fails") {
		t.Fatalf("snapshot with the fault: %v", err)
	}

	if _, err = h.snapshot(h.cps[1]); err != nil {
		t.Fatalf("snapshot on cp2: %v", err)
	}

	h.node(h.cps[0]).SetFaults(emulator.Faults{})

	// cp3 leaves, then rejoins once its EPHEMERAL is wiped.
	if err = h.client(h.cps[:1]).EtcdLeaveCluster(client.WithNodes(ctx, h.cps[2]), &machine.EtcdLeaveClusterRequest{}); err != nil {
		t.Fatalf("leave: %v", err)
	}

	h.waitMembers(h.cps[0], "cp1", "cp2")

	// Its etcd service stays stopped until it boots again, as Talos' does: it never rejoins by
	// itself (the machine is about to be reset or deleted).
	time.Sleep(5 * testTimings.EtcdJoin)

	if got := len(h.members(h.cps[0])); got != 2 {
		t.Fatalf("after etcd leave: %d members, want cp3 to stay out", got)
	}

	h.wipeEphemeral(h.cps[2])
	h.waitMembers(h.cps[0], "cp1", "cp2", "cp3")

	// cp3 goes down: etcd keeps quorum, but an upgrade of cp2 through the legacy API is refused
	// (Talos checks every member is healthy first).
	h.node(h.cps[2]).SetFaults(emulator.Faults{Down: true})

	_, err = h.client(h.cps[:1]).UpgradeWithOptions(client.WithNodes(ctx, h.cps[1]), client.WithUpgradeImage("ghcr.io/siderolabs/installer:v1.13.9"))
	if err == nil || !strings.Contains(err.Error(), "etcd member cp3 is not healthy") {
		t.Fatalf("upgrade with a member down: want refusal, got %v", err)
	}

	// Its member is removed through another control plane.
	var cp3ID uint64

	for _, m := range h.members(h.cps[0]) {
		if m.GetHostname() == "cp3" {
			cp3ID = m.GetId()
		}
	}

	if err = h.client(h.cps[:1]).EtcdRemoveMemberByID(client.WithNodes(ctx, h.cps[0]), &machine.EtcdRemoveMemberByIDRequest{MemberId: cp3ID}); err != nil {
		t.Fatalf("remove member: %v", err)
	}

	h.waitMembers(h.cps[0], "cp1", "cp2")

	// Back up, its stale data keeps it out until EPHEMERAL is wiped.
	h.node(h.cps[2]).SetFaults(emulator.Faults{})
	h.waitPhase(h.cps[2], emulator.PhaseRunning)
	h.wipeEphemeral(h.cps[2])
	h.waitMembers(h.cps[0], "cp1", "cp2", "cp3")

	// Two members down: no quorum; the remaining one reports etcd unhealthy, snapshots fail.
	h.node(h.cps[1]).SetFaults(emulator.Faults{Down: true})
	h.node(h.cps[2]).SetFaults(emulator.Faults{Down: true})

	h.waitFor("etcd on cp1 unhealthy", func() error {
		services, err := h.client(h.cps[:1]).ServiceInfo(client.WithNodes(ctx, h.cps[0]), "etcd")
		if err != nil {
			return err
		}

		if services[0].Service.GetHealth().GetHealthy() {
			return errorf("etcd still healthy")
		}

		return nil
	})

	if _, err = h.snapshot(h.cps[0]); err == nil || !strings.Contains(err.Error(), "no quorum") {
		t.Fatalf("snapshot without quorum: %v", err)
	}

	h.node(h.cps[1]).SetFaults(emulator.Faults{})
	h.node(h.cps[2]).SetFaults(emulator.Faults{})
	h.waitPhase(h.cps[1], emulator.PhaseRunning)
	h.waitPhase(h.cps[2], emulator.PhaseRunning)

	// Disaster recovery: every control plane loses EPHEMERAL; etcd waits for a bootstrap; the
	// snapshot restores it and the others join.
	h.wipeEphemeral(h.cps...)

	services, err := h.client(h.cps[:1]).ServiceInfo(client.WithNodes(ctx, h.cps[0]), "etcd")
	if err != nil || services[0].Service.GetState() != "Preparing" {
		t.Fatalf("etcd after wiping every control plane: %v, %v; want Preparing", services, err)
	}

	c := h.client(h.cps[:1])

	if _, err = c.EtcdRecover(client.WithNode(ctx, h.cps[0]), bytes.NewReader(data)); err != nil {
		t.Fatalf("upload snapshot: %v", err)
	}

	if err = c.Bootstrap(client.WithNode(ctx, h.cps[0]), &machine.BootstrapRequest{RecoverEtcd: true}); err != nil {
		t.Fatalf("bootstrap --recover-from: %v", err)
	}

	h.waitMembers(h.cps[0], "cp1", "cp2", "cp3")

	restored, err := h.snapshot(h.cps[0])
	if err != nil {
		t.Fatal(err)
	}

	if err = os.WriteFile(file, restored, 0o600); err != nil {
		t.Fatal(err)
	}

	after, err := snapshot.NewV3(zap.NewNop()).Status(file)
	if err != nil || after.Revision <= st.Revision || after.TotalKey < st.TotalKey {
		t.Fatalf("restored etcd %+v (%v); want the snapshot's %+v and more", after, err, st)
	}

	// A corrupted snapshot is refused unless the hash check is skipped.
	h.wipeEphemeral(h.cps...)

	corrupted := bytes.Clone(data)
	corrupted[len(corrupted)-1] ^= 0xff

	if _, err = c.EtcdRecover(client.WithNode(ctx, h.cps[0]), bytes.NewReader(corrupted)); err != nil {
		t.Fatal(err)
	}

	if err = c.Bootstrap(client.WithNode(ctx, h.cps[0]), &machine.BootstrapRequest{RecoverEtcd: true}); err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Fatalf("recover from a corrupted snapshot: %v", err)
	}

	if err = c.Bootstrap(client.WithNode(ctx, h.cps[0]), &machine.BootstrapRequest{RecoverEtcd: true, RecoverSkipHashCheck: true}); err != nil {
		t.Fatalf("recover skipping the hash check: %v", err)
	}
}
