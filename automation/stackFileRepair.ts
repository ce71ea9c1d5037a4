// The CLI never writes a stack file during a run: credentials travel in a file of the run,
// and only the engine writes Pulumi's own keys (`encryptedkey` of a KMS secrets provider,
// `encryptionsalt` of a passphrase) when it creates the stack or its data key. Two things remain:
// removing config keys while keeping the layout (runs no longer call it: a secret the stack file
// holds beside the run's own credential is kept, since it may be stored there on purpose), and
// putting back the operator's comments and layout when the engine rewrote the file only to add its
// data key (which must then be committed). Every write is atomic and never replaces an edit made
// meanwhile.
import * as fs from "node:fs";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { isMap, isScalar, parseDocument, stringify } from "yaml";
import { UserError } from "./errors";

/**
 * Removes `keys` from the `config:` mapping of a stack file, keeping every comment and the layout
 * of the rest. The new content goes to a temporary file that is renamed over the stack file (a
 * reader never sees half a file), and only if the stack file still holds what was read: an edit
 * made meanwhile (an editor, `pulumi config set`) is never overwritten. Returns the keys removed.
 */
export function removeConfigKeys(file: string, keys: readonly string[]): string[] {
  const before = fs.readFileSync(file, "utf8");
  const document = parseDocument(before);
  const removed = keys.filter((key) => document.hasIn(["config", key]));
  if (removed.length === 0) return [];
  for (const key of removed) document.deleteIn(["config", key]);
  // The pairs' lines cut out of the text, so the rest stays byte for byte; else re-serialised.
  const spliced = withoutConfigPairs(before, removed);
  const content =
    spliced !== undefined && isDeepStrictEqual(parseDocument(spliced).toJS(), document.toJS())
      ? spliced
      : document.toString(PRETTIER_LIKE);
  try {
    writeIfUnchanged(file, before, content);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    throw new UserError({
      what: path.basename(file),
      problem: "changed while the CLI was removing credentials from it, so it was left alone",
      got: `keys ${removed.join(", ")}`,
      fix: "Rerun the command",
    });
  }
  return removed;
}

/** What the yaml library writes when it must re-serialise: the layout Prettier keeps. */
const PRETTIER_LIKE = { flowCollectionPadding: false, lineWidth: 0 } as const;

/** The offset where the line holding `offset` starts. */
function lineStart(text: string, offset: number): number {
  return text.lastIndexOf("\n", offset - 1) + 1;
}

/** The offset after the line on which a node ending at `end` (exclusive) ends. */
function lineEndAfter(text: string, end: number): number {
  if (end > 0 && text[end - 1] === "\n") return end;
  const newline = text.indexOf("\n", end);
  return newline < 0 ? text.length : newline + 1;
}

/** `text` without the lines of the `config:` pairs `keys`; undefined when it cannot tell them. */
function withoutConfigPairs(text: string, keys: readonly string[]): string | undefined {
  const config = parseDocument(text).get("config", true);
  if (!isMap(config)) return undefined;
  const cuts: { start: number; end: number }[] = [];
  for (const key of keys) {
    const pair = config.items.find((item) => isScalar(item.key) && String(item.key.value) === key);
    const keyRange = pair && isScalar(pair.key) ? pair.key.range : undefined;
    const valueRange = (pair?.value as { range?: [number, number, number] } | null)?.range;
    if (!keyRange || !valueRange) return undefined;
    cuts.push({ start: lineStart(text, keyRange[0]), end: lineEndAfter(text, valueRange[1]) });
  }
  let result = text;
  for (const cut of cuts.sort((a, b) => b.start - a.start)) {
    result = result.slice(0, cut.start) + result.slice(cut.end);
  }
  return result;
}

/** Pulumi's own top-level keys of a stack file: how its secrets are encrypted. */
const SECRETS_KEYS = ["secretsprovider", "encryptedkey", "encryptionsalt"] as const;

/** What {@link keepLayout} did. */
type LayoutOutcome = "unchanged" | "kept" | "rewritten";

/**
 * When the engine saves a stack file (to add `encryptedkey` or `encryptionsalt`), it serialises the
 * whole file again (workspace.ProjectStack.Save in sdk/go/common/workspace/project.go): comments and
 * layout are lost. If nothing but Pulumi's secrets keys changed, this puts the file back as the
 * operator wrote it, byte for byte, with only the lines of those keys changed (a new key goes on the
 * line after `secretsprovider`, else at the end), atomically and only if the file still holds what
 * the engine wrote. Otherwise the engine's file stays.
 */
