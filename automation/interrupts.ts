// How the CLI reacts to SIGINT and SIGTERM, in one place.
//
// The first interrupt asks the run to stop cleanly:
// - `stopping` aborts: a command lets the step under way finish and stops before the next one (a
//   Talos roll lets the node being upgraded finish and verifies it, version and health; talosctl runs
//   in its own process group, so a Ctrl-C never reaches it);
// - `engineCancel` aborts when the Pulumi engine must be asked to cancel: always for SIGTERM, and for
//   a SIGINT that did not come from the terminal. A Ctrl-C reaches the Pulumi CLI directly (it runs
//   in the CLI's process group, the terminal's foreground group); asking it again would count as a
//   second Ctrl-C and make it stop at once.
// A second interrupt stops now: each step still under way says exactly what it leaves unverified
// (which node is mid-upgrade), the process groups the CLI started are stopped, and it exits with 130.
// The same signal again within a second is the same interrupt: `npm run` forwards the terminal's
// Ctrl-C to the CLI, which then receives it twice.
import * as fs from "node:fs";

/** The signals the CLI handles. */
export type InterruptSignal = "SIGINT" | "SIGTERM";

/** A repeat of the same signal within this time is one interrupt (npm's forwarded copy). */
export const SAME_INTERRUPT_MS = 1_000;

/** Exit code of an interrupted run. */
const INTERRUPTED = 130;

/** What a command sees of the interrupts. */
export interface InterruptHandle {
  /** Aborted at the first interrupt: finish the step under way, start no other. */
  readonly stopping: AbortSignal;
  /**
   * Registers a step under way until the returned function is called. `label` names it when the
   * first interrupt arrives; `onForcedStop` says what a forced stop leaves behind (which node is
   * mid-upgrade and unverified, what to check), printed before the process exits.
   */
  begin(label: string, onForcedStop: () => string): () => void;
}

/** The outside world of {@link Interrupts}; the process in production, fakes in tests. */
interface InterruptEnvironment {
  readonly now: () => number;
  /** Whether this signal came from the terminal to the whole foreground process group. */
  readonly fromTerminal: (signal: InterruptSignal) => boolean;
  readonly write: (text: string) => void;
  /** Stops what the CLI started in process groups of its own, before exiting. */
  readonly stopChildren: () => void;
  readonly exit: (code: number) => void;
}

interface Step {
  readonly label: string;
  readonly onForcedStop: () => string;
}

/** The interrupt state of one CLI run. */
export class Interrupts implements InterruptHandle {
  private readonly stop = new AbortController();
  private readonly engine = new AbortController();
  private readonly steps = new Set<Step>();
  private first: { signal: InterruptSignal; at: number } | undefined;

  constructor(private readonly environment: InterruptEnvironment) {}

  get stopping(): AbortSignal {
    return this.stop.signal;
  }

  /** Aborted when the engine must be asked to cancel (SIGINT to the Pulumi CLI). */
  get engineCancel(): AbortSignal {
    return this.engine.signal;
  }

  /** Whether the run was asked to stop. */
  get requested(): boolean {
    return this.first !== undefined;
  }

  begin(label: string, onForcedStop: () => string): () => void {
    const step = { label, onForcedStop };
    this.steps.add(step);
    return () => {
      this.steps.delete(step);
    };
  }

  /** Handles one delivered signal. */
  receive(signal: InterruptSignal): void {
    const now = this.environment.now();
    if (this.first === undefined) {
      this.first = { signal, at: now };
      const under = [...this.steps].map((step) => step.label);
      this.environment.write(
        `\n${signal}: stopping once the step under way has finished${under.length > 0 ? ` (${under.join("; ")})` : ""}; send it again to stop at once\n`,
      );
      if (signal === "SIGTERM" || !this.environment.fromTerminal(signal)) this.engine.abort();
      this.stop.abort();
      return;
    }
    if (signal === this.first.signal && now - this.first.at < SAME_INTERRUPT_MS) return;
    this.environment.write(`\n${signal} again: stopping now\n`);
    for (const step of this.steps) this.environment.write(`${step.onForcedStop().trimEnd()}\n`);
    this.environment.stopChildren();
    this.environment.exit(INTERRUPTED);
  }
}

/**
 * Whether a SIGINT came from the terminal: this process is in its terminal's foreground process group
 * (`/proc/self/stat`: a terminal, and its foreground group is ours). Without /proc, a terminal on
 * stdin is taken as the answer. SIGTERM never comes from a terminal.
 */
export function signalFromTerminal(signal: InterruptSignal): boolean {
  if (signal !== "SIGINT") return false;
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    // After `pid (comm)`: state ppid pgrp session tty_nr tpgid …; comm may hold spaces and parens.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const [pgrp, ttyNr, tpgid] = [Number(fields[2]), Number(fields[4]), Number(fields[5])];
    return ttyNr !== 0 && tpgid === pgrp;
  } catch {
    return process.stdin.isTTY === true;
  }
}
