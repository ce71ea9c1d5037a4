import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { dayTwoFixture } from "./helpers";

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

  it("lets a control plane that still answers leave etcd itself", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(["replace-node", "staging", "cp-3", "--yes"], f.ctx), ExitCode.ok);
    assert.deepEqual(f.talos.callsOf("etcd leave"), ["etcd leave cp-3"]);
    assert.deepEqual(f.talos.callsOf("etcd remove-member"), []);
    assert.deepEqual(f.questions, []);
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
