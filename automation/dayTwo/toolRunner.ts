// Runs the programs the day-two commands drive (talosctl, kubectl): no shell, stdin closed, output
// bounded, stopped after a time-out, and each in a process group of its own, so the Ctrl-C a
// terminal sends to its foreground group reaches the CLI (which finishes the step under way) but
// never stops an upgrade half-way. One runner for every tool: a missing program, a failure and a
// time-out read the same whichever tool it was.
import { spawn } from "node:child_process";
import { signalGroup, trackChildGroup } from "../childGroups";
import { ExitCode, UserError } from "../errors";
import { formatDuration } from "./clock";

/** What a finished process left. */
export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The run was stopped because it took longer than its time-out. */
  readonly timedOut: boolean;
  /** The signal that ended it, when one did. */
  readonly signal?: NodeJS.Signals;
}

/** How one process runs. */
interface RunOptions {
  readonly timeoutMs: number;
  /** Receives output as it arrives (progress of long commands); never used for secret output. */
  readonly onOutput?: (text: string) => void;
}

/** Runs a program; rejects only when it cannot be started (ENOENT when it is missing). */
export type CommandRunner = (
  command: string,
  args: readonly string[],
  options: RunOptions,
) => Promise<CommandResult>;

/** Output beyond this is dropped (a runaway process must not exhaust memory). */
const MAX_OUTPUT = 16 * 1024 * 1024;
/** After SIGTERM on time-out, how long a program gets before SIGKILL. */
const KILL_GRACE_MS = 5_000;

/** The real runner: child_process.spawn in a new process group (`detached`), no shell. */
export const spawnRunner: CommandRunner = (command, args, options) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { stdio: ["ignore", "pipe", "pipe"], detached: true });
    const untrack = child.pid === undefined ? () => {} : trackChildGroup(child.pid);
    const stop = (signal: NodeJS.Signals) => {
      if (child.pid === undefined || !signalGroup(child.pid, signal)) child.kill(signal);
    };
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    const collect = (which: "out" | "err") => (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      options.onOutput?.(text);
      if (which === "out" && stdout.length < MAX_OUTPUT) stdout += text;
      if (which === "err" && stderr.length < MAX_OUTPUT) stderr += text;
    };
    child.stdout.on("data", collect("out"));
    child.stderr.on("data", collect("err"));
    let killer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      stop("SIGTERM");
      killer = setTimeout(() => stop("SIGKILL"), KILL_GRACE_MS);
    }, options.timeoutMs);
    const done = () => {
      clearTimeout(timer);
      if (killer) clearTimeout(killer);
      untrack();
    };
    child.on("error", (error) => {
      done();
      reject(error);
    });
    child.on("close", (code, signal) => {
      done();
      resolve({ code, stdout, stderr, timedOut, ...(signal ? { signal } : {}) });
    });
  });

/** A program the CLI drives, and what the operator is told when it cannot be started. */
interface ToolSpec {
  /** `talosctl`, `kubectl`. */
  readonly name: string;
  /** The program to run: a path from the environment (TALOSCTL, KUBECTL), else the name on PATH. */
  readonly binary: string;
  /** How to install it. */
  readonly installHint: string;
  /** What a missing program means for the command (`no node was rebooted`); said after the cause. */
  readonly whenMissing?: string;
  readonly run?: CommandRunner;
  /** Progress of long commands goes here. */
  readonly progress?: (text: string) => void;
}

/** One call of a tool. */
interface ToolCall {
  readonly timeoutMs: number;
  /** Stream its output to the progress sink (long commands; never secret output). */
  readonly stream?: boolean;
  /** How the command is named in messages: its arguments without credentials' paths. */
  readonly shown: string;
  /** What to do when it fails. @default fix the cause and rerun */
  readonly fix?: string;
  /** Where this call's output streams instead of the tool's progress (a filter in front of it). */
  readonly progress?: (text: string) => void;
}

/** The last line of a program's output, bounded, for a message. */
function lastLine(text: string): string {
  const lines = text
    .trim()
    .split("\n")
    .filter((line) => line.trim() !== "");
  const line = lines[lines.length - 1] ?? "(no output)";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** Runs one external program; see the file's header. */
export class Tool {
  private readonly run: CommandRunner;

  constructor(private readonly spec: ToolSpec) {
    this.run = spec.run ?? spawnRunner;
  }

  /** Runs it; rejects only when it cannot be started: exit 5 with the install hint. */
  async start(args: readonly string[], call: ToolCall): Promise<CommandResult> {
    try {
      return await this.run(this.spec.binary, args, {
        timeoutMs: call.timeoutMs,
        ...(call.stream && (call.progress ?? this.spec.progress)
          ? { onOutput: call.progress ?? this.spec.progress }
          : {}),
      });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "EACCES") throw error;
      const why = code === "ENOENT" ? "not found" : "not executable";
      throw new UserError(
        {
          what: this.spec.name,
          problem: `could not be started (${why})${this.spec.whenMissing ? `; ${this.spec.whenMissing}` : ""}`,
          got: JSON.stringify(this.spec.binary),
          fix: this.spec.installHint,
        },
        ExitCode.missingCli,
      );
    }
  }

  /** Runs it and resolves to its stdout; a time-out or a failure rejects naming `call.shown`. */
  async exec(args: readonly string[], call: ToolCall): Promise<string> {
    const result = await this.start(args, call);
    if (result.timedOut || result.code !== 0) throw this.failure(result, call);
    return result.stdout;
  }

  /** The error of a run that timed out or failed; `known` replaces what the output says by itself. */
  failure(
    result: CommandResult,
    call: ToolCall,
    known?: { readonly problem: string; readonly got: string },
  ): UserError {
    const why = result.timedOut
      ? `did not finish within ${formatDuration(call.timeoutMs)} and was stopped`
      : result.code === null
        ? `was killed (${result.signal ?? "by a signal"}) before it finished`
        : `failed with exit code ${result.code}`;
    return new UserError(
      {
        what: call.shown,
        problem: known?.problem ?? why,
        got: known?.got ?? JSON.stringify(lastLine(result.stderr || result.stdout)),
        fix: call.fix ?? "Fix the cause and rerun",
      },
      ExitCode.failed,
    );
  }
}
