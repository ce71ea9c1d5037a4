// The progress view of an engine run, built on the Automation API's `onEvent`.
//   live  (a terminal, CI unset): a compact block redrawn in place (resources done / announced, the
//         operations under way with their duration, elapsed time), with finished changes, warnings
//         and errors printed above it as they happen;
//   plain (CI, pipes, files): one line per change, warning and error, with the elapsed time.
// Both end with the same summary line. The clock and the stream are injected so both modes are
// tested with recorded events.
import type { EngineEvent, OpMap } from "@pulumi/pulumi/automation";
import {
  type Diagnostic,
  RunTally,
  type StepInProgress,
  type TallyUpdate,
  opWords,
} from "./engineEvents";

/** Where the view writes: a terminal or a log. */
export interface TextSink {
  write(text: string): void;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** How the view draws. */
export type ProgressMode = "live" | "plain";

/** Options of one view. */
interface ProgressOptions {
  readonly out: TextSink;
  readonly mode: ProgressMode;
  /** Milliseconds; `Date.now` in production. */
  readonly clock: () => number;
  readonly operation: string;
  /** `foundation/staging` */
  readonly target: string;
  /** Print only the final summary (when the engine's own `--diff` output is shown instead). */
  readonly quiet?: boolean;
}

/** The outcome of a run, for the summary line. */
interface RunOutcome {
  readonly ok: boolean;
  /** The operator asked the run to stop (Ctrl-C, SIGTERM). */
  readonly cancelled?: boolean;
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const MAX_LIVE_OPERATIONS = 5;
const PHYSICAL_HALVES: readonly string[] = [
  "create-replacement",
  "delete-replaced",
  "read-replacement",
  "discard-replaced",
];
const CLEAR_BLOCK = (lines: number) => (lines > 0 ? `\u001b[${lines}F\u001b[J` : "");

/** `1m02s`, `12s`, `1h03m`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** `[1:02]`-style elapsed time for plain lines. */
function stamp(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return `[${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}]`;
}

/** Renders engine events as they arrive; call {@link finish} once the operation has settled. */
export class ProgressRenderer {
  readonly tally: RunTally;
  private readonly startedAt: number;
  private blockLines = 0;
  private finished = false;

  constructor(private readonly options: ProgressOptions) {
    this.tally = new RunTally(options.clock);
    this.startedAt = options.clock();
  }

  /** The `onEvent` callback to hand to the Automation API. */
  readonly onEvent = (event: EngineEvent): void => {
    if (this.finished) return;
    const update = this.tally.apply(event);
    if (this.options.quiet) return;
    if (update) {
      const line = this.lineFor(update);
      if (line !== undefined) this.print(line);
    }
    if (this.options.mode === "live") this.redraw();
  };

  /** Repaints the live block (elapsed time moves on even without events); no-op in plain mode. */
  redraw(): void {
    if (this.options.mode !== "live" || this.finished || this.options.quiet) return;
    const block = this.block();
    this.options.out.write(`${CLEAR_BLOCK(this.blockLines)}${block.join("\n")}\n`);
    this.blockLines = block.length;
  }

  /** Clears the live block and prints the summary line; returns it. */
  finish(outcome: RunOutcome): string {
    if (this.options.mode === "live" && this.blockLines > 0) {
      this.options.out.write(CLEAR_BLOCK(this.blockLines));
      this.blockLines = 0;
    }
    this.finished = true;
    const line = this.summaryLine(outcome);
    this.options.out.write(`${line}\n`);
    return line;
  }

  private elapsedSeconds(): number {
    return (this.options.clock() - this.startedAt) / 1000;
  }

  /** Prints a permanent line; in live mode above the block, which is then drawn again. */
  private print(line: string): void {
    const text = this.options.mode === "plain" ? `${stamp(this.elapsedSeconds())} ${line}` : line;
    this.options.out.write(`${CLEAR_BLOCK(this.blockLines)}${text}\n`);
    this.blockLines = 0;
  }

