// Reading the engine's event stream (the Automation API's `onEvent`): names from URNs, what each
// step op means, and a tally of a run that the progress view and the error messages share.
import type {
  DiagnosticEvent,
  EngineEvent,
  OpType,
  StepEventMetadata,
  SummaryEvent,
} from "@pulumi/pulumi/automation";
import type { ResourceFailure } from "./errors";

/** The four kinds of change a preview summary counts, plus the ones it does not. */
type ChangeKind = "create" | "update" | "replace" | "delete" | "other" | "none";

/** How one step op reads in the progress view and the summaries. */
interface OpWords {
  readonly kind: ChangeKind;
  /** `+`, `~`, `+-`, `-` as in Pulumi's own display. */
  readonly symbol: string;
  readonly verb: string;
  readonly doing: string;
  readonly done: string;
}

const WORDS: Record<OpType, OpWords> = {
  same: { kind: "none", symbol: " ", verb: "same", doing: "checking", done: "unchanged" },
  create: { kind: "create", symbol: "+", verb: "create", doing: "creating", done: "created" },
  update: { kind: "update", symbol: "~", verb: "update", doing: "updating", done: "updated" },
  delete: { kind: "delete", symbol: "-", verb: "delete", doing: "deleting", done: "deleted" },
  replace: { kind: "replace", symbol: "+-", verb: "replace", doing: "replacing", done: "replaced" },
  "create-replacement": {
    kind: "replace",
    symbol: "++",
    verb: "create replacement",
    doing: "creating replacement",
    done: "created replacement",
  },
  "delete-replaced": {
    kind: "replace",
    symbol: "--",
    verb: "delete replaced",
    doing: "deleting replaced",
    done: "deleted replaced",
  },
  read: { kind: "other", symbol: ">", verb: "read", doing: "reading", done: "read" },
  "read-replacement": {
    kind: "other",
    symbol: ">>",
    verb: "read replacement",
    doing: "reading replacement",
    done: "read replacement",
  },
  refresh: { kind: "other", symbol: "~", verb: "refresh", doing: "refreshing", done: "refreshed" },
  discard: { kind: "other", symbol: "<", verb: "discard", doing: "discarding", done: "discarded" },
  "discard-replaced": {
    kind: "other",
    symbol: "<<",
    verb: "discard replaced",
    doing: "discarding replaced",
    done: "discarded replaced",
  },
  "remove-pending-replace": {
    kind: "other",
    symbol: "-",
    verb: "remove pending replace",
    doing: "removing pending replace",
    done: "removed pending replace",
  },
  import: { kind: "create", symbol: "=", verb: "import", doing: "importing", done: "imported" },
  "import-replacement": {
    kind: "replace",
    symbol: "=>",
    verb: "import replacement",
    doing: "importing replacement",
    done: "imported replacement",
  },
};

/** The words for an op; unknown future ops read as themselves. */
export function opWords(op: string): OpWords {
  return WORDS[op as OpType] ?? { kind: "other", symbol: "*", verb: op, doing: op, done: op };
}

/** The parts of a URN: `urn:pulumi:<stack>::<project>::<parent$type>::<name>`. */
interface UrnParts {
  readonly stack: string;
  readonly project: string;
  readonly type: string;
  readonly name: string;
}

/** Splits a URN; the type is the resource's own (after the last `$` of the qualified type). */
export function parseUrn(urn: string): UrnParts {
  const parts = urn.split("::");
  if (parts.length < 4 || !parts[0].startsWith("urn:pulumi:")) {
    return { stack: "", project: "", type: "", name: urn };
  }
  const qualifiedType = parts[2];
  return {
    stack: parts[0].slice("urn:pulumi:".length),
    project: parts[1],
    type: qualifiedType.slice(qualifiedType.lastIndexOf("$") + 1),
    name: parts.slice(3).join("::"),
  };
}

/**
 * The engine's messages carry colour directives (`<{%reset%}>`); plain text without them. A
 * program's unhandled exception (a failed invoke, such as the health check) reaches the engine as
 * Node prints it: the error, then its stack frames and own properties (`{ promise: … }`), which
 * say nothing to an operator: only the error is kept.
 */
