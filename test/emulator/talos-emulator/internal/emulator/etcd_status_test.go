package emulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/role"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

// statuses reads `etcd status` of every control plane in one call, as talosctl -n a,b,c does.
func (h *harness) statuses() map[string]*machine.EtcdMemberStatus {
	h.t.Helper()

	resp, err := h.client(h.cps[:1]).EtcdStatus(client.WithNodes(context.Background(), h.cps...))
	if err != nil {
		h.t.Fatalf("etcd status: %v", err)
	}

	out := map[string]*machine.EtcdMemberStatus{}
	for _, m := range resp.GetMessages() {
		out[m.GetMetadata().GetHostname()] = m.GetMemberStatus()
	}

	if len(out) != len(h.cps) {
		h.t.Fatalf("etcd status answered for %v", out)
	}

	return out
}

func (h *harness) clusterStatus() emulator.ClusterStatus {
	h.t.Helper()

	rec := httptest.NewRecorder()
	h.emu.ControlHandler(func() {}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/clusters", nil))

	var clusters []emulator.ClusterStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &clusters); err != nil || len(clusters) != 1 {
		h.t.Fatalf("GET /clusters: %v %s", err, rec.Body.String())
	}

	return clusters[0]
}

func memberID(id uint64) string { return fmt.Sprintf("%016x", id) }

// TestEtcdUpkeep covers what `talosctl etcd status`, `etcd alarm list`, `etcd defrag` and
// `etcd forfeit-leadership` see: one leader every member follows, database figures that grow with
// writes, a defragmentation that shrinks one member's file (and is recorded, in order), leadership
// handed over, and the NOSPACE alarm.
func TestEtcdUpkeep(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 21, 3, 0, "v1.13.0")
	ctx := context.Background()

	h.applyAll()
	h.bootstrap()

	st := h.statuses()
	leader := st[h.cps[0]].GetMemberId()

	for addr, s := range st {
		if s.GetLeader() != leader {
			t.Fatalf("%s follows %s, want the bootstrap node's member %s", addr, memberID(s.GetLeader()), memberID(leader))
		}

		if len(s.GetErrors()) != 0 || s.GetIsLearner() || s.GetProtocolVersion() != "3.6.9" || s.GetStorageVersion() != "3.6.0" {
			t.Fatalf("%s: %+v", addr, s)
		}

		if s.GetDbSizeInUse() <= 0 || s.GetDbSizeInUse() >= s.GetDbSize() || s.GetRaftIndex() == 0 || s.GetRaftTerm() == 0 {
			t.Fatalf("%s: figures %+v", addr, s)
		}
	}

	// No alarms: an empty list, as etcd answers.
	alarms, err := h.client(h.cps[:1]).EtcdAlarmList(client.WithNode(ctx, h.cps[1]))
	if err != nil || len(alarms.GetMessages()) != 1 || len(alarms.GetMessages()[0].GetMemberAlarms()) != 0 {
		t.Fatalf("alarm list: %v %v", alarms, err)
	}

	// A reader may look, not defragment (Talos' rules: admin and operator).
	if _, err = h.client(h.cps[:1], role.Reader).EtcdDefragment(client.WithNode(ctx, h.cps[1])); err == nil || !strings.Contains(err.Error(), "not authorized") {
		t.Fatalf("defragment as reader: %v", err)
	}

	// A defragmentation shrinks that member's file to the part in use, and only that member's.
	before := st[h.cps[1]]
	if _, err = h.client(h.cps[:1], role.Operator).EtcdDefragment(client.WithNode(ctx, h.cps[1])); err != nil {
		t.Fatalf("defragment: %v", err)
	}

	after := h.statuses()
	if got := after[h.cps[1]]; got.GetDbSize() >= before.GetDbSize() || got.GetDbSize() < got.GetDbSizeInUse() || got.GetDbSize()-got.GetDbSizeInUse() >= 4096 {
		t.Fatalf("after defrag: %+v, before %+v", got, before)
	}

	if after[h.cps[2]].GetDbSize() < st[h.cps[2]].GetDbSize() {
		t.Fatalf("cp3 shrank without a defrag: %+v", after[h.cps[2]])
	}

	cs := h.clusterStatus()
	if len(cs.Defragmentations) != 1 || cs.Defragmentations[0].Hostname != h.name(h.cps[1]) || cs.Defragmentations[0].DBSizeAfter != after[h.cps[1]].GetDbSize() {
		t.Fatalf("defragmentations: %+v", cs.Defragmentations)
	}

	for _, m := range cs.Members {
		if m.Leader != (m.ID == memberID(leader)) {
			t.Fatalf("control API leader: %+v", cs.Members)
		}
	}

	// Forfeit on a member that does not lead: nothing; on the leader: the next voting member leads.
	resp, err := h.client(h.cps[:1]).EtcdForfeitLeadership(client.WithNode(ctx, h.cps[2]), &machine.EtcdForfeitLeadershipRequest{})
	if err != nil || resp.GetMessages()[0].GetMember() != "" {
		t.Fatalf("forfeit on a follower: %v %v", resp, err)
	}

	resp, err = h.client(h.cps[:1]).EtcdForfeitLeadership(client.WithNode(ctx, h.cps[0]), &machine.EtcdForfeitLeadershipRequest{})
	if err != nil || resp.GetMessages()[0].GetMember() != h.name(h.cps[1]) {
		t.Fatalf("forfeit on the leader: %v %v", resp, err)
	}

	moved := h.statuses()
	for addr, s := range moved {
		if s.GetLeader() != moved[h.cps[1]].GetMemberId() || s.GetRaftTerm() <= st[addr].GetRaftTerm() {
			t.Fatalf("after forfeit %s: %+v", addr, s)
		}
	}

	// NOSPACE on cp3's member: listed by every member, and an error in every member's status.
	h.node(h.cps[2]).SetFaults(emulator.Faults{EtcdNoSpace: true})

	alarms, err = h.client(h.cps[:1]).EtcdAlarmList(client.WithNode(ctx, h.cps[0]))
	if err != nil {
		t.Fatal(err)
	}

	got := alarms.GetMessages()[0].GetMemberAlarms()
	if len(got) != 1 || got[0].GetMemberId() != moved[h.cps[2]].GetMemberId() || got[0].GetAlarm() != machine.EtcdMemberAlarm_NOSPACE {
		t.Fatalf("alarms: %v", got)
	}

	want := fmt.Sprintf("memberID:%d alarm:NOSPACE", moved[h.cps[2]].GetMemberId())
	for addr, s := range h.statuses() {
		if len(s.GetErrors()) != 1 || strings.TrimSpace(s.GetErrors()[0]) != want {
			t.Fatalf("%s errors %q, want %q", addr, s.GetErrors(), want)
		}
	}
}
