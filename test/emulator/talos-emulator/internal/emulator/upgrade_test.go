package emulator_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"

	"talos-platform/test/emulator/talos-emulator/internal/emulator"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// lifecycleUpgrade runs LifecycleService.Upgrade (talosctl 1.13's path) and returns the exit code.
func lifecycleUpgrade(t *testing.T, h *harness, addr, image string) (int32, []string) {
	t.Helper()

	stream, err := h.client(h.cps[:1]).LifecycleClient.Upgrade(client.WithNode(context.Background(), addr), &machine.LifecycleServiceUpgradeRequest{
		Source: &machine.InstallArtifactsSource{ImageName: image},
	})
	if err != nil {
		t.Fatal(err)
	}

	var messages []string

	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			t.Fatalf("upgrade of %s ended without an exit code: %v", addr, messages)
		}

		if err != nil {
			t.Fatalf("upgrade of %s: %v", addr, err)
		}

		switch progress := resp.GetProgress().GetResponse().(type) {
		case *machine.LifecycleServiceInstallProgress_Message:
			messages = append(messages, progress.Message)
		case *machine.LifecycleServiceInstallProgress_ExitCode:
			return progress.ExitCode, messages
		}
	}
}

func (h *harness) rebootAndWait(addr string) {
	h.t.Helper()

	n := h.node(addr)
	bootID := n.Status().BootID

	if err := h.client(h.cps[:1]).Reboot(client.WithNodes(context.Background(), addr)); err != nil {
		h.t.Fatalf("reboot %s: %v", addr, err)
	}

	h.waitFor(addr+" back after reboot", func() error {
		if st := n.Status(); st.BootID == bootID || st.Phase != emulator.PhaseRunning || len(st.Unmet) > 0 {
			return errorf("%s %s unmet %v", st.Phase, st.BootID, st.Unmet)
		}

		return nil
	})
}

func (h *harness) version(addr string) string {
	h.t.Helper()

	resp, err := h.client(h.cps[:1]).Version(client.WithNodes(context.Background(), addr))
	if err != nil {
		h.t.Fatalf("version of %s: %v", addr, err)
	}

	return resp.GetMessages()[0].GetVersion().GetTag()
}

// TestUpgrades: the legacy MachineService.Upgrade (what talosctl uses for nodes before 1.13) and
// the 1.13 LifecycleService with a separate reboot, each with the faults upgradeFails and
// upgradeRollback.
func TestUpgrades(t *testing.T) {
	t.Parallel()

	h := newHarness(t, 15, 3, 0, "v1.12.6")
	ctx := context.Background()

	h.applyAll()
	h.bootstrap()

	// Legacy: acknowledged with an actor ID, events follow, the node reboots into the image's tag.
	c := h.client(h.cps[:1])
	bootID := h.node(h.cps[0]).Status().BootID

	resp, err := c.UpgradeWithOptions(client.WithNodes(ctx, h.cps[0]), client.WithUpgradeImage("factory.talos.dev/installer/abc:v1.13.0"))
	if err != nil || resp.GetMessages()[0].GetActorId() == "" || resp.GetMessages()[0].GetAck() != "Upgrade request received" {
		t.Fatalf("legacy upgrade: %v, %v", resp, err)
	}

	h.waitFor("cp1 on v1.13.0", func() error {
		if st := h.node(h.cps[0]).Status(); st.Version != "v1.13.0" || st.BootID == bootID || st.Phase != emulator.PhaseRunning || len(st.Unmet) > 0 {
			return errorf("%+v", st)
		}

		return nil
	})

	// Legacy with upgradeFails: acknowledged, then the upgrade sequence reports the error; no reboot.
	h.node(h.cps[1]).SetFaults(emulator.Faults{UpgradeFails: true})
	bootID = h.node(h.cps[1]).Status().BootID

	events := make(chan client.EventResult, 64)
	eventsCtx, cancel := context.WithTimeout(ctx, waitTimeout)

	defer cancel()

	if err = c.EventsWatchV2(client.WithNode(eventsCtx, h.cps[1]), events); err != nil {
		t.Fatal(err)
	}

	resp, err = c.UpgradeWithOptions(client.WithNodes(ctx, h.cps[1]), client.WithUpgradeImage("factory.talos.dev/installer/abc:v1.13.0"))
	if err != nil {
		t.Fatalf("legacy upgrade (fault): %v", err)
	}

	actorID := resp.GetMessages()[0].GetActorId()

	for failed := false; !failed; {
		select {
		case <-eventsCtx.Done():
			t.Fatal("no failed upgrade sequence event")
		case ev := <-events:
			if ev.Error != nil {
				t.Fatal(ev.Error)
			}

			if seq, ok := ev.Event.Payload.(*machine.SequenceEvent); ok && ev.Event.ActorID == actorID && seq.GetError().GetMessage() != "" {
				if !strings.Contains(seq.GetError().GetMessage(), "emulated fault: installer failed") {
					t.Fatalf("sequence error %q", seq.GetError().GetMessage())
				}

				failed = true
			}
		}
	}

	time.Sleep(3 * testTimings.Shutdown)

	if st := h.node(h.cps[1]).Status(); st.Version != "v1.12.6" || st.BootID != bootID {
		t.Fatalf("after a failed upgrade: %+v; want v1.12.6, same boot", st)
	}

	// LifecycleService on cp1 (now 1.13): install, exit code 0, the version changes at the reboot.
	code, messages := lifecycleUpgrade(t, h, h.cps[0], "factory.talos.dev/installer/abc:v1.13.9")
	if code != 0 || h.version(h.cps[0]) != "v1.13.0" {
		t.Fatalf("lifecycle upgrade: exit %d (%v), version %s before the reboot", code, messages, h.version(h.cps[0]))
	}

	h.rebootAndWait(h.cps[0])

	if v := h.version(h.cps[0]); v != "v1.13.9" {
		t.Fatalf("after reboot: %s, want v1.13.9", v)
	}

	// upgradeFails: exit code 1 and the installer's message.
	code, messages = lifecycleUpgrade(t, h, h.cps[1], "factory.talos.dev/installer/abc:v1.13.9")
	if code != 1 || !strings.Contains(strings.Join(messages, "\n"), "emulated fault: installer failed") {
		t.Fatalf("lifecycle upgrade with upgradeFails: exit %d, %v", code, messages)
	}

	// upgradeRollback: the install succeeds, the node boots back into its old version.
	h.node(h.cps[2]).SetFaults(emulator.Faults{UpgradeRollback: true})

	if code, messages = lifecycleUpgrade(t, h, h.cps[2], "factory.talos.dev/installer/abc:v1.13.9"); code != 0 {
		t.Fatalf("lifecycle upgrade with upgradeRollback: exit %d, %v", code, messages)
	}

	h.rebootAndWait(h.cps[2])

	if v := h.version(h.cps[2]); v != "v1.12.6" {
		t.Fatalf("after a rolled back upgrade: %s, want v1.12.6", v)
	}

	// The emulator reads the version from the image tag: an image without one is refused.
	_, err = c.UpgradeWithOptions(client.WithNodes(ctx, h.cps[0]), client.WithUpgradeImage("factory.talos.dev/installer/abc@sha256:0123"))
	if err == nil || !strings.Contains(err.Error(), "has no tag") {
		t.Fatalf("upgrade to an untagged image: %v", err)
	}
}
