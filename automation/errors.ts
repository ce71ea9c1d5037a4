// One error format for the CLI, `<what>: <problem>; got <value>. <fix>`, and the exit codes scripts
// can rely on. Engine and Automation API errors are translated here so the operator never sees a
// stack trace or the Pulumi CLI's raw stdout/stderr dump.
//
// Nothing here loads the Automation API: commands that never run the engine (validate, stacks)
// import this module too, and must start fast. Its errors are recognized by their shape instead.

/** Exit codes of `npm run platform`; documented in the README so scripts can branch on them. */
export const ExitCode = {
  /** The command did what it was asked. */
  ok: 0,
  /** The engine ran and an operation failed (a resource, the program, or the preview). */
  failed: 1,
  /** The command line, the layer, the environment or a file was wrong. */
  usage: 2,
  /** A guard rail refused the command (CI, destroying prod). */
  refused: 3,
  /** Another run holds the stack (the CLI's lock or the engine's). */
  locked: 4,
  /** The Pulumi CLI is missing, too old or could not be installed (or talosctl is missing, for day-two commands). */
  missingCli: 5,
  /** `drift`: a node differs from the stack (versions or machine config). */
  drift: 6,
  /** `certs`, `health`: a certificate expires within the threshold (`--min-days`, default 30) or has expired. */
  expiring: 7,
  /** `health`: the cluster is unhealthy (Talos' health check, an etcd alarm or member error, version skew). */
  unhealthy: 8,
  /** Interrupted by a signal. */
  interrupted: 130,
} as const;

/** One of {@link ExitCode}'s values. */
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** The parts of a user-facing problem. */
export interface Problem {
  /** What is wrong: a command, a file, an option (`environment`, `foundation/staging`, `--layer`). */
  readonly what: string;
  /** What is wrong with it. */
  readonly problem: string;
  /** The offending value, already quoted where it helps. */
  readonly got: string;
  /** What to do about it. */
  readonly fix: string;
}

/** `<what>: <problem>; got <value>. <fix>` */
export function formatProblem({ what, problem, got, fix }: Problem): string {
  return `${what}: ${problem}; got ${got}. ${fix}`;
}

/** An error the operator can fix; printed as one message, without a stack trace. */
export class UserError extends Error {
  constructor(
    readonly problem: Problem,
    readonly exitCode: ExitCodeValue = ExitCode.usage,
  ) {
    super(formatProblem(problem));
    this.name = "UserError";
  }
}

/** One failed resource operation, as reported by the engine. */
export interface ResourceFailure {
  readonly op: string;
  readonly type: string;
  readonly name: string;
  readonly message: string;
}

/**
 * An engine operation failed. Carries every failing resource (or, when the program itself failed,
 * the engine's error messages) so the message names them.
 */
class OperationFailedError extends Error {
  readonly exitCode = ExitCode.failed;

  constructor(
    readonly target: string,
    readonly operation: string,
    readonly failures: readonly ResourceFailure[],
    readonly errors: readonly string[],
  ) {
    super(describeFailure(target, operation, failures, errors));
    this.name = "OperationFailedError";
  }
}

function describeFailure(
  target: string,
  operation: string,
  failures: readonly ResourceFailure[],
  errors: readonly string[],
): string {
  const fix =
    operation === "preview"
      ? "Fix the cause and preview again"
      : "Fix the cause and rerun the command (completed steps are kept in the state)";
  if (failures.length > 0) {
    const lines = failures.map(
      (f) => `  - ${f.op} ${f.type} "${f.name}": ${firstLines(f.message)}`,
    );
    const noun = failures.length === 1 ? "resource" : "resources";
    return `${operation} ${target}: ${failures.length} ${noun} failed; got:\n${lines.join("\n")}\n${fix}.`;
  }
  const shown = errors.length > 0 ? errors.map((e) => firstLines(e, 20)) : ["no error message"];
  return formatProblem({
    what: `${operation} ${target}`,
    problem: "the engine reported an error",
    got: shown.length === 1 ? shown[0] : `\n${shown.map((e) => `  - ${e}`).join("\n")}\n`,
    fix,
  });
}

