// The CLI never writes a stack file during a run: credentials travel in the engine's environment,
// and only the engine writes Pulumi's own keys (`encryptedkey` of a KMS secrets provider,
// `encryptionsalt` of a passphrase) when it creates the stack or its data key. Two things remain:
// cleaning credentials an older version of this CLI left behind (it set them as secret config for a
// run and restored the file in a `finally`, which a second Ctrl-C, SIGKILL or OOM skipped), and
// putting back the operator's comments and layout when the engine rewrote the file only to add its
// data key (which must then be committed). Every write is atomic and never replaces an edit made
// meanwhile.
import * as fs from "node:fs";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { parseDocument } from "yaml";
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
  try {
    writeIfUnchanged(file, before, document.toString());
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

/** Pulumi's own top-level keys of a stack file: how its secrets are encrypted. */
const SECRETS_KEYS = ["secretsprovider", "encryptedkey", "encryptionsalt"] as const;

/** What {@link keepLayout} did. */
type LayoutOutcome = "unchanged" | "kept" | "rewritten";

/**
 * When the engine saves a stack file (to add `encryptedkey` or `encryptionsalt`), it serialises the
 * whole file again (workspace.ProjectStack.Save in sdk/go/common/workspace/project.go): comments and
 * layout are lost. If nothing but Pulumi's secrets keys changed, this puts the file back as the
 * operator wrote it with the engine's new values (a key next to `secretsprovider`), atomically and
 * only if the file still holds what the engine wrote. Otherwise the engine's file stays.
 */
export function keepLayout(file: string, before: string): LayoutOutcome {
  if (!fs.existsSync(file)) return "unchanged";
  const after = fs.readFileSync(file, "utf8");
  if (after === before) return "unchanged";
  const written = parseDocument(after).toJS() as Record<string, unknown> | null;
  const original = parseDocument(before);
  const originalValues = original.toJS() as Record<string, unknown> | null;
  const rest = (values: Record<string, unknown> | null) =>
    Object.fromEntries(
      Object.entries(values ?? {}).filter(
        ([key]) => !(SECRETS_KEYS as readonly string[]).includes(key),
      ),
    );
  if (!isDeepStrictEqual(rest(written), rest(originalValues))) return "rewritten";
  for (const key of SECRETS_KEYS) {
    const value = written?.[key];
    if (value === undefined || value === null || value === "") {
      original.delete(key);
    } else if (original.has(key)) {
      original.set(key, value);
    } else {
      // Next to the provider it belongs to, else at the top.
      const items = (original.contents as { items?: unknown[] } | null)?.items;
      const pair = original.createPair(key, value);
      const at = items?.findIndex(
        (item) => String((item as { key?: unknown }).key) === "secretsprovider",
      );
      if (items && at !== undefined) items.splice(at + 1, 0, pair);
      else original.set(key, value);
    }
  }
  writeIfUnchanged(file, after, original.toString());
  return "kept";
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
