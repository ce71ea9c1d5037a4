// Writing and comparing talosctl recordings (see talosctlRecordings.ts): what a recording may hold
// (no sandbox path, no secret, the fixture's addresses) and what of it must stay the same between
// two recordings of the same calls (its shape: everything but ids, times, sizes and build stamps).
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import * as prettier from "prettier";
import { parse } from "yaml";
import { RECORDINGS_DIR, SANDBOX_PLACEHOLDER, type StoredRecording } from "./talosctlRecordings";

/** The emulated cluster's /24, and the fixture's, of the same width, that recordings show. */
export const EMULATED_NET = "127.0.2.";
export const FIXTURE_NET = "192.0.2.";

/**
 * Every string of a secrets bundle or talosconfig (`talosctl gen secrets`, `gen config`) with the
 * placeholder that replaces it in recordings: `REDACTED-certs.os.key`, by its path in the file.
 */
export function secretsOf(files: readonly string[]): Map<string, string> {
  const secrets = new Map<string, string>();
  const walk = (value: unknown, at: string[]) => {
    if (typeof value === "string" && value.length >= 8) {
      if (!secrets.has(value)) secrets.set(value, `REDACTED-${at.join(".")}`);
    } else if (typeof value === "object" && value !== null) {
      for (const [key, inner] of Object.entries(value)) walk(inner, [...at, key]);
    }
  };
  for (const file of files) walk(parse(fs.readFileSync(file, "utf8")), []);
  return secrets;
}

/** Markers of key material that no recording may hold, whatever replaced what. */
const KEY_MARKERS = ["PRIVATE KEY", "LS0tLS1CRUdJTi" /* base64 of "-----BEGIN" */];

/** Replaces the sandbox's folder, the secrets and the emulated addresses in one text. */
export function scrub(text: string, sandbox: string, secrets: ReadonlyMap<string, string>): string {
  let out = text.split(sandbox).join(SANDBOX_PLACEHOLDER);
  for (const [value, placeholder] of secrets) out = out.split(value).join(placeholder);
  return out.split(EMULATED_NET).join(FIXTURE_NET);
}

/** Throws when a recording still holds a secret (a value of the bundle, or any key material). */
export function refuseSecrets(
  name: string,
  recording: StoredRecording,
  secrets: ReadonlyMap<string, string>,
): void {
  const text = JSON.stringify(recording);
  const leaked = [...secrets.keys(), ...KEY_MARKERS].find((secret) => text.includes(secret));
  if (leaked !== undefined) {
    const what = secrets.get(leaked) ?? leaked;
    throw new Error(`talosctl recording ${name} holds a secret (${what}); it was not written`);
  }
}

/** Values that differ between two recordings of the same calls, and what the shape shows instead. */
const VOLATILE: readonly (readonly [RegExp, string])[] = [
  // etcd member ids are random per cluster (also in remove-member's arguments)
  [/\b[0-9a-f]{16}\b/g, "<member-id>"],
  // actor ids of reboot, upgrade and reset
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, "<actor-id>"],
  // resource metadata: times and version counters
  [/^(\s*(?:created|updated):\s*)\S+$/, "$1<time>"],
  [/^(\s*version:\s*)\d+$/, "$1<n>"],
  // service events: "(2s ago)"
  [/\((?:\d+(?:\.\d+)?(?:h|m|s|ms|µs))+ ago\)/g, "(<ago>)"],
  // snapshots: their size, hash and revision
  [/\(\d+ bytes\)/g, "(<n> bytes)"],
  [/hash [0-9a-f]+, revision \d+, total keys \d+, total size \d+/g, "hash <h>, revision <n>, …"],
  // how talosctl was built (the machine's Go release)
  [/^(\s*(?:SHA|Built|Go version):\s*).*$/, "$1<build>"],
];

/**
 * Progress lines whose number depends on timing: how often talosctl polled a rebooting node,
 * whether it saw the reboot sequence start before the node went away, whether health's deadline
 * came during a check or between two tries.
 */
const TIMING: readonly RegExp[] = [
  /: unavailable, retrying\.\.\.$/,
  // a check under way when health's wait ran out reports the deadline as its status
  /^stderr\| waiting for .+: rpc error: code = DeadlineExceeded/,
  /: sequence: reboot action: START$/,
  /: error: reboot sequence completed$/,
];

/** The lines of a recording that must match between runs (see VOLATILE and TIMING). */
export function shapeOf(recording: StoredRecording): string[] {
  const lines = [
    `args: ${recording.args.join(" ")}`,
    `exit code: ${recording.exitCode}`,
    ...recording.stdout.map((line) => `stdout| ${line}`),
    ...recording.stderr.map((line) => `stderr| ${line}`),
    ...(recording.emulator ? [`emulator: ${JSON.stringify(recording.emulator)}`] : []),
  ];
  const shaped = lines
    .filter((line) => !TIMING.some((pattern) => pattern.test(line)))
    .map((line) => {
      const [prefix, body] = line.startsWith("std")
        ? [line.slice(0, 8), line.slice(8)]
        : ["", line];
      return prefix + VOLATILE.reduce((text, [pattern, to]) => text.replace(pattern, to), body);
    });
  return shaped.filter((line, i) => line !== shaped[i - 1]);
}

/** The file of a recording, formatted as Prettier (npm run lint) wants it. */
async function formatted(file: string, recording: StoredRecording): Promise<string> {
  const options = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(JSON.stringify(recording), { ...options, filepath: file });
}

/** Writes a recording into `dir` (the sandbox, or RECORDINGS_DIR with TALOSCTL_RECORD=1). */
export async function writeRecording(
  dir: string,
  name: string,
  recording: StoredRecording,
): Promise<void> {
  const file = path.join(dir, `${name}.json`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(file, await formatted(path.join(RECORDINGS_DIR, `${name}.json`), recording));
}

/** Asserts that a fresh recording has the committed one's shape, naming what to do otherwise. */
export function assertSameShape(
  name: string,
  committed: StoredRecording | undefined,
  fresh: StoredRecording,
): void {
  assert.ok(
    committed,
    `test/fixtures/talosctl/${name}.json is not committed; record it with TALOSCTL_RECORD=1`,
  );
  assert.deepEqual(
    shapeOf(fresh),
    shapeOf(committed),
    `talosctl's output of ${name} changed: check the parsers in automation/dayTwo/talosctlOutput.ts against it, then re-record with TALOSCTL_RECORD=1`,
  );
}