/** The first few lines of a (possibly long) engine message. */
export function firstLines(message: string, count = 6): string {
  const lines = message.trim().split("\n");
  return lines.length <= count
    ? lines.join("\n")
    : `${lines.slice(0, count).join("\n")}\n    … (${lines.length - count} more lines)`;
}

/** The stderr a failed Pulumi CLI invocation printed (CommandError keeps it in its message only). */
export function commandStderr(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const match = /\n stderr: ([\s\S]*?)(?:\n err\?: [\s\S]*)?$/.exec(message);
  return (match ? match[1] : message).trim();
}

/** Whether an error says a program could not be started because it does not exist. */
export function isSpawnNotFound(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /spawn \S+ ENOENT/.test(message);
}

/** Whether an error is the Automation API's CommandError (or a subclass): it carries the CLI's result. */
function isCommandError(error: unknown): boolean {
  return error instanceof Error && "commandResult" in error;
}

/** Whether an error is the Automation API error class of that name. */
function isAutomationError(error: unknown, name: string): boolean {
  return isCommandError(error) && (error as Error).name === name;
}

/** Whether the Automation API refused to select a stack because the backend does not have it. */
export function isStackNotFound(error: unknown): boolean {
  return (
    isAutomationError(error, "StackNotFoundError") ||
    /no stack named .* found/.test(commandStderr(error))
  );
}

/** What the CLI knows about the operation an engine error came from. */
interface EngineErrorContext {
  /** `foundation/staging` */
  readonly target: string;
  readonly operation: string;
  /** Failing resources collected from the event stream. */
  readonly failures: readonly ResourceFailure[];
  /** Error diagnostics collected from the event stream. */
  readonly errors: readonly string[];
  /** The layer's folder, where `pulumi cancel` runs. */
  readonly layerDir?: string;
  /** This machine: whether the process that holds the engine's lock still runs. */
  readonly host?: { readonly hostname: string; isAlive(pid: number): boolean };
}

/**
 * The pids of the engine's lock files that a killed run of this host left: the DIY backend's message
 * lists each lock as `created by <user>@<host> (pid <n>)` (pkg/backend/diy/lock.go). Empty unless
 * every lock is this host's and its process no longer runs.
 */
export function staleEngineLocks(
  stderr: string,
  host: { readonly hostname: string; isAlive(pid: number): boolean },
): number[] {
  const locks = [...stderr.matchAll(/created by \S*@(\S+) \(pid (\d+)\)/g)].map((match) => ({
    hostname: match[1]!,
    pid: Number(match[2]),
  }));
  if (locks.length === 0) return [];
  const stale = locks.every((lock) => lock.hostname === host.hostname && !host.isAlive(lock.pid));
  return stale ? locks.map((lock) => lock.pid) : [];
}

/**
 * Turns what a stack operation rejected with into an error worth printing: the engine's lock into
 * a "locked" message, a missing stack into a hint, a wrong passphrase into what to set, and any
 * other engine failure into the failing resources and their errors.
 */
