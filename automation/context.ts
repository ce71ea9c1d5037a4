// Everything a command takes from the outside world, in one injectable object: tests pass fakes for
// the streams, the clock, the environment and the workspace factory.
import type { Env } from "./env";
import type { BwsRunner } from "./bitwarden";
import type { ValidateStack } from "./readiness";
import type { FetchJson } from "./githubOidc";
import type { InterruptHandle } from "./interrupts";
import type { GcsRequest } from "./gcs";
import type { TextSink } from "./progress";
import type { Redactor } from "./redaction";
import type { WorkspaceFactory } from "./workspace";

/** The process a command runs in. */
interface HostInfo {
  readonly pid: number;
  readonly hostname: string;
  /** Whether a local process exists (stale lock detection). */
  isAlive(pid: number): boolean;
}

/** The outside world of one CLI run. */
export interface CliContext {
  /** The repository root: the foundation layer's folder, parent of the other layers'. */
  readonly repoRoot: string;
  /** Where relative paths given by the operator resolve (npm's INIT_CWD under `npm run`). */
  readonly cwd: string;
  readonly env: Env;
  readonly stdout: TextSink;
  readonly stderr: TextSink;
  /** Milliseconds since the epoch. */
  readonly clock: () => number;
  readonly workspaces: WorkspaceFactory;
  readonly host: HostInfo;
  /**
   * Aborted when the engine must be asked to cancel: SIGTERM, or a SIGINT that did not reach the
   * Pulumi CLI itself (see automation/interrupts.ts).
   */
  readonly signal?: AbortSignal;
  /** The run's interrupts: the first asks to stop after the step under way, a second stops at once. */
  readonly interrupts?: InterruptHandle;
  /** Calls `tick` periodically to redraw the live progress; returns a stop function. */
  readonly startTicker?: (tick: () => void) => () => void;
  /** Runs the Bitwarden Secrets Manager CLI (injectable for tests). @default the `bws` on PATH */
  readonly bws?: BwsRunner;
  /**
   * The layers' stack validation, run before the engine. @default each layer's own validation
   * (tests of engine runs, whose stack files are placeholders, pass one that finds nothing)
   */
  readonly validateStack?: ValidateStack;
  /** Fetches GitHub's OIDC token (injectable for tests). @default Node's fetch */
  readonly fetchJson?: FetchJson;
  /** Cloud Storage requests for the leases of gs:// stacks (tests: an in-memory bucket). */
  readonly gcs?: GcsRequest;
  /**
   * The run's credential values, replaced in everything printed or written (automation/redaction.ts).
   * runCli sets it, and wraps stdout and stderr with it.
   */
  readonly redactor?: Redactor;
  /** Random bytes for the generated passphrase (injectable for tests). */
  readonly random?: (size: number) => Buffer;
}
