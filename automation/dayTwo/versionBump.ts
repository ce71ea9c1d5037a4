// Bumping `talosVersion` or `kubernetesVersion` in a stack file after a roll succeeded. The yaml
// Document API finds the value's exact source range and only those characters are replaced, so
// comments, key order, quoting and flow style stay byte for byte what the operator wrote.
import * as fs from "node:fs";
import * as path from "node:path";
import { Scalar, isScalar, parseDocument } from "yaml";
import { UserError } from "../errors";
import { writeFileAtomically } from "../files";

/** The versions the day-two commands bump. */
type VersionKey = "talosVersion" | "kubernetesVersion";

/** A planned (or applied) change of one line. */
interface StackBump {
  readonly file: string;
  readonly key: VersionKey;
  readonly from: string;
  readonly to: string;
  /** 1-based line of the value. */
  readonly line: number;
  /** The whole line after the change. */
  readonly lineText: string;
  readonly changed: boolean;
  /** The file's full text after the change. */
  readonly text: string;
}

const CLUSTER_KEY = "talos-platform:cluster";

/** Computes the change without writing it. */
export function planBump(file: string, key: VersionKey, to: string): StackBump {
  const text = fs.readFileSync(file, "utf8");
  const doc = parseDocument(text, { keepSourceTokens: true });
  const node = doc.getIn(["config", CLUSTER_KEY, key], true);
  if (!isScalar(node) || node.range === undefined || node.range === null) {
    throw new UserError({
      what: `${path.basename(file)} config.${CLUSTER_KEY}.${key}`,
      problem: "is not a plain value this command can update",
      got: JSON.stringify(node === undefined ? null : String(node)),
      fix: `Set it by hand to ${to} and commit it`,
    });
  }
  const [start, valueEnd] = node.range;
  const from = String(node.value);
  const written =
    node.type === Scalar.QUOTE_DOUBLE
      ? JSON.stringify(to)
      : node.type === Scalar.QUOTE_SINGLE
        ? `'${to.replace(/'/g, "''")}'`
        : to;
  const next = from === to ? text : `${text.slice(0, start)}${written}${text.slice(valueEnd)}`;
  // What the file says afterwards must be exactly the new value (a plain `1.40` would read as a number).
  const check = parseDocument(next).getIn(["config", CLUSTER_KEY, key]);
  if (String(check) !== to || typeof check !== "string") {
    throw new UserError({
      what: `${path.basename(file)} config.${CLUSTER_KEY}.${key}`,
      problem: "the updated file would not read back as the new version",
      got: JSON.stringify(check),
      fix: `Set it by hand to "${to}" and commit it`,
    });
  }
  const line = text.slice(0, start).split("\n").length;
  return {
    file,
    key,
    from,
    to,
    line,
    lineText: next.split("\n")[line - 1],
    changed: from !== to,
    text: next,
  };
}

/** Writes a planned change (atomically; nothing when the file already says it). */
export function applyBump(bump: StackBump): void {
  if (bump.changed) writeFileAtomically(bump.file, bump.text);
}

/** How the change is shown: `Pulumi.staging.yaml:11:     talosVersion: v1.14.1`. */
export function describeBump(bump: StackBump, repoRoot: string): string {
  return `${path.relative(repoRoot, bump.file) || bump.file}:${bump.line}: ${bump.lineText.trim()}`;
}
