// Small event sequences shaped exactly as the Pulumi engine emits them, each citing where in the
// engine's source (github.com/pulumi/pulumi) the shape comes from. The recorded real streams of
// pkg/engine/lifecycletest/testdata/output/*/eventstream.json show the same shapes.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import { RunTally, isCustomStep, isDefaultProviderStep } from "../../automation/engineEvents";
import { ProgressRenderer } from "../../automation/progress";
import { criticalReason } from "../../automation/critical";
import { previewSection, protectionRefusal } from "../../automation/summary";
import { FakeClock, MemorySink, stripAnsi } from "./helpers";

const STACK = "urn:pulumi:staging::talos-platform::pulumi:pulumi:Stack::talos-platform-staging";
const NODE_TYPE = "platform:proxmox:Node";
const VM_TYPE = "proxmoxve:index/vmLegacy:VmLegacy";
const urnOf = (type: string, name: string, parent?: string) =>
  `urn:pulumi:staging::talos-platform::${parent ? `${parent}$` : ""}${type}::${name}`;
const NODE = urnOf(NODE_TYPE, "staging-stg-worker-1", "platform:talos:Cluster");
const VM = urnOf(VM_TYPE, "staging-stg-worker-1-vm", `platform:talos:Cluster$${NODE_TYPE}`);
const DEFAULT_TALOS = urnOf(
  "pulumi:providers:talos",
  "default_0_8_1_github_/api.github.com/pulumiverse",
);

interface State {
  type: string;
  urn: string;
  custom?: true;
  protect?: true;
  id: string;
  parent: string;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
  provider: string;
}

/**
 * A resource's state as StepEventStateMetadata encodes it: `custom` and `protect` only when true
 * (`json:"custom,omitempty"`), so a component has no `custom` key at all.
 */
function state(urn: string, options: { custom?: boolean; protect?: boolean } = {}): State {
  const type = urn.split("::")[2].split("$").pop()!;
  return {
    type,
    urn,
    ...(options.custom ? { custom: true as const } : {}),
    id: options.custom ? "id-1" : "",
    parent: STACK,
    ...(options.protect ? { protect: true as const } : {}),
    inputs: {},
    outputs: {},
    provider: "",
  };
}

/** StepEventMetadata: `old`/`new` null when absent, `detailedDiff` null, `logical` when true. */
function metadata(op: string, old: State | null, next: State | null, logical = true) {
  const urn = (old ?? next)!.urn;
  return {
    op,
    urn,
    type: (old ?? next)!.type,
    old,
    new: next,
    detailedDiff: null,
    ...(logical ? { logical: true } : {}),
    provider: "",
  };
}

let sequence = 0;
const event = (payload: Record<string, unknown>): EngineEvent =>
  ({ sequence: sequence++, timestamp: 1790000000, ...payload }) as unknown as EngineEvent;
const pre = (m: object, planning = false) =>
  event({ resourcePreEvent: { metadata: m, ...(planning ? { planning } : {}) } });
const outputs = (m: object, planning = false) =>
  event({ resOutputsEvent: { metadata: m, ...(planning ? { planning } : {}) } });
/** DiagnosticEvent of an error: the prefix the engine colours, the message between resets. */
const error = (message: string, urn?: string) =>
  event({
    diagnosticEvent: {
      ...(urn ? { urn } : {}),
      prefix: "<{%fg 1%}>error: <{%reset%}>",
      message: `<{%reset%}>${message}<{%reset%}>\n`,
      color: "raw",
      severity: "error",
    },
  });
/** SummaryEvent with the fields the engine sends since 3.237 (PolicyPacks in PascalCase). */
const summary = (changes: Record<string, number>, isPreview: boolean, result: string) =>
  event({
    summaryEvent: {
      maybeCorrupt: false,
      durationSeconds: 1,
      resourceChanges: changes,
      PolicyPacks: {},
      isPreview,
      result,
    },
  });
/** Every engine operation ends its stream with a cancelEvent (pkg/engine/update.go, refresh.go…). */
const end = () => event({ cancelEvent: {} });

