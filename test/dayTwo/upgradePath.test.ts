import { strict as assert } from "node:assert";
import {
  kubernetesStep,
  kubernetesSupported,
  talosStep,
  talosctlCompatible,
  verdictMessage,
} from "../../automation/dayTwo/upgradePath";

describe("version rules (from components/talos/versions.ts)", () => {
  it("allows a patch and the next minor from a version the target line upgrades from", () => {
    assert.deepEqual(talosStep("v1.13.8", "v1.13.9"), {
      ok: true,
      change: "patch",
      summary: "v1.13.8 → v1.13.9",
    });
    assert.deepEqual(talosStep("v1.13.9", "v1.14.1"), {
      ok: true,
      change: "minor",
      summary: "v1.13.9 → v1.14.1",
    });
    assert.deepEqual(talosStep("1.13.9", "v1.13.9"), {
      ok: true,
      change: "none",
      summary: "v1.13.9 (no change)",
    });
  });

  it("refuses two minors at once, giving each step of the path", () => {
    assert.equal(
      verdictMessage(talosStep("v1.11.3", "v1.14.1", "prod")),
      "Talos upgrade path: Talos upgrades go through each minor in turn (the latest patch of each); got v1.11.3 → v1.14.1. Upgrade in steps, v1.11 → v1.12.x → v1.13.x → v1.14.1: first `npm run platform -- upgrade talos prod --to v1.12.<latest patch>`",
    );
  });

  it("refuses Talos downgrades and unknown release lines", () => {
    assert.match(
      verdictMessage(talosStep("v1.13.9", "v1.13.8")),
      /Talos is never moved down by this command; got v1\.13\.9 → v1\.13\.8/,
    );
    assert.match(
      verdictMessage(talosStep("v1.14.1", "v1.15.0")),
      /target Talos version: belongs to no release line this program knows \(1\.10 to 1\.14\); got v1\.15\.0/,
    );
    assert.match(
      verdictMessage(talosStep("v1.13", "v1.14.1")),
      /Talos version the nodes run: is not a version like v1\.13\.9; got "v1\.13"/,
    );
  });

  it("moves Kubernetes one minor at a time and never down", () => {
    assert.equal(kubernetesStep("1.35.6", "1.36.3").ok, true);
    assert.match(
      verdictMessage(kubernetesStep("1.34.1", "1.36.3")),
      /one minor version at a time; got 1\.34\.1 → 1\.36\.3\. Upgrade to 1\.35\.<latest patch> first/,
    );
    assert.match(
      verdictMessage(kubernetesStep("1.36.3", "1.36.2")),
      /never downgraded; got 1\.36\.3 → 1\.36\.2/,
    );
  });

  it("needs the Talos release to support both the current and the target Kubernetes", () => {
    assert.equal(kubernetesSupported("v1.13.9", ["1.31.0", "1.36.3"]).ok, true);
    assert.match(
      verdictMessage(kubernetesSupported("v1.13.9", ["1.36.3", "1.37.0"])),
      /Talos 1\.13 supports Kubernetes 1\.31 to 1\.36 only; got 1\.37\.0/,
    );
    assert.match(
      verdictMessage(kubernetesSupported("v1.14.1", ["1.31.4", "1.32.0"])),
      /Talos 1\.14 supports Kubernetes 1\.32 to 1\.37 only; got 1\.31\.4/,
    );
  });

  it("accepts talosctl within one minor of the cluster's Talos", () => {
    assert.equal(talosctlCompatible("v1.14.1", "v1.13.9").ok, true);
    assert.equal(talosctlCompatible("v1.12.0", "v1.13.9").ok, true);
    assert.match(
      verdictMessage(talosctlCompatible("v1.11.6", "v1.13.9")),
      /talosctl: its minor must be within one of the cluster's \(Talos v1\.13\); got v1\.11\.6\. Install talosctl v1\.13/,
    );
    assert.equal(talosctlCompatible("v1.14.0-beta.1", "v1.13.9").ok, true);
  });
});
