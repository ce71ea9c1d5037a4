// Writing files that hold secrets (kubeconfig, talosconfig, the generated passphrase) so that no
// other user can read them, not even for an instant, and plain files atomically.
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/** Owner read/write only. */
export const PRIVATE_FILE_MODE = 0o600;
/** Owner only. */
const PRIVATE_DIR_MODE = 0o700;

/**
 * Creates a folder (and its parents) readable by its owner only; a folder this user created
 * earlier with looser permissions (`.pulumi-state` made 0755 by an older version, or by hand) is
 * tightened to 0700, since it holds state and the generated passphrase.
 */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const stat = fs.statSync(dir);
  const ours = typeof process.getuid !== "function" || stat.uid === process.getuid();
  if (ours && (stat.mode & 0o077) !== 0) fs.chmodSync(dir, PRIVATE_DIR_MODE);
}

/**
 * Writes `content` to `file` with mode 0600. The content goes to a new 0600 file next to it first
 * and is renamed over the target, so an existing file with looser permissions never holds the secret
 * and a crash never leaves half a file; the final chmod covers a restrictive umask.
 */
export function writePrivateFile(file: string, content: string): void {
  writeAtomically(file, content, PRIVATE_FILE_MODE);
  fs.chmodSync(file, PRIVATE_FILE_MODE);
}

/** Writes a non-secret file atomically (readers never see half of it). */
export function writeFileAtomically(file: string, content: string): void {
  writeAtomically(file, content, 0o644);
}

function writeAtomically(file: string, content: string, mode: number): void {
  const temporary = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
  const fd = fs.openSync(temporary, "wx", mode);
  try {
    fs.fchmodSync(fd, mode);
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(temporary, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(temporary, file);
  } catch (error) {
    fs.rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * Creates `file` with mode 0600 holding `content`, unless it already exists. Returns whether it was
 * created. Exclusive creation means two runs racing to create it agree on one content.
 */
export function createPrivateFileOnce(file: string, content: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, "wx", PRIVATE_FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    fs.fchmodSync(fd, PRIVATE_FILE_MODE);
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

/** The permission bits of a file, e.g. 0o600. */
export function fileMode(file: string): number {
  return fs.statSync(file).mode & 0o777;
}
