// Collecting and formatting stack-file problems in one format:
//   `<stack-file key>: <problem>; got <value>. <fix or allowed values>`
import type { z } from "zod";
import { maskUrl, urlCredential } from "./urlCredentials";

/** A path into the stack config, e.g. ["nodes", 2, "proxmox", "vmId"]. */
export type KeyPath = readonly (string | number)[];

/** `nodes[2].proxmox.vmId` for ["nodes", 2, "proxmox", "vmId"]. */
export function keyOf(path: KeyPath): string {
  return path.reduce<string>(
    (key, part) =>
      typeof part === "number" ? `${key}[${part}]` : key === "" ? part : `${key}.${part}`,
    "",
  );
}

/** A short, single-line rendering of a value for an error message; credentials in URLs masked. */
function show(value: unknown): string {
  const shown = typeof value === "string" && urlCredential(value) ? maskUrl(value) : value;
  const text = shown === undefined ? "nothing" : JSON.stringify(shown);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** The value at `path` in `root`, or undefined. */
function valueAt(root: unknown, path: KeyPath): unknown {
  let value: unknown = root;
  for (const part of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

/** The known key closest to a misspelt one (same letters ignoring case, or one or two edits away). */
export function closestKey(key: string, knownKeys: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: { key: string; distance: number } | undefined;
  for (const known of new Set(knownKeys)) {
    const distance = known.toLowerCase() === lower ? 0 : editDistance(lower, known.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance))
      best = { key: known, distance };
  }
  return best?.key;
}

/** Edits between two strings: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(
        d[i - 1][j] + 1,
        d[i][j - 1] + 1,
        d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      // A swap of two neighbouring letters (`titel` for `title`) is one slip, not two.
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/** Every property name declared anywhere in a JSON schema (from `z.toJSONSchema`). */
export function propertyNames(schema: unknown, into: Set<string> = new Set()): Set<string> {
  if (Array.isArray(schema)) {
    for (const item of schema) propertyNames(item, into);
  } else if (schema !== null && typeof schema === "object") {
    for (const [key, value] of Object.entries(schema)) {
      if (key === "properties" && value !== null && typeof value === "object") {
        for (const name of Object.keys(value)) into.add(name);
      }
      propertyNames(value, into);
    }
  }
  return into;
}

/**
 * A list computed on first use and kept: the known-key lists come from converting whole schemas to
 * JSON Schema, which costs more than checking a valid stack, and only a stack with an unknown key
 * needs them (`validate` starts faster).
 */
export function once<T>(compute: () => readonly T[]): () => readonly T[] {
  let value: readonly T[] | undefined;
  return () => (value ??= compute());
}

/** `key: problem[; got value][. hint]`. */
function message(path: KeyPath, problem: string, opts: { got?: unknown; hint?: string }): string {
  const got = "got" in opts ? `; got ${show(opts.got)}` : "";
  const hint = opts.hint ? `. ${opts.hint}` : "";
  return `${keyOf(path)}: ${problem}${got}${hint}`;
}

/**
 * What to say about an unknown key found in the mapping at `path` (relative to the value checked),
 * or undefined for the default wording.
 */
export type UnknownKeyAdvice = (
  path: KeyPath,
  key: string,
) => { readonly problem: string; readonly hint: string } | undefined;

/** Accumulates problems; nothing is thrown until every check has run. */
export class Problems {
  private readonly list: string[] = [];
  private readonly warningList: string[] = [];

  /** Records `key: problem[; got value][. hint]`. */
  add(path: KeyPath, problem: string, opts: { got?: unknown; hint?: string } = {}): void {
    this.addMessage(message(path, problem, opts));
  }

  /**
   * Records something valid that is worth knowing (what a newer Talos deprecated, say), in the same
   * format; a warning never stops the stack.
   */
  warn(path: KeyPath, problem: string, opts: { got?: unknown; hint?: string } = {}): void {
    const line = message(path, problem, opts);
    if (!this.warningList.includes(line)) this.warningList.push(line);
  }

  /** All warnings, in the order found. */
  get warnings(): readonly string[] {
    return this.warningList;
  }

  /**
   * Records every issue of a failed schema parse of the value found at `base`; `knownKeys` lets an
   * unknown key be answered with the key that was probably meant, else with `reference`.
   */
  addZodIssues(
    base: KeyPath,
    raw: unknown,
    issues: readonly z.core.$ZodIssue[],
    knownKeys: readonly string[] = [],
    reference = "docs/configuration.md",
    advise?: UnknownKeyAdvice,
  ): void {
    for (const issue of issues) {
      const relative: KeyPath = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
      const path = [...base, ...relative];
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) {
          const advice = advise?.(relative, key);
          if (advice) {
            this.add([...path, key], advice.problem, { hint: advice.hint });
            continue;
          }
          const meant = closestKey(key, knownKeys);
          const readme = `See ${reference}`;
          if (meant === key) {
            // A real key, but of another platform or section.
            this.add([...path, key], "is not a setting here", { hint: readme });
          } else {
            this.add([...path, key], "unknown key", {
              hint: meant ? `Did you mean ${meant}?` : readme,
            });
          }
        }
      } else if (issue.code === "invalid_key") {
        // The key itself is wrong: name it, never its value (a policy body, say).
        const reason = issue.issues.map((inner) => inner.message).join("; ");
        this.add(path, `not a valid key here: ${reason}`);
      } else {
        const value = valueAt(raw, relative);
        const message =
          value === undefined && issue.code === "invalid_type" ? "required" : issue.message;
        this.add(path, message, value === undefined ? {} : { got: value });
      }
    }
  }

  /** Records a problem already written in the `key: problem` format; the same line is kept once. */
  addMessage(message: string): void {
    if (!this.list.includes(message)) this.list.push(message);
  }

  /** All problems, in the order found. */
  get all(): readonly string[] {
    return this.list;
  }

  /** Throws a {@link StackConfigError} when any problem was recorded. */
  throwIfAny(stackFile: string): void {
    if (this.list.length > 0) throw new StackConfigError(stackFile, this.list);
  }
}

/**
 * The stack file is invalid; thrown before any resource is registered. It carries the Pulumi SDK's
 * RunError marker (what `pulumi.RunError.isInstance` checks, so that any copy of the SDK recognises
 * it), so Pulumi prints the message without a stack trace; not extending the SDK's class keeps
 * validation free of the SDK (`validate` checks stack files offline, without loading it).
 */
export class StackConfigError extends Error {
  /** The marker of `pulumi.RunError`. */
  readonly __pulumiRunError = true;

  constructor(
    readonly stackFile: string,
    readonly problems: readonly string[],
  ) {
    const noun = problems.length === 1 ? "problem" : "problems";
    super(
      `${stackFile} has ${problems.length} ${noun}; nothing was created:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
    this.name = "StackConfigError";
  }
}
