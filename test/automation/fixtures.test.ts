import type { EngineEvent, StepEventMetadata } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseUrn, plainMessage } from "../../automation/engineEvents";
import { ROOT, loadEngineEvents } from "./helpers";

// The recorded events must keep the shape of the Automation API's EngineEvent
// (@pulumi/pulumi/automation/events.d.ts), or the tests built on them prove nothing.
const PAYLOADS = [
  "cancelEvent",
  "stdoutEvent",
  "diagnosticEvent",
  "preludeEvent",
  "summaryEvent",
  "resourcePreEvent",
  "resOutputsEvent",
  "resOpFailedEvent",
  "policyEvent",
  "startDebuggingEvent",
] as const;
const OPS = [
  "same",
  "create",
  "update",
  "delete",
  "replace",
  "create-replacement",
  "delete-replaced",
  "read",
  "read-replacement",
  "refresh",
  "discard",
  "discard-replaced",
  "remove-pending-replace",
  "import",
  "import-replacement",
];
// "debug": the real engine streams the SDK's debug log too (the Automation API's type leaves it out).
const SEVERITIES = ["debug", "info", "info#err", "warning", "error"];

const fixtures = fs
  .readdirSync(path.join(ROOT, "test", "fixtures", "engine-events"))
  .filter((file) => file.endsWith(".ndjson"))
  .map((file) => file.replace(/\.ndjson$/, ""));

function checkMetadata(where: string, metadata: StepEventMetadata): void {
  assert.ok(OPS.includes(metadata.op), `${where}: op ${metadata.op}`);
  assert.equal(typeof metadata.provider, "string", `${where}: provider`);
  assert.equal(parseUrn(metadata.urn).type, metadata.type, `${where}: type matches the URN`);
  for (const state of [metadata.old, metadata.new]) {
    if (!state) continue;
    assert.equal(state.urn, metadata.urn, `${where}: state urn`);
    assert.equal(state.type, metadata.type, `${where}: state type`);
    for (const key of ["id", "parent", "provider"] as const) {
      assert.equal(typeof state[key], "string", `${where}: state.${key}`);
    }
    assert.equal(typeof state.inputs, "object", `${where}: inputs`);
    assert.equal(typeof state.outputs, "object", `${where}: outputs`);
  }
  if (metadata.op === "create")
    assert.ok(metadata.new && !metadata.old, `${where}: create has new only`);
  if (metadata.op === "delete")
    assert.ok(metadata.old && !metadata.new, `${where}: delete has old only`);
}

