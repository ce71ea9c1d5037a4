// A new image schematic (extensions, kernel arguments) reaching a running cluster: the engine run
// registers it, `up` upgrades each node to it through the gated Talos roll, and a second engine run
// records the nodes' new installers; the preview says so beforehand.
import { strict as assert } from "node:assert";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { runCli } from "../../automation/cli";
import { planDisruption } from "../../automation/dayTwo/disruption";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { NODES, SCHEMATIC, dayTwoFixture, foundationOutputs } from "./helpers";

/** The schematic the stack file's new extension list makes. */
const NEW = "b".repeat(64);
const image = (schematic: string, version = "v1.13.9") =>
  `factory.talos.dev/nocloud-installer/${schematic}:${version}`;

/** A deployed fixture cluster whose engine run registers the new schematic for every node. */
function schematicFixture(options: { talosctl?: boolean } = {}) {
  const f = dayTwoFixture(options);
  (f.ctx.env as Record<string, string>).PROXMOX_VE_API_TOKEN =
    "root@pam!ci=00000000-0000-0000-0000-000000000000";
  const engineRuns: { converge: Record<string, unknown>; before: string[] }[] = [];
  f.ctx.workspaces.during = (operation, converge) => {
    if (operation !== "up") return;
    engineRuns.push({
      converge: (converge ?? {}) as Record<string, unknown>,
      before: [...f.talos.log],
    });
    const installers = (converge as { installers?: Record<string, string> } | undefined)
      ?.installers;
    f.ctx.workspaces.outputs = {
      ...foundationOutputs(),
      installerImages: {
        value: Object.fromEntries(
          NODES.map((n) => [n.name, installers?.[n.name] ?? image(SCHEMATIC)]),
        ),
        secret: false,
      },
      desiredInstallers: {
        value: Object.fromEntries(NODES.map((n) => [n.name, image(NEW)])),
        secret: false,
      },
    };
  };
  return { f, engineRuns };
}

describe("a new image schematic reaches a running cluster through up", () => {
  afterEach(cleanupRepos);

  it("upgrades each node to it after the engine run, control planes first, then records the new installers", async () => {
    const { f, engineRuns } = schematicFixture();
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(
      f.talos.callsOf("upgrade"),
      NODES.map((n) => `upgrade ${n.name} ${image(NEW)}`),
    );
    assert.equal(engineRuns.length, 2);
    assert.deepEqual(
      engineRuns[0].before.filter((l) => l.startsWith("upgrade ")),
      [],
      "not before the run that registers it",
    );
    assert.deepEqual(
      engineRuns[1].converge.installers,
      Object.fromEntries(NODES.map((n) => [n.name, image(NEW)])),
    );
    assert.ok(f.talos.nodes.every((n) => n.schematic === NEW && n.version === "v1.13.9"));
    assert.match(f.ctx.stdout.text, /a new image schematic for cp-1, cp-2, cp-3, w-1, w-2, w-3/);
  });

  it("skips a node that booted the new schematic already (a roll that stopped), and records it too", async () => {
    const { f, engineRuns } = schematicFixture();
    f.talos.byName("cp-1").schematic = NEW;
    f.talos.byName("w-1").schematic = NEW;
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(
      f.talos.callsOf("upgrade").map((l) => l.split(" ")[1]),
      ["cp-2", "cp-3", "w-2", "w-3"],
    );
    assert.match(f.ctx.stdout.text, /already on its new image: cp-1, w-1/);
    assert.equal((engineRuns[1].converge.installers as Record<string, string>)["cp-1"], image(NEW));
  });

  it("asks each node's schematic through the real talosctl client, in talosctl's own output", async () => {
    const { f } = schematicFixture({ talosctl: true });
    f.talos.byName("cp-1").schematic = NEW;
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    const asked = f.talosctlCalls.filter((c) => c.args[0] === "get" && c.args[1] === "extensions");
    assert.equal(asked.length, NODES.length);
    assert.deepEqual(
      f.talos.callsOf("upgrade").map((l) => l.split(" ")[1]),
      ["cp-2", "cp-3", "w-1", "w-2", "w-3"],
    );
  });

  it("stops where the roll stopped, without recording what did not happen", async () => {
    const { f, engineRuns } = schematicFixture();
    f.talos.upgrades.set("cp-2", "fail");
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.failed);
    assert.equal(engineRuns.length, 1);
    assert.match(f.ctx.stderr.text, /stopped at cp-2 \(upgrade\).*npm run platform -- up staging/s);
  });

  it("is in the preview's plan: the platform's schematic replaced names its running nodes", () => {
    const event: EngineEvent = {
      sequence: 0,
      timestamp: 0,
      resourcePreEvent: {
        metadata: {
          op: "replace",
          urn: "urn:pulumi:staging::talos-platform::platform:talos:Cluster$talos:imageFactory/schematic:Schematic::staging-schematic-proxmox",
          type: "talos:imageFactory/schematic:Schematic",
          provider: "",
        },
      },
    };
    const nodes = NODES.map(({ name, role }) => ({
      name,
      role,
      platform: name === "w-3" ? "baremetal" : "proxmox",
    }));
    const steps = planDisruption({
      env: "staging",
      stack: { name: "staging", talosVersion: "v1.13.9", kubernetesVersion: "1.36.3", nodes },
      applyMode: "staged_if_needing_reboot",
      maxUnavailableWorkers: 1,
      outputs: foundationOutputs(),
      events: [event],
    });
    assert.deepEqual(steps, [
      "a new image schematic (extensions, kernel arguments) for cp-1, cp-2, cp-3, w-1, w-2: after the engine run, each drained, upgraded to it on the Talos version it runs and rebooted: 3 control planes one at a time (cp-1, cp-2, cp-3), then 2 workers one at a time (w-1, w-2); then an engine run records their new installers",
    ]);
  });
});
