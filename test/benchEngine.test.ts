// The engine benchmark's pure parts (bench/engineStack.ts): its generated stacks stay valid as the
// checks grow and keep clear of the engine tier's addresses, and a roll is split into the steps and
// times it reports. The figures themselves are printed by `npm run bench:engine`, never asserted.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  LineClock,
  benchNodes,
  benchStackConfig,
  benchStackFile,
  benchSubnet,
  busyMs,
  expectedSteps,
  parseToolLog,
  rollSteps,
} from "../bench/engineStack";
import { validatePlatformConfig } from "../components/config/validate";
import { ROOT } from "./harness";

const stack = (size: number, index = 0) => {
  const subnet = benchSubnet(index);
  return benchStackConfig({
    name: `bench${size}`,
    subnet,
    nodes: benchNodes(size, subnet),
    talosVersion: "v1.13.0",
    batch: 5,
    healthTimeout: "10m",
  });
};

describe("the engine benchmark's generated stacks", () => {
  for (const size of [5, 50, 237]) {
    it(`are valid at ${size} nodes: 3 control planes and ${size - 3} workers`, () => {
      const spec = validatePlatformConfig(
        stack(size) as Parameters<typeof validatePlatformConfig>[0],
        `Pulumi.bench${size}.yaml`,
      );
      assert.equal(spec.nodes.length, size);
      assert.equal(spec.nodes.filter((n) => n.role === "controlplane").length, 3);
    });
  }

  it("refuses a size it has no addresses for", () => {
    assert.throws(() => benchNodes(3, "127.16.1"), /1 to 234 workers/);
    assert.throws(() => benchNodes(238, "127.16.1"), /1 to 234 workers/);
  });

  it("puts each size on its own loopback /24, none of the engine tier's stacks", () => {
    const used = new Set<string>();
    const dir = path.join(ROOT, "test", "engine", "stacks");
    for (const file of fs.readdirSync(dir)) {
      const text = fs.readFileSync(path.join(dir, file), "utf8");
      for (const [, prefix] of text.matchAll(/\b(127\.\d+\.\d+)\.\d+/g)) used.add(prefix);
    }
    assert.ok(used.size > 0);
    const subnets = [0, 1, 2, 3].map(benchSubnet);
    assert.equal(new Set(subnets).size, subnets.length);
    for (const subnet of subnets) assert.ok(!used.has(subnet), subnet);
    const addresses = benchNodes(50, subnets[0]).map((n) => n.address);
    assert.equal(new Set(addresses).size, 50);
    assert.ok(addresses.every((a) => a.startsWith(`${subnets[0]}.`) && a !== `${subnets[0]}.10`));
  });

  it("prefixes the keys with the project, as a stack file holds them", () => {
    const file = benchStackFile("talos-platform", stack(5)) as { config: Record<string, unknown> };
    assert.deepEqual(Object.keys(file.config), ["talos-platform:cluster", "talos-platform:nodes"]);
  });
});

describe("the engine benchmark's roll analysis", () => {
  it("counts the goal's steps: control planes, then workers by the batch", () => {
    assert.equal(expectedSteps(3, 2, 5), 4);
    assert.equal(expectedSteps(3, 47, 5), 13);
    assert.equal(expectedSteps(3, 47, 1), 50);
  });

  it("counts overlapping tool calls once", () => {
    const calls = parseToolLog(
      "1.0 3.0 0 talosctl version\n2.0 4.0 0 kubectl drain\n6.0 7.0 1 talosctl health\n",
    );
    assert.equal(calls.length, 3);
    assert.equal(calls[1].tool, "kubectl");
    assert.equal(busyMs(calls, 0, 10_000), 4000);
    assert.equal(busyMs(calls, 2500, 6500), 2000);
    assert.equal(busyMs([], 0, 10_000), 0);
  });

  it("splits a rollout at each batch's health line; the CLI's time is what no tool ran", () => {
    const clock = new LineClock(
      (() => {
        const times = [0, 1000, 5000, 6000, 12_000, 13_000];
        return () => times.shift()!;
      })(),
    );
    clock.write("rollout bench5: waiting for a reboot: cp-1 (staged)\n");
    clock.write(
      "cp-1: etcd keeps quorum without it (2 healthy, 2 needed)\ncp-1: draining (kubectl",
    );
    clock.write(" drain …)\n");
    clock.write("cp-1: running the config it was to boot; cluster healthy\n");
    clock.write("worker-1, worker-2: drained\n");
    clock.write("worker-1, worker-2: running the config it was to boot; cluster healthy\n");
    assert.equal(clock.lines.length, 6);
    const calls = parseToolLog("1.5 4.5 0 talosctl reboot\n7 11 0 talosctl health\n");
    const steps = rollSteps("rollout", clock.lines, calls);
    assert.deepEqual(
      steps.map((s) => [s.label, s.wallMs, s.toolMs, s.calls, s.cliMs]),
      [
        ["cp-1", 5000, 3000, 1, 2000],
        ["worker-1, worker-2", 7000, 4000, 1, 3000],
      ],
    );
  });

  it("splits an upgrade at each '[i/n] …: cluster healthy' line", () => {
    const lines = [
      { at: 0, text: "upgrade talos bench5 to v1.13.9: 3 control planes one at a time" },
      { at: 100, text: "[1/5] cp-1: etcd keeps quorum without it (2 healthy, 2 needed)" },
      {
        at: 200,
        text: "[1/5] cp-1 (127.16.1.11): upgrading with ghcr.io/siderolabs/installer:v1.13.9",
      },
      { at: 900, text: "[1/5] cp-1: cluster healthy" },
      { at: 1000, text: "[4/5] worker-1 (127.16.1.21): upgrading with x" },
      { at: 1100, text: "[5/5] worker-2 (127.16.1.22): upgrading with x" },
      { at: 1900, text: "[4-5/5] worker-1, worker-2: cluster healthy" },
    ];
    const steps = rollSteps("upgrade", lines, []);
    assert.deepEqual(
      steps.map((s) => [s.label, s.wallMs]),
      [
        ["[1/5] cp-1", 800],
        ["[4-5/5] worker-1, worker-2", 1000],
      ],
    );
  });
});
