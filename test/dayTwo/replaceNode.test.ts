import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { fakeKubectl } from "./fakeKubectl";
import { dayTwoFixture as baseFixture } from "./helpers";

/** The day-two fixture with a kubectl that keeps the cordons, logging into the fake cluster's log. */
function dayTwoFixture(options: Parameters<typeof baseFixture>[0] = {}) {
  const f = baseFixture(options);
  const kubectl = fakeKubectl(f.talos.log);
  Object.assign(f.ctx, { dayTwo: { ...f.ctx.dayTwo, kubectl: kubectl.run } });
  return { ...f, kubectl };
}

describe("replace-node", () => {
  afterEach(cleanupRepos);

  it("removes a dead control plane's etcd member through another control plane, then says how up replaces it", async () => {
    const f = dayTwoFixture();
    f.talos.byName("cp-2").up = false;
    const id = f.talos.members[1].id;
    assert.equal(
      await runCli(["replace-node", "staging", "cp-2"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.deepEqual(f.talos.callsOf("etcd remove-member"), [`etcd remove-member ${id} via cp-1`]);
    // Neither drained (nothing answers to evict its pods) nor asked to hand leadership over.
    assert.deepEqual(f.kubectl.calls, []);
    assert.deepEqual(f.talos.callsOf("etcd forfeit-leadership"), []);
    assert.deepEqual(
      f.talos.members.map((m) => m.hostname),
      ["cp-1", "cp-3"],
    );
    assert.match(
      f.questions[0],
      new RegExp(
        `Remove cp-2 from etcd: cp-1 removes it \\(talosctl -n 192\\.0\\.2\\.11 etcd remove-member ${id}\\)\\?`,
      ),
    );
    assert.match(f.ctx.stdout.text, /1\. kubectl delete node cp-2/);
    assert.match(
      f.ctx.stdout.text,
      /Edit Pulumi\.staging\.yaml for the replacement .*lost-proxmox-host\.md/,
    );
    assert.match(
      f.ctx.stdout.text,
      /npm run platform -- up staging {3}\(recreates the machine and pushes its config; it joins etcd by itself\)/,
    );
  });

  it("drains a control plane that still answers, then it hands etcd's leadership over and leaves: in that order", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["replace-node", "staging", "cp-3"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.deepEqual(
      f.talos.log.filter((l) => /^(cordon|drain|uncordon|etcd) /.test(l)),
      ["cordon cp-3", "drain cp-3", "etcd forfeit-leadership cp-3", "etcd leave cp-3"],
    );
    assert.deepEqual(f.questions, [
      "Drain cp-3 (kubectl drain: its pods move to other nodes), then remove it from etcd: it hands leadership over and leaves etcd itself (talosctl -n 192.0.2.13 etcd forfeit-leadership; etcd leave)?",
    ]);
    // Drained with the drain's own time-out, and left cordoned: the node is going away.
    const drain = f.kubectl.calls.find((c) => c.args[0] === "drain")!;
    assert.ok(drain.args.includes("--timeout=300s"));
    assert.deepEqual([...f.kubectl.cordoned], ["cp-3"]);
    assert.deepEqual(
      f.talos.members.map((m) => m.hostname),
      ["cp-1", "cp-2"],
    );
    assert.match(f.ctx.stdout.text, /etcd: cp-3 handed leadership over and left; 2 members remain/);
  });

  it("with --yes asks nothing; --drain-timeout is kubectl's", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["replace-node", "staging", "cp-3", "--yes", "--drain-timeout", "12m"], f.ctx),
      ExitCode.ok,
    );
    assert.deepEqual(f.talos.callsOf("etcd leave"), ["etcd leave cp-3"]);
    assert.deepEqual(f.talos.callsOf("etcd remove-member"), []);
    assert.deepEqual(f.questions, []);
    assert.ok(f.kubectl.calls.find((c) => c.args[0] === "drain")!.args.includes("--timeout=720s"));
    assert.match(
      f.ctx.stdout.text,
      /^ {2}drain cp-3 \(kubectl drain: its pods move to other nodes\), then remove it from etcd: .*etcd leave\): yes \(--yes\)$/m,
    );
  });

  it("drains a worker that still answers, after asking, and touches nothing in etcd", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(["replace-node", "staging", "w-2"], f.ctx), ExitCode.ok);
    assert.deepEqual(f.questions, ["Drain w-2 (kubectl drain: its pods move to other nodes)?"]);
    assert.deepEqual(
      f.talos.log.filter((l) => /^(cordon|drain|etcd|members)/.test(l)),
      ["cordon w-2", "drain w-2"],
    );
  });

  it("stops at a failed drain before etcd is touched (exit 1), the node left cordoned", async () => {
    const f = dayTwoFixture();
    f.kubectl.drainFails.add("cp-3");
    assert.equal(
      await runCli(["replace-node", "staging", "cp-3", "--yes"], f.ctx),
      ExitCode.failed,
    );
    assert.match(
      f.ctx.stderr.text,
      /replace-node staging cp-3: the drain failed; cp-3 stays cordoned and nothing else was changed; got .*global timeout reached.*kubectl get pdb -A.*to undo: kubectl uncordon cp-3/,
    );
    assert.deepEqual(
      [...f.talos.callsOf("etcd forfeit-leadership"), ...f.talos.callsOf("etcd leave")],
      [],
    );
    assert.equal(f.talos.members.length, 3);
  });

  it("refuses (exit 5) before asking or touching anything when kubectl is missing; --no-drain needs none", async () => {
    const f = dayTwoFixture();
    f.kubectl.missing = true;
    assert.equal(await runCli(["replace-node", "staging", "cp-3"], f.ctx), ExitCode.missingCli);
    assert.match(
      f.ctx.stderr.text,
      /kubectl: could not be started \(not found\); it drains the node before it is removed; nothing was changed; .*--no-drain/,
    );
    assert.deepEqual(f.questions, []);
    assert.deepEqual(f.talos.callsOf("etcd leave"), []);
    const g = dayTwoFixture();
    g.kubectl.missing = true;
    assert.equal(
      await runCli(["replace-node", "staging", "cp-3", "--no-drain", "--yes"], g.ctx),
      ExitCode.ok,
      g.ctx.stderr.text,
    );
    assert.deepEqual(g.kubectl.calls, []);
    assert.deepEqual(
      g.talos.log.filter((l) => l.startsWith("etcd ")),
      ["etcd forfeit-leadership cp-3", "etcd leave cp-3"],
    );
    assert.match(g.ctx.stdout.text, /--no-drain: its pods are not moved off it first/);
  });

  it("does not drain a node whose Kubernetes node is not Ready, and still takes it out of etcd", async () => {
    const f = dayTwoFixture();
    f.kubectl.notReady.add("cp-3");
    assert.equal(await runCli(["replace-node", "staging", "cp-3", "--yes"], f.ctx), ExitCode.ok);
    assert.deepEqual(
      f.talos.log.filter((l) => /^(ready|cordon|drain|etcd) /.test(l)),
      ["ready cp-3", "etcd forfeit-leadership cp-3", "etcd leave cp-3"],
    );
    assert.match(f.ctx.stdout.text, /cp-3 is not Ready, so it is not drained/);
  });

  it("stops (exit 1) without leaving etcd when the leadership hand-over fails", async () => {
    const f = dayTwoFixture();
    f.talos.etcdForfeitLeadership = async () => {
      throw new Error("etcdserver: request timed out");
    };
    assert.equal(
      await runCli(["replace-node", "staging", "cp-3", "--yes"], f.ctx),
      ExitCode.failed,
    );
    assert.match(
      f.ctx.stderr.text,
      /handing etcd's leadership over failed, so it did not leave; got "etcdserver: request timed out"/,
    );
    assert.deepEqual(f.talos.callsOf("etcd leave"), []);
    assert.equal(f.talos.members.length, 3);
  });

  it("runs talosctl etcd forfeit-leadership, then etcd leave (through the real client and its recordings)", async () => {
    const f = dayTwoFixture({ talosctl: true });
    assert.equal(
      await runCli(["replace-node", "staging", "cp-3", "--yes"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    const etcd = f.talosctlCalls
      .filter((c) => c.args[0] === "etcd" && c.args[1] !== "members")
      .map((c) => [...c.args.slice(0, 2), c.args[c.args.indexOf("--nodes") + 1]]);
    assert.deepEqual(etcd, [
      ["etcd", "forfeit-leadership", "192.0.2.13"],
      ["etcd", "leave", "192.0.2.13"],
    ]);
  });

  it("refuses when the remaining members would not hold quorum, touching nothing", async () => {
    const f = dayTwoFixture();
    f.talos.byName("cp-2").up = false;
    f.talos.byName("cp-3").etcd = { state: "Running", health: "Fail" };
    assert.equal(
      await runCli(["replace-node", "staging", "cp-2", "--yes"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /replace-node staging cp-2: removing it would leave 1 healthy etcd member of 3; quorum needs 2; got cp-1 Running\/OK, cp-3 Running\/Fail\. .*etcd-restore\.md/,
    );
    assert.equal(f.talos.members.length, 3);
    assert.deepEqual(
      [...f.talos.callsOf("etcd leave"), ...f.talos.callsOf("etcd remove-member")],
      [],
    );
  });

  it("refuses the only control plane", async () => {
    const f = dayTwoFixture({
      nodes: [
        { name: "cp-1", address: "192.0.2.11", role: "controlplane" },
        { name: "w-1", address: "192.0.2.21", role: "worker" },
      ],
    });
    assert.equal(
      await runCli(["replace-node", "staging", "cp-1", "--yes"], f.ctx),
      ExitCode.refused,
    );
    assert.match(f.ctx.stderr.text, /it is the only control plane/);
  });

  it("stops at a no", async () => {
    const f = dayTwoFixture();
    f.talos.byName("cp-2").up = false;
    f.answers.push(false);
    assert.equal(await runCli(["replace-node", "staging", "cp-2"], f.ctx), ExitCode.refused);
    assert.equal(f.talos.members.length, 3);
  });

  it("for a worker touches nothing in etcd and lists the steps", async () => {
    const f = dayTwoFixture();
    f.talos.byName("w-2").up = false;
    assert.equal(await runCli(["replace-node", "staging", "w-2"], f.ctx), ExitCode.ok);
    assert.deepEqual(
      f.talos.log.filter((l) => l.startsWith("etcd") || l.startsWith("members")),
      [],
    );
    assert.match(f.ctx.stdout.text, /kubectl delete node w-2/);
  });

  it("skips the removal of a member that is already gone", async () => {
    const f = dayTwoFixture();
    f.talos.byName("cp-2").up = false;
    f.talos.members = f.talos.members.filter((m) => m.hostname !== "cp-2");
    assert.equal(await runCli(["replace-node", "staging", "cp-2", "--yes"], f.ctx), ExitCode.ok);
    assert.match(f.ctx.stdout.text, /cp-2 is not a member \(already removed\); nothing to remove/);
  });

  it("refuses an unknown node, listing the known ones", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(["replace-node", "staging", "cp-9"], f.ctx), ExitCode.usage);
    assert.match(
      f.ctx.stderr.text,
      /^replace-node: no node of that name in Pulumi\.staging\.yaml; got "cp-9"\. Use one of: cp-1, cp-2, cp-3, w-1, w-2, w-3 /,
    );
    // Checked before the lock is taken or the Pulumi CLI is looked for.
    assert.deepEqual(f.ctx.workspaces.calls, []);
    assert.equal(fs.existsSync(path.join(f.ctx.repoRoot, ".pulumi-state", "locks")), false);
  });
});
