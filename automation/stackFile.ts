// The CLI never writes a stack file during a run: credentials travel in the engine's environment,
// and only the engine writes Pulumi's own keys (`encryptedkey` of a KMS secrets provider,
// `encryptionsalt` of a passphrase) when it creates the stack or its data key. Two things remain:
// cleaning credentials an older version of this CLI left behind (it set them as secret config for a
// run and restored the file in a `finally`, which a second Ctrl-C, SIGKILL or OOM skipped), and
// telling the operator when the engine wrote a data key that must be committed.
import * as fs from "node:fs";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
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
  const after = document.toString();
  const mode = fs.statSync(file).mode & 0o777;
  const temporary = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
  fs.writeFileSync(temporary, after, { mode, flag: "wx" });
  try {
    if (fs.readFileSync(file, "utf8") !== before) {
      throw new UserError({
        what: path.basename(file),
        problem: "changed while the CLI was removing credentials from it, so it was left alone",
        got: `keys ${removed.join(", ")}`,
        fix: "Rerun the command",
      });
    }
    fs.renameSync(temporary, file);
  } finally {
    fs.rmSync(temporary, { force: true });
  }
  return removed;
}

/** A KMS secrets provider (`gcpkms://`, `awskms://`, …): its data key lives in `encryptedkey`. */
export function isKmsSecretsProvider(provider: string | undefined): boolean {
  return (
    provider !== undefined && /^[a-z]+kms:\/\/|^azurekeyvault:\/\/|^hashivault:\/\//.test(provider)
  );
}
