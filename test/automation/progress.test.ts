import type { EngineEvent } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import {
  type ProgressMode,
  ProgressRenderer,
  describeChanges,
  formatDuration,
} from "../../automation/progress";
import {
  FakeClock,
  MemorySink,
  cleanupRepos,
  loadEngineEvents,
  makeRepo,
  stripAnsi,
  testContext,
} from "./helpers";

const ESC = "\u001b[";

/** Plays recorded events with the clock at each event's timestamp. */
function play(
  fixture: string,
  mode: ProgressMode,
  options: { operation?: string; sink?: MemorySink; stopAfter?: number; target?: string } = {},
) {
  const events = loadEngineEvents(fixture);
  const clock = new FakeClock(events[0].timestamp * 1000);
  const out = options.sink ?? new MemorySink(mode === "live", 120);
  const renderer = new ProgressRenderer({
    out,
    mode,
    clock: clock.read,
    operation: options.operation ?? "up",
    target:
      options.target ??
      (fixture.endsWith("-engine") || fixture.includes("-engine-")
        ? "foundation/engine"
        : "foundation/staging"),
  });
  for (const event of events.slice(0, options.stopAfter)) {
    clock.now = event.timestamp * 1000;
    renderer.onEvent(event);
  }
  return { renderer, out, clock, events };
}