  private lineFor(update: TallyUpdate): string | undefined {
    switch (update.kind) {
      case "started": {
        const words = opWords(update.step.op);
        if (words.kind === "none" || !update.step.custom) return undefined;
        // A preview only plans: its steps are the plan, printed once. Live mode shows running steps in
        // the block, so only plain mode logs their start.
        if (update.planning || this.options.operation === "preview") {
          // The logical `replace` step stands for its physical halves, as in Pulumi's own display.
          return PHYSICAL_HALVES.includes(update.step.op)
            ? undefined
            : `${words.symbol.padEnd(2)} ${words.verb} ${describe(update.step)}`;
        }
        return this.options.mode === "plain"
          ? `${words.doing} ${describe(update.step)}`
          : undefined;
      }
      case "finished": {
        const words = opWords(update.step.op);
        const planning = update.planning || this.options.operation === "preview";
        if (planning || words.kind === "none" || !update.step.custom) return undefined;
        if (update.step.op === "refresh") {
          // Only what changed outside Pulumi is news; an unchanged resource is not worth a line.
          const found = opWords(update.resultOp);
          if (found.kind === "none" || update.resultOp === "refresh") return undefined;
          const what = found.kind === "delete" ? "gone" : "changed";
          return `refreshed ${describe(update.step)}: ${what} outside Pulumi (${found.verb}) in ${formatDuration(update.seconds)}`;
        }
        return `${words.done} ${describe(update.step)} in ${formatDuration(update.seconds)}`;
      }
      case "failed":
        // Its error diagnostic was printed just before; the message ends the run once more.
        return `failed to ${update.failure.op} ${update.failure.name} (${update.failure.type})`;
      case "diagnostic":
        return diagnosticLine(update.diagnostic);
    }
  }

  private block(): string[] {
    const { done, total } = this.tally.progress;
    const elapsed = this.elapsedSeconds();
    const spinner = SPINNER[Math.floor(this.options.clock() / 100) % SPINNER.length];
    const lines = [
      `${spinner} ${this.options.operation} ${this.options.target}  ${done}/${total} resources  ${formatDuration(elapsed)}`,
    ];
    const running = [...this.tally.inProgress.values()]
      .filter((step) => step.custom && opWords(step.op).kind !== "none")
      .sort((a, b) => a.startedAt - b.startedAt);
    for (const step of running.slice(0, MAX_LIVE_OPERATIONS)) {
      const seconds = (this.options.clock() - step.startedAt) / 1000;
      lines.push(`  ${opWords(step.op).doing} ${describe(step)}  ${formatDuration(seconds)}`);
    }
    if (running.length > MAX_LIVE_OPERATIONS) {
      lines.push(`  … and ${running.length - MAX_LIVE_OPERATIONS} more`);
    }
    const width = this.options.out.columns;
    return width && width > 10 ? lines.map((line) => truncate(line, width - 1)) : lines;
  }

  private summaryLine(outcome: RunOutcome): string {
    const elapsed = formatDuration(this.elapsedSeconds());
    const head = `${this.options.operation} ${this.options.target}`;
    const changes = describeChanges(
      this.tally.summary?.resourceChanges ?? {},
      this.options.operation === "preview",
    );
    if (outcome.ok) return `${head}: done in ${elapsed}; ${changes}`;
    const cancelled =
      (outcome.cancelled === true || this.tally.cancelled) && this.tally.failures.length === 0
        ? " (cancelled)"
        : "";
    const failures = this.tally.failures.length;
    return `${head}: failed after ${elapsed}${cancelled}; ${failures} failed resource${failures === 1 ? "" : "s"}${this.tally.summary ? `; ${changes}` : ""}`;
  }
}

function describe(step: StepInProgress): string {
  return `${step.name} (${step.type})`;
}

function diagnosticLine(diagnostic: Diagnostic): string | undefined {
  const about = diagnostic.name ? `${diagnostic.name}: ` : "";
  const label =
    diagnostic.severity === "error"
      ? "error"
      : diagnostic.severity === "warning"
        ? "warning"
        : "info";
  return `${label}: ${about}${diagnostic.message}`;
}

function truncate(line: string, width: number): string {
  return [...line].length <= width ? line : `${[...line].slice(0, width - 1).join("")}…`;
}

/** `2 created, 1 updated, 20 unchanged` (or `2 to create, …` for a preview). */
export function describeChanges(changes: OpMap, preview: boolean): string {
  const parts: string[] = [];
  const order = Object.keys(changes).sort((a, b) => rank(a) - rank(b));
  for (const op of order) {
    const count = changes[op as keyof OpMap] ?? 0;
    if (count === 0) continue;
    const words = opWords(op);
    parts.push(
      words.kind === "none"
        ? `${count} unchanged`
        : preview
          ? `${count} to ${words.verb}`
          : `${count} ${words.done}`,
    );
  }
  return parts.length > 0 ? parts.join(", ") : "no changes";
}

function rank(op: string): number {
  const index = ["create", "update", "replace", "delete", "same"].indexOf(op);
  return index < 0 ? 4 : index;
}