export function translateEngineError(error: unknown, context: EngineErrorContext): Error {
  if (error instanceof UserError || error instanceof OperationFailedError) return error;
  const stderr = commandStderr(error);
  if (
    isAutomationError(error, "ConcurrentUpdateError") ||
    /currently locked by|\[409\] Conflict/.test(stderr)
  ) {
    const stale = context.host ? staleEngineLocks(stderr, context.host) : [];
    const env = context.target.split("/")[1] ?? "<env>";
    const folder = context.layerDir ?? "the layer's folder";
    const cancel = `\`pulumi cancel --yes --stack ${env}\` in ${folder}`;
    return new UserError(
      stale.length > 0
        ? {
            what: context.target,
            problem: `the engine's lock in the backend was left by a run that was killed (pid ${stale.join(", ")} of this host no longer runs)`,
            got: JSON.stringify(firstLines(stderr, 2)),
            fix: `Remove it with ${cancel} (it deletes the stack's lock files, nothing of its state) and rerun`,
          }
        : {
            what: context.target,
            problem:
              "another update of this stack is in progress (the engine's lock in the backend)",
            got: JSON.stringify(firstLines(stderr, 2)),
            fix: `Wait for it to finish; if it was killed, run ${cancel}`,
          },
      ExitCode.locked,
    );
  }
  if (isStackNotFound(error)) {
    return new UserError({
      what: context.target,
      problem: "the stack does not exist in the backend yet",
      got: JSON.stringify(firstLines(stderr, 1)),
      fix: `Create it with \`npm run platform -- up ${context.target.split("/")[1]} --layer ${context.target.split("/")[0]}\``,
    });
  }
  if (/incorrect passphrase|passphrase must be set/.test(stderr)) {
    return new UserError({
      what: `${context.target} secrets`,
      problem: "the passphrase does not decrypt this stack",
      got: JSON.stringify(firstLines(stderr, 1)),
      fix: "Set PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE to the passphrase the stack was created with (docs/cli.md, secrets provider)",
    });
  }
  if (isSpawnNotFound(error)) {
    return new UserError(
      {
        what: "Pulumi CLI",
        problem: "could not be started",
        got: JSON.stringify(firstLines(stderr, 1)),
        fix: "Install it (https://www.pulumi.com/docs/install/), or rerun with --install-cli",
      },
      ExitCode.missingCli,
    );
  }
  if (isCommandError(error) || context.failures.length > 0 || context.errors.length > 0) {
    const errors = context.errors.length > 0 ? context.errors : engineErrorLines(stderr);
    return new OperationFailedError(context.target, context.operation, context.failures, errors);
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** The `error: …` lines of the Pulumi CLI's stderr (its own summary of what went wrong). */
function engineErrorLines(stderr: string): string[] {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("error:"))
    .map((line) => line.slice("error:".length).trim());
  return lines.length > 0 ? lines : stderr ? [firstLines(stderr, 4)] : [];
}

/**
 * Why something failed, in one line to quote inside another message: a UserError's what, problem
 * and what it got, without its fix (the outer message gives the fix that applies there).
 */
export function errorReason(error: unknown): string {
  if (error instanceof UserError) {
    const { what, problem, got } = error.problem;
    return `${what} ${problem}${got ? `: ${got}` : ""}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** What the operator can do about a filesystem error, by its code. */
const FILESYSTEM_FIXES: Readonly<Record<string, string>> = {
  EACCES: "Give your user access to it (or run from a checkout you own)",
  EPERM: "Give your user access to it (or run from a checkout you own)",
  EROFS: "The file system is read-only: run from a writable checkout",
  ENOSPC: "The disk is full: free some space and rerun",
  EDQUOT: "The disk quota is exhausted: free some space and rerun",
  EISDIR: "Name a file, not a folder",
  ENOTDIR: "A part of the path is a file, not a folder: fix the path",
  ELOOP: "The path loops through symbolic links: fix them",
  ENAMETOOLONG: "Use a shorter path",
  EMFILE: "Too many files are open: raise the limit (ulimit -n) and rerun",
};

/**
 * A filesystem error (a read-only checkout, a full disk, a file without permission) as the
 * operator's problem naming the path, exit 2, instead of an "unexpected error": it is not a bug.
 */
export function filesystemError(error: unknown): UserError | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, path: file, syscall } = error as NodeJS.ErrnoException;
  const fix = code === undefined ? undefined : FILESYSTEM_FIXES[code];
  if (fix === undefined || typeof file !== "string") return undefined;
  return new UserError({
    what: file,
    problem: `could not be ${syscall === undefined ? "used" : `used (${syscall})`}`,
    got: code ?? "an error",
    fix,
  });
}

/** Where errors are written. */
interface ErrorSink {
  write(text: string): void;
}

/**
 * Prints an error as one message and returns the exit code it maps to. Only unexpected errors (bugs)
 * get a stack trace, and only when PLATFORM_DEBUG is set.
 */
export function reportError(error: unknown, stderr: ErrorSink, debug = false): ExitCodeValue {
  const fileProblem = filesystemError(error);
  if (fileProblem) {
    stderr.write(`${fileProblem.message}\n`);
    return fileProblem.exitCode;
  }
  if (error instanceof UserError || error instanceof OperationFailedError) {
    stderr.write(`${error.message}\n`);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  stderr.write(`platform: unexpected error; got ${JSON.stringify(firstLines(message, 3))}. `);
  stderr.write(
    debug && error instanceof Error && error.stack
      ? `Stack trace:\n${error.stack}\n`
      : "Rerun with PLATFORM_DEBUG=1 for the stack trace\n",
  );
  return ExitCode.failed;
}
