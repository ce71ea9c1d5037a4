// Recorded engine events: the engine tier writes what the real engine emitted, NDJSON as the
// engine's event log has it, into test/fixtures/engine-events/ when ENGINE_RECORD=1; the unit tests
// of the PR summary and the progress view play them back (test/automation/*).
import type { EngineEvent } from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
import * as path from "node:path";
import type { EngineSandbox } from "./harness";
import { ROOT } from "./harness";

/** Where recordings are kept. */
export const RECORDINGS_DIR = path.join(ROOT, "test", "fixtures", "engine-events");

/** The sandbox's temporary folder, as it appears in recordings. */
export const SANDBOX_PLACEHOLDER = "/tmp/engine-tier";

/**
 * Writes one run's events (always into the sandbox; into the fixtures with ENGINE_RECORD=1), with
 * the sandbox's folder replaced by a fixed placeholder. Refuses a recording that holds a secret of
 * the sandbox.
 */
export function writeRecording(
  name: string,
  events: readonly EngineEvent[],
  sandbox: EngineSandbox,
): void {
  const text = events
    .map((event) =>
      JSON.stringify(withoutDebugText(event)).split(sandbox.dir).join(SANDBOX_PLACEHOLDER),
    )
    .join("\n");
  for (const secret of [sandbox.passphrase, "ENGINE-TIER-NOT-A-REAL-KEY", "PRIVATE KEY-----"]) {
    if (text.includes(secret)) throw new Error(`recording ${name} holds a secret in plain text`);
  }
  fs.writeFileSync(path.join(sandbox.dir, `${name}.ndjson`), `${text}\n`);
  if (process.env.ENGINE_RECORD === "1") {
    fs.writeFileSync(path.join(RECORDINGS_DIR, `${name}.ndjson`), `${text}\n`);
  }
}

/** The text the recordings keep of a debug diagnostic (the event itself stays). */
export const DEBUG_PLACEHOLDER = "[debug message left out of the recording]";

/**
 * The SDK's debug log, which the engine streams as diagnostics of severity "debug", prints invoke
 * results in plain text (machine configurations with their CA keys): recordings keep the event
 * and drop its text.
 */
function withoutDebugText(event: EngineEvent): EngineEvent {
  const diagnostic = event.diagnosticEvent;
  if (!diagnostic || (diagnostic.severity as string) !== "debug") return event;
  return { ...event, diagnosticEvent: { ...diagnostic, message: DEBUG_PLACEHOLDER } };
}
