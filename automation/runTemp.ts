// The run's private temp folder: every temp file of a CLI run (the talosconfig and kubeconfig handed
// to talosctl and kubectl, and whatever the Pulumi CLI, its plugins and talosctl write to TMPDIR)
// lives in `$TMPDIR/platform-<uid>/run-<pid>@<host>` (0700 folders). The CLI removes its folder
// when it exits; a run killed with SIGKILL cannot, so each start also removes the folders of this
// host's runs whose process no longer exists. The host is part of the name because a pid means
// nothing on another machine or container sharing the folder: those are never touched.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { UserError } from "./errors";

/** Owner only. */
const PRIVATE_DIR_MODE = 0o700;

/** `run-<pid>@<host>`: one run's folder. */
const RUN_FOLDER = /^run-(\d+)@(.+)$/;

/** One run's temp folder. */
export interface RunTemp {
  /** The folder; TMPDIR points here for the CLI and every process it starts. */
  readonly dir: string;
  /** Folders of dead runs removed at start-up. */
  readonly swept: readonly string[];
  /** Removes the folder and everything in it (the CLI's exit). */
  remove(): void;
}

/** What {@link openRunTemp} needs of the process and the machine. */
export interface RunTempOptions {
  /** The system temp folder (TMPDIR, else /tmp). */
  readonly base: string;
  /** The user's id (its folder is shared by the user's runs, never by other users). */
  readonly user: string;
  readonly pid: number;
  readonly host: string;
  readonly isAlive: (pid: number) => boolean;
}

/** A host name as part of a file name (no separators). */
function hostPart(host: string): string {
  return host.replace(/[^A-Za-z0-9._-]/g, "_") || "host";
}

/**
 * The user's folder under `base`, created 0700 if absent. A folder someone else made (another
 * user can create `/tmp/platform-<uid>` before us, to read what we put there), a symbolic link
 * or a file in its place is refused; one of ours that is readable by others is tightened.
 */
function userFolder(base: string, user: string): string {
  const dir = path.join(base, `platform-${user}`);
  fs.mkdirSync(base, { recursive: true });
  try {
    fs.mkdirSync(dir, { mode: PRIVATE_DIR_MODE });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const stat = fs.lstatSync(dir);
  const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    throw new UserError({
      what: dir,
      problem: stat.isDirectory()
        ? "is the CLI's private temp folder but belongs to another user"
        : "is the CLI's private temp folder but is not a folder",
      got: stat.isDirectory() ? `owner uid ${stat.uid}` : "a symbolic link or a file",
      fix: "Remove it (someone may be trying to read your credentials), or set TMPDIR to a folder of your own",
    });
  }
  if ((stat.mode & 0o077) !== 0) fs.chmodSync(dir, PRIVATE_DIR_MODE);
  return dir;
}

/**
 * Creates this run's folder and removes those of dead runs of this host. A folder of this very
 * pid is a dead run's too (the pid was reused): it is emptied.
 */
export function openRunTemp(options: RunTempOptions): RunTemp {
  const root = userFolder(options.base, options.user);
  const host = hostPart(options.host);
  const swept: string[] = [];
  for (const name of fs.readdirSync(root)) {
    const match = RUN_FOLDER.exec(name);
    if (!match || match[2] !== host) continue;
    const pid = Number(match[1]);
    if (pid !== options.pid && options.isAlive(pid)) continue;
    fs.rmSync(path.join(root, name), { recursive: true, force: true });
    if (pid !== options.pid) swept.push(name);
  }
  const dir = path.join(root, `run-${options.pid}@${host}`);
  fs.mkdirSync(dir, { mode: PRIVATE_DIR_MODE });
  fs.chmodSync(dir, PRIVATE_DIR_MODE);
  return {
    dir,
    swept,
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** The current user as a folder name part: the uid, else (Windows) the user name. */
export function currentUser(): string {
  return typeof process.getuid === "function" ? String(process.getuid()) : os.userInfo().username;
}