function render(operation: string, events: EngineEvent[], mode: "plain" | "live" = "plain") {
  const clock = new FakeClock();
  const out = new MemorySink(mode === "live", 200);
  const renderer = new ProgressRenderer({
    out,
    mode,
    clock: clock.read,
    operation,
    target: "foundation/staging",
  });
  for (const e of events) {
    renderer.onEvent(e);
    clock.advance(5000);
  }
  return { renderer, out, clock };
}

describe("engine events as the engine emits them", () => {
  it("treats a component step (no custom key) as a component, not a resource being created", () => {
    const node = metadata("create", null, state(NODE));
    const vm = metadata("create", null, state(VM, { custom: true }));
    assert.equal(isCustomStep(node as never), false);
    assert.equal(isCustomStep(vm as never), true);
    const { renderer, out } = render("up", [
      pre(node),
      pre(vm),
      outputs(vm),
      outputs(node),
      summary({ create: 2 }, false, "succeeded"),
      end(),
    ]);
    renderer.finish({ ok: true });
    assert.doesNotMatch(out.text, /platform:proxmox:Node/);
    assert.match(
      out.text,
      /creating staging-stg-worker-1-vm \(proxmoxve:index\/vmLegacy:VmLegacy\)/,
    );
  });

  it("does not take the cancelEvent that ends every run for a cancellation", () => {
    // A preview that failed in the program: pkg/resource/deploy/deployment_executor.go reports
    // "preview failed" without a URN, then the summary, then the stream's closing cancelEvent.
    const { renderer } = render("preview", [
      error("Error: foundation stack has no endpoint output yet", STACK),
      error("preview failed"),
      summary({}, true, "failed"),
      end(),
    ]);
    assert.equal(renderer.tally.cancelled, false);
    const line = renderer.finish({ ok: false });
    assert.doesNotMatch(line, /cancelled/);
    assert.deepEqual(renderer.tally.errors, ["Error: foundation stack has no endpoint output yet"]);
  });

  it("says cancelled when the engine reports the run canceled, or the operator stopped it", () => {
    const byEngine = render("up", [error("update canceled"), summary({}, false, "failed"), end()]);
    assert.match(byEngine.renderer.finish({ ok: false }), /failed after .* \(cancelled\)/);
    assert.deepEqual(byEngine.renderer.tally.errors, [], "not an error of its own");
    const bySummary = render("up", [summary({}, false, "canceled"), end()]);
    assert.equal(bySummary.renderer.tally.cancelled, true);
    const byOperator = render("up", [error("update failed"), summary({}, false, "failed"), end()]);
    assert.match(
      byOperator.renderer.finish({ ok: false, cancelled: true }),
      /failed after .* \(cancelled\)/,
    );
  });

  it("ends a refresh step when its outputs event carries the result op, with its duration", () => {
    // pkg/engine/update.go OnResourceStepPost: for a refresh, op = RefreshStep.ResultOp().
    const vm = state(VM, { custom: true });
    const started = metadata("refresh", vm, vm, false);
    const found = { ...metadata("update", vm, vm, false), diffs: ["memory"] };
    const unchanged = urnOf(VM_TYPE, "staging-stg-cp-1-vm", `platform:talos:Cluster$${NODE_TYPE}`);
    const other = state(unchanged, { custom: true });
    const live = render(
      "refresh",
      [pre(started), pre(metadata("refresh", other, other, false))],
      "live",
    );
    assert.equal(live.renderer.tally.inProgress.size, 2);
    live.renderer.onEvent(outputs(found));
    live.renderer.onEvent(outputs(metadata("same", other, other, false)));
    assert.equal(live.renderer.tally.inProgress.size, 0, "nothing shows as still refreshing");
    const plain = render("refresh", [
      pre(started),
      pre(metadata("refresh", other, other, false)),
      outputs(found),
      outputs(metadata("same", other, other, false)),
      summary({ update: 1, same: 1 }, false, "succeeded"),
      end(),
    ]);
    const lines = stripAnsi(plain.out.text).split("\n");
    assert.deepEqual(
      lines.filter((l) => /refreshed/.test(l)),
      [
        "[0:10] refreshed staging-stg-worker-1-vm (proxmoxve:index/vmLegacy:VmLegacy): changed outside Pulumi (update) in 10s",
      ],
    );
  });

  it("leaves the engine's internal default-provider steps out of the progress and the summary", () => {
    // IsDefaultProvider (sdk/go/common/providers/reference.go); isInternalStep (pkg/engine/update.go).
    const provider = metadata("create", null, state(DEFAULT_TALOS, { custom: true }));
    const vm = metadata("create", null, state(VM, { custom: true }));
    assert.equal(isDefaultProviderStep(provider as never), true);
    const events = [
      pre(provider, true),
      outputs(provider, true),
      pre(vm, true),
      outputs(vm, true),
      summary({ create: 1 }, true, "succeeded"),
      end(),
    ];
    const { renderer, out } = render("preview", events);
    assert.deepEqual(renderer.tally.progress, { done: 1, total: 1 });
    assert.doesNotMatch(out.text, /pulumi:providers/);
    const section = previewSection({ layer: "foundation", env: "staging", events, ok: true });
    assert.deepEqual(section.counts, { create: 1, update: 0, replace: 0, delete: 0 });
    assert.deepEqual(
      section.changes.map((c) => c.name),
      ["staging-stg-worker-1-vm"],
    );
  });

  it("recognises the engine's protected-delete refusal and calls the resource out", () => {
    // deleteProtectedError, pkg/resource/deploy/step.go; then resOpFailedEvent for the step.
    const old = state(VM, { custom: true, protect: true });
    const deletion = metadata("delete", old, null);
    const message =
      `resource "${VM}" cannot be deleted\nbecause it is protected. To unprotect the resource, either remove the ` +
      "`protect` flag from the resource in your Pulumi program and run `pulumi up`, or use the command:\n" +
      `\`pulumi state unprotect '${VM}'\``;
    assert.deepEqual(protectionRefusal(`<{%reset%}>${message}<{%reset%}>\n`), {
      kind: "delete",
      urn: VM,
    });
    const events = [
      pre(deletion, true),
      error(message, VM),
      event({ resOpFailedEvent: { metadata: deletion, status: 0, steps: 1 } }),
      error("preview failed"),
      summary({}, true, "failed"),
      end(),
    ];
    const section = previewSection({ layer: "foundation", env: "staging", events, ok: false });
    assert.deepEqual(section.critical, [
      {
        kind: "delete",
        type: VM_TYPE,
        name: "staging-stg-worker-1-vm",
        reason: "protected; the engine refuses to delete it, so the preview fails",
      },
    ]);
  });

  it("names the protected dependent, not the replaced resource, when a replacement reaches it", () => {
    // step_generator.go: `unable to replace resource %q as part of replacing %q …`, reported on the
    // URN of the resource being replaced.
    const secrets = urnOf(
      "talos:machine/secrets:Secrets",
      "staging-secrets",
      "platform:talos:Cluster",
    );
    const message =
      `unable to replace resource "${secrets}" as part of replacing "${VM}" as it is currently marked for ` +
      "protection. To unprotect the resource, remove the `protect` flag from the resource in your Pulumi " +
      `program and run \`pulumi up\`, or use the command:\n\`pulumi state unprotect '${secrets}'\``;
    const section = previewSection({
      layer: "foundation",
      env: "staging",
      events: [error(message, VM), summary({}, true, "failed"), end()],
      ok: false,
    });
    assert.deepEqual(
      section.critical.map((c) => `${c.kind} ${c.name}`),
      ["replace staging-secrets"],
    );
  });

  it("reads a delete-replaced step, whose new state is null", () => {
    const old = state(VM, { custom: true, protect: true });
    const step = metadata("delete-replaced", old, null, false);
    assert.equal(criticalReason(step as never), "protected");
    const tally = new RunTally(() => 0);
    tally.apply(pre(step));
    assert.equal(tally.inProgress.size, 1);
  });
});
