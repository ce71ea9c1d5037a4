// Recorded talosctl runs: what the real talosctl (v1.13.0) printed for each call the project's
// TalosctlClient makes, against the Talos emulator with a cluster shaped like the day-two fixture
// (test/dayTwo/helpers.ts NODES), one JSON file per call in test/fixtures/talosctl/. Written by
// record-talosctl.smoke.ts with TALOSCTL_RECORD=1 (sandbox paths and secrets replaced, 127.0.2.x
// written as the fixture's 192.0.2.x); read by the parser tests and the day-two tests' fake talosctl.
import * as fs from "node:fs";
import * as path from "node:path";

/** Where recordings are kept. */
export const RECORDINGS_DIR = path.resolve(__dirname, "..", "fixtures", "talosctl");

/** The recorder's temporary folder (talosconfig, snapshots), as it appears in recordings. */
export const SANDBOX_PLACEHOLDER = "/tmp/talosctl-recording";

/** One talosctl run as it is stored: output as lines (`text.split("\n")`), for readable diffs. */
export interface StoredRecording {
  /** What the recorded cluster was doing: faults, staged changes, which node is down. */
  readonly scenario: string;
  /** The node the call targeted (`--nodes`), with its name in the fixture; absent for a local call. */
  readonly node?: { readonly name: string; readonly address: string };
  /** talosctl's arguments as the client built them. */
  readonly args: readonly string[];
  readonly exitCode: number | null;
  readonly stdout: readonly string[];
  readonly stderr: readonly string[];
  /** What the emulator's control API said at the time: the truth parsers are checked against. */
  readonly emulator?: {
    readonly etcdMembers?: readonly {
      id: string;
      hostname: string;
      address: string;
      learner: boolean;
    }[];
  };
}

/** A recording as tests use it: output as text. */
export interface Recording extends Omit<StoredRecording, "stdout" | "stderr"> {
  readonly stdout: string;
  readonly stderr: string;
}

/** Stored form ⇄ text form. */
export function toStored(recording: Recording): StoredRecording {
  return {
    ...recording,
    stdout: recording.stdout.split("\n"),
    stderr: recording.stderr.split("\n"),
  };
}

export function fromStored(stored: StoredRecording): Recording {
  return { ...stored, stdout: stored.stdout.join("\n"), stderr: stored.stderr.join("\n") };
}

const cache = new Map<string, Recording>();

/** The committed recording `name` (test/fixtures/talosctl/<name>.json). */
export function recording(name: string): Recording {
  let found = cache.get(name);
  if (!found) {
    const file = path.join(RECORDINGS_DIR, `${name}.json`);
    found = fromStored(JSON.parse(fs.readFileSync(file, "utf8")) as StoredRecording);
    cache.set(name, found);
  }
  return found;
}

/** Whether a recording `name` is committed. */
export function hasRecording(name: string): boolean {
  return cache.has(name) || fs.existsSync(path.join(RECORDINGS_DIR, `${name}.json`));
}

/** The names of the committed recordings. */
export function recordingNames(): string[] {
  return fs
    .readdirSync(RECORDINGS_DIR)
    .filter((file) => file.endsWith(".json"))
    .map((file) => file.slice(0, -".json".length))
    .sort();
}
