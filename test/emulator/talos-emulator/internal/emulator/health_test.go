package emulator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

// serverHealth runs the server-side health check (talosctl health) and returns its messages.
func serverHealth(t *testing.T, h *harness, timeout time.Duration) ([]string, error) {
	t.Helper()

	stream, err := h.client(h.cps[:1]).ClusterHealthCheck(client.WithNodes(context.Background(), h.cps[0]), timeout, &clusterapi.ClusterInfo{
		ControlPlaneNodes: h.cps,
		WorkerNodes:       h.workers,
	})
	if err != nil {
		return nil, err
	}

	var messages []string

	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return messages, nil
		}

		if err != nil {
			return messages, err
		}

		if msg.GetMetadata().GetError() != "" {
			return messages, errorf("%s", msg.GetMetadata().GetError())
		}

		messages = append(messages, msg.GetMessage())
	}
}

// TestServerSideHealth: the health check talosctl runs by default passes on a healthy cluster and
// fails, naming the problem, when a node is unhealthy or down.
func TestServerSideHealth(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 16, 3, 2, "v1.13.0")
	h.applyAll()
	h.bootstrap()

	messages, err := serverHealth(t, h, waitTimeout)
	if err != nil {
		t.Fatalf("health: %v\n%s", err, strings.Join(messages, "\n"))
	}

	if messages[0] != `discovered nodes: ["127.77.16.11" "127.77.16.12" "127.77.16.13" "127.77.16.21" "127.77.16.22"]` ||
		messages[len(messages)-1] != "waiting for all k8s nodes to report schedulable: OK" {
		t.Fatalf("health messages: %q", messages)
	}

	// Unhealthy worker: a diagnostic and a NotReady Kubernetes node.
	h.node(h.workers[0]).SetFaults(emulator.Faults{Unhealthy: true})

	messages, err = serverHealth(t, h, 2*time.Second)
	if err == nil || !strings.Contains(strings.Join(messages, "\n"), "emulated fault: node unhealthy") {
		t.Fatalf("health with an unhealthy worker: %v\n%s", err, strings.Join(messages, "\n"))
	}

	h.node(h.workers[0]).SetFaults(emulator.Faults{})

	// A worker down: apid does not answer for it.
	h.node(h.workers[1]).SetFaults(emulator.Faults{Down: true})

	messages, err = serverHealth(t, h, 2*time.Second)
	if err == nil || !strings.Contains(strings.Join(messages, "\n"), "127.77.16.22") {
		t.Fatalf("health with a worker down: %v\n%s", err, strings.Join(messages, "\n"))
	}

	h.node(h.workers[1]).SetFaults(emulator.Faults{})
	h.waitPhase(h.workers[1], emulator.PhaseRunning)

	if messages, err = serverHealth(t, h, waitTimeout); err != nil {
		t.Fatalf("health after clearing the faults: %v\n%s", err, strings.Join(messages, "\n"))
	}
}

// TestControlAPI: faults, a config changed behind the program's back, the status.
func TestControlAPI(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 17, 1, 0, "v1.13.0")
	h.applyAll()

	stopped := make(chan struct{})
	server := httptest.NewServer(h.emu.ControlHandler(func() { close(stopped) }))

	defer server.Close()

	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequestWithContext(context.Background(), method, server.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}

		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}

		defer resp.Body.Close() //nolint:errcheck

		data, _ := io.ReadAll(resp.Body) //nolint:errcheck

		return resp.StatusCode, string(data)
	}

	code, body := do(http.MethodGet, "/nodes", "")

	var statuses []emulator.Status
	if err := json.Unmarshal([]byte(body), &statuses); code != http.StatusOK || err != nil || len(statuses) != 1 || statuses[0].Hostname != "cp1" {
		t.Fatalf("GET /nodes: %d %s", code, body)
	}

	// Drift: the kubelet image changed on the node; the node reports it.
	code, body = do(http.MethodPatch, "/nodes/cp1/config", "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.0\n")
	if code != http.StatusOK {
		t.Fatalf("PATCH config: %d %s", code, body)
	}

	h.waitFor("kubelet spec drifted", func() error {
		spec, err := safe.StateGetByID[*k8s.KubeletSpec](client.WithNode(context.Background(), h.cps[0]), h.client(h.cps).COSI, k8s.KubeletID)
		if err != nil {
			return err
		}

		if spec.TypedSpec().Image != "ghcr.io/siderolabs/kubelet:v1.35.0" {
			return errorf("image %s", spec.TypedSpec().Image)
		}

		return nil
	})

	if code, body = do(http.MethodPut, "/nodes/cp1/faults", `{"down":true}`); code != http.StatusOK {
		t.Fatalf("PUT faults: %d %s", code, body)
	}

	h.waitPhase(h.cps[0], emulator.PhaseOff)

	if code, _ = do(http.MethodPut, "/nodes/cp1/faults", `{"dwon":true}`); code != http.StatusBadRequest {
		t.Fatalf("a misspelled fault: %d, want 400", code)
	}

	if code, _ = do(http.MethodPut, "/nodes/cp1/faults", `{}`); code != http.StatusOK {
		t.Fatalf("clear faults: %d", code)
	}

	h.waitPhase(h.cps[0], emulator.PhaseRunning)

	if code, _ = do(http.MethodGet, "/nodes/nope", ""); code != http.StatusNotFound {
		t.Fatalf("unknown node: %d", code)
	}

	if code, _ = do(http.MethodPost, "/shutdown", ""); code != http.StatusAccepted {
		t.Fatalf("shutdown: %d", code)
	}

	select {
	case <-stopped:
	case <-time.After(waitTimeout):
		t.Fatal("shutdown did not call stop")
	}
}