export function keepLayout(file: string, before: string): LayoutOutcome {
  if (!fs.existsSync(file)) return "unchanged";
  const after = fs.readFileSync(file, "utf8");
  if (after === before) return "unchanged";
  const written = parseDocument(after).toJS() as Record<string, unknown> | null;
  const originalValues = parseDocument(before).toJS() as Record<string, unknown> | null;
  const rest = (values: Record<string, unknown> | null) =>
    Object.fromEntries(
      Object.entries(values ?? {}).filter(
        ([key]) => !(SECRETS_KEYS as readonly string[]).includes(key),
      ),
    );
  if (!isDeepStrictEqual(rest(written), rest(originalValues))) return "rewritten";
  const wanted = Object.fromEntries(
    SECRETS_KEYS.map((key) => [key, written?.[key]] as const).filter(
      ([, value]) => value !== undefined && value !== null && value !== "",
    ),
  );
  const content = withTopLevelKeys(before, wanted);
  // Only a splice whose result reads as the engine's values is written.
  if (
    content === undefined ||
    !isDeepStrictEqual(parseDocument(content).toJS(), { ...rest(written), ...wanted })
  ) {
    return "rewritten";
  }
  writeIfUnchanged(file, after, content);
  return "kept";
}

/** A top-level `key: value` line, as the operator would write it. */
function topLevelLine(key: string, value: unknown): string {
  return `${key}: ${stringify(value, { lineWidth: 0 }).trimEnd()}\n`;
}

/**
 * `text` with Pulumi's secrets keys set to `wanted` (absent ones removed) by editing only their
 * lines: every other byte (comments, flow collections, line breaks) stays as the operator wrote it.
 * Undefined when the file's top level is not a plain mapping to splice into.
 */
function withTopLevelKeys(
  text: string,
  wanted: Readonly<Record<string, unknown>>,
): string | undefined {
  const document = parseDocument(text);
  const contents = document.contents;
  if (contents !== null && !isMap(contents)) return undefined;
  const pairs = contents?.items ?? [];
  const keyRange = (name: string) => {
    const pair = pairs.find((item) => isScalar(item.key) && String(item.key.value) === name);
    if (!pair) return undefined;
    if (!isScalar(pair.key) || !isScalar(pair.value) || !pair.key.range || !pair.value.range) {
      return null;
    }
    return {
      start: lineStart(text, pair.key.range[0]),
      end: lineEndAfter(text, pair.value.range[1]),
      value: pair.value.value,
    };
  };
  const edits: { start: number; end: number; text: string }[] = [];
  for (const key of SECRETS_KEYS) {
    const range = keyRange(key);
    if (range === null) return undefined;
    const value = wanted[key];
    if (range) {
      // A key the engine left as it was keeps its line (its quoting, its comment).
      if (value !== undefined && isDeepStrictEqual(range.value, value)) continue;
      edits.push({
        start: range.start,
        end: range.end,
        text: value === undefined ? "" : topLevelLine(key, value),
      });
    } else if (value !== undefined) {
      const provider = keyRange("secretsprovider");
      const at = provider ? provider.end : text.length;
      const separator = at > 0 && !text.slice(0, at).endsWith("\n") ? "\n" : "";
      edits.push({ start: at, end: at, text: `${separator}${topLevelLine(key, value)}` });
    }
  }
  let result = text;
  for (const edit of edits.sort((a, b) => b.start - a.start)) {
    result = result.slice(0, edit.start) + edit.text + result.slice(edit.end);
  }
  return result;
}

/** Writes `content` over `file` through a temporary file, only if `file` still holds `expected`. */
function writeIfUnchanged(file: string, expected: string, content: string): void {
  const mode = fs.statSync(file).mode & 0o777;
  const temporary = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
  fs.writeFileSync(temporary, content, { mode, flag: "wx" });
  try {
    if (fs.readFileSync(file, "utf8") !== expected) {
      throw new UserError({
        what: path.basename(file),
        problem: "changed while the CLI was writing it, so it was left alone",
        got: `${Buffer.byteLength(expected)} bytes expected`,
        fix: "Check the file and rerun the command",
      });
    }
    fs.renameSync(temporary, file);
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}