describe("recorded engine events", () => {
  it("are present for previews and updates", () => {
    assert.deepEqual(fixtures.sort(), [
      // Recorded from the real engine by `ENGINE_RECORD=1 npm run test:engine`.
      "destroy-foundation-engine",
      "destroy-foundation-engine-protected",
      // Written by hand: the Proxmox and GCP providers are not in the engine tier.
      "preview-bootstrap-shared",
      "preview-foundation-engine",
      "preview-foundation-prod-protected",
      "preview-foundation-staging",
      "refresh-foundation-engine",
      "up-foundation-engine-failed",
      "up-foundation-staging",
      "up-foundation-staging-failed",
    ]);
  });

  for (const fixture of fixtures) {
    it(`${fixture} has the EngineEvent shape: one payload each, increasing sequence, known ops`, () => {
      const events: EngineEvent[] = loadEngineEvents(fixture);
      events.forEach((event, index) => {
        const where = `${fixture}[${index}]`;
        const payloads = Object.keys(event).filter(
          (key) => key !== "sequence" && key !== "timestamp",
        );
        assert.equal(
          payloads.length,
          1,
          `${where}: exactly one payload, got ${payloads.join(",")}`,
        );
        assert.ok(
          (PAYLOADS as readonly string[]).includes(payloads[0]),
          `${where}: ${payloads[0]}`,
        );
        assert.equal(event.sequence, index, `${where}: sequence`);
        assert.ok(Number.isInteger(event.timestamp), `${where}: timestamp in seconds`);
        if (index > 0) assert.ok(event.timestamp >= events[index - 1].timestamp, `${where}: time`);
        const metadata =
          event.resourcePreEvent?.metadata ??
          event.resOutputsEvent?.metadata ??
          event.resOpFailedEvent?.metadata;
        if (metadata) checkMetadata(where, metadata);
        if (event.resOpFailedEvent) {
          assert.equal(typeof event.resOpFailedEvent.status, "number");
          assert.equal(typeof event.resOpFailedEvent.steps, "number");
        }
        if (event.diagnosticEvent) {
          assert.ok(SEVERITIES.includes(event.diagnosticEvent.severity), `${where}: severity`);
          assert.equal(typeof event.diagnosticEvent.color, "string");
        }
        if (event.summaryEvent) {
          assert.equal(typeof event.summaryEvent.maybeCorrupt, "boolean");
          assert.equal(typeof event.summaryEvent.durationSeconds, "number");
          for (const op of Object.keys(event.summaryEvent.resourceChanges)) {
            assert.ok(OPS.includes(op), `${where}: summary op ${op}`);
          }
        }
      });
      assert.ok(events[0].preludeEvent, "starts with the prelude");
      assert.ok(events.at(-1)?.cancelEvent, "ends with the cancel event");
      assert.ok(
        events.some((e) => e.summaryEvent),
        "has a summary",
      );
    });
  }

  // What the engine's JSON encoding does that a hand-built event easily gets wrong
  // (sdk/go/common/apitype/events.go; pkg/engine/lifecycletest/testdata/output/*/eventstream.json).
  for (const fixture of fixtures) {
    it(`${fixture} is shaped as the engine encodes events`, () => {
      for (const [index, event] of loadEngineEvents(fixture).entries()) {
        const where = `${fixture}[${index}]`;
        const metadata = (event.resourcePreEvent ?? event.resOutputsEvent ?? event.resOpFailedEvent)
          ?.metadata as unknown as Record<string, unknown> | undefined;
        if (metadata) {
          // `old`, `new` and `detailedDiff` are always there, null when empty.
          for (const key of ["old", "new", "detailedDiff"])
            assert.ok(key in metadata, `${where}: ${key}`);
          if (metadata.op === "delete-replaced") assert.equal(metadata.new, null, `${where}: new`);
          for (const state of [metadata.old, metadata.new] as Record<string, unknown>[]) {
            // `custom`, `protect`, `delete`… are omitted when false.
            for (const flag of [
              "custom",
              "protect",
              "delete",
              "taint",
              "external",
              "retainOnDelete",
            ]) {
              assert.notEqual(state?.[flag], false, `${where}: ${flag}: false is never sent`);
            }
          }
        }
        const diagnostic = event.diagnosticEvent;
        if (
          diagnostic &&
          /^(update|preview) (failed|canceled)$/.test(plainMessage(diagnostic.message))
        ) {
          assert.equal(diagnostic.urn, undefined, `${where}: the run's result has no URN`);
        }
        if (diagnostic?.severity === "error" || diagnostic?.severity === "warning") {
          // Recorded through the Automation API the prefix has no colour directives ("error: ").
          assert.match(
            diagnostic.prefix ?? "",
            /^(<\{%fg [13]%\}>)?(error|warning): (<\{%reset%\}>)?$/,
          );
        }
        if (event.summaryEvent) {
          const summary = event.summaryEvent as unknown as Record<string, unknown>;
          assert.deepEqual(Object.keys(summary), [
            "maybeCorrupt",
            "durationSeconds",
            "resourceChanges",
            "PolicyPacks",
            "isPreview",
            "result",
          ]);
          assert.equal(summary.isPreview, fixture.startsWith("preview-"), where);
          assert.ok(["succeeded", "failed", "canceled"].includes(summary.result as string));
        }
      }
    });
  }

  it("name resources the way this repository's programs do", () => {
    const urns = new Set(
      loadEngineEvents("preview-bootstrap-shared").flatMap((e) => {
        const metadata = e.resourcePreEvent?.metadata;
        return metadata ? [metadata.urn] : [];
      }),
    );
    // components/bootstrap.ts: provider bootstrap-gcp, StateBucket "state" and its children.
    for (const urn of urns) {
      assert.match(urn, /^urn:pulumi:shared::talos-platform-bootstrap::/);
    }
    assert.ok(
      urns.has("urn:pulumi:shared::talos-platform-bootstrap::pulumi:providers:gcp::bootstrap-gcp"),
    );
    assert.ok(
      urns.has(
        "urn:pulumi:shared::talos-platform-bootstrap::platform:gcp:StateBucket$gcp:storage/bucket:Bucket::state-bucket",
      ),
    );
  });

  it("keep secret inputs blinded as the engine sends them", () => {
    const text = fs.readFileSync(
      path.join(ROOT, "test", "fixtures", "engine-events", "preview-foundation-staging.ndjson"),
      "utf8",
    );
    assert.match(
      text,
      /"machineConfigurationInput":\{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"\[secret\]"\}/,
    );
  });

  it("are read with colour directives removed and URNs split into type and name", () => {
    assert.equal(plainMessage("<{%reset%}>update failed<{%reset%}>\n"), "update failed");
    // A failed invoke, as the engine tier's lifecycle got it from a failing health check.
    assert.equal(
      plainMessage(
        [
          "Running program '/tmp/repo/index.ts' failed with an unhandled exception:",
          "<ref *1> Error: invocation of talos:cluster/getHealth:getHealth returned an error: cluster health check failed",
          "    at Object.callback (/repo/node_modules/@pulumi/runtime/invoke.ts:301:37)",
          "    at processTicksAndRejections (node:internal/process/task_queues:84:11) {",
          "  promise: Promise { <rejected> [Circular *1] }",
          "}",
        ].join("\n"),
      ),
      "Running program '/tmp/repo/index.ts' failed with an unhandled exception:\nError: invocation of talos:cluster/getHealth:getHealth returned an error: cluster health check failed",
    );
    assert.deepEqual(
      parseUrn(
        "urn:pulumi:staging::talos-platform::platform:talos:Cluster$platform:proxmox:Node$proxmoxve:index/vmLegacy:VmLegacy::staging-stg-cp-1-vm",
      ),
      {
        stack: "staging",
        project: "talos-platform",
        type: "proxmoxve:index/vmLegacy:VmLegacy",
        name: "staging-stg-cp-1-vm",
      },
    );
  });
});