/** What a terminal shows after the writes: lines, with in-place redraws applied. */
function screen(text: string): string[] {
  const lines: string[] = [];
  let current = "";
  for (let i = 0; i < text.length;) {
    const erase = /^\u001b\[(\d+)F\u001b\[J/.exec(text.slice(i));
    if (erase) {
      lines.splice(lines.length - Number(erase[1]));
      i += erase[0].length;
      continue;
    }
    if (text[i] === "\n") {
      lines.push(current);
      current = "";
    } else current += text[i];
    i++;
  }
  return current ? [...lines, current] : lines;
}

describe("progress view", () => {
  afterEach(cleanupRepos);

  describe("plain mode (CI, pipes)", () => {
    it("prints one line per change with the elapsed time, and the summary", () => {
      const { renderer, out } = play("up-foundation-staging", "plain");
      renderer.finish({ ok: true });
      assert.equal(
        out.text,
        [
          "[0:04] creating staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy)",
          "[0:05] updating staging-stg-cp-1-config (talos:machine/configurationApply:ConfigurationApply)",
          "[0:12] updated staging-stg-cp-1-config (talos:machine/configurationApply:ConfigurationApply) in 7s",
          "[0:40] created staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy) in 36s",
          "[0:41] creating staging-stg-worker-1-config (talos:machine/configurationApply:ConfigurationApply)",
          "[0:53] created staging-stg-worker-1-config (talos:machine/configurationApply:ConfigurationApply) in 12s",
          "up foundation/staging: done in 53s; 3 created, 1 updated, 3 unchanged",
          "",
        ].join("\n"),
      );
      assert.ok(!out.text.includes(ESC), "no escape codes in a log");
    });

    it("names the failing resource and its error, without the colour directives", () => {
      const { renderer, out } = play("up-foundation-staging-failed", "plain");
      const summary = renderer.finish({ ok: false });
      assert.match(
        out.text,
        /^\[1:12\] error: staging-stg-worker-1-config: sdk-v2\/provider2\.go:566: .*connection refused": provider=talos@0\.8\.1\n\[1:12\] failed to create staging-stg-worker-1-config \(talos:machine\/configurationApply:ConfigurationApply\)$/m,
      );
      assert.doesNotMatch(out.text, /update failed/, "the engine's generic last line adds nothing");
      assert.equal(
        summary,
        "up foundation/staging: failed after 1m12s; 1 failed resource; 2 created, 1 updated, 3 unchanged",
      );
      assert.ok(!out.text.includes("<{%"), "colour directives stripped");
      assert.deepEqual(
        renderer.tally.failures.map((f) => [f.op, f.name]),
        [["create", "staging-stg-worker-1-config"]],
      );
    });

    it("lists a preview's plan once per resource, a replacement as one line", () => {
      const { renderer, out } = play("preview-foundation-staging", "plain", {
        operation: "preview",
      });
      renderer.finish({ ok: true });
      const plan = out.text.split("\n").map((line) => line.replace(/^\[\d+:\d+\] /, ""));
      assert.deepEqual(
        plan.filter((line) => /^(\+|~|-|\+-|\+\+|--) /.test(line)),
        [
          "~  update staging-stg-cp-1-config (talos:machine/configurationApply:ConfigurationApply)",
          "~  update staging-stg-cp-2-vm (proxmoxve:index/vmLegacy:VmLegacy)",
          "+  create staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy)",
          "+  create staging-stg-worker-1-config (talos:machine/configurationApply:ConfigurationApply)",
          "+- replace staging-stg-worker-2-vm (proxmoxve:index/vmLegacy:VmLegacy)",
        ],
      );
      assert.match(
        out.text,
        /warning: staging-stg-worker-2-vm: the VM's disk is recreated from the Talos image/,
      );
      assert.match(
        out.text,
        /preview foundation\/staging: done in 4s; 3 to create, 2 to update, 1 to replace, 3 unchanged\n$/,
      );
    });

    it("leaves out unchanged resources, components and ephemeral status messages", () => {
      const { out } = play("up-foundation-staging", "plain");
      assert.doesNotMatch(
        out.text,
        /platform:talos:Cluster|platform:proxmox:Node|pulumi:pulumi:Stack/,
      );
      assert.doesNotMatch(out.text, /secrets:Secrets/);
      assert.doesNotMatch(out.text, /applying configuration in mode auto/);
    });
  });

  describe("live mode (a terminal)", () => {
    it("shows resources done out of those announced, the operations under way and the elapsed time", () => {
      // Stop while the worker VM is being created and a config is being applied.
      const { out, events } = play("up-foundation-staging", "live", { stopAfter: 11 });
      assert.equal(events[10].diagnosticEvent?.ephemeral, true, "a provider status line");
      assert.deepEqual(screen(out.text), [
        "⠋ up foundation/staging  1/6 resources  5s",
        "  creating staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy)  1s",
        "  updating staging-stg-cp-1-config (talos:machine/configurationApply:ConfigurationApply)  0s",
      ]);
    });

    it("redraws in place: finished changes stay above the block, which moves on with the clock", () => {
      const { renderer, out, clock } = play("up-foundation-staging", "live", { stopAfter: 12 });
      assert.deepEqual(screen(out.text), [
        "updated staging-stg-cp-1-config (talos:machine/configurationApply:ConfigurationApply) in 7s",
        "⠋ up foundation/staging  2/6 resources  12s",
        "  creating staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy)  8s",
      ]);
      const before = out.text.length;
      clock.advance(30_000);
      renderer.redraw();
      assert.ok(out.text.slice(before).startsWith(`${ESC}2F${ESC}J`), "the old block is erased");
      assert.deepEqual(screen(out.text).slice(1), [
        "⠋ up foundation/staging  2/6 resources  42s",
        "  creating staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy)  38s",
      ]);
    });

    it("clears the block at the end and leaves the log and the summary", () => {
      const { renderer, out } = play("up-foundation-staging", "live");
      renderer.finish({ ok: true });
      assert.deepEqual(screen(out.text), [
        "updated staging-stg-cp-1-config (talos:machine/configurationApply:ConfigurationApply) in 7s",
        "created staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy) in 36s",
        "created staging-stg-worker-1-config (talos:machine/configurationApply:ConfigurationApply) in 12s",
        "up foundation/staging: done in 53s; 3 created, 1 updated, 3 unchanged",
      ]);
    });

    it("fits its lines to the terminal's width", () => {
      const sink = new MemorySink(true, 40);
      const { out } = play("up-foundation-staging", "live", { stopAfter: 11, sink });
      for (const line of screen(out.text)) assert.ok([...line].length <= 39, line);
      assert.match(screen(out.text)[1], /…$/);
    });

    it("lists at most five operations under way and counts the rest", () => {
      const clock = new FakeClock();
      const out = new MemorySink(true, 200);
      const renderer = new ProgressRenderer({
        out,
        mode: "live",
        clock: clock.read,
        operation: "up",
        target: "foundation/prod",
      });
      for (let i = 1; i <= 7; i++) {
        const type = "proxmoxve:index/vmLegacy:VmLegacy";
        const urn = `urn:pulumi:prod::talos-platform::${type}::vm-${i}`;
        // A create as the engine sends it: `old` null, `new` with `custom` (events.go).
        const event = {
          sequence: i,
          timestamp: 1,
          resourcePreEvent: {
            metadata: {
              op: "create",
              urn,
              type,
              old: null,
              new: {
                type,
                urn,
                custom: true,
                id: "",
                parent: "",
                inputs: {},
                outputs: {},
                provider: "",
              },
              detailedDiff: null,
              logical: true,
              provider: "",
            },
          },
        } as unknown as EngineEvent;
        renderer.onEvent(event);
        clock.advance(1000);
      }
      const shown = screen(out.text);
      assert.equal(shown.length, 7);
      assert.match(shown[1], /creating vm-1 .* 6s$/);
      assert.equal(shown[6], "  … and 2 more");
    });
  });

  describe("on events recorded from the real engine (npm run test:engine)", () => {
    const planned = (text: string) =>
      text
        .split("\n")
        .map((line) => line.replace(/^\[\d+:\d+\] /, ""))
        .filter((line) => / \(talos:/.test(line));

    it("names each step of a failed up, the failing resources with the provider's error, and the engine's counts", () => {
      const { renderer, out } = play("up-foundation-engine-failed", "plain");
      const summary = renderer.finish({ ok: false });
      assert.deepEqual(planned(out.text), [
        "creating engine-secrets (talos:machine/secrets:Secrets)",
        "created engine-secrets (talos:machine/secrets:Secrets) in 1s",
        "creating engine-worker-1-config (talos:machine/configurationApply:ConfigurationApply)",
        "creating engine-cp-1-config (talos:machine/configurationApply:ConfigurationApply)",
        "failed to create engine-worker-1-config (talos:machine/configurationApply:ConfigurationApply)",
        "failed to create engine-cp-1-config (talos:machine/configurationApply:ConfigurationApply)",
      ]);
      assert.match(
        out.text,
        /^\[1:48\] error: engine-cp-1-config: Error applying configuration: rpc error: code = Unavailable .*dial tcp 127\.0\.20\.11:50000: connect: connection refused"$/m,
      );
      assert.equal(
        summary,
        "up foundation/engine: failed after 1m49s; 2 failed resources; 5 created",
      );
      assert.deepEqual(
        renderer.tally.failures.map((f) => [f.op, f.name]),
        [
          ["create", "engine-worker-1-config"],
          ["create", "engine-cp-1-config"],
        ],
      );
    });

    it("leaves out components (the engine omits their `custom`), the stack and the SDK's debug log", () => {
      const { out, events } = play("up-foundation-engine-failed", "plain");
      assert.ok(
        events.some((e) => (e.diagnosticEvent?.severity as string) === "debug"),
        "the recording has debug diagnostics",
      );
      assert.doesNotMatch(
        out.text,
        /platform:talos:Cluster|platform:baremetal:Node|pulumi:pulumi:Stack/,
      );
      assert.doesNotMatch(out.text, /debug message|info:/);
    });

    it("lists a preview's plan once per resource", () => {
      const { renderer, out } = play("preview-foundation-engine", "plain", {
        operation: "preview",
      });
      renderer.finish({ ok: true });
      assert.deepEqual(planned(out.text), [
        "+  create engine-secrets (talos:machine/secrets:Secrets)",
        "+  create engine-cp-1-config (talos:machine/configurationApply:ConfigurationApply)",
        "+  create engine-worker-1-config (talos:machine/configurationApply:ConfigurationApply)",
        "+  create engine-bootstrap (talos:machine/bootstrap:Bootstrap)",
        "+  create engine-kubeconfig (talos:cluster/kubeconfig:Kubeconfig)",
      ]);
      assert.match(out.text, /preview foundation\/engine: done in 1m48s; 9 to create\n$/);
    });

    it("shows the operations under way in the live block", () => {
      const events = loadEngineEvents("up-foundation-engine-failed");
      const stopAfter = events.findIndex((e) => e.resOpFailedEvent !== undefined) - 1;
      const { out } = play("up-foundation-engine-failed", "live", { stopAfter });
      const shown = screen(out.text);
      const block = shown.findIndex((line) => line.startsWith("⠋"));
      assert.ok(
        shown
          .slice(0, block)
          .includes("created engine-secrets (talos:machine/secrets:Secrets) in 1s"),
        shown.join("\n"),
      );
      assert.match(shown[block], /^⠋ up foundation\/engine {2}\d+\/\d+ resources {2}1m4\ds$/);
      assert.deepEqual(
        shown.slice(block + 1).map((line) => line.replace(/ {2}\d+s$/, "")),
        [
          "  creating engine-worker-1-config (talos:machine/configurationApply:ConfigurationApply)",
          "  creating engine-cp-1-config (talos:machine/configurationApply:ConfigurationApply)",
        ],
      );
    });

    it("names a protected resource the engine refuses to delete, with the engine's words", () => {
      const { renderer, out } = play("destroy-foundation-engine-protected", "plain", {
        operation: "destroy",
      });
      const summary = renderer.finish({ ok: false });
      assert.match(
        out.text,
        /error: engine-secrets: resource "urn:pulumi:engine::talos-platform::.*engine-secrets" cannot be deleted\nbecause it is protected/,
      );
      assert.match(summary, /^destroy foundation\/engine: failed after 0s; 1 failed resource; /);
      assert.deepEqual(
        renderer.tally.failures.map((f) => [f.op, f.name]),
        [["delete", "engine-secrets"]],
      );
    });

    it("counts a finished destroy as the engine does", () => {
      const { renderer, out } = play("destroy-foundation-engine", "plain", {
        operation: "destroy",
      });
      assert.equal(
        renderer.finish({ ok: true }),
        "destroy foundation/engine: done in 0s; 3 deleted",
      );
      assert.deepEqual(planned(out.text), [
        "deleting engine-secrets (talos:machine/secrets:Secrets)",
        "deleted engine-secrets (talos:machine/secrets:Secrets) in 0s",
      ]);
    });
  });

  it("chooses the live view on a terminal and plain lines when CI is set", async () => {
    const tty = testContext({ repoRoot: makeRepo(), stdout: new MemorySink(true, 100) });
    tty.workspaces.runs.preview = { events: loadEngineEvents("preview-foundation-staging") };
    assert.equal(await runCli(["preview", "staging"], tty), ExitCode.ok);
    assert.ok(tty.stdout.text.includes(ESC), "live block on a terminal");

    const ci = testContext({
      repoRoot: makeRepo(),
      stdout: new MemorySink(true, 100),
      env: { CI: "true" },
    });
    ci.workspaces.runs.preview = { events: loadEngineEvents("preview-foundation-staging") };
    assert.equal(await runCli(["preview", "staging"], ci), ExitCode.ok);
    assert.ok(!ci.stdout.text.includes(ESC), "plain lines in CI");
    assert.match(stripAnsi(ci.stdout.text), /^\[0:00\] ~  update staging-stg-cp-1-config/m);
  });

  it("redraws on the ticker while waiting for the engine, and stops it at the end", async () => {
    let ticks = 0;
    let stopped = false;
    const ctx = testContext({
      repoRoot: makeRepo(),
      stdout: new MemorySink(true, 100),
      startTicker: (tick) => {
        tick();
        ticks++;
        return () => {
          stopped = true;
        };
      },
    });
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok);
    assert.equal(ticks, 1);
    assert.equal(stopped, true);
  });

  it("words durations and change counts compactly", () => {
    assert.equal(formatDuration(9), "9s");
    assert.equal(formatDuration(62), "1m02s");
    assert.equal(formatDuration(3780), "1h03m");
    assert.equal(
      describeChanges({ same: 20, create: 2, delete: 1 }, false),
      "2 created, 1 deleted, 20 unchanged",
    );
    assert.equal(describeChanges({ update: 1 }, true), "1 to update");
    assert.equal(describeChanges({}, true), "no changes");
  });
});