export function plainMessage(message: string): string {
  const plain = message
    .replace(/<\{%[^%]*%\}>/g, "")
    .replace(/\u001b\[[0-9;]*m/g, "")
    .trim();
  if (!plain.includes("failed with an unhandled exception:")) return plain;
  const lines = plain.split("\n");
  const frame = lines.findIndex((line) => /^\s+at \S/.test(line));
  return (frame < 0 ? lines : lines.slice(0, frame))
    .join("\n")
    .replace(/^<ref \*\d+> /gm, "")
    .trim();
}

/**
 * Whether a step acts on a custom resource (components only group others and finish last). The
 * engine writes `custom` only when true (`json:"custom,omitempty"` in
 * sdk/go/common/apitype/events.go), so a component's step has no `custom` key at all; `old` or
 * `new` is null for a create or a delete.
 */
export function isCustomStep(metadata: StepEventMetadata): boolean {
  return (metadata.new ?? metadata.old)?.custom === true;
}

/**
 * Whether a step is the engine's own work on a default provider (`pulumi:providers:<pkg>::default…`,
 * IsDefaultProvider in sdk/go/common/providers/reference.go). The engine marks these steps internal:
 * its display hides them and its summary does not count them (isInternalStep, pkg/engine/update.go),
 * but the event log the Automation API reads carries them (pkg/backend/display/display.go logs events
 * before filtering internal ones).
 */
export function isDefaultProviderStep(metadata: StepEventMetadata): boolean {
  const { type, name } = parseUrn(metadata.urn);
  return type.startsWith("pulumi:providers:") && name.startsWith("default");
}

/**
 * The engine's last words on a run that did not succeed, without a URN: `update failed`,
 * `preview failed`, `update canceled`, `preview canceled` (reportExecResult in
 * pkg/resource/deploy/deployment_executor.go; refresh and destroy say `update`).
 */
const RUN_RESULT = /^(update|preview|refresh|destroy) (failed|canceled|cancelled)$/;

/** A step that has started and not finished. */
export interface StepInProgress {
  readonly key: string;
  readonly op: string;
  readonly type: string;
  readonly name: string;
  readonly startedAt: number;
  readonly custom: boolean;
}

/** A diagnostic worth showing: warnings and errors, and what the program itself printed. */
export interface Diagnostic {
  readonly severity: DiagnosticEvent["severity"];
  /** The resource it is about, when any (not the stack). */
  readonly name?: string;
  readonly message: string;
}

/**
 * Folds engine events into the state of a run: which steps are under way, how many resources are
 * done out of those the engine has announced, failures with their error messages, diagnostics, and
 * the engine's final summary.
 */
export class RunTally {
  /** Steps started and not finished, by op and URN. */
  readonly inProgress = new Map<string, StepInProgress>();
  /** URNs the engine has announced a step for. */
  readonly seen = new Set<string>();
  /** URNs with a finished step. */
  readonly finished = new Set<string>();
  readonly failures: ResourceFailure[] = [];
  /** Error diagnostics without a failing resource (the program's own errors, protection refusals). */
  readonly errors: string[] = [];
  summary?: SummaryEvent;
  /** The engine said the run was cancelled (`update canceled`, or the summary's result). */
  cancelled = false;
  private readonly lastErrorByUrn = new Map<string, string>();

  constructor(private readonly clock: () => number) {}

  /** Resources done out of those announced so far (the engine announces as the program runs). */
  get progress(): { done: number; total: number } {
    return { done: this.finished.size, total: this.seen.size };
  }

  /**
   * Applies one event; returns what changed that a view may print: a step that started or finished,
   * a failure, or a diagnostic.
   */
  apply(event: EngineEvent): TallyUpdate | undefined {
    const stepMetadata =
      event.resourcePreEvent?.metadata ??
      event.resOutputsEvent?.metadata ??
      event.resOpFailedEvent?.metadata;
    // Internal steps are not the operator's resources: Pulumi's own display and counts skip them.
    if (stepMetadata && isDefaultProviderStep(stepMetadata)) return undefined;
    if (event.resourcePreEvent) {
      const metadata = event.resourcePreEvent.metadata;
      const step = this.stepOf(metadata);
      this.seen.add(metadata.urn);
      this.inProgress.set(step.key, step);
      return { kind: "started", step, planning: event.resourcePreEvent.planning === true };
    }
    if (event.resOutputsEvent) {
      const metadata = event.resOutputsEvent.metadata;
      // A refresh step starts with op `refresh` and finishes with the op of what it found (`same`,
      // `update`, `delete`: ResultOp in OnResourceStepPost, pkg/engine/update.go).
      const step =
        this.inProgress.get(stepKey(metadata)) ??
        this.inProgress.get(`refresh ${metadata.urn}`) ??
        this.stepOf(metadata);
      this.inProgress.delete(step.key);
      this.seen.add(metadata.urn);
      this.finished.add(metadata.urn);
      return {
        kind: "finished",
        step,
        resultOp: metadata.op,
        planning: event.resOutputsEvent.planning === true,
        seconds: Math.max(0, Math.round((this.clock() - step.startedAt) / 1000)),
      };
    }
    if (event.resOpFailedEvent) {
      const metadata = event.resOpFailedEvent.metadata;
      const step = this.inProgress.get(stepKey(metadata)) ?? this.stepOf(metadata);
      this.inProgress.delete(step.key);
      const message = this.lastErrorByUrn.get(metadata.urn) ?? "failed (see the diagnostics above)";
      const failure: ResourceFailure = {
        op: opWords(metadata.op).verb,
        type: metadata.type,
        name: step.name,
        message,
      };
      this.failures.push(failure);
      // Its error diagnostic is now part of the failure; do not list it twice.
      const index = this.errors.indexOf(message);
      if (index >= 0) this.errors.splice(index, 1);
      return { kind: "failed", failure };
    }
    if (event.diagnosticEvent) {
      return this.diagnostic(event.diagnosticEvent);
    }
    if (event.summaryEvent) {
      this.summary = event.summaryEvent;
      // `result` (succeeded, failed, canceled) since Pulumi 3.237; not in the Node SDK's type yet.
      if ((event.summaryEvent as { result?: string }).result === "canceled") this.cancelled = true;
      return undefined;
    }
    // Every run ends with a cancelEvent (pkg/engine: `defer … NewCancelEvent()`): it says the stream
    // is over, not that the run was cancelled.
    return undefined;
  }

  private diagnostic(event: DiagnosticEvent): TallyUpdate | undefined {
    // The real engine streams the SDK's debug log too (severity "debug", which the Automation API's
    // type leaves out): most events of a run, with invoke results (machine configs) in plain text.
    // Pulumi's own display hides them without --debug.
    if (event.ephemeral || (event.severity as string) === "debug") return undefined;
    const message = plainMessage(event.message);
    if (message === "") return undefined;
    const urn = event.urn ?? "";
    const parts = urn ? parseUrn(urn) : undefined;
    const aboutResource = parts !== undefined && !parts.type.startsWith("pulumi:pulumi:");
    if (event.severity === "error") {
      // The engine ends a failed run with a generic line that adds nothing to the real errors.
      const result = urn === "" ? RUN_RESULT.exec(message) : null;
      if (result) {
        if (result[2] !== "failed") this.cancelled = true;
        return undefined;
      }
      if (aboutResource) this.lastErrorByUrn.set(urn, message);
      this.errors.push(message);
    }
    return {
      kind: "diagnostic",
      diagnostic: {
        severity: event.severity,
        ...(aboutResource ? { name: parts.name } : {}),
        message,
      },
    };
  }

  private stepOf(metadata: StepEventMetadata): StepInProgress {
    return {
      key: stepKey(metadata),
      op: metadata.op,
      type: metadata.type,
      name: parseUrn(metadata.urn).name,
      startedAt: this.clock(),
      custom: isCustomStep(metadata),
    };
  }
}

function stepKey(metadata: StepEventMetadata): string {
  return `${metadata.op} ${metadata.urn}`;
}

/** What one event changed, for a view to print. */
export type TallyUpdate =
  | { readonly kind: "started"; readonly step: StepInProgress; readonly planning: boolean }
  | {
      readonly kind: "finished";
      readonly step: StepInProgress;
      /** The op of the outputs event: for a refresh, what it found (`same`, `update`, `delete`). */
      readonly resultOp: string;
      readonly planning: boolean;
      readonly seconds: number;
    }
  | { readonly kind: "failed"; readonly failure: ResourceFailure }
  | { readonly kind: "diagnostic"; readonly diagnostic: Diagnostic };
