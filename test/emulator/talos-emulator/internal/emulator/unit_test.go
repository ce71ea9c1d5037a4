package emulator

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

func TestSnapshotRoundTrip(t *testing.T) {
	store := newEtcdStore()
	store.put("/a", "1")
	store.put("/b", "2")
	store.put("/a", "3")

	data, err := encodeSnapshot(store)
	if err != nil {
		t.Fatal(err)
	}

	if len(data)%512 != sha256.Size {
		t.Fatalf("size %d: no SHA-256 trailer", len(data))
	}

	back, err := decodeSnapshot(data, false)
	if err != nil {
		t.Fatal(err)
	}

	if back.revision != 3 || back.keys["/a"] != "3" || back.keys["/b"] != "2" || len(back.keys) != 2 {
		t.Fatalf("decoded %+v", back)
	}

	data[len(data)-1] ^= 1

	if _, err = decodeSnapshot(data, false); err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Fatalf("corrupted trailer: %v", err)
	}

	if _, err = decodeSnapshot(data, true); err != nil {
		t.Fatalf("skip hash check: %v", err)
	}

	if _, err = decodeSnapshot(data[:len(data)-sha256.Size], false); err == nil || !strings.Contains(err.Error(), "missing hash") {
		t.Fatalf("no trailer: %v", err)
	}
}

func TestImageVersion(t *testing.T) {
	for image, want := range map[string]string{
		"factory.talos.dev/installer/376567988ad3:v1.13.9":       "v1.13.9",
		"ghcr.io/siderolabs/installer:1.14.0-alpha.1":            "v1.14.0-alpha.1",
		"registry.local:5000/talos/installer:v1.12.6@sha256:abc": "v1.12.6",
	} {
		if got, err := imageVersion(image); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", image, got, err, want)
		}
	}

	for _, image := range []string{"", "registry.local:5000/talos/installer", "ghcr.io/siderolabs/installer:latest"} {
		if _, err := imageVersion(image); err == nil {
			t.Errorf("%q: want an error", image)
		}
	}
}

func TestEventLogWatch(t *testing.T) {
	log := newEventLog()
	log.publish("a", &machine.TaskEvent{Task: "one"})
	log.publish("b", &machine.TaskEvent{Task: "two"})

	backlog, _, cancel := log.watch(watchOptions{tailEvents: -1})
	cancel()

	if len(backlog) != 2 {
		t.Fatalf("tail -1: %d events", len(backlog))
	}

	backlog, _, cancel = log.watch(watchOptions{tailEvents: -1, actorID: "b"})
	cancel()

	if len(backlog) != 1 || backlog[0].actorID != "b" {
		t.Fatalf("actor filter: %+v", backlog)
	}

	backlog, _, cancel = log.watch(watchOptions{tailID: backlog[0].id.String()})
	cancel()

	if len(backlog) != 0 {
		t.Fatalf("tail id of the last event: %d events", len(backlog))
	}

	_, ch, cancel := log.watch(watchOptions{})
	defer cancel()

	log.publish("", &machine.TaskEvent{Task: "three"})

	if got := <-ch; got.payload.(*machine.TaskEvent).GetTask() != "three" {
		t.Fatalf("live event %v", got)
	}

	log.close()

	if _, open := <-ch; open {
		t.Fatal("watch still open after the log closed (a reboot must end the stream)")
	}

	event, err := backlogEvent(log)
	if err != nil || event.GetData().GetTypeUrl() != "talos/runtime/machine.TaskEvent" {
		t.Fatalf("event encoding: %v, %v", event, err)
	}
}

func backlogEvent(log *eventLog) (*machine.Event, error) {
	backlog, _, cancel := log.watch(watchOptions{tailEvents: 1})
	cancel()

	return backlog[0].toProto()
}

func TestServiceTableReadiness(t *testing.T) {
	table := newServiceTable()

	for _, id := range expectedServices(false) {
		table.set(id, stateRunning, "ok", boolPtr(true))
	}

	if ready, unmet := table.allHealthy(expectedServices(true)); ready || strings.Join(unmet, ",") != "etcd,trustd" {
		t.Fatalf("control plane without etcd and trustd: ready %v, unmet %v", ready, unmet)
	}

	table.set("etcd", statePreparing, "Running pre state", nil)
	table.set("trustd", stateRunning, "ok", boolPtr(true))

	if ready, unmet := table.allHealthy(expectedServices(true)); ready || strings.Join(unmet, ",") != "etcd" {
		t.Fatalf("etcd preparing: ready %v, unmet %v", ready, unmet)
	}

	table.set("etcd", stateRunning, "ok", boolPtr(true))

	if ready, _ := table.allHealthy(expectedServices(true)); !ready {
		t.Fatal("all services healthy but not ready")
	}

	if svc, _ := table.get("etcd"); len(svc.events) != 2 || svc.toProto().GetHealth().GetHealthy() != true {
		t.Fatalf("etcd service %+v", svc.toProto())
	}
}
