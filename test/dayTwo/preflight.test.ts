import { strict as assert } from "node:assert";
import { runCli } from "../../automation/cli";
import { assertPreflight } from "../../automation/dayTwo/preflight/report";
import { preflightForUp } from "../../automation/dayTwo/preflight/up";
import { ExitCode, UserError } from "../../automation/errors";
import type { StackFile } from "../../automation/layers";
import { cleanupRepos } from "../automation/helpers";
import { dayTwoFixture, foundationOutputs } from "./helpers";

function stackFile(talos: unknown, kubernetes: unknown): StackFile {
  return {
    path: "/repo/Pulumi.staging.yaml",
    config: {
      "talos-platform:cluster": {
        name: "staging",
        talosVersion: talos,
        kubernetesVersion: kubernetes,
      },
    },
  };
}

describe("preflight <env>", () => {
  afterEach(cleanupRepos);

  it("passes on a healthy cluster that runs what the stack says", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(["preflight", "staging"], f.ctx), ExitCode.ok, f.ctx.stdout.text);
    assert.match(
      f.ctx.stdout.text,
      /^preflight foundation\/staging: Talos v1\.13\.9, Kubernetes 1\.36\.3$/m,
    );
    for (const id of [
      "talos-path",
      "kubernetes-path",
      "kubernetes-supported",
      "talosctl",
      "nodes-healthy",
      "etcd-quorum",
      "etcd-members",
    ]) {
      assert.match(f.ctx.stdout.text, new RegExp(`^ {2}ok {4}${id} `, "m"), id);
    }
    assert.match(
      f.ctx.stdout.text,
      /etcd-quorum +3 of 3 members healthy; quorum 2, tolerates 1 down/,
    );
    assert.deepEqual(
      f.talos.log.filter((l) => /^(upgrade|snapshot|wipe|etcd )/.test(l)),
      [],
      "changes nothing",
    );
  });

  it("reports every failing check at once (exit 3)", async () => {
    const f = dayTwoFixture();
    f.talos.client = "v1.11.2";
    f.talos.byName("cp-3").etcd = { state: "Running", health: "Fail" };
    f.talos.members.push({
      id: "8a1b2c3d4e5f6099",
      hostname: "old-cp",
      peerUrls: [],
      learner: false,
    });
    const code = await runCli(
      ["preflight", "staging", "--talos", "v1.14.1", "--kubernetes", "1.38.0"],
      f.ctx,
    );
    assert.equal(code, ExitCode.refused);
    const out = f.ctx.stdout.text;
    assert.match(
      out,
      /FAIL {2}kubernetes-path +Kubernetes upgrade path: Kubernetes moves one minor version at a time; got 1\.36\.3 → 1\.38\.0/,
    );
    assert.match(
      out,
      /FAIL {2}kubernetes-supported +Kubernetes support: Talos 1\.14 supports Kubernetes 1\.32 to 1\.37 only; got 1\.38\.0/,
    );
    assert.match(
      out,
      /FAIL {2}talosctl +talosctl: its minor must be within one of the cluster's \(Talos v1\.13\); got v1\.11\.2/,
    );
    assert.match(
      out,
      /FAIL {2}etcd-quorum +etcd quorum: only 2 of 4 members are healthy; quorum needs 3; got cp-1 Running\/OK, cp-2 Running\/OK, cp-3 Running\/Fail/,
    );
    assert.match(
      out,
      /FAIL {2}etcd-members +etcd members: the members are not the control planes; got extra old-cp \[8a1b2c3d4e5f6099\]/,
    );
    assert.match(out, /^ok {4}|^ {2}ok {4}talos-path/m);
    assert.match(out, /preflight failed: 5 checks failed; nothing was changed/);
  });

  it("fails the quorum check when one more member down would lose quorum", async () => {
    const f = dayTwoFixture();
    f.talos.byName("cp-2").etcd = { state: "Running", health: "Fail" };
    assert.equal(await runCli(["preflight", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stdout.text,
      /etcd quorum: 2 of 3 members are healthy; taking one down for a change would lose quorum \(2 needed\)/,
    );
  });

  it("says to install talosctl when it is missing and skips what needs it", async () => {
    const f = dayTwoFixture();
    f.talos.client = new UserError(
      {
        what: "talosctl",
        problem: "could not be started (not found)",
        got: '"talosctl"',
        fix: "Install talosctl v1.13 (the cluster runs Talos v1.13.9): https://…",
      },
      ExitCode.missingCli,
    );
    assert.equal(await runCli(["preflight", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stdout.text,
      /FAIL {2}talosctl +talosctl: could not be started \(not found\); got "talosctl"\. Install talosctl v1\.13/,
    );
    assert.match(f.ctx.stdout.text, /skip {2}nodes-healthy +not checked: talosctl is missing/);
    assert.match(f.ctx.stdout.text, /skip {2}etcd-quorum +not checked: talosctl is missing/);
  });

  it("uses the stack file's versions as the target: a pending Talos minor is checked from what the nodes run", async () => {
    const f = dayTwoFixture();
    for (const node of f.talos.nodes) node.version = "v1.12.4";
    assert.equal(await runCli(["preflight", "staging"], f.ctx), ExitCode.ok);
    assert.match(f.ctx.stdout.text, /talos-path +v1\.12\.4 → v1\.13\.9/);
  });
});

describe("preflightForUp: the config part `up` runs first", () => {
  it("passes when the stack file moves one Talos minor and one Kubernetes minor (up converges them)", () => {
    const deployed = foundationOutputs(undefined, { talos: "v1.13.9", kubernetes: "1.36.3" });
    const result = preflightForUp(stackFile("v1.14.1", "1.37.0"), deployed);
    assert.equal(result.ok, true);
    assert.deepEqual(result.notes, []);
  });

  it("refuses, listing every problem at once: two Talos minors, a Kubernetes downgrade, an unsupported pair", () => {
    const deployed = foundationOutputs(undefined, { talos: "v1.12.4", kubernetes: "1.35.1" });
    const result = preflightForUp(stackFile("v1.14.1", "1.31.0"), deployed);
    assert.equal(result.ok, false);
    assert.deepEqual(
      result.checks.filter((c) => c.status === "failed").map((c) => c.id),
      ["talos-path", "kubernetes-path", "kubernetes-supported"],
    );
    assert.throws(
      () => assertPreflight("foundation/staging", result),
      (error: UserError) => {
        assert.equal(error.exitCode, ExitCode.refused);
        assert.match(
          error.message,
          /^preflight foundation\/staging: 3 checks failed; nothing was changed; got:\n {2}- Talos upgrade path: /,
        );
        assert.match(
          error.message,
          /\n {2}- Kubernetes upgrade path: Kubernetes is never downgraded; got 1\.35\.1 → 1\.31\.0/,
        );
        return true;
      },
    );
  });

  it("on a first up (no outputs) checks only that the stack's Talos supports its Kubernetes", () => {
    assert.equal(preflightForUp(stackFile("v1.13.9", "1.36.3"), undefined).ok, true);
    const bad = preflightForUp(stackFile("v1.13.9", "1.37.0"), {});
    assert.equal(bad.ok, false);
    assert.deepEqual(
      bad.checks.map((c) => c.id),
      ["kubernetes-supported"],
    );
  });

  it("reads a numeric-looking version as written and skips a stack file without versions", () => {
    assert.equal(
      preflightForUp(stackFile("v1.13.9", undefined), undefined).checks[0].status,
      "skipped",
    );
  });
});
